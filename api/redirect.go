package api

import (
	"context"
	"html/template"
	"math"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/mux"

	"github.com/linkd/linkd/commands"
	"github.com/linkd/linkd/domain"
	"github.com/linkd/linkd/domain/click"
	"github.com/linkd/linkd/internal/enrich"
	"github.com/linkd/linkd/queries"
)

// LinkSource is what redirects read: links by code, verified domains by
// name.
type LinkSource interface {
	LinkByCode(ctx context.Context, domainID, code string) (queries.Link, bool, error)
	VerifiedDomain(ctx context.Context, name string) (queries.Domain, bool, error)
}

// ClickRecorder counts a click.
type ClickRecorder interface {
	Handle(ctx context.Context, c commands.RecordClick) (click.Recorded, commands.Result, error)
}

// RedirectConfig tunes the short-link server.
type RedirectConfig struct {
	// DefaultHost is the host of the default short domain (its port is
	// ignored when matching a request's Host).
	DefaultHost string
	// CacheSize bounds the links kept in memory (default 100,000).
	CacheSize int
	// PasswordAttempts wrong passwords per client and link per
	// PasswordWindow before refusals (default 5 per minute).
	PasswordAttempts int
	PasswordWindow   time.Duration
	// SecureCookies marks the svc_tid cookie Secure (https short URLs).
	SecureCookies bool
}

// Redirector answers short links: /{code} on the default domain and on
// verified custom domains.
type Redirector struct {
	cfg      RedirectConfig
	src      LinkSource
	rec      ClickRecorder
	enricher *enrich.Enricher
	cipher   Decrypter
	now      func() time.Time
	log      interface{ Error(string, ...any) }

	mu      sync.RWMutex
	links   map[string]*queries.Link // domainID + "/" + code
	byID    map[string]string        // link id -> cache key
	domains map[string]string        // host -> domain id ("" for none)

	throttle    *attempts
	defaultHost string // hostOnly(cfg.DefaultHost)
}

// NewRedirector builds the short-link server.
func NewRedirector(cfg RedirectConfig, src LinkSource, rec ClickRecorder, en *enrich.Enricher, cipher Decrypter, log interface{ Error(string, ...any) }) *Redirector {
	if cfg.CacheSize <= 0 {
		cfg.CacheSize = 100_000
	}
	if cfg.PasswordAttempts <= 0 {
		cfg.PasswordAttempts = 5
	}
	if cfg.PasswordWindow <= 0 {
		cfg.PasswordWindow = time.Minute
	}
	return &Redirector{
		cfg: cfg, src: src, rec: rec, enricher: en, cipher: cipher, log: log,
		now:   func() time.Time { return time.Now().UTC() },
		links: map[string]*queries.Link{}, byID: map[string]string{}, domains: map[string]string{},
		throttle:    newAttempts(cfg.PasswordAttempts, cfg.PasswordWindow),
		defaultHost: hostOnly(cfg.DefaultHost),
	}
}

// Invalidate forgets cached links (by id) and, for domain changes, the
// host table. The core projection calls it after each applied batch.
func (rd *Redirector) Invalidate(kind, id string) {
	rd.mu.Lock()
	defer rd.mu.Unlock()
	switch kind {
	case "link":
		if key, ok := rd.byID[id]; ok {
			delete(rd.links, key)
			delete(rd.byID, id)
		}
	case "domain", "workspace", "reset":
		rd.links = map[string]*queries.Link{}
		rd.byID = map[string]string{}
		rd.domains = map[string]string{}
	}
}

// hostOnly strips a port and lower-cases a host.
func hostOnly(h string) string {
	if host, _, err := net.SplitHostPort(h); err == nil {
		h = host
	}
	return strings.TrimSuffix(strings.ToLower(h), ".")
}

// domainOf maps a request's Host to the id of a verified custom domain, or
// "" for the default domain. ok is false for a host that is neither.
func (rd *Redirector) domainOf(ctx context.Context, host string) (string, bool, error) {
	h := hostOnly(host)
	if h == "" || h == rd.defaultHost {
		return "", true, nil
	}
	rd.mu.RLock()
	id, ok := rd.domains[h]
	rd.mu.RUnlock()
	if ok {
		return id, true, nil
	}
	d, found, err := rd.src.VerifiedDomain(ctx, h)
	if err != nil {
		return "", false, err
	}
	if found {
		id = d.ID
	}
	rd.mu.Lock()
	if len(rd.domains) > 10_000 {
		rd.domains = map[string]string{}
	}
	rd.domains[h] = id
	rd.mu.Unlock()
	// An unknown host serves the default domain's links: linkd may sit
	// behind a proxy under any name.
	return id, true, nil
}

// lookup returns the link of a code on a domain, from the cache when it
// can.
func (rd *Redirector) lookup(ctx context.Context, domainID, code string) (*queries.Link, error) {
	key := domainID + "/" + code
	rd.mu.RLock()
	l, ok := rd.links[key]
	rd.mu.RUnlock()
	if ok {
		return l, nil
	}
	v, found, err := rd.src.LinkByCode(ctx, domainID, code)
	if err != nil || !found {
		return nil, err
	}
	rd.mu.Lock()
	if len(rd.links) >= rd.cfg.CacheSize {
		rd.links = map[string]*queries.Link{}
		rd.byID = map[string]string{}
	}
	rd.links[key] = &v
	rd.byID[v.ID] = key
	rd.mu.Unlock()
	return &v, nil
}

// ServeHTTP answers /{code}.
func (rd *Redirector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	code := mux.Vars(r)["code"]
	if code == "" {
		code = strings.TrimPrefix(r.URL.Path, "/")
	}
	ctx := r.Context()
	domainID, _, err := rd.domainOf(ctx, r.Host)
	if err != nil {
		rd.fail(w, err)
		return
	}
	l, err := rd.lookup(ctx, domainID, code)
	if err != nil {
		rd.fail(w, err)
		return
	}
	if l == nil {
		page(w, http.StatusNotFound, pageNotFound, nil)
		return
	}
	now := rd.now()
	if l.ExpirationDate != nil && !now.Before(*l.ExpirationDate) {
		page(w, http.StatusGone, pageExpired, nil)
		return
	}
	info := rd.enricher.Enrich(r, now)
	// Known crawlers and preview fetchers are not counted; scripts are
	// (docs/decisions.md, "Short links").
	count := r.Method != http.MethodHead && (!info.Bot || info.Script)
	// A click-limited link is expired once its clicks are used up. A
	// counted access learns it from RecordClick; an access that is not
	// counted (a bot, HEAD) or that stops at the password form asks the
	// click stream here, since the cached link's count lags behind.
	if l.ExpirationClickCount != nil && (!count || l.PasswordEnc != "") {
		used, err := rd.usedUp(ctx, l)
		if err != nil {
			rd.fail(w, err)
			return
		}
		if used {
			page(w, http.StatusGone, pageExpired, nil)
			return
		}
	}
	if len(l.ExcludedCountries) > 0 && info.Country != "" {
		for _, c := range l.ExcludedCountries {
			if strings.EqualFold(c.Code, info.Country) {
				page(w, http.StatusUnavailableForLegalReasons, pageExcluded, nil)
				return
			}
		}
	}
	if l.PasswordEnc != "" && !rd.passwordOK(w, r, l, now) {
		return
	}
	target := Destination(l, info.Platform)
	var clickID string
	if count {
		ev, _, err := rd.rec.Handle(ctx, commands.RecordClick{Click: clickOf(l, &info, r, click.SourceRedirect, target, now), Limit: l.ExpirationClickCount})
		if err != nil {
			if domain.KindOf(err) == domain.KindGone {
				page(w, http.StatusGone, pageExpired, nil)
				return
			}
			rd.fail(w, err)
			return
		}
		clickID = ev.TrackingID
	}
	if clickID != "" {
		target = addParams(target, [][2]string{{"svc_tid", clickID}})
		http.SetCookie(w, &http.Cookie{
			Name: "svc_tid", Value: clickID, Path: "/", MaxAge: int(click.TrackingTTL / time.Second),
			HttpOnly: false, Secure: rd.cfg.SecureCookies, SameSite: http.SameSiteLaxMode,
		})
	}
	h := w.Header()
	h.Set("Location", target)
	h.Set("Cache-Control", "private, no-store")
	h.Set("Referrer-Policy", "no-referrer-when-downgrade")
	w.WriteHeader(http.StatusFound)
}

// ClickCounter tells the exact number of clicks counted on a link (the
// click recorder implements it).
type ClickCounter interface {
	Clicks(ctx context.Context, linkID string) (int64, error)
}

// usedUp reports whether a click-limited link has counted all its clicks.
func (rd *Redirector) usedUp(ctx context.Context, l *queries.Link) (bool, error) {
	limit := l.ExpirationClickCount
	if limit == nil {
		return false, nil
	}
	if l.Clicks >= *limit {
		return true, nil
	}
	c, ok := rd.rec.(ClickCounter)
	if !ok {
		return false, nil
	}
	n, err := c.Clicks(ctx, l.ID)
	return n >= *limit, err
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
		c.ClickID = newClickID()
		c.TrackingID = c.ClickID
	}
	return c
}

// Destination is where a link sends a visitor on a platform: the deep link
// for the platform when set, else the original URL, with the link's UTM
// values.
func Destination(l *queries.Link, platform string) string {
	target := enrich.ChooseTarget(platform, l.OriginalURL, l.IOSLink, l.AndroidLink, l.WindowsLink, l.MacOSLink)
	var utm [][2]string
	for _, kv := range [][2]string{
		{"utm_source", l.UTMSource}, {"utm_medium", l.UTMMedium}, {"utm_campaign", l.UTMCampaign},
		{"utm_term", l.UTMTerm}, {"utm_content", l.UTMContent}, {"utm_name", l.UTMName},
	} {
		if kv[1] != "" {
			utm = append(utm, kv)
		}
	}
	if len(utm) == 0 {
		return target
	}
	return addParams(target, utm)
}

// addParams appends query parameters to an http(s) URL, replacing any of
// the same names and leaving the rest of its query as it was.
func addParams(target string, params [][2]string) string {
	lower := strings.ToLower(target)
	if !strings.HasPrefix(lower, "http://") && !strings.HasPrefix(lower, "https://") {
		return target
	}
	frag := ""
	if i := strings.IndexByte(target, '#'); i >= 0 {
		target, frag = target[:i], target[i:]
	}
	base, query, _ := strings.Cut(target, "?")
	var kept []string
	if query != "" {
		for _, pair := range strings.Split(query, "&") {
			name, _, _ := strings.Cut(pair, "=")
			if n, err := url.QueryUnescape(name); err == nil {
				name = n
			}
			drop := false
			for _, p := range params {
				if name == p[0] {
					drop = true
					break
				}
			}
			if !drop && pair != "" {
				kept = append(kept, pair)
			}
		}
	}
	for _, p := range params {
		kept = append(kept, url.QueryEscape(p[0])+"="+url.QueryEscape(p[1]))
	}
	return base + "?" + strings.Join(kept, "&") + frag
}

func (rd *Redirector) fail(w http.ResponseWriter, err error) {
	rd.log.Error("redirect failed", "err", err)
	page(w, http.StatusInternalServerError, pageError, nil)
}

// passwordOK shows the password form until the right password comes; it
// reports whether the request may proceed.
//
// Wrong attempts are counted per client address and link (a keyed hash of
// the address, never the address itself): a client cannot escape the limit
// by changing its user agent.
func (rd *Redirector) passwordOK(w http.ResponseWriter, r *http.Request, l *queries.Link, now time.Time) bool {
	data := map[string]any{"Description": l.PasswordDescription, "Action": r.URL.RequestURI()}
	if r.Method != http.MethodPost {
		page(w, http.StatusOK, pagePassword, data)
		return false
	}
	who := rd.enricher.AddressKey(r, now) + "|" + l.ID
	if !rd.throttle.allowed(who, now) {
		w.Header().Set("Retry-After", rd.retryAfter())
		data["Error"] = "Too many wrong attempts. Wait a minute and try again."
		page(w, http.StatusTooManyRequests, pagePassword, data)
		return false
	}
	given := r.PostFormValue("password")
	want, err := rd.cipher.Decrypt(l.PasswordEnc)
	if err != nil {
		rd.fail(w, err)
		return false
	}
	if !constantTimeEqual(given, want) {
		rd.throttle.fail(who, now)
		data["Error"] = "Wrong password."
		page(w, http.StatusUnauthorized, pagePassword, data)
		return false
	}
	return true
}

// retryAfter is the Retry-After of a throttled password attempt: the
// window, in whole seconds.
func (rd *Redirector) retryAfter() string {
	return strconv.Itoa(int(math.Ceil(rd.cfg.PasswordWindow.Seconds())))
}

// attempts counts wrong passwords per client and link in a window.
type attempts struct {
	mu     sync.Mutex
	max    int
	window time.Duration
	seen   map[string][]time.Time
}

func newAttempts(max int, window time.Duration) *attempts {
	return &attempts{max: max, window: window, seen: map[string][]time.Time{}}
}

func (a *attempts) recent(key string, now time.Time) []time.Time {
	ts := a.seen[key]
	i := 0
	for i < len(ts) && now.Sub(ts[i]) > a.window {
		i++
	}
	return ts[i:]
}

func (a *attempts) allowed(key string, now time.Time) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.recent(key, now)) < a.max
}

func (a *attempts) fail(key string, now time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.seen) > 100_000 {
		a.seen = map[string][]time.Time{}
	}
	a.seen[key] = append(a.recent(key, now), now)
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
