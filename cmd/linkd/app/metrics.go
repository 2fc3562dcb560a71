package app

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/linkd/linkd/domain"
	"github.com/linkd/linkd/eventstore"
	"github.com/linkd/linkd/kafka"
	"github.com/linkd/linkd/projections/clickindex"
	radarstore "github.com/linkd/linkd/projections/radar"
	"github.com/linkd/linkd/projections/webhooks"
)

// metrics are linkd's Prometheus metrics, in a registry of their own.
type metrics struct {
	categories sync.Map // category -> prometheus.Counter
	reg        *prometheus.Registry
	appendDur  prometheus.Histogram
	appended   *prometheus.CounterVec
	appendErr  prometheus.Counter
	requests   *prometheus.CounterVec
	reqDur     *prometheus.HistogramVec
	relayPos   prometheus.Gauge
	relayPub   prometheus.Counter
	relayLead  prometheus.Gauge
	sharedLead prometheus.Gauge
	cmdDur     *prometheus.HistogramVec
}

func newMetrics() *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		appendDur: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "linkd_eventstore_append_seconds", Help: "Latency of appends to the event store.",
			Buckets: prometheus.ExponentialBuckets(0.00005, 2, 16),
		}),
		appended: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "linkd_events_appended_total", Help: "Events appended, by stream category.",
		}, []string{"category"}),
		appendErr: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "linkd_eventstore_append_errors_total", Help: "Appends that failed (wrong expected version included).",
		}),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "linkd_http_requests_total", Help: "HTTP requests by kind and status class.",
		}, []string{"kind", "status"}),
		reqDur: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "linkd_http_request_seconds", Help: "HTTP request latency by kind.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 2, 16),
		}, []string{"kind"}),
		relayPos: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "linkd_relay_position", Help: "Commit position of the last event the relay published and had acknowledged (Kafka mode).",
		}),
		relayPub: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "linkd_relay_published_total", Help: "Events the relay published to Kafka.",
		}),
		relayLead: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "linkd_relay_leader", Help: "1 while this instance holds the relay's lease and publishes the log to Kafka, else 0 (Kafka mode).",
		}),
		sharedLead: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "linkd_shared_projections_writer", Help: "1 while this instance holds the shared lease and writes the ClickHouse read models from Kafka, else 0 (Kafka mode).",
		}),
		cmdDur: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "linkd_command_seconds", Help: "Latency of commands by name and outcome (ok, refused: the caller's error, failed: the store's or a bug).",
			Buckets: prometheus.ExponentialBuckets(0.0001, 2, 16),
		}, []string{"command", "outcome"}),
	}
	m.reg.MustRegister(m.appendDur, m.appended, m.appendErr, m.requests, m.reqDur, m.relayPos, m.relayPub, m.relayLead, m.sharedLead, m.cmdDur,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// handler serves /metrics, with the projection gauges computed at scrape
// time.
func (m *metrics) handler(a *App) http.Handler {
	lag := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "linkd_eventstore_head_position", Help: "Commit position of the last event in the log."},
		func() float64 {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			h, err := a.store.Head(ctx)
			if err != nil {
				return -1
			}
			return float64(h.Commit)
		})
	m.reg.MustRegister(lag)
	m.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "linkd_clicks_uncounted_total",
		Help: "Accesses answered but not counted: a visitor over LINKD_CLICK_LIMIT clicks on one link in the hour.",
	}, func() float64 { return float64(a.limit.Uncounted()) }))
	if g := a.limits.guard; g != nil {
		m.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "linkd_limits_local_total",
			Help: "Rate-limit and password-throttle questions answered from this instance's own counts because the shared ones (PostgreSQL) failed or were resting after a failure.",
		}, func() float64 { return float64(g.Fallbacks()) }))
	}
	var inner eventstore.Store = a.store
	if in, ok := inner.(*instrumented); ok {
		inner = in.Store
	}
	if pb, ok := inner.(interface{ PlainBytes() int64 }); ok {
		m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "linkd_eventstore_plain_bytes",
			Help: "Bytes of sealed log segments not compressed yet: what the compactor left while it yielded to load (embedded store).",
		}, func() float64 { return float64(pb.PlainBytes()) }))
	}
	if a.deliver != nil {
		d := a.deliver
		m.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "linkd_webhook_deliveries_total", Help: "Webhook delivery attempts answered with a 2xx.",
		}, func() float64 { return float64(d.Delivered.Load()) }))
		m.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "linkd_webhook_failures_total", Help: "Webhook delivery attempts that failed (no answer in time, refused, or not 2xx).",
		}, func() float64 { return float64(d.Failed.Load()) }))
		m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "linkd_webhook_lag_seconds", Help: "Age of the oldest webhook message due and not delivered yet (0 when none waits).",
		}, func() float64 { return d.Lag().Seconds() }))
		m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "linkd_webhook_pending_messages", Help: "Webhook messages due and waiting for an attempt.",
		}, func() float64 { return float64(d.Pending()) }))
		m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "linkd_webhook_delivering", Help: "1 when this instance delivers webhook messages: always alone or on PostgreSQL; on EventStoreDB, the one instance holding the deliverers' lease.",
		}, func() float64 {
			if d.Delivering() {
				return 1
			}
			return 0
		}))
	}
	names := []string{"core", a.stats.Name(), clickindex.Name, radarstore.Name, webhooks.Name}
	if a.chRadar != nil {
		names = append(names, a.chRadar.Name())
	}
	for _, name := range names {
		wm := a.runner.Watermark(name)
		if wm == nil {
			continue
		}
		m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "linkd_projection_position", Help: "Commit position up to which the projection has applied the log.",
			ConstLabels: prometheus.Labels{"projection": name},
		}, func() float64 { return float64(wm.Position().Commit) }))
		m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "linkd_projection_lag", Help: "Log positions between the head and what the projection has applied (0 when caught up).",
			ConstLabels: prometheus.Labels{"projection": name},
		}, func() float64 {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			h, err := a.store.Head(ctx)
			if err != nil || wm.Reached(h) {
				return 0
			}
			return float64(h.Commit) - float64(wm.Position().Commit)
		}))
		m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "linkd_projection_pending_events", Help: "Events delivered to the projection and not yet applied (Kafka mode).",
			ConstLabels: prometheus.Labels{"projection": name},
		}, func() float64 { return float64(wm.Pending()) }))
	}
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// statusRecorder remembers a response's status.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (r *statusRecorder) WriteHeader(code int) {
	r.status = code
	r.ResponseWriter.WriteHeader(code)
}

// http counts requests by kind (redirect, api, other) and status class.
func (m *metrics) http(next http.Handler) http.Handler {
	// Arrays rather than maps: two map lookups of string keys were most
	// of this wrapper's cost on a redirect.
	const api, redirect, other = 0, 1, 2
	kinds := [...]string{api: "api", redirect: "redirect", other: "other"}
	classes := [...]string{"1xx", "2xx", "3xx", "4xx", "5xx"}
	var counters [len(kinds)][len(classes)]prometheus.Counter
	var durs [len(kinds)]prometheus.Observer
	for k, kind := range kinds {
		for c, class := range classes {
			counters[k][c] = m.requests.WithLabelValues(kind, class)
		}
		durs[k] = m.reqDur.WithLabelValues(kind)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		next.ServeHTTP(rec, r)
		kind := other
		switch p := r.URL.Path; {
		case strings.HasPrefix(p, "/v1/"):
			kind = api
		case p != "/healthz" && p != "/metrics" && p != "/openapi.json" && strings.Count(p, "/") == 1:
			kind = redirect
		}
		class := rec.status / 100
		if class < 1 || class > 5 {
			class = 5
		}
		counters[kind][class-1].Inc()
		durs[kind].Observe(time.Since(start).Seconds())
	})
}

// instrumented wraps an event store to time appends and count events.
type instrumented struct {
	eventstore.Store
	m *metrics
}

func (m *metrics) instrument(s eventstore.Store) eventstore.Store {
	return &instrumented{Store: s, m: m}
}

func (s *instrumented) Append(ctx context.Context, stream string, expected eventstore.ExpectedVersion, events ...eventstore.EventData) (eventstore.AppendResult, error) {
	start := time.Now()
	res, err := s.Store.Append(ctx, stream, expected, events...)
	s.observe(start, err, eventstore.StreamAppend{Stream: stream, Events: events})
	return res, err
}

// AppendMulti times a multi-stream append like an append, when the store
// offers them; errors.ErrUnsupported when it does not (EventStoreDB).
func (s *instrumented) AppendMulti(ctx context.Context, parts ...eventstore.StreamAppend) ([]eventstore.AppendResult, error) {
	m, ok := s.Store.(eventstore.MultiAppender)
	if !ok {
		return nil, errors.ErrUnsupported
	}
	start := time.Now()
	res, err := m.AppendMulti(ctx, parts...)
	s.observe(start, err, parts...)
	return res, err
}

// observe records an append that started at start: its time, and its
// failure or its events by category.
func (s *instrumented) observe(start time.Time, err error, parts ...eventstore.StreamAppend) {
	s.m.appendDur.Observe(time.Since(start).Seconds())
	if err != nil {
		s.m.appendErr.Inc()
		return
	}
	for _, p := range parts {
		s.m.counter(eventstore.Category(p.Stream)).Add(float64(len(p.Events)))
	}
}

// relayLeading marks this instance as the relay's leader and copies the
// relay's position and count into the gauges until the returned function
// is called, when the relay stops.
func (m *metrics) relayLeading(r *kafka.Relay) (stopped func()) {
	m.relayLead.Set(1)
	ctx, stop := context.WithCancel(context.Background())
	go m.watchRelay(ctx, r)
	return func() {
		stop()
		m.relayLead.Set(0)
	}
}

// sharedWriting marks this instance as the writer of the shared read
// models until the returned function is called.
func (m *metrics) sharedWriting() (stopped func()) {
	m.sharedLead.Set(1)
	return func() { m.sharedLead.Set(0) }
}

// watchRelay copies the relay's position and count into the gauges.
func (m *metrics) watchRelay(ctx context.Context, r interface {
	Acked() eventstore.Position
	Published() uint64
}) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	var last uint64
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			m.relayPos.Set(float64(r.Acked().Commit))
			n := r.Published()
			m.relayPub.Add(float64(n - last))
			last = n
		}
	}
}

// counter returns the appended-events counter of a category, cached: the
// label lookup is too slow for every click.
func (m *metrics) counter(category string) prometheus.Counter {
	if c, ok := m.categories.Load(category); ok {
		return c.(prometheus.Counter)
	}
	c := m.appended.WithLabelValues(category)
	m.categories.Store(category, c)
	return c
}

// ObserveCommand implements commands.Observer: every decorated command's
// latency, by name and outcome.
func (m *metrics) ObserveCommand(name string, took time.Duration, err error) {
	outcome := "ok"
	switch {
	case err == nil:
	case domain.KindOf(err) != 0:
		outcome = "refused"
	default:
		outcome = "failed"
	}
	m.cmdDur.WithLabelValues(name, outcome).Observe(took.Seconds())
}
