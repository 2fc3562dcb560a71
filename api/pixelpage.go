package api

import (
	"crypto/rand"
	"encoding/base64"
	"html/template"
	"net/http"
	"net/url"
	"strings"

	"github.com/linkd/linkd/domain/link"
	"github.com/linkd/linkd/domain/pixel"
	"github.com/linkd/linkd/internal/enrich"
	"github.com/linkd/linkd/queries"
)

// The pixel page: a person's browser following a link with a tracking
// pixel gets, instead of the 302, a small page that loads the platform's
// tag (its standard snippet), fires a page view, and goes on to the target
// as soon as the tag has loaded and had a moment to send (pixelSettleMS),
// or after pixelMaxWaitMS whatever happens. Without JavaScript a meta
// refresh goes on, after the platform's image beacon where it has one. Its
// Content-Security-Policy lets the page reach the platform's hosts and
// nothing else. Scripts, API clients, crawlers and HEAD get the 302 as
// before (docs/decisions.md, "UTM templates and pixels").

const (
	pixelSettleMS  = 300
	pixelMaxWaitMS = 1500
)

// pixelVendor is what the page of one platform loads.
type pixelVendor struct {
	script func(id string) string // the tag's script
	beacon func(id string) string // the image beacon of its noscript snippet ("": none)
	hosts  string                 // CSP sources the tag talks to
}

var pixelVendors = map[string]pixelVendor{
	pixel.TypeMeta: {
		script: func(string) string { return "https://connect.facebook.net/en_US/fbevents.js" },
		beacon: func(id string) string {
			return "https://www.facebook.com/tr?id=" + url.QueryEscape(id) + "&ev=PageView&noscript=1"
		},
		hosts: "https://connect.facebook.net https://www.facebook.com https://*.facebook.com",
	},
	pixel.TypeGoogle: {
		script: func(id string) string { return "https://www.googletagmanager.com/gtag/js?id=" + url.QueryEscape(id) },
		hosts: "https://www.googletagmanager.com https://*.google-analytics.com https://*.analytics.google.com " +
			"https://www.google.com https://*.doubleclick.net https://www.googleadservices.com",
	},
	pixel.TypeLinkedIn: {
		script: func(string) string { return "https://snap.licdn.com/li.lms-analytics/insight.min.js" },
		beacon: func(id string) string {
			return "https://px.ads.linkedin.com/collect/?pid=" + url.QueryEscape(id) + "&fmt=gif"
		},
		hosts: "https://snap.licdn.com https://px.ads.linkedin.com https://*.linkedin.com",
	},
	pixel.TypeTikTok: {
		script: func(id string) string {
			return "https://analytics.tiktok.com/i18n/pixel/events.js?sdkid=" + url.QueryEscape(id) + "&lib=ttq"
		},
		hosts: "https://analytics.tiktok.com https://*.tiktok.com",
	},
	pixel.TypeX: {
		script: func(string) string { return "https://static.ads-twitter.com/uwt.js" },
		beacon: func(id string) string {
			return "https://analytics.twitter.com/i/adsct?txn_id=" + url.QueryEscape(id) + "&p_id=Twitter&tw_sale_amount=0&tw_order_quantity=0"
		},
		hosts: "https://static.ads-twitter.com https://analytics.twitter.com https://t.co https://*.twitter.com https://*.x.com",
	},
}

// wantsPixelPage tells whether an access gets the pixel page: a link with
// a pixel, followed by a browser (a person's, or an automated browser such
// as HeadlessChrome, which runs pages as a person's does; never a crawler,
// preview fetcher or script) that accepts HTML, on GET or the password
// form's POST, to a target the page may navigate to (never a scheme the
// browser would run in the short link's origin; link validation refuses
// those already).
func wantsPixelPage(r *http.Request, l *queries.Link, info *enrich.Result, target string) bool {
	if l.Pixel == nil || r.UserAgent() == "" || info.Bot && !automatedBrowser[info.BotName] {
		return false
	}
	if u, err := url.Parse(target); err != nil || u.Scheme == "" || link.IsBrowserScheme(u.Scheme) {
		return false
	}
	if r.Method != http.MethodGet && r.Method != http.MethodPost {
		return false
	}
	if _, ok := pixelVendors[l.Pixel.Type]; !ok {
		return false
	}
	return strings.Contains(strings.ToLower(r.Header.Get("Accept")), "text/html")
}

// automatedBrowser are the bots (by the enrichment's name) that are real
// browsers: they get the page, and, as bots, are not counted.
var automatedBrowser = map[string]bool{"HeadlessChrome": true, "PhantomJS": true}

// pixelTemplate: html/template escapes the target and the id for each
// context (JavaScript strings, URLs, attributes).
var pixelTemplate = template.Must(template.New("pixel").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><meta name="robots" content="noindex">
<title>Redirecting…</title>
<noscript><meta http-equiv="refresh" content="{{.Refresh}};url={{.RefreshURL}}"></noscript>
<style>body{font-family:system-ui,sans-serif;max-width:28rem;margin:15vh auto;padding:0 1rem;color:#222}a{color:#0b57d0;word-break:break-all}</style>
<script nonce="{{.Nonce}}">
(function(){
var target={{.Target}},id={{.ID}},done=false,w=window;
function go(){if(!done){done=true;w.location.replace(target)}}
setTimeout(go,{{.MaxWait}});
{{if eq .Type "meta"}}var n=w.fbq=function(){n.callMethod?n.callMethod.apply(n,arguments):n.queue.push(arguments)};if(!w._fbq)w._fbq=n;n.push=n;n.loaded=true;n.version="2.0";n.queue=[];
w.fbq("init",id);w.fbq("track","PageView");
{{else if eq .Type "google"}}w.dataLayer=w.dataLayer||[];w.gtag=function(){w.dataLayer.push(arguments)};w.gtag("js",new Date());w.gtag("config",id);
{{else if eq .Type "linkedin"}}w._linkedin_partner_id=id;w._linkedin_data_partner_ids=[id];w.lintrk=function(a,b){w.lintrk.q.push([a,b])};w.lintrk.q=[];
{{else if eq .Type "tiktok"}}w.TiktokAnalyticsObject="ttq";var q=w.ttq=w.ttq||[];q.methods=["page","track","identify","instances","debug","on","off","once","ready","alias","group","enableCookie","disableCookie"];
q.setAndDefer=function(o,m){o[m]=function(){o.push([m].concat(Array.prototype.slice.call(arguments,0)))}};for(var i=0;i<q.methods.length;i++)q.setAndDefer(q,q.methods[i]);
q._i={};q._i[id]=[];q._i[id]._u="https://analytics.tiktok.com/i18n/pixel/events.js";q._t={};q._t[id]=+new Date;q._o={};q._o[id]={};q.page();
{{else if eq .Type "x"}}var s=w.twq=function(){s.exe?s.exe.apply(s,arguments):s.queue.push(arguments)};s.version="1.1";s.queue=[];w.twq("config",id);
{{end}}var e=document.createElement("script");e.async=true;e.src={{.Script}};
e.onload=function(){setTimeout(go,{{.Settle}})};e.onerror=go;document.head.appendChild(e);
})();
</script></head>
<body><p>Redirecting to <a id="target" href="{{.Target}}">{{.Host}}</a>…</p>{{with .Beacon}}<noscript><img src="{{.}}" width="1" height="1" alt=""></noscript>{{end}}</body></html>
`))

// servePixelPage writes the pixel page of p, going on to target.
func servePixelPage(w http.ResponseWriter, p *queries.Pixel, target string) {
	v := pixelVendors[p.Type]
	var nb [18]byte
	_, _ = rand.Read(nb[:])
	nonce := base64.RawURLEncoding.EncodeToString(nb[:]) // no + or /, which an attribute would escape
	data := map[string]any{
		"Type": p.Type, "ID": p.PixelID, "Target": template.URL(target), "Host": hostOf(target),
		"Script": v.script(p.PixelID), "Nonce": nonce, "MaxWait": pixelMaxWaitMS, "Settle": pixelSettleMS,
		// A quote would end the refresh's URL: percent-encode it.
		"RefreshURL": strings.NewReplacer("'", "%27", `"`, "%22").Replace(target), "Refresh": 0,
	}
	if v.beacon != nil {
		data["Beacon"] = v.beacon(p.PixelID)
		data["Refresh"] = 1 // a moment for the beacon before the refresh
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer-when-downgrade")
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'nonce-"+nonce+"' "+v.hosts+"; img-src "+v.hosts+
		"; connect-src "+v.hosts+"; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'")
	w.WriteHeader(http.StatusOK)
	_ = pixelTemplate.Execute(w, data)
}

// hostOf is what the page shows of the target: its host, else the target.
func hostOf(target string) string {
	if u, err := url.Parse(target); err == nil && u.Host != "" {
		return u.Host
	}
	return target
}
