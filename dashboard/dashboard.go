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
	"embed"
	"encoding/json"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/mux"

	"github.com/linkd/linkd/api"
	"github.com/linkd/linkd/commands"
	"github.com/linkd/linkd/internal/clock"
	"github.com/linkd/linkd/internal/ratelimit"
	"github.com/linkd/linkd/queries"
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
	// Throttle counts wrong passwords at sign-in and on invitations (for
	// the deployment: ratelimit.SharedAttempts). Nil: in memory, five a
	// minute per client and account, thirty per account.
	Throttle queries.PasswordThrottle
	Logger   *slog.Logger
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
	throttle queries.PasswordThrottle

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
		sessions: map[string]*session{}, throttle: deps.Throttle}
	if d.throttle == nil {
		d.throttle = ratelimit.NewAttempts(5, 30, time.Minute)
	}
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
		"amount": func(v, currency any) string {
			c, _ := currency.(string)
			return formatAmount(v, c)
		},
		"pct":  func(v any) string { return formatPercent(number(v)) },
		"eq":   func(a, b any) bool { return a == b },
		"q":    url.QueryEscape,
		"path": url.PathEscape,
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
