package api

import (
	"context"
	"errors"
	"html/template"
	"math"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/gorilla/mux"

	"github.com/linkd/linkd/commands"
	"github.com/linkd/linkd/domain"
	"github.com/linkd/linkd/domain/click"
	"github.com/linkd/linkd/eventstore"
	"github.com/linkd/linkd/internal/clicklimit"
	"github.com/linkd/linkd/internal/deadline"
	"github.com/linkd/linkd/internal/enrich"
	"github.com/linkd/linkd/queries"
)

// ClickRecorder counts a click.
type ClickRecorder interface {
	Handle(ctx context.Context, c commands.RecordClick) (click.Recorded, commands.Result, error)
}

// RedirectConfig tunes the short-link server.
type RedirectConfig struct {
	// SecureCookies marks the svc_tid cookie Secure (https short URLs).
	SecureCookies bool
	// ClickLimit bounds the clicks one visitor (client network and user
	// agent) makes count on one link per hour; beyond it accesses are still answered,
	// and not counted. Nil: no limit.
	ClickLimit *clicklimit.Limiter
}

// Redirector answers short links: /{code} on the default domain and on
// verified custom domains. Whether and where a link may be followed is
// the LinkAccess query's to say; the Redirector turns its answer into a
// redirect or a page, and records the click.
type Redirector struct {
	cfg      RedirectConfig
	access   queries.LinkAccessHandler
	rec      ClickRecorder
	enricher *enrich.Enricher
	clock    interface{ Now() time.Time }
	log      interface{ Error(string, ...any) }
}

// NewRedirector builds the short-link server.
func NewRedirector(cfg RedirectConfig, access queries.LinkAccessHandler, rec ClickRecorder, en *enrich.Enricher, clock interface{ Now() time.Time }, log interface{ Error(string, ...any) }) *Redirector {
	return &Redirector{cfg: cfg, access: access, rec: rec, enricher: en, clock: clock, log: log}
}

// ServeHTTP answers /{code}.
func (rd *Redirector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	code := mux.Vars(r)["code"]
	if code == "" {
		code = strings.TrimPrefix(r.URL.Path, "/")
	}
	rd.ServeCode(w, r, code)
}

// ServeCode serves the short link of code: ServeHTTP for a caller that
// knows the code already (the server's path for short links, which skips
// the router: no route variables to look up in the request's context).
func (rd *Redirector) ServeCode(w http.ResponseWriter, r *http.Request, code string) {
	ctx := r.Context()
	// Answered within milliseconds: no need to watch for the client going
	// away meanwhile (internal/deadline).
	deadline.Quick(ctx)
	now := rd.clock.Now()
	info := rd.enricher.Enrich(r, now)
	q := queries.LinkAccess{
		Host: r.Host, Code: code, Channel: queries.ShortURL,
		// Known crawlers and preview fetchers are not counted; scripts are
		// (docs/decisions.md, "Short links").
		Counted: r.Method != http.MethodHead && (!info.Bot || info.Script),
		Country: info.Country, Platform: info.Platform, At: now,
	}
	if r.Method == http.MethodPost {
		// The password form posts here. Wrong attempts are counted per
		// client address and link (a keyed hash of the address, never the
		// address itself): a client cannot escape the limit by changing
		// its user agent.
		pw := r.PostFormValue("password")
		q.Password, q.Client = &pw, rd.enricher.AddressKey(r, now)
	}
	a, err := rd.decide(ctx, &q, info.Network, r.UserAgent(), now)
	if err != nil {
		rd.fail(w, err)
		return
	}
	switch a.Outcome {
	case queries.NotFound:
		page(w, http.StatusNotFound, pageNotFound, nil)
		return
	case queries.Expired:
		page(w, http.StatusGone, pageExpired, nil)
		return
	case queries.Excluded:
		page(w, http.StatusUnavailableForLegalReasons, pageExcluded, nil)
		return
	case queries.PasswordRequired, queries.PasswordThrottled, queries.PasswordWrong:
		data := map[string]any{"Description": a.Link.PasswordDescription, "Action": r.URL.RequestURI()}
		status := http.StatusOK
		switch a.Outcome {
		case queries.PasswordThrottled:
			w.Header().Set("Retry-After", retryAfter(a.RetryAfter))
			data["Error"] = "Too many wrong attempts. Wait a minute and try again."
			status = http.StatusTooManyRequests
		case queries.PasswordWrong:
			data["Error"] = "Wrong password."
			status = http.StatusUnauthorized
		}
		page(w, status, pagePassword, data)
		return
	}
	// Link pages (api/linkpages.go): a preview for fetchers, the WhatsApp
	// message, the app page below.
	if !q.Counted && rd.servePreview(w, r, &a, &info) {
		return
	}
	a.Target = linkTarget(&a)
	var trackingID string
	if q.Counted {
		ev, _, err := rd.rec.Handle(ctx, commands.RecordClick{Click: clickOf(a.Link, &info, r, click.SourceRedirect, a.Target, now), Limit: a.Link.ExpirationClickCount})
		if err != nil {
			if domain.KindOf(err) == domain.KindGone {
				page(w, http.StatusGone, pageExpired, nil)
				return
			}
			rd.fail(w, err)
			return
		}
		trackingID = ev.TrackingID
	}
	target := a.Target
	if trackingID != "" {
		target = a.WithTracking(trackingID)
		h := w.Header()
		h["Set-Cookie"] = append(h["Set-Cookie"], trackingCookie(trackingID, rd.cfg.SecureCookies))
	}
	if info.FromApp && rd.serveAppPage(w, &a, &info, target, trackingID) {
		return
	}
	h := w.Header()
	if wantsPixelPage(r, a.Link, &info, target) { // api/pixelpage.go
		servePixelPage(w, a.Link.Pixel, target)
		return
	}
	h["Location"] = []string{target}
	h["Cache-Control"] = privateNoStore
	h["Referrer-Policy"] = noReferrerWhenDowngrade
	w.WriteHeader(http.StatusFound)
}

// Header values every redirect sends, shared rather than allocated per
// answer (nothing changes a value in place; Add copies).
var (
	privateNoStore          = []string{"private, no-store"}
	noReferrerWhenDowngrade = []string{"no-referrer-when-downgrade"}
)

// trackingCookie is the Set-Cookie value of the svc_tid cookie: what
// http.SetCookie writes for it (TestTrackingCookie), without building a
// Cookie on every redirect. An id that is not a plain token (linkd's are
// UUIDs) goes through http.Cookie.
func trackingCookie(id string, secure bool) string {
	for i := 0; i < len(id); i++ {
		if c := id[i]; !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-') {
			c := http.Cookie{Name: "svc_tid", Value: id, Path: "/", MaxAge: trackingMaxAge,
				Secure: secure, SameSite: http.SameSiteLaxMode}
			return c.String()
		}
	}
	if secure {
		return "svc_tid=" + id + "; Path=/; Max-Age=" + trackingMaxAgeText + "; Secure; SameSite=Lax"
	}
	return "svc_tid=" + id + "; Path=/; Max-Age=" + trackingMaxAgeText + "; SameSite=Lax"
}

const trackingMaxAge = int(click.TrackingTTL / time.Second)

var trackingMaxAgeText = strconv.Itoa(trackingMaxAge)

// decide asks LinkAccess, then applies the click limit: a counted access
// by a visitor over the limit on this link is answered without being
// counted (asking again for a click-limited link, since an access that is
// not counted learns its expiry from the count). One under the limit is
// counted in the limiter at once (clicklimit.Take), before its click is
// recorded: should that fail, the limiter overestimates by one, as it may.
func (rd *Redirector) decide(ctx context.Context, q *queries.LinkAccess, network netip.Addr, userAgent string, now time.Time) (queries.Access, error) {
	a, err := rd.access.Handle(ctx, *q)
	if err != nil || a.Outcome != queries.Granted || !q.Counted || rd.cfg.ClickLimit == nil {
		return a, err
	}
	key := rd.cfg.ClickLimit.KeyOf(network, userAgent, a.Link.ID)
	if !rd.cfg.ClickLimit.Take(key, now) {
		return a, nil
	}
	q.Counted = false
	if a.Link.ExpirationClickCount != nil {
		a, err = rd.access.Handle(ctx, *q)
	}
	return a, err
}

// retryAfter is a Retry-After value: a duration in whole seconds, rounded
// up.
func retryAfter(d time.Duration) string {
	return strconv.Itoa(int(math.Ceil(d.Seconds())))
}

// clickOf builds the click event of an access.
func clickOf(l *queries.Link, info *enrich.Result, r *http.Request, source, destination string, now time.Time) click.Recorded {
	c := click.Recorded{
		LinkID: l.ID, WorkspaceID: l.WorkspaceID, Code: l.Code, Timestamp: now, Source: source,
		QR: r.URL.RawQuery != "" && r.URL.Query().Get("qr") == "1", Visitor: info.VisitorHash, Destination: destination,
		Browser: info.Browser, BrowserVersion: info.BrowserVersion, OS: info.OS, OSVersion: info.OSVersion,
		DeviceType: info.DeviceType, Device: info.Device, FromApp: info.FromApp, App: info.App,
		Language: info.Language, Referrer: info.Referrer, ReferrerURL: info.ReferrerURL,
		Country: info.Country, Continent: info.Continent, City: info.City, Region: info.Region,
	}
	if l.ProjectID != nil {
		c.ProjectID = *l.ProjectID
	}
	if l.DomainID != nil {
		c.DomainID = *l.DomainID
	}
	if l.EnableConversionTracking {
		c.ClickID = newClickID(now)
		c.TrackingID = c.ClickID
	}
	return c
}

func (rd *Redirector) fail(w http.ResponseWriter, err error) {
	rd.log.Error("redirect failed", "err", err)
	if errors.Is(err, eventstore.ErrUnavailable) {
		// The click cannot be recorded: no redirect that is not counted.
		w.Header().Set("Retry-After", "1")
		page(w, http.StatusServiceUnavailable, pageError, nil)
		return
	}
	page(w, http.StatusInternalServerError, pageError, nil)
}

// The HTML pages of short links. html/template escapes what they show.
var pages = template.Must(template.New("pages").Parse(`
{{define "head"}}<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><meta name="robots" content="noindex"><title>{{.}}</title><style>body{font-family:system-ui,sans-serif;max-width:28rem;margin:15vh auto;padding:0 1rem;color:#222}h1{font-size:1.4rem}input,button{font:inherit;padding:.5rem;margin:.25rem 0;width:100%;box-sizing:border-box}.err{color:#b00020}</style></head><body>{{end}}
{{define "notfound"}}{{template "head" "Link not found"}}<h1>Link not found</h1><p>This short link does not exist.</p></body></html>{{end}}
{{define "expired"}}{{template "head" "Link expired"}}<h1>This link has expired</h1><p>It is no longer available.</p></body></html>{{end}}
{{define "excluded"}}{{template "head" "Unavailable"}}<h1>Not available in your country</h1><p>This link is not available where you are.</p></body></html>{{end}}
{{define "error"}}{{template "head" "Error"}}<h1>Something went wrong</h1><p>Please try again.</p></body></html>{{end}}
{{define "password"}}{{template "head" "Password required"}}<h1>Password required</h1>{{with .Description}}<p>{{.}}</p>{{end}}{{with .Error}}<p class="err">{{.}}</p>{{end}}<form method="post" action="{{.Action}}"><input type="password" name="password" autofocus required aria-label="Password"><button type="submit">Continue</button></form></body></html>{{end}}
`))

const (
	pageNotFound = "notfound"
	pageExpired  = "expired"
	pageExcluded = "excluded"
	pageError    = "error"
	pagePassword = "password"
)

func page(w http.ResponseWriter, status int, name string, data any) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'")
	w.WriteHeader(status)
	_ = pages.ExecuteTemplate(w, name, data)
}
