// Package apptest starts a whole linkd in process for tests: embedded
// stores in a temporary directory, the in-process bus, and the HTTP
// interface on a local port.
package apptest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/linkd/linkd/cmd/linkd/app"
	"github.com/linkd/linkd/eventstore/postgres"
	"github.com/linkd/linkd/internal/clock"
	"github.com/linkd/linkd/internal/testsupport/chtest"
	"github.com/linkd/linkd/internal/testsupport/pgtest"
	"github.com/linkd/linkd/kafka/kafkatest"
)

// OperatorKey is the operator key of every test server.
const OperatorKey = "svc_sk_operator_test_key_0123456789"

// AdminEmail and AdminPassword sign the operator user in to the dashboard
// of every test server.
const (
	AdminEmail    = "admin@localhost"
	AdminPassword = "operator test password"
)

// Server is a running linkd.
type Server struct {
	URL    string // http://127.0.0.1:port
	Host   string // 127.0.0.1:port
	Config app.Config
	App    *app.App
	t      testing.TB
	cancel context.CancelFunc
	done   chan error
}

// Option changes the configuration before start.
type Option func(*app.Config)

// WithClock runs linkd on a clock the test moves (Advance) instead of
// sleeping for time to pass.
func WithClock(c clock.Clock) Option {
	return func(cfg *app.Config) { cfg.Clock = c }
}

// NewClock is a manual clock at the current time, for WithClock.
func NewClock() *clock.Manual { return clock.NewManual(time.Now()) }

// Postgres keeps the server's event log in a PostgreSQL database of its
// own (pgtest: a throwaway cluster, or LINKD_TEST_POSTGRES_DSN); the test
// is skipped when there is no PostgreSQL.
func Postgres(t testing.TB) Option {
	t.Helper()
	dsn := pgtest.DSN(t)
	return func(c *app.Config) { c.EventStore = dsn }
}

// Scaled gives the server the scaled read path: a Kafka cluster of its own
// (kfake, in process) and a ClickHouse database of its own (chtest), so
// that its statistics and Radar reads are ClickHouse's, fed through Kafka.
// The test is skipped when there is no ClickHouse.
func Scaled(t testing.TB) Option {
	t.Helper()
	dsn := chtest.DSN(t)
	brokers := strings.Join(kafkatest.Start(t, 6).Brokers, ",")
	return func(c *app.Config) {
		c.ClickHouseDSN, c.KafkaBrokers, c.KafkaPartitions = dsn, brokers, 6
	}
}

// freshDatabase creates a database on the server of dsn for t, dropped
// when t ends.
func freshDatabase(t testing.TB, dsn string) string {
	t.Helper()
	db, err := pgtest.CreateDatabase(dsn, fmt.Sprintf("linkd_apptest_%d_%d", time.Now().UnixNano(), os.Getpid()))
	if err != nil {
		t.Fatalf("LINKD_EVENTSTORE: %v", err)
	}
	t.Cleanup(func() {
		if err := pgtest.DropDatabase(dsn, db); err != nil {
			t.Logf("drop database: %v", err)
		}
	})
	return db
}

// Start runs linkd until the test ends. When LINKD_EVENTSTORE names a
// PostgreSQL server, each server keeps its events in a new database there.
// LINKD_TEST_SCALED=1 gives each server the scaled read path too: a Kafka
// cluster of its own (kfake) and a ClickHouse database of its own (chtest),
// so that a suite's statistics and Radar reads are ClickHouse's, fed
// through Kafka, as in a deployment of many instances.
func Start(t testing.TB, opts ...Option) *Server {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg := app.Defaults()
	cfg.Addr = ln.Addr().String()
	cfg.DataDir = t.TempDir()
	cfg.InitialAPIKey = OperatorKey
	cfg.AdminEmail, cfg.AdminPassword = AdminEmail, AdminPassword
	cfg.LogLevel = "warn"
	cfg.LogFormat = "text"
	if es := os.Getenv("LINKD_EVENTSTORE"); postgres.IsDSN(es) {
		// Every server gets an empty database of its own on that server.
		cfg.EventStore = freshDatabase(t, es)
	}
	if os.Getenv("LINKD_TEST_SCALED") == "1" {
		Scaled(t)(&cfg)
	}
	for _, o := range opts {
		o(&cfg)
	}
	return StartWith(t, cfg, ln)
}

// StartWith runs linkd with cfg on ln until the test ends.
func StartWith(t testing.TB, cfg app.Config, ln net.Listener) *Server {
	t.Helper()
	var logOut io.Writer = io.Discard
	if os.Getenv("LINKD_TEST_LOG") != "" {
		logOut = os.Stderr
	}
	log := app.NewLogger(cfg, logOut)
	ctx, cancel := context.WithCancel(context.Background())
	a, err := app.Open(ctx, cfg, log, io.Discard)
	if err != nil {
		cancel()
		ln.Close()
		t.Fatalf("open linkd: %v", err)
	}
	s := &Server{URL: "http://" + ln.Addr().String(), Host: ln.Addr().String(), Config: cfg, App: a, t: t, cancel: cancel, done: make(chan error, 1)}
	go func() { s.done <- a.ServeListener(ctx, ln) }()
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := http.Get(s.URL + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("linkd did not become healthy: %v", err)
		}
		select {
		case err := <-s.done:
			t.Fatalf("linkd stopped: %v", err)
		case <-time.After(20 * time.Millisecond):
		}
	}
	t.Cleanup(s.Stop)
	return s
}

// Stop drains and closes the server (idempotent).
func (s *Server) Stop() {
	if s.cancel == nil {
		return
	}
	s.cancel()
	s.cancel = nil
	select {
	case err := <-s.done:
		if err != nil {
			s.t.Errorf("linkd serve: %v", err)
		}
	case <-time.After(30 * time.Second):
		s.t.Errorf("linkd did not stop")
	}
	if err := s.App.Close(); err != nil {
		s.t.Errorf("linkd close: %v", err)
	}
}

// Response is a decoded answer.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// JSON decodes the body into a map (or fails the test).
func (r Response) JSON(t testing.TB) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.Body, &m); err != nil {
		t.Fatalf("body is not a JSON object: %v: %s", err, r.Body)
	}
	return m
}

// List decodes the body into a slice.
func (r Response) List(t testing.TB) []any {
	t.Helper()
	var m []any
	if err := json.Unmarshal(r.Body, &m); err != nil {
		t.Fatalf("body is not a JSON array: %v: %s", err, r.Body)
	}
	return m
}

// Detail returns the body's "detail".
func (r Response) Detail(t testing.TB) string {
	t.Helper()
	d, _ := r.JSON(t)["detail"].(string)
	return d
}

// Do sends a request with key as bearer (none when empty); body may be a
// string (sent as is), []byte, or anything JSON-encodable; nil for none.
func (s *Server) Do(method, path, key string, body any, headers ...string) Response {
	s.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		enc, err := json.Marshal(b)
		if err != nil {
			s.t.Fatal(err)
		}
		rd = bytes.NewReader(enc)
	}
	req, err := http.NewRequest(method, s.URL+path, rd)
	if err != nil {
		s.t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		if strings.EqualFold(headers[i], "Host") {
			req.Host = headers[i+1]
			continue
		}
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := NoRedirect.Do(req)
	if err != nil {
		s.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		s.t.Fatal(err)
	}
	return Response{Status: resp.StatusCode, Header: resp.Header, Body: b}
}

// NoRedirect is a client that shows redirects instead of following them.
var NoRedirect = &http.Client{
	Timeout:       30 * time.Second,
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
}

// NewKey creates a key through the API with the operator key and returns
// the full key. access is "full", "read_only" or "limited".
func (s *Server) NewKey(user, access string, perms map[string]string) string {
	s.t.Helper()
	body := map[string]any{"name": "test " + user, "access": access, "user_id": user}
	if perms != nil {
		body["permissions"] = perms
	}
	r := s.Do("POST", "/v1/api-keys", OperatorKey, body)
	if r.Status != http.StatusCreated {
		s.t.Fatalf("create key: %d %s", r.Status, r.Body)
	}
	return r.JSON(s.t)["key"].(string)
}

// MustCreate posts body to path and returns the created object.
func (s *Server) MustCreate(path, key string, body any) map[string]any {
	s.t.Helper()
	r := s.Do("POST", path, key, body)
	if r.Status != http.StatusCreated {
		s.t.Fatalf("POST %s: %d %s", path, r.Status, r.Body)
	}
	return r.JSON(s.t)
}
