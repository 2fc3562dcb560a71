package api

import (
	"html/template"
	"net/http"
	"net/url"
	"strings"

	"github.com/linkd/linkd/domain/link"
	"github.com/linkd/linkd/internal/enrich"
	"github.com/linkd/linkd/queries"
)

// The pages a short link shows instead of its redirect (issue 14): a link
// preview for the fetchers of chat and social apps and for search engines,
// when the link has metadata; and "Open in {app}" for a person inside an
// in-app browser that cannot open the link's deep link. Both are decided
// from the link the cache already holds and the request's enrichment, so
// the redirect of an ordinary link reads nothing more
// (docs/decisions.md, "Link pages").

// previewFetchers are the bots (enrich.Result.BotName) that get a link's
// preview page: the link-preview fetchers of chat and social apps, and
// the crawlers of search engines. iMessage's fetcher calls itself
// facebookexternalhit, and is named so.
var previewFetchers = map[string]bool{
	"facebookexternalhit": true, "facebookcatalog": true, "Facebot": true, "meta-externalagent": true,
	"Twitterbot": true, "LinkedInBot": true, "Slackbot": true, "WhatsApp": true, "TelegramBot": true,
	"Discordbot": true, "SkypeUriPreview": true, "redditbot": true, "Pinterestbot": true,
	"Snapchat preview": true, "vkShare": true, "Mastodon": true, "Bluesky": true, "Embedly": true,
	"Iframely": true, "BingPreview": true, "Google-PageRenderer": true,
	"Googlebot": true, "Bingbot": true, "Applebot": true, "DuckDuckBot": true, "YandexBot": true,
}

// IsPreviewFetcher reports whether a request's enrichment names a
// link-preview fetcher or search crawler that gets preview pages.
func IsPreviewFetcher(info *enrich.Result) bool {
	return info.Bot && !info.Script && previewFetchers[info.BotName]
}

// blockingApps are the in-app browsers that do not hand a deep link to
// the app it names: their web view stays on the page, or shows nothing.
var blockingApps = map[string]bool{
	"Instagram": true, "Facebook": true, "Messenger": true, "Threads": true,
	"TikTok": true, "LinkedIn": true, "Snapchat": true,
}

// linkTarget is where a granted access goes: LinkAccess's target, with
// the link's WhatsApp message added to a WhatsApp target without text.
func linkTarget(a *queries.Access) string {
	if a.Link.WhatsappMessage == "" {
		return a.Target
	}
	return link.WithWhatsAppText(a.Target, a.Link.WhatsappMessage)
}

// servePreview answers a preview fetcher with the link's preview page, when
// the link has metadata; it reports whether it did. Fetchers are never
// counted (they are bots), so nothing is recorded.
func (rd *Redirector) servePreview(w http.ResponseWriter, r *http.Request, a *queries.Access, info *enrich.Result) bool {
	if !info.Bot || a.Link.Metadata.IsEmpty() || !IsPreviewFetcher(info) {
		return false
	}
	m := a.Link.Metadata
	d := previewData{Title: deref(m.Title), Description: deref(m.Description)}
	if d.Title == "" {
		d.Title = a.Link.Name
	}
	if d.Title == "" {
		d.Title = a.Link.OriginalURL
	}
	for _, img := range []*string{m.SocialImage, m.Image} {
		if img != nil && isWebURL(*img) {
			d.Image = *img
			break
		}
	}
	if m.Favicon != nil && isWebURL(*m.Favicon) {
		d.Favicon = *m.Favicon
	}
	if u, err := url.Parse(a.Target); err == nil && isWebURL(a.Target) {
		d.Target, d.TargetHost = a.Target, u.Host
	}
	scheme := "http"
	if rd.cfg.SecureCookies {
		scheme = "https"
	}
	d.ShortURL = scheme + "://" + r.Host + "/" + a.Link.Code
	// The page's own resources (favicon, image) are for the fetcher: a
	// browser that shows it loads nothing from elsewhere.
	linkPage(w, http.StatusOK, "preview", d, "default-src 'none'; style-src 'unsafe-inline'")
	return true
}

type previewData struct {
	Title, Description, Image, Favicon, Target, TargetHost, ShortURL string
}

// serveAppPage answers a person in an in-app browser that cannot open the
// link's deep link with the page "Open in {app}": a button to the deep
// link (target), and the web target as fallback; it reports whether it
// did. The click, when counted, is already recorded: the page is that
// click, and neither of its links comes back here.
func (rd *Redirector) serveAppPage(w http.ResponseWriter, a *queries.Access, info *enrich.Result, target, trackingID string) bool {
	if !info.FromApp || !blockingApps[info.App] {
		return false
	}
	var deep string
	switch info.Platform {
	case link.PlatformIOS:
		deep = a.Link.IOSLink
	case link.PlatformAndroid:
		deep = a.Link.AndroidLink
	default:
		return false
	}
	deep = strings.TrimSpace(deep)
	if deep == "" {
		return false
	}
	// A custom scheme never opens from these web views; an https deep link
	// (a universal or app link) opens its web page there instead of the
	// app, which the page is for only when the link names its app.
	if isWebURL(deep) && a.Link.App == "" {
		return false
	}
	u, err := url.Parse(target)
	if err != nil || u.Scheme == "" || link.IsBrowserScheme(u.Scheme) {
		return false
	}
	// The web page: the link's target off any app, as a redirect would
	// carry the click (Access.WithTracking).
	web := queries.Access{Link: a.Link, Target: a.Link.Target(link.PlatformOther)}
	web.Target = linkTarget(&web)
	d := appData{App: a.Link.App, Open: template.URL(target)}
	if d.App == "" {
		d.App = "the app"
	}
	if u := web.WithTracking(trackingID); isWebURL(u) {
		d.Web = u
	}
	csp := "default-src 'none'; style-src 'unsafe-inline'"
	if isWebURL(a.Link.AppLogo) {
		// The app's logo is the one thing the page loads, from where its
		// owner put it.
		logo, _ := url.Parse(a.Link.AppLogo)
		d.Logo = a.Link.AppLogo
		csp = "default-src 'none'; style-src 'unsafe-inline'; img-src " + logo.Scheme + "://" + logo.Host
	} else {
		d.Initial = strings.ToUpper(firstRune(d.App))
	}
	linkPage(w, http.StatusOK, "app", d, csp)
	return true
}

type appData struct {
	App     string
	Open    template.URL // the deep link, checked: not a browser scheme
	Web     string
	Logo    string
	Initial string
}

func firstRune(s string) string {
	for _, r := range s {
		return string(r)
	}
	return ""
}

// isWebURL reports whether s is an absolute http(s) URL with a host.
func isWebURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}

// linkPage writes one of linkPages with the headers of every short-link
// page and its own Content-Security-Policy.
func linkPage(w http.ResponseWriter, status int, name string, data any, csp string) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer-when-downgrade")
	h.Set("Content-Security-Policy", csp)
	w.WriteHeader(status)
	_ = linkPages.ExecuteTemplate(w, name, data)
}

// linkPages are the preview and app pages; html/template escapes what they
// show, and refuses unsafe URLs in href and src.
var linkPages = template.Must(template.New("linkpages").Parse(`
{{define "style"}}<style>body{font-family:system-ui,sans-serif;max-width:28rem;margin:12vh auto;padding:0 1rem;color:#222;text-align:center}h1{font-size:1.4rem}p{color:#555}.logo{width:96px;height:96px;border-radius:22px;object-fit:cover;display:block;margin:0 auto 1rem}.initial{width:96px;height:96px;border-radius:22px;background:#2b5fd9;color:#fff;font-size:3rem;line-height:96px;margin:0 auto 1rem}.btn{display:block;padding:.8rem 1rem;border-radius:.5rem;background:#2b5fd9;color:#fff;text-decoration:none;font-weight:600;margin:1.5rem 0 1rem}a{color:#2b5fd9}</style>{{end}}
{{define "preview"}}<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>{{.Title}}</title>
{{with .Description}}<meta name="description" content="{{.}}">{{end}}
{{with .Target}}<link rel="canonical" href="{{.}}">{{end}}
<meta property="og:type" content="website"><meta property="og:url" content="{{.ShortURL}}"><meta property="og:title" content="{{.Title}}">{{with .Description}}<meta property="og:description" content="{{.}}">{{end}}{{with .Image}}<meta property="og:image" content="{{.}}">{{end}}
<meta name="twitter:card" content="{{if .Image}}summary_large_image{{else}}summary{{end}}"><meta name="twitter:title" content="{{.Title}}">{{with .Description}}<meta name="twitter:description" content="{{.}}">{{end}}{{with .Image}}<meta name="twitter:image" content="{{.}}">{{end}}
{{with .Favicon}}<link rel="icon" href="{{.}}">{{end}}
{{template "style"}}</head><body><h1>{{.Title}}</h1>{{with .Description}}<p>{{.}}</p>{{end}}{{if .Target}}<p><a href="{{.Target}}">Continue to {{.TargetHost}}</a></p>{{end}}</body></html>{{end}}
{{define "app"}}<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><meta name="robots" content="noindex"><title>Open in {{.App}}</title>{{template "style"}}</head><body>
{{if .Logo}}<img class="logo" src="{{.Logo}}" alt="{{.App}}">{{else}}<div class="initial" aria-hidden="true">{{.Initial}}</div>{{end}}
<h1>Open in {{.App}}</h1><p>This link opens in {{.App}}, which this in-app browser cannot start by itself.</p>
<a class="btn" id="open" href="{{.Open}}">Open in {{.App}}</a>
{{with .Web}}<p><a id="web" href="{{.}}">Continue to the website instead</a></p>{{end}}
</body></html>{{end}}
`))
