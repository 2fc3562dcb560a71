// Package dashboard is linkd's web dashboard (ADR 0102): server-rendered
// html/template pages under /dashboard/, each a view over the HTTP
// interface (package api) itself. A page calls the /v1 handlers and the
// Radar reports in process through the interface's router, as the
// signed-in user (api.AsUser), so a person sees and changes exactly what
// their keys would let them, through the same access rules, commands and
// queries. Sign-in, sessions and invitations are commands of its own
// (commands.Commands). The only JavaScript is one embedded file (the QR
// preview and small conveniences); charts are SVG drawn on the server.
package dashboard

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"embed"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"html/template"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/mux"

	"github.com/linkd/linkd/api"
	"github.com/linkd/linkd/commands"
	"github.com/linkd/linkd/domain/user"
	"github.com/linkd/linkd/internal/clock"
	"github.com/linkd/linkd/internal/password"
)

//go:embed templates static
var files embed.FS

const (
	sessionCookie   = "linkd_session"
	loginCSRFCookie = "linkd_login_csrf"
	csrfField       = "csrf_token"
	// sessionRecheck is how long a session read from its stream is
	// believed before it is read again (a sign-out on another instance
	// shows within it).
	sessionRecheck = 5 * time.Second
	// dashboardCSP allows the dashboard's own script, style and images
	// only: no inline script, no third party.
	dashboardCSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
		"form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)

// session is a signed-in person. Sessions are events (user.SessionStarted,
// user.SessionEnded) in a stream named by the hash of the cookie's value,
// so a restart or another instance keeps them; this is the copy in memory.
type session struct {
	userID, email string
	csrf          string
	checked       time.Time // when its stream was last read
}

// Config holds the settings the dashboard needs.
type Config struct {
	// DefaultDomain is the host (and port) of short URLs.
	DefaultDomain string
	// PublicScheme is "http" (the default) or "https": cookies are Secure
	// under https, and invitation links use it.
	PublicScheme string
}

// Waiter waits until the interface's reads show a command's events
// (api.Server.WaitCore): the dashboard sends a few commands itself.
type Waiter interface {
	WaitCore(ctx context.Context, res commands.Result)
}

// Addresser names the client of a request for the sign-in throttle
// (enrich.Enricher.AddressKey: an IPv6 /64 is one client).
type Addresser interface {
	AddressKey(r *http.Request, now time.Time) string
}

// Deps are the parts a Dashboard is built from.
type Deps struct {
	// API is the interface the pages are views over (*api.Server).
	API Waiter
	// Commands signs people in and out and handles invitations.
	Commands *commands.Commands
	// Addresses names sign-in's clients; without it, the remote address.
	Addresses Addresser
	Logger    *slog.Logger
	// Clock is the one clock of the application (cmd/linkd/app).
	Clock interface{ Now() time.Time }
}

// Dashboard serves the pages.
type Dashboard struct {
	cfg      Config
	api      Waiter
	cmd      *commands.Commands
	addrs    Addresser
	log      *slog.Logger
	clock    interface{ Now() time.Time }
	router   http.Handler // the interface's router: pages call it
	pages    map[string]*template.Template
	static   http.Handler
	throttle *password.Throttle

	mu       sync.Mutex
	sessions map[string]*session // hash of the cookie's value -> session read lately
}

// New builds a Dashboard; Routes serves it.
func New(cfg Config, deps Deps) *Dashboard {
	if cfg.PublicScheme == "" {
		cfg.PublicScheme = "http"
	}
	if deps.Logger == nil {
		deps.Logger = slog.Default()
	}
	if deps.Clock == nil {
		deps.Clock = clock.System{}
	}
	d := &Dashboard{cfg: cfg, api: deps.API, cmd: deps.Commands, addrs: deps.Addresses, log: deps.Logger, clock: deps.Clock,
		sessions: map[string]*session{}, throttle: password.NewThrottle(5, 30, time.Minute)}
	d.pages = parsePages()
	sub, err := fs.Sub(files, "static")
	if err != nil {
		panic(err)
	}
	static := http.FileServer(http.FS(sub))
	d.static = http.StripPrefix("/dashboard/static/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "public, max-age=3600")
		static.ServeHTTP(w, r)
	}))
	return d
}

func parsePages() map[string]*template.Template {
	funcs := template.FuncMap{
		"str": func(v any) string {
			switch v := v.(type) {
			case nil:
				return ""
			case string:
				return v
			case json.Number:
				return v.String()
			case bool:
				if v {
					return "yes"
				}
				return "no"
			}
			b, _ := json.Marshal(v)
			return string(b)
		},
		"date":  func(v any) string { s, _ := v.(string); return shortDate(s) },
		"num":   func(v any) string { return formatNumber(number(v)) },
		"money": func(v any) string { return formatMoney(v) },
		"pct":   func(v any) string { return formatPercent(number(v)) },
		"eq":    func(a, b any) bool { return a == b },
		"q":     url.QueryEscape,
		"path":  url.PathEscape,
	}
	base := template.Must(template.New("layout.html").Funcs(funcs).ParseFS(files, "templates/layout.html"))
	names, err := fs.Glob(files, "templates/*.html")
	if err != nil {
		panic(err)
	}
	pages := map[string]*template.Template{}
	for _, n := range names {
		name := strings.TrimSuffix(n[len("templates/"):], ".html")
		if name == "layout" {
			continue
		}
		pages[name] = template.Must(template.Must(base.Clone()).ParseFS(files, n))
	}
	return pages
}

// Routes adds the dashboard's paths to r, the router of the whole
// interface (api.Server.Handler's extra), which the pages call in process.
func (d *Dashboard) Routes(r *mux.Router) {
	d.router = r
	r.PathPrefix("/dashboard/static/").Handler(d.static).Methods(http.MethodGet, http.MethodHead)
	r.HandleFunc("/dashboard", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/dashboard/", http.StatusFound)
	})
	r.HandleFunc("/dashboard/login", d.loginPage).Methods(http.MethodGet, http.MethodHead)
	r.HandleFunc("/dashboard/login", d.login).Methods(http.MethodPost)
	r.HandleFunc("/dashboard/invite/{token}", d.invitePage).Methods(http.MethodGet, http.MethodHead)
	r.HandleFunc("/dashboard/invite/{token}", d.acceptInvite).Methods(http.MethodPost)
	page := func(path string, h func(w http.ResponseWriter, r *http.Request, c *dashCtx), methods ...string) {
		r.Handle(path, d.authed(h)).Methods(methods...)
	}
	get, post := http.MethodGet, http.MethodPost
	page("/dashboard/logout", d.logout, post)
	page("/dashboard/", d.home, get)
	page("/dashboard/links", d.linksPage, get)
	page("/dashboard/links/new", d.linkBuilder, get)
	page("/dashboard/links", d.createLink, post)
	page("/dashboard/links/new", d.createLink, post)
	page("/dashboard/links/{link_id}", d.linkPage, get)
	page("/dashboard/links/{link_id}/qr", d.linkQR, get)
	page("/dashboard/links/{link_id}/archive", d.archiveLink, post)
	page("/dashboard/qr-preview", d.qrPreview, get)
	page("/dashboard/keys", d.keysPage, get)
	page("/dashboard/keys", d.createKey, post)
	page("/dashboard/keys/{key_id}/deactivate", d.deactivateKey, post)
	page("/dashboard/projects", d.projectsPage, get)
	page("/dashboard/projects", d.createProject, post)
	page("/dashboard/domains", d.domainsPage, get)
	page("/dashboard/domains", d.createDomain, post)
	page("/dashboard/domains/{domain_id}/verify", d.verifyDomain, post)
	page("/dashboard/customers", d.customersPage, get)
	page("/dashboard/customers/{customer_id}", d.customerPage, get)
	page("/dashboard/workspaces", d.workspacesPage, get)
	page("/dashboard/workspaces", d.createWorkspace, post)
	page("/dashboard/workspaces/{workspace_id}", d.workspacePage, get)
	page("/dashboard/workspaces/{workspace_id}/members", d.membersPage, get)
	page("/dashboard/workspaces/{workspace_id}/members", d.addMember, post)
	page("/dashboard/workspaces/{workspace_id}/invitations", d.inviteMember, post)
	page("/dashboard/workspaces/{workspace_id}/members/{user_id}/role", d.changeMemberRole, post)
	page("/dashboard/workspaces/{workspace_id}/members/{user_id}/remove", d.removeMember, post)
	page("/dashboard/radar", d.radarIndex, get)
	page("/dashboard/radar/{project_id}", d.radarPage, get)
	page("/dashboard/radar/{project_id}/people/{visitor_id}", d.radarVisitor, get)
	page("/dashboard/utm-templates", d.utmPage, get)
	page("/dashboard/utm-templates", d.createUTM, post)
	page("/dashboard/pixels", d.pixelsPage, get)
	page("/dashboard/pixels", d.createPixel, post)
	page("/dashboard/webhooks", d.webhooksPage, get)
	page("/dashboard/webhooks", d.createWebhook, post)
	page("/dashboard/webhooks/{webhook_id}", d.webhookPage, get)
	r.PathPrefix("/dashboard/").Handler(d.authed(func(w http.ResponseWriter, r *http.Request, c *dashCtx) {
		d.render(w, r, c, http.StatusNotFound, "error", "Not found", map[string]any{"Message": "There is no such page."})
	}))
}

// dashCtx is what a page handler gets: the session, and whom its calls
// to the interface act as (the session's user: what the dashboard shows
// is what a full-access key of theirs reads).
type dashCtx struct {
	sess *session
	as   api.User
}

func securityHeaders(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Security-Policy", dashboardCSP)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "same-origin")
	h.Set("Cache-Control", "no-store")
}

func tokenHash(v string) string {
	sum := sha256.Sum256([]byte(v))
	return hex.EncodeToString(sum[:])
}

func randomToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

func (d *Dashboard) secure() bool { return d.cfg.PublicScheme == "https" }

func (d *Dashboard) cookie(name, value string, maxAge int) *http.Cookie {
	return &http.Cookie{Name: name, Value: value, Path: "/dashboard", HttpOnly: true, SameSite: http.SameSiteLaxMode,
		Secure: d.secure(), MaxAge: maxAge}
}

// csrfOf is the CSRF token of a session: derived from the cookie's value,
// so it is stored nowhere.
func csrfOf(cookie string) string {
	sum := sha256.Sum256([]byte("csrf|" + cookie))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// current returns the request's session, or nil.
func (d *Dashboard) current(r *http.Request) *session {
	c, err := r.Cookie(sessionCookie)
	if err != nil || c.Value == "" || len(c.Value) > 100 {
		return nil
	}
	now := d.clock.Now()
	h := tokenHash(c.Value)
	d.mu.Lock()
	sess := d.sessions[h]
	d.mu.Unlock()
	if sess != nil && now.Sub(sess.checked) < sessionRecheck {
		return sess
	}
	st, ok, err := d.cmd.SessionByHash(r.Context(), h)
	if err != nil {
		d.log.Warn("dashboard: reading a session failed", "err", err)
		return nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if !ok {
		delete(d.sessions, h)
		return nil
	}
	sess = &session{userID: st.UserID, email: st.Email, csrf: csrfOf(c.Value), checked: now}
	d.sessions[h] = sess
	return sess
}

// sameOrigin refuses a request whose Origin (or, without one, Referer)
// names another site.
func sameOrigin(r *http.Request) bool {
	o := r.Header.Get("Origin")
	if o == "" {
		o = r.Header.Get("Referer")
		if o == "" {
			return true // not a browser's cross-site form: the token decides
		}
	}
	u, err := url.Parse(o)
	if err != nil || u.Host == "" {
		return false
	}
	return strings.EqualFold(u.Host, r.Host)
}

func tokensEqual(a, b string) bool {
	return a != "" && subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}

// authed serves a page to a signed-in person; others go to the sign-in
// page. Forms (POST) must come from this site with the session's token:
// else 403, and nothing changes.
func (d *Dashboard) authed(h func(w http.ResponseWriter, r *http.Request, c *dashCtx)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		securityHeaders(w)
		sess := d.current(r)
		if sess == nil {
			next := ""
			if r.Method == http.MethodGet && r.URL.Path != "/dashboard/" {
				next = "?next=" + url.QueryEscape(r.URL.RequestURI())
			}
			http.Redirect(w, r, "/dashboard/login"+next, http.StatusSeeOther)
			return
		}
		c := &dashCtx{sess: sess, as: api.User{ID: sess.userID}}
		if r.Method == http.MethodPost {
			if !sameOrigin(r) || !tokensEqual(r.PostFormValue(csrfField), sess.csrf) {
				d.render(w, r, c, http.StatusForbidden, "error", "Forbidden", map[string]any{
					"Message": "This form was not sent from this dashboard (missing or wrong CSRF token, or another site's Origin). Nothing was changed."})
				return
			}
		}
		h(w, r, c)
	})
}

// page is what every template gets.
type pageView struct {
	Title string
	Nav   string
	Email string
	User  string
	CSRF  string
	Error string
	Flash string
	D     any
}

func (d *Dashboard) render(w http.ResponseWriter, r *http.Request, c *dashCtx, status int, name, title string, data any) {
	t := d.pages[name]
	v := pageView{Title: title, Nav: name, D: data}
	if c != nil {
		v.Email, v.User, v.CSRF = c.sess.email, c.sess.userID, c.sess.csrf
	}
	if m, ok := data.(map[string]any); ok {
		if e, ok := m["Error"].(string); ok {
			v.Error = e
		}
	}
	if f := r.URL.Query().Get("flash"); f != "" && len(f) < 200 {
		v.Flash = f
	}
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, "layout.html", v); err != nil {
		d.log.Error("dashboard: render", "page", name, "err", err)
		http.Error(w, "Internal server error", http.StatusInternalServerError)
		return
	}
	securityHeaders(w)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// ---- sign-in

func (d *Dashboard) loginPage(w http.ResponseWriter, r *http.Request) {
	securityHeaders(w)
	if d.current(r) != nil {
		http.Redirect(w, r, "/dashboard/links", http.StatusSeeOther)
		return
	}
	d.renderLogin(w, r, http.StatusOK, "", r.URL.Query().Get("next"))
}

func (d *Dashboard) renderLogin(w http.ResponseWriter, r *http.Request, status int, msg, next string) {
	d.renderPublic(w, r, status, "login", "Sign in", msg, map[string]any{"Next": safeNext(next), "Email": r.PostFormValue("email")})
}

// renderPublic renders a page for a person without a session (sign-in,
// an invitation), with the sign-in form's token.
func (d *Dashboard) renderPublic(w http.ResponseWriter, r *http.Request, status int, name, title, msg string, data map[string]any) {
	tok := ""
	if c, err := r.Cookie(loginCSRFCookie); err == nil && len(c.Value) == 43 {
		tok = c.Value
	} else {
		tok = randomToken()
		http.SetCookie(w, d.cookie(loginCSRFCookie, tok, 3600))
	}
	var buf bytes.Buffer
	err := d.pages[name].ExecuteTemplate(&buf, "layout.html", pageView{Title: title, Nav: name, CSRF: tok, Error: msg, D: data})
	if err != nil {
		d.log.Error("dashboard: render", "page", name, "err", err)
		http.Error(w, "Internal server error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// safeNext keeps a redirect after sign-in inside the dashboard.
func safeNext(next string) string {
	if strings.HasPrefix(next, "/dashboard/") && !strings.HasPrefix(next, "//") && !strings.ContainsAny(next, "\\\r\n") {
		return next
	}
	return ""
}

func (d *Dashboard) clientKey(r *http.Request) string {
	if d.addrs != nil {
		return d.addrs.AddressKey(r, d.clock.Now())
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

func (d *Dashboard) login(w http.ResponseWriter, r *http.Request) {
	securityHeaders(w)
	c, err := r.Cookie(loginCSRFCookie)
	if !sameOrigin(r) || err != nil || !tokensEqual(r.PostFormValue(csrfField), c.Value) {
		d.renderLogin(w, r, http.StatusForbidden, "This form was not sent from this dashboard (missing or wrong CSRF token). Reload the page and try again.", "")
		return
	}
	next := r.PostFormValue("next")
	email, pw := r.PostFormValue("email"), r.PostFormValue("password")
	now := d.clock.Now()
	client, target := d.clientKey(r), "signin|"+user.EmailKey(email)
	if !d.throttle.Allowed(client, target, now) {
		w.Header().Set("Retry-After", "60")
		d.renderLogin(w, r, http.StatusTooManyRequests, "Too many attempts. Wait a minute and try again.", next)
		return
	}
	u, _, err := d.cmd.SignIn.Handle(r.Context(), commands.SignIn{Email: email, Password: pw})
	if err != nil {
		if err == commands.ErrBadCredentials {
			d.throttle.Failed(client, target, now)
			d.renderLogin(w, r, http.StatusUnauthorized, "Wrong email or password.", next)
			return
		}
		d.log.Error("dashboard: sign-in", "err", err)
		d.renderLogin(w, r, http.StatusInternalServerError, "Signing in failed. Try again.", next)
		return
	}
	if err := d.startSession(r.Context(), w, u.ID, u.Email); err != nil {
		d.log.Error("dashboard: sign-in", "err", err)
		d.renderLogin(w, r, http.StatusInternalServerError, "Signing in failed. Try again.", next)
		return
	}
	if next = safeNext(next); next == "" {
		next = "/dashboard/links"
	}
	http.Redirect(w, r, next, http.StatusSeeOther)
}

// startSession signs the user in: a new session and its cookie.
func (d *Dashboard) startSession(ctx context.Context, w http.ResponseWriter, userID, email string) error {
	now := d.clock.Now()
	tok := randomToken()
	h := tokenHash(tok)
	if _, err := d.cmd.StartSession.Handle(ctx, commands.StartSessionCmd{Hash: h, UserID: userID, Email: email}); err != nil {
		return err
	}
	d.mu.Lock()
	for k, s := range d.sessions {
		if now.Sub(s.checked) > time.Hour {
			delete(d.sessions, k)
		}
	}
	d.sessions[h] = &session{userID: userID, email: email, csrf: csrfOf(tok), checked: now}
	d.mu.Unlock()
	http.SetCookie(w, d.cookie(sessionCookie, tok, int(user.SessionTTL/time.Second)))
	http.SetCookie(w, d.cookie(loginCSRFCookie, "", -1))
	return nil
}

func (d *Dashboard) logout(w http.ResponseWriter, r *http.Request, c *dashCtx) {
	if ck, err := r.Cookie(sessionCookie); err == nil {
		h := tokenHash(ck.Value)
		if _, err := d.cmd.EndSession.Handle(r.Context(), commands.EndSessionCmd{Hash: h}); err != nil {
			d.log.Error("dashboard: sign-out", "err", err)
			d.render(w, r, c, http.StatusInternalServerError, "error", "Sign-out failed", map[string]any{"Message": "Signing out failed. Try again."})
			return
		}
		d.mu.Lock()
		delete(d.sessions, h)
		d.mu.Unlock()
	}
	http.SetCookie(w, d.cookie(sessionCookie, "", -1))
	http.Redirect(w, r, "/dashboard/login", http.StatusSeeOther)
}

// ---- calling the interface

// apiResult is the answer of an in-process call to /v1.
type apiResult struct {
	Status int
	Body   []byte
}

func (a apiResult) ok() bool { return a.Status >= 200 && a.Status < 300 }

// detail is the error message of a failed call.
func (a apiResult) detail() string {
	var e struct {
		Detail any `json:"detail"`
		Error  any `json:"error"` // the Radar reports' shape
	}
	if json.Unmarshal(a.Body, &e) == nil && e.Detail == nil {
		e.Detail = e.Error
	}
	if e.Detail != nil {
		if s, ok := e.Detail.(string); ok {
			return s
		}
		b, _ := json.Marshal(e.Detail)
		return string(b)
	}
	return http.StatusText(a.Status)
}

// object decodes the answer as a JSON object (numbers kept exact).
func (a apiResult) object() map[string]any {
	var m map[string]any
	dec := json.NewDecoder(bytes.NewReader(a.Body))
	dec.UseNumber()
	_ = dec.Decode(&m)
	return m
}

func (a apiResult) list() []any {
	var l []any
	dec := json.NewDecoder(bytes.NewReader(a.Body))
	dec.UseNumber()
	_ = dec.Decode(&l)
	return l
}

// recorder collects a handler's answer.
type recorder struct {
	h    http.Header
	code int
	buf  bytes.Buffer
}

func (r *recorder) Header() http.Header { return r.h }
func (r *recorder) WriteHeader(code int) {
	if r.code == 0 {
		r.code = code
	}
}
func (r *recorder) Write(b []byte) (int, error) {
	if r.code == 0 {
		r.code = http.StatusOK
	}
	return r.buf.Write(b)
}

// call sends a request to the interface in process as the session's user.
func (d *Dashboard) call(ctx context.Context, c *dashCtx, method, path string, body any) apiResult {
	var rd io.Reader = http.NoBody
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return apiResult{Status: http.StatusBadRequest, Body: []byte(`{"detail":"bad form"}`)}
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(api.AsUser(ctx, c.as), method, path, rd)
	if err != nil {
		return apiResult{Status: http.StatusBadRequest, Body: []byte(`{"detail":"bad request"}`)}
	}
	req.Header.Set("Content-Type", "application/json")
	rec := &recorder{h: http.Header{}}
	d.router.ServeHTTP(rec, req)
	if rec.code == 0 {
		rec.code = http.StatusOK
	}
	return apiResult{Status: rec.code, Body: rec.buf.Bytes()}
}

// get calls GET path and decodes an object; a failure becomes the page's
// answer (its status and message) and false.
func (d *Dashboard) getObject(w http.ResponseWriter, r *http.Request, c *dashCtx, path string) (map[string]any, bool) {
	res := d.call(r.Context(), c, http.MethodGet, path, nil)
	if !res.ok() {
		d.failed(w, r, c, res)
		return nil, false
	}
	return res.object(), true
}

func (d *Dashboard) failed(w http.ResponseWriter, r *http.Request, c *dashCtx, res apiResult) {
	title := http.StatusText(res.Status)
	d.render(w, r, c, res.Status, "error", title, map[string]any{"Message": res.detail()})
}
