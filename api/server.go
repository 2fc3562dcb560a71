// Package api is linkd's HTTP interface: the link management API (/v1),
// short-link redirects (/{code}), health, metrics and the OpenAPI document.
// Handlers translate requests into commands and queries; domain errors
// become statuses in one place (errors.go).
package api

import (
	"context"
	"log/slog"
	"net/http"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/mux"

	"github.com/linkd/linkd/commands"
	"github.com/linkd/linkd/domain/link"
	"github.com/linkd/linkd/eventstore"
	"github.com/linkd/linkd/internal/clock"
	"github.com/linkd/linkd/internal/radarjs"
	"github.com/linkd/linkd/queries"
)

// Head tells the position of the last event: reads wait until the
// projections they read have reached it.
type Head interface {
	Head(ctx context.Context) (eventstore.Position, error)
}

// Hasher hashes API keys.
type Hasher interface {
	Hash(key string) string
}

// RateDecision is a rate limiter's answer.
type RateDecision struct {
	Allowed    bool
	Limit      int
	Remaining  int
	Reset      time.Time
	RetryAfter time.Duration
}

// Limiter limits requests per key: in memory, or for the whole deployment
// (cmd/linkd/app wires internal/ratelimit). It never fails: a shared
// backend that does not answer falls back to the instance's own count.
type Limiter interface {
	Allow(ctx context.Context, key string, limit int, per time.Duration, now time.Time) RateDecision
}

// Config holds the settings the API needs.
type Config struct {
	// DefaultDomain is the host (and port) of short URLs.
	DefaultDomain string
	// PublicScheme is "http" or "https".
	PublicScheme string
	// KeyPrefix starts every key ("svc_").
	KeyPrefix string
	// WaitTimeout bounds how long a request waits for projections to show
	// a write (reads follow writes). Default 5 s.
	WaitTimeout time.Duration
	// ResourceLimit and DomainLimit are the per-hour request limits.
	ResourceLimit int
	DomainLimit   int
}

// Server serves the interface.
type Server struct {
	cfg      Config
	cmd      *commands.Commands
	q        queries.Queries
	links    *LinkCache
	head     Head
	fresh    queries.Freshness
	core     *eventstore.Watermark
	statsWM  *eventstore.Watermark
	clicksWM *eventstore.Watermark
	radarWM  *eventstore.Watermark
	// webhooksWM tells how far the webhook projection has applied the log.
	webhooksWM *eventstore.Watermark
	webhooks   WebhookReplayer
	tracker    http.Handler
	hasher     Hasher
	cipher     queries.Decrypter
	limiter    Limiter
	log        *slog.Logger
	clock      interface{ Now() time.Time }

	redirect *Redirector

	keyCache sync.Map // hash -> queries.APIKey
	// pubHashes maps the publishable keys found to their hashes: every
	// collected hit names one, and its HMAC was 1.4% of collect's CPU. A
	// publishable key is public (it sits in the site's pages), so keeping
	// it in memory unhashed exposes nothing; secret keys are never kept.
	pubHashes sync.Map  // key -> hash
	joins     joinCache // Radar: tracking id -> click joined
}

// Deps are the parts a Server is built from.
type Deps struct {
	// Commands is the write side (commands.New); the API builds no
	// handler of its own.
	Commands *commands.Commands
	Queries  queries.Queries
	// LinkCache is the read model of short links (Queries.LinkAccess); the
	// API drops a deleted domain's entries from it at once.
	LinkCache *LinkCache
	Head      Head
	// Fresh, with many instances, brings the core read model up to the
	// changes of keys, workspaces and links answered by the others before
	// a key is looked up (nil: one instance).
	Fresh queries.Freshness
	// CoreWatermark and StatsWatermark tell how far the core and the
	// statistics projections have applied the log.
	CoreWatermark  *eventstore.Watermark
	StatsWatermark *eventstore.Watermark
	// ClickIndexWatermark tells how far the click-id index has applied the
	// log (conversions wait for it).
	ClickIndexWatermark *eventstore.Watermark
	// RadarWatermark tells how far the Radar projection has applied the
	// log.
	RadarWatermark *eventstore.Watermark
	// WebhooksWatermark tells how far the webhook projection has applied
	// the log; Webhooks replays ranges of it.
	WebhooksWatermark *eventstore.Watermark
	Webhooks          WebhookReplayer
	Hasher            Hasher
	// Cipher opens link passwords, which their owners read back.
	Cipher     queries.Decrypter
	Limiter    Limiter
	Redirector *Redirector
	Logger     *slog.Logger
	// Clock is the one clock of the application (cmd/linkd/app).
	Clock interface{ Now() time.Time }
}

// New builds a Server.
func New(cfg Config, d Deps) *Server {
	if cfg.WaitTimeout <= 0 {
		cfg.WaitTimeout = 5 * time.Second
	}
	if cfg.ResourceLimit <= 0 {
		cfg.ResourceLimit = 500
	}
	if cfg.DomainLimit <= 0 {
		cfg.DomainLimit = 100
	}
	if cfg.PublicScheme == "" {
		cfg.PublicScheme = "http"
	}
	if cfg.KeyPrefix == "" {
		cfg.KeyPrefix = "svc_"
	}
	if d.Logger == nil {
		d.Logger = slog.Default()
	}
	if d.Clock == nil {
		d.Clock = clock.System{}
	}
	s := &Server{
		cfg: cfg, cmd: d.Commands, q: d.Queries, links: d.LinkCache, head: d.Head, fresh: d.Fresh,
		core: d.CoreWatermark, statsWM: d.StatsWatermark, clicksWM: d.ClickIndexWatermark, radarWM: d.RadarWatermark, tracker: radarjs.Handler(), hasher: d.Hasher, cipher: d.Cipher,
		webhooksWM: d.WebhooksWatermark, webhooks: d.Webhooks,
		limiter: d.Limiter, redirect: d.Redirector, log: d.Logger, clock: d.Clock,
	}
	return s
}

// InvalidateKeys forgets cached API keys (after any key changes).
func (s *Server) InvalidateKeys() {
	s.keyCache.Range(func(k, _ any) bool {
		s.keyCache.Delete(k)
		return true
	})
}

// Handler returns the HTTP handler of the whole interface. extra adds the
// routes of the listener's other parts (the metrics, the dashboard) to its
// router, ahead of the short links they would otherwise be taken for.
func (s *Server) Handler(extra func(r *mux.Router)) http.Handler {
	r := mux.NewRouter()
	r.NotFoundHandler = http.HandlerFunc(s.notFound)
	r.MethodNotAllowedHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.limitUnrouted(w, r) {
			return
		}
		writeDetail(w, http.StatusMethodNotAllowed, "Method Not Allowed")
	})
	r.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	}).Methods(http.MethodGet, http.MethodHead)
	r.HandleFunc("/openapi.json", s.openAPI).Methods(http.MethodGet)
	if extra != nil {
		extra(r)
	}

	// The conversion event interface (at {track_url}, on this listener).
	r.HandleFunc("/api/events/lead", s.trackLead).Methods(http.MethodPost)
	r.HandleFunc("/api/events/sale", s.trackSale).Methods(http.MethodPost)
	r.HandleFunc("/api/events/lead", s.eventPreflight).Methods(http.MethodOptions)
	r.HandleFunc("/api/events/sale", s.eventPreflight).Methods(http.MethodOptions)

	// Radar (at {app_url}): collection, the tracker, the reports.
	r.HandleFunc("/api/v1/radar/collect", s.collectRadar).Methods(http.MethodPost)
	r.HandleFunc("/api/v1/radar/collect", s.eventPreflight).Methods(http.MethodOptions)
	r.Handle("/radar.js", s.tracker).Methods(http.MethodGet, http.MethodHead)
	r.Handle("/radar.js", s.tracker) // it answers other methods itself
	r.HandleFunc("/api/v1/radar/overview", s.serveRadar(s.radarOverview)).Methods(http.MethodGet)
	r.HandleFunc("/api/v1/radar/breakdowns", s.serveRadar(s.radarBreakdowns)).Methods(http.MethodGet)
	r.HandleFunc("/api/v1/radar/custom-events", s.serveRadar(s.radarCustomEvents)).Methods(http.MethodGet)
	r.HandleFunc("/api/v1/radar/people", s.serveRadar(s.radarPeople)).Methods(http.MethodGet)
	r.HandleFunc("/api/v1/radar/people/details", s.serveRadar(s.radarPersonDetails)).Methods(http.MethodGet)

	v1 := r.PathPrefix("/v1").Subrouter()
	v1.NotFoundHandler = http.HandlerFunc(s.notFound)
	v1.MethodNotAllowedHandler = r.MethodNotAllowedHandler
	// The public short-code read needs no key.
	v1.HandleFunc("/links/code/{code}", s.publicLinkByCode).Methods(http.MethodGet)
	// Public statistics (has_public_stat) need no key either; their page
	// is /{code}+ (bound).
	v1.HandleFunc("/links/code/{code}/stats", s.publicLinkStats).Methods(http.MethodGet)

	route := func(method, path, resource string, h handlerFunc) {
		v1.Handle(path, s.authed(resource, h)).Methods(method)
	}
	route("POST", "/api-keys", resAPIKeys, s.createAPIKey)
	route("GET", "/api-keys", resAPIKeys, s.listAPIKeys)
	route("GET", "/api-keys/validate", resAny, s.validateAPIKey)
	route("DELETE", "/api-keys/{key_id}", resAPIKeys, s.deactivateAPIKey)
	route("POST", "/users", resAPIKeys, s.createUser)

	route("POST", "/workspaces", resWorkspaces, s.createWorkspace)
	route("GET", "/workspaces", resWorkspaces, s.listWorkspaces)
	route("GET", "/workspaces/{workspace_id}", resWorkspaces, s.getWorkspace)
	route("PUT", "/workspaces/{workspace_id}", resWorkspaces, s.updateWorkspace)
	route("DELETE", "/workspaces/{workspace_id}", resWorkspaces, s.deleteWorkspace)
	route("GET", "/workspaces/{workspace_id}/members", resWorkspaces, s.listMembers)
	route("POST", "/workspaces/{workspace_id}/members", resWorkspaces, s.addMember)
	route("PUT", "/workspaces/{workspace_id}/members/{user_id}", resWorkspaces, s.changeMemberRole)
	route("DELETE", "/workspaces/{workspace_id}/members/{user_id}", resWorkspaces, s.removeMember)

	route("POST", "/projects", resProjects, s.createProject)
	route("GET", "/projects", resProjects, s.listProjects)
	route("GET", "/projects/{project_id}", resProjects, s.getProject)
	route("PUT", "/projects/{project_id}", resProjects, s.updateProject)
	route("DELETE", "/projects/{project_id}", resProjects, s.deleteProject)

	route("POST", "/domains", resDomains, s.createDomain)
	route("GET", "/domains", resDomains, s.listDomains)
	route("GET", "/domains/{domain_id}", resDomains, s.getDomain)
	route("PUT", "/domains/{domain_id}", resDomains, s.updateDomain)
	route("DELETE", "/domains/{domain_id}", resDomains, s.deleteDomain)
	route("GET", "/domains/{domain_id}/verify", resDomains, s.verifyDomain)

	route("POST", "/links", resLinks, s.createLink)
	route("GET", "/links", resLinks, s.listLinks)
	route("GET", "/links/{link_id}", resLinks, s.getLink)
	route("PUT", "/links/{link_id}", resLinks, s.updateLink)
	route("DELETE", "/links/{link_id}", resLinks, s.deleteLink)
	route("GET", "/links/{link_id}/qr", resLinks, s.linkQR)

	// Extensions: UTM templates and tracking pixels, for links to name.
	route("POST", "/utm-templates", resLinks, s.createUTMTemplate)
	route("GET", "/utm-templates", resLinks, s.listUTMTemplates)
	route("GET", "/utm-templates/{template_id}", resLinks, s.getUTMTemplate)
	route("PUT", "/utm-templates/{template_id}", resLinks, s.updateUTMTemplate)
	route("DELETE", "/utm-templates/{template_id}", resLinks, s.deleteUTMTemplate)
	route("POST", "/pixels", resLinks, s.createPixel)
	route("GET", "/pixels", resLinks, s.listPixels)
	route("GET", "/pixels/{pixel_id}", resLinks, s.getPixel)
	route("PUT", "/pixels/{pixel_id}", resLinks, s.updatePixel)
	route("DELETE", "/pixels/{pixel_id}", resLinks, s.deletePixel)

	// Extension: webhooks, managed by workspace admins.
	route("POST", "/webhooks", resWorkspaces, s.createWebhook)
	route("GET", "/webhooks", resWorkspaces, s.listWebhooks)
	route("GET", "/webhooks/{webhook_id}", resWorkspaces, s.getWebhook)
	route("PUT", "/webhooks/{webhook_id}", resWorkspaces, s.updateWebhook)
	route("DELETE", "/webhooks/{webhook_id}", resWorkspaces, s.deleteWebhook)
	route("GET", "/webhooks/{webhook_id}/deliveries", resWorkspaces, s.webhookDeliveries)
	route("POST", "/webhooks/{webhook_id}/replay", resWorkspaces, s.replayWebhook)

	route("GET", "/customers", resAnalytics, s.listCustomers)
	route("GET", "/customers/{customer_id}", resAnalytics, s.getCustomer)

	route("GET", "/stats/links/{link_id}", resAnalytics, s.linkDailyStats)
	route("GET", "/stats/links/{link_id}/summary", resAnalytics, s.linkSummary)
	route("GET", "/stats/workspaces", resAnalytics, s.myWorkspaceDailyStats)
	route("GET", "/stats/workspaces/summary", resAnalytics, s.myWorkspaceSummary)
	route("GET", "/stats/workspaces/{workspace_id}", resAnalytics, s.workspaceDailyStats)
	route("GET", "/stats/workspaces/{workspace_id}/summary", resAnalytics, s.workspaceSummary)

	// Short links: everything else on GET/HEAD/POST at the top level.
	if s.redirect != nil {
		// bound serves both before the router sees them.
		r.HandleFunc("/{code}+", s.publicStatsPage).Methods(http.MethodGet, http.MethodHead)
		r.Handle("/{code}", s.redirect).Methods(http.MethodGet, http.MethodHead, http.MethodPost)
	}
	return s.bound(r)
}

// bound limits every request: body size, and a timeout for API calls. A
// handler that panics answers 500 in the interface's error shape: the
// caller never sees a stack trace (the log does).
func (s *Server) bound(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				s.log.Error("request panicked", "method", r.Method, "path", r.URL.Path, "panic", v, "stack", string(debug.Stack()))
				writeDetail(w, http.StatusInternalServerError, "Internal server error")
			}
		}()
		if r.ContentLength > MaxBodyBytes {
			if !s.limitUnrouted(w, r) {
				return
			}
			// In the interface's own shape: {error} under /api/ (conversion
			// events, Radar), {detail} elsewhere.
			field := "detail"
			if strings.HasPrefix(r.URL.Path, "/api/") {
				field = "error"
			}
			writeJSON(w, http.StatusRequestEntityTooLarge, map[string]string{field: "Request body too large"})
			return
		}
		if r.Body != nil && r.Body != http.NoBody { // NoBody: nothing to bound (a GET)
			r.Body = http.MaxBytesReader(w, r.Body, MaxBodyBytes+1)
		}
		if strings.HasPrefix(r.URL.Path, "/v1/") {
			ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
			defer cancel()
			r = r.WithContext(ctx)
		} else if s.redirect != nil && isCodePath(r.URL.Path) {
			// Short links skip the router: they are most of the traffic.
			if isPublicStatsPath(r.URL.Path) {
				s.publicStatsPage(w, r)
				return
			}
			switch r.Method {
			case http.MethodGet, http.MethodHead, http.MethodPost:
				s.redirect.ServeCode(w, r, r.URL.Path[1:]) // isCodePath: "/" and the code
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// isCodePath reports whether path is "/<code>": one segment that is not a
// path the listener serves itself.
func isCodePath(path string) bool {
	if len(path) < 2 || path[0] != '/' || strings.IndexByte(path[1:], '/') >= 0 {
		return false
	}
	return !link.IsReservedCode(path[1:])
}

func (s *Server) notFound(w http.ResponseWriter, r *http.Request) {
	if !s.limitUnrouted(w, r) {
		return
	}
	writeDetail(w, http.StatusNotFound, "Not Found")
}

// limitUnrouted gives a /v1 answer that no handler makes (an unknown path
// or method, a body over the limit) the rate-limit headers that every
// authenticated /v1 answer carries, when the request has a valid key: it
// counts against the caller's own bucket for such requests. It answers 429
// and returns false when that is spent. Without a valid key nothing
// changes: an unknown path is 404 whoever asks.
func (s *Server) limitUnrouted(w http.ResponseWriter, r *http.Request) bool {
	if !strings.HasPrefix(r.URL.Path, "/v1/") || bearer(r) == "" {
		return true
	}
	k, err := s.authenticate(r.Context(), r)
	if err != nil {
		return true
	}
	return s.rateLimit(w, r, principal{key: k}, resUnrouted)
}

// WaitCore waits until the core projection shows a command's events:
// reads follow writes, for the interface's commands and for those the
// dashboard sends itself (commands.Commands).
func (s *Server) WaitCore(ctx context.Context, res commands.Result) {
	if !res.Wrote || s.core == nil {
		return
	}
	s.wait(ctx, s.core, res.Position)
}

func (s *Server) wait(ctx context.Context, wm *eventstore.Watermark, pos eventstore.Position) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.WaitTimeout)
	defer cancel()
	if err := wm.Wait(ctx, pos); err != nil {
		s.log.Warn("projection did not catch up in time", "position", pos.String(), "err", err)
	}
}

// barrier waits until the projections a read needs have applied
// everything appended so far (one read of the head for all of them), so
// that the read shows every write, click and access answered before it.
func (s *Server) barrier(ctx context.Context, wms ...*eventstore.Watermark) {
	if s.head == nil || !slices.ContainsFunc(wms, func(wm *eventstore.Watermark) bool { return wm != nil }) {
		return
	}
	if err := eventstore.CatchUp(ctx, s.head, s.cfg.WaitTimeout, wms...); err != nil && ctx.Err() == nil {
		s.log.Warn("projection did not catch up in time", "err", err)
	}
}
