package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/mux"

	"github.com/linkd/linkd/api"
	"github.com/linkd/linkd/commands"
	"github.com/linkd/linkd/dashboard"
	"github.com/linkd/linkd/domain/click"
	"github.com/linkd/linkd/domain/conversion"
	"github.com/linkd/linkd/domain/radar"
	"github.com/linkd/linkd/domain/workspace"
	"github.com/linkd/linkd/eventstore"
	"github.com/linkd/linkd/eventstore/embedded"
	"github.com/linkd/linkd/eventstore/esdb"
	"github.com/linkd/linkd/eventstore/postgres"
	"github.com/linkd/linkd/internal/clicklimit"
	"github.com/linkd/linkd/internal/clock"
	"github.com/linkd/linkd/internal/deadline"
	"github.com/linkd/linkd/internal/enrich"
	"github.com/linkd/linkd/internal/httperr"
	"github.com/linkd/linkd/internal/password"
	"github.com/linkd/linkd/internal/secrets"
	"github.com/linkd/linkd/projections"
	chradar "github.com/linkd/linkd/projections/clickhouse/radar"
	"github.com/linkd/linkd/projections/clickindex"
	"github.com/linkd/linkd/projections/core"
	radarstore "github.com/linkd/linkd/projections/radar"
	"github.com/linkd/linkd/projections/webhooks"
	"github.com/linkd/linkd/queries"
)

// App is a running linkd: event store, projections, bus and interface.
type App struct {
	cfg   Config
	log   *slog.Logger
	out   io.Writer
	store eventstore.Store
	// raw is store without its metrics: what else it is (a shared store's
	// eventstore.Leaser, Checkpoints, CategoryHeads) is asked of it.
	raw eventstore.Store
	// logPlaces record the log the read models were built from (ADRs
	// 0129, 0131): the data directory, then ClickHouse when it is used.
	logPlaces []logPlace
	core      *core.Store
	stats     statsProjection
	clicks    *clickindex.Store
	radar     *radarstore.Store
	// hooks is the webhook projection, deliver its deliveries.
	hooks   *webhooks.Store
	deliver *webhooks.Deliverer
	// chRadar is Radar in ClickHouse, when the statistics are there.
	chRadar *chradar.Projection
	limit   *clicklimit.Limiter
	// limits are the request rate limits and password throttles.
	limits limits
	secret *secrets.Secret
	// links is the cache of the links short URLs follow.
	links *api.LinkCache

	runner runner
	// local and viaKafka name the projections the runner feeds: this
	// instance's own, and those it shares with the deployment through
	// Kafka's consumer group (none without Kafka).
	local, viaKafka []string
	server          *api.Server
	handler         http.Handler
	metrics         *metrics

	closers []func() error
	wg      sync.WaitGroup
}

// statsProjection is the statistics read model and its projector: embedded
// analytics by default, ClickHouse when LINKD_CLICKHOUSE_DSN is set.
type statsProjection interface {
	projections.Projector
	queries.StatsReadModel
}

// runner feeds the projections: in process, or from Kafka.
type runner interface {
	Run(ctx context.Context) error
	Watermark(name string) *eventstore.Watermark
}

// NewLogger makes the structured logger of cfg.
func NewLogger(cfg Config, w io.Writer) *slog.Logger {
	var level slog.Level
	_ = level.UnmarshalText([]byte(cfg.LogLevel))
	opts := &slog.HandlerOptions{Level: level}
	if cfg.LogFormat == "text" {
		return slog.New(slog.NewTextHandler(w, opts))
	}
	return slog.New(slog.NewJSONHandler(w, opts))
}

// relaxedCategories are the appends that LINKD_DURABILITY=interval lets
// commit before the server's WAL flush on PostgreSQL: clicks and Radar's
// page views and events, the load of the service (ADR 0115).
var relaxedCategories = []string{strings.TrimSuffix(click.StreamPrefix, "-"), strings.TrimSuffix(radar.StreamPrefix, "-")}

// postgresOptions are the PostgreSQL store's options for cfg. Every append
// waits for the server's WAL flush unless LINKD_DURABILITY=interval is set:
// then clicks and page views do not, and the store forces a flush every
// FlushInterval (ADR 0115). Unset, a crash of the server loses nothing
// acknowledged, as a crash of linkd does not with the embedded store's
// default (ADR 0132).
func postgresOptions(cfg Config, log *slog.Logger) postgres.Options {
	o := postgres.Options{Logger: log}
	if cfg.Durability == "interval" {
		o.Relaxed = relaxedCategories
		o.FlushInterval = cfg.FlushInterval
	}
	return o
}

// OpenStore opens the event store cfg names.
func OpenStore(ctx context.Context, cfg Config, log *slog.Logger) (eventstore.Store, error) {
	if cfg.Embedded() {
		d := embedded.SyncInterval
		if cfg.Durability == "always" {
			d = embedded.SyncAlways
		}
		return embedded.Open(embedded.Options{
			Dir: filepath.Join(cfg.DataDir, "events"), Durability: d, FlushInterval: cfg.FlushInterval, Logger: log,
		})
	}
	if postgres.IsDSN(cfg.EventStore) {
		return postgres.Open(ctx, cfg.EventStore, postgresOptions(cfg, log))
	}
	return esdb.Open(ctx, cfg.EventStore, esdb.Options{Logger: log})
}

// Open builds the app; out receives what is printed once (a generated
// operator key).
func Open(ctx context.Context, cfg Config, log *slog.Logger, out io.Writer) (*App, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("data dir: %w", err)
	}
	a := &App{cfg: cfg, log: log, out: out}
	ok := false
	defer func() {
		if !ok {
			a.Close()
		}
	}()
	var err error
	if a.secret, err = secrets.Load(cfg.DataDir, cfg.Secret); err != nil {
		return nil, err
	}
	store, err := OpenStore(ctx, cfg, log)
	if err != nil {
		return nil, fmt.Errorf("event store: %w", err)
	}
	checkSecret(ctx, store, a.secret, cfg, log)
	a.metrics = newMetrics()
	a.store = a.metrics.instrument(store)
	a.raw = store
	a.closers = append(a.closers, store.Close)
	if a.core, err = core.Open(filepath.Join(cfg.DataDir, "readmodel.db")); err != nil {
		return nil, fmt.Errorf("read model: %w", err)
	}
	a.closers = append(a.closers, a.core.Close)
	if a.stats, err = openStats(ctx, cfg, log); err != nil {
		return nil, fmt.Errorf("statistics: %w", err)
	}
	a.closers = append(a.closers, closeOf(a.stats))
	// Before any projection runs: the read models of another log are
	// refused (ADRs 0129, 0131).
	a.logPlaces = logPlaces(cfg, a.stats)
	if err := checkLogs(ctx, store, logKind(cfg), a.logPlaces, log); err != nil {
		return nil, err
	}
	if a.clicks, err = openClickIndex(cfg, a.clock(), log); err != nil {
		return nil, fmt.Errorf("click index: %w", err)
	}
	a.closers = append(a.closers, a.clicks.Close)
	if a.radar, err = openRadar(cfg); err != nil {
		return nil, fmt.Errorf("radar: %w", err)
	}
	a.closers = append(a.closers, a.radar.Close)
	apiServer := func() *api.Server { return a.server }
	if a.hooks, err = openWebhooks(cfg, a.store, a.raw, &apiServer, a.commandDeps, log); err != nil {
		return nil, fmt.Errorf("webhooks: %w", err)
	}
	a.closers = append(a.closers, a.hooks.Close)
	// Each instance keeps its own read models (local); the ClickHouse
	// ones are shared by every instance of a deployment (ADR 0106).
	local := []projections.Projector{a.core, a.clicks, a.radar, a.hooks}
	var shared []projections.Projector
	if cfg.ClickHouseDSN != "" {
		shared = append(shared, a.stats)
	} else {
		local = append(local, a.stats)
	}
	// Fed in log order, resuming after their checkpoints: core's click
	// counts (core/clicks.go) and the stream versions of the statistics
	// and the click index are written behind. With Kafka the shared ones
	// are fed partition by partition, and write everything at once.
	a.core.WriteClicksBehind()
	writeVersionsBehind(local...)
	if cfg.KafkaBrokers == "" {
		writeVersionsBehind(shared...)
	}
	if a.chRadar, err = openClickHouseRadar(ctx, a.stats); err != nil {
		return nil, fmt.Errorf("radar in ClickHouse: %w", err)
	}
	if a.chRadar != nil {
		shared = append(shared, a.chRadar)
	}
	if a.runner, err = newRunner(cfg, a.store, a.raw, local, shared, log, a.metrics); err != nil {
		return nil, err
	}
	a.local = names(local)
	if cfg.KafkaBrokers == "" {
		a.local = append(a.local, names(shared)...)
	} else {
		a.viaKafka = names(shared)
	}

	en, err := enrich.New(enrich.Config{CityDB: cfg.GeoIPDB, Secret: a.secret.Derive("visitor"), TrustedProxies: cfg.Trusted()})
	if err != nil {
		return nil, fmt.Errorf("enrichment: %w", err)
	}
	a.closers = append(a.closers, en.Close)

	if a.limits, err = openLimits(cfg, log); err != nil {
		return nil, err
	}
	a.closers = append(a.closers, a.limits.close)

	clk := a.clock()
	deps := a.commandDeps()
	cipher := a.secret.Cipher()
	recorder := commands.RecordClickHandler{Deps: deps}
	links := api.NewLinkCache(a.core, 0)
	var radarModel queries.RadarReadModel = a.radar
	if a.chRadar != nil {
		radarModel = radarReports{ch: a.chRadar, people: a.radar, head: a.store, log: log,
			marks: []*eventstore.Watermark{a.runner.Watermark(a.chRadar.Name()), a.runner.Watermark(a.stats.Name())}}
	}
	fresh := a.follower()
	q := queries.New(queries.Sources{
		Core: a.core, Stats: a.stats, Links: links, LinksFresh: fresh, Clicks: recorder, ClickIndex: clickIndexReader{a.clicks}, Radar: radarModel,
		Throttle: a.limits.passwords, Cipher: cipher, Clock: clk, DefaultHost: cfg.ShortDomain(),
		Webhooks: a.hooks,
	})
	a.deliver = newDeliverer(cfg, a.hooks, deps, cipher)
	a.limit = clicklimit.New(cfg.ClickLimit, cfg.ClickLimitNet)
	rd := api.NewRedirector(api.RedirectConfig{SecureCookies: cfg.PublicScheme == "https", ClickLimit: a.limit}, q.LinkAccess, recorder, en, clk, log)
	cmds := commands.New(commands.Config{
		Deps: deps, Hasher: a.secret.Hasher(), KeyPrefix: cfg.KeyPrefix, Contents: a.core,
		DNS: newDNSChecker(cfg.DNSServer), ExpectedHost: queries.HostOnly(cfg.ShortDomain()),
		Clicks:    conversionClicks{query: q.ClickByTrackingID, head: a.store, index: a.runner.Watermark(clickindex.Name), wait: 5 * time.Second},
		Passwords: password.Argon2id{}, Logger: log, Observer: a.metrics,
	})
	a.server = api.New(api.Config{
		DefaultDomain: cfg.ShortDomain(), PublicScheme: cfg.PublicScheme, KeyPrefix: cfg.KeyPrefix,
	}, api.Deps{
		Commands: cmds, Queries: q, LinkCache: links, Head: a.store, Fresh: fresh,
		CoreWatermark: a.runner.Watermark(core.Name), StatsWatermark: a.runner.Watermark(a.stats.Name()),
		ClickIndexWatermark: a.runner.Watermark(clickindex.Name),
		RadarWatermark:      a.runner.Watermark(radarstore.Name),
		WebhooksWatermark:   a.runner.Watermark(webhooks.Name), Webhooks: a.hooks,
		Hasher: a.secret.Hasher(), Cipher: cipher, Limiter: a.limits.requests,
		Redirector: rd, Logger: log, Clock: clk,
	})
	dash := dashboard.New(dashboard.Config{DefaultDomain: cfg.ShortDomain(), PublicScheme: cfg.PublicScheme},
		dashboard.Deps{API: a.server, Commands: cmds, Addresses: en, Throttle: a.limits.signIn, Logger: log, Clock: clk})
	a.links = links
	a.core.OnChange(func(changes []core.Change) {
		keys := false
		var changed []string
		for _, c := range changes {
			switch c.Kind {
			case "apikey", "reset", "workspace", "project":
				// A key bound to a project is valid only while the project
				// exists and its user is a member of the project's
				// workspace: a change to either may end a cached key.
				keys = true
			case "link":
				changed = append(changed, c.ID)
			}
			links.Invalidate(c.Kind, c.ID)
		}
		if keys {
			a.server.InvalidateKeys()
		}
		// A link created or changed is read into the cache now, before
		// its first redirect (a cache miss costs that redirect a query).
		if err := links.Refresh(context.Background(), changed); err != nil {
			a.log.Warn("short links' cache: refresh", "err", err)
		}
	})
	a.handler = a.metrics.http(a.server.Handler(func(r *mux.Router) {
		r.Handle("/metrics", a.metrics.handler(a)).Methods(http.MethodGet)
		dash.Routes(r) // its pages call the interface in process through r
	}))
	ok = true
	return a, nil
}

// follower, on a store shared by many instances, brings the core read
// model up to the changes of every category but the busy ones (clicks,
// customers: their counts are not what a redirect or a key decides on)
// before redirects and key lookups (ADR 0106). Nil for the embedded store:
// its one process follows its own writes.
func (a *App) follower() queries.Freshness {
	heads, ok := a.raw.(eventstore.CategoryHeads)
	if !ok {
		return nil
	}
	var cats []string
	for _, c := range a.core.Categories() {
		if c+"-" != click.StreamPrefix && c != conversion.CustomerCategory {
			cats = append(cats, c)
		}
	}
	return eventstore.NewFollower(heads, cats, a.runner.Watermark(core.Name), 5*time.Second)
}

func closeOf(p any) func() error {
	if c, ok := p.(interface{ Close() error }); ok {
		return c.Close
	}
	return func() error { return nil }
}

// Handler is the HTTP interface.
func (a *App) Handler() http.Handler { return a.handler }

// Store is the event store.
func (a *App) Store() eventstore.Store { return a.store }

// Start runs the projections in the background and makes sure the
// operator key exists. It returns once the read models have caught up with
// the log, so that the first request sees everything written before.
func (a *App) Start(ctx context.Context) (context.CancelFunc, error) {
	rctx, cancel := context.WithCancel(context.Background())
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		if err := a.runner.Run(rctx); err != nil {
			a.log.Error("projections stopped", "err", err)
		}
	}()
	if err := a.catchUp(ctx); err != nil {
		cancel()
		return nil, err
	}
	// Webhook deliveries run beside the projections, off the request path.
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		if err := a.deliver.Run(rctx); err != nil {
			a.log.Error("webhook deliveries stopped", "err", err)
		}
	}()
	if err := a.ensureOperatorKey(ctx); err != nil {
		cancel()
		return nil, err
	}
	// A log empty at Open has its first event now (the operator key, or
	// another instance's): the read models are this log's.
	if err := checkLogs(ctx, a.raw, logKind(a.cfg), a.logPlaces, a.log); err != nil {
		cancel()
		return nil, err
	}
	// The links that short URLs follow are read into their cache in the
	// background: after a restart their first redirects need no query.
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		if err := a.links.Warm(rctx); err != nil && rctx.Err() == nil {
			a.log.Warn("short links' cache: warm", "err", err)
		}
	}()
	return cancel, nil
}

// sharedCatchUp is how long a starting instance waits at most for the
// projections it shares with the deployment through Kafka (the statistics
// in ClickHouse): the time DECISIONS gives a counted click to show in them.
// They are the deployment's, not the instance's: the other instances serve
// the same statistics meanwhile, and a Kafka that hangs must not keep a
// restarted instance out of service (docs/operations.md).
const sharedCatchUp = 5 * time.Second

// catchUp waits until every projection of the instance has applied the
// log up to its head, and those shared through Kafka for sharedCatchUp at
// most.
func (a *App) catchUp(ctx context.Context) error {
	head, err := a.store.Head(ctx)
	if err != nil {
		return err
	}
	for _, name := range a.local {
		if err := a.runner.Watermark(name).Wait(ctx, head); err != nil {
			return fmt.Errorf("projection %s did not catch up: %w", name, err)
		}
	}
	sctx, cancel := context.WithTimeout(ctx, sharedCatchUp)
	defer cancel()
	for _, name := range a.viaKafka {
		if err := a.runner.Watermark(name).Wait(sctx, head); err != nil {
			if ctx.Err() != nil {
				return fmt.Errorf("projection %s did not catch up: %w", name, err)
			}
			a.log.Warn("serving before a projection shared through Kafka caught up: its consumer group is behind",
				"projection", name, "position", a.runner.Watermark(name).Position(), "head", head, "waited", sharedCatchUp)
		}
	}
	return nil
}

// names are the projectors' names.
func names(ps []projections.Projector) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.Name()
	}
	return out
}

// clock is the application's one clock.
func (a *App) clock() clock.Clock {
	if a.cfg.Clock != nil {
		return a.cfg.Clock
	}
	return clock.System{}
}

// historyStreams is how many decoded stream histories commands keep.
const historyStreams = 1 << 16

// cachedCustomers is how many customers conversions keep the state of
// (about 650 bytes each with the cache's own structures: 85 MB when full).
const cachedCustomers = 1 << 17

// commandDeps are what every command handler is given.
func (a *App) commandDeps() *commands.Deps {
	// Conversions load their workspace and customer on every request:
	// keep the workspaces' histories decoded (commands.WithHistories) and
	// the customers' state (commands.CustomerCache). A customer's stream is
	// only loaded to append to it: its cached state is checked by the
	// append's expected version.
	store := commands.WithHistories(a.store, historyStreams, []string{workspace.StreamPrefix})
	return &commands.Deps{Store: store, Cipher: a.secret.Cipher(), DefaultPlan: a.cfg.DefaultPlan, Now: a.clock().Now,
		Customers: commands.NewCustomerCache(cachedCustomers), WebhookURLs: webhookURLs{webhookGuard(a.cfg)}}
}

func (a *App) ensureOperatorKey(ctx context.Context) error {
	deps := a.commandDeps()
	key, res, err := commands.EnsureOperatorKeyHandler{Deps: deps, Hasher: a.secret.Hasher(), ServicePrefix: a.cfg.KeyPrefix}.Handle(ctx, commands.EnsureOperatorKey{
		Key: a.cfg.InitialAPIKey,
		Exists: func(ctx context.Context, hash string) (bool, error) {
			_, ok, err := a.core.APIKeyByHash(ctx, hash)
			return ok, err
		},
	})
	if err != nil {
		return fmt.Errorf("operator key: %w", err)
	}
	if res.Wrote {
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		if err := a.runner.Watermark(core.Name).Wait(wctx, res.Position); err != nil {
			return fmt.Errorf("operator key not projected: %w", err)
		}
	}
	if key != "" {
		fmt.Fprintf(a.out, "linkd operator API key (shown once, keep it): %s\n", key)
	}
	pw, res, err := commands.EnsureAdminUserHandler{Deps: deps, Passwords: password.Argon2id{}}.Handle(ctx, commands.EnsureAdminUser{
		Email: a.cfg.AdminEmail, Password: a.cfg.AdminPassword,
	})
	if err != nil {
		return fmt.Errorf("operator user: %w", err)
	}
	if pw != "" {
		fmt.Fprintf(a.out, "linkd dashboard sign-in (shown once, keep it): %s / %s at /dashboard/login\n", cmpOr(a.cfg.AdminEmail, "admin@localhost"), pw)
	}
	return nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// Serve listens on the configured address until ctx ends, then drains:
// in-flight requests finish, the projections stop after their current
// batch, and the stores flush and close.
func (a *App) Serve(ctx context.Context) error {
	ln, err := net.Listen("tcp", a.cfg.Addr)
	if err != nil {
		return err
	}
	return a.ServeListener(ctx, ln)
}

// ServeListener is Serve on a given listener.
//
// It serves at once, but until the instance has caught up with the event
// log as it stood when it started (Start), every request is answered 503
// (/healthz too): a load balancer sends it nothing yet, and nothing it
// answers can miss a write answered elsewhere (DECISIONS).
func (a *App) ServeListener(ctx context.Context, ln net.Listener) error {
	var ready atomic.Bool
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if ready.Load() || r.URL.Path == "/metrics" {
				a.handler.ServeHTTP(w, r)
				return
			}
			starting(w, r)
		}),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(a.log.Handler(), slog.LevelWarn),
		ConnContext:       deadline.ConnContext, // for deadline.Quick
	}
	errc := make(chan error, 1)
	// Deadlines within half a second of their time: the timeouts above are
	// seconds long, and exact ones cost 1.9-3.4% of the CPU of redirects.
	go func() {
		errc <- srv.Serve(httperr.Listener(deadline.Wrap(ln, 500*time.Millisecond, deadline.HoldBackgroundReads())))
	}()
	stop, err := a.Start(ctx)
	if err != nil {
		srv.Close()
		<-errc
		return err
	}
	ready.Store(true)
	if a.cfg.DebugAddr != "" {
		go a.serveDebug()
	}
	a.log.Info("linkd serving", "addr", ln.Addr().String(), "short_domain", a.cfg.ShortDomain(),
		"eventstore", storeKind(a.cfg), "bus", busKind(a.cfg), "analytics", statsKind(a.cfg))
	select {
	case err = <-errc:
	case <-ctx.Done():
		a.log.Info("linkd draining")
		sctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		err = srv.Shutdown(sctx)
		cancel()
		if errors.Is(err, http.ErrServerClosed) {
			err = nil
		}
	}
	stop()
	a.wg.Wait()
	return err
}

// starting answers a request that came before the instance caught up.
func starting(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Retry-After", "1")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusServiceUnavailable)
	if r.Method == http.MethodHead {
		return
	}
	const msg = "linkd is starting: it is catching up with the event log"
	switch {
	case r.URL.Path == "/healthz":
		io.WriteString(w, `{"status":"starting"}`)
	case strings.HasPrefix(r.URL.Path, "/api/"):
		io.WriteString(w, `{"error":"`+msg+`"}`)
	default:
		io.WriteString(w, `{"detail":"`+msg+`"}`)
	}
}

// Close releases everything Open made.
func (a *App) Close() error {
	var errs []error
	for i := len(a.closers) - 1; i >= 0; i-- {
		if err := a.closers[i](); err != nil {
			errs = append(errs, err)
		}
	}
	a.closers = nil
	return errors.Join(errs...)
}

func storeKind(c Config) string {
	if c.Embedded() {
		return "embedded"
	}
	return strings.SplitN(c.EventStore, "://", 2)[0]
}

func busKind(c Config) string {
	if c.KafkaBrokers != "" {
		return "kafka"
	}
	return "in-process"
}

func statsKind(c Config) string {
	if c.ClickHouseDSN != "" {
		return "clickhouse"
	}
	return "embedded"
}

// serveDebug serves the Go profiler on LINKD_DEBUG_ADDR.
func (a *App) serveDebug() {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	srv := &http.Server{Addr: a.cfg.DebugAddr, Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	a.log.Info("debug server", "addr", a.cfg.DebugAddr)
	if err := srv.ListenAndServe(); err != nil {
		a.log.Warn("debug server stopped", "err", err)
	}
}
