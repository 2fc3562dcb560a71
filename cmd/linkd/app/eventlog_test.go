package app_test

import (
	"context"
	"io"
	"net"
	"strings"
	"testing"

	"github.com/linkd/linkd/cmd/linkd/app"
	"github.com/linkd/linkd/cmd/linkd/app/apptest"
	"github.com/linkd/linkd/internal/testsupport/pgtest"
)

// A data directory whose read models were built from one event log is
// refused on another (LINKD_EVENTSTORE changed under it: the embedded
// store left for PostgreSQL) rather than serving the first log's links
// and skipping the new one's first events; linkd replay makes it the new
// log's.
func TestReadModelsOfAnotherLogAreRefused(t *testing.T) {
	dsn := pgtest.DSN(t)
	dir := t.TempDir()
	onDir := func(store string) apptest.Option {
		return func(c *app.Config) { c.DataDir, c.EventStore = dir, store }
	}
	// Two starts on the embedded store, the second with its log recorded.
	for range 2 {
		s := apptest.Start(t, onDir(""))
		s.MustCreate("/v1/links", apptest.OperatorKey, map[string]any{"original_url": "https://example.com/embedded"})
		s.Stop()
	}
	cfg := app.Defaults()
	cfg.DataDir, cfg.EventStore = dir, dsn
	cfg.InitialAPIKey = apptest.OperatorKey
	_, err := app.Open(context.Background(), cfg, app.NewLogger(cfg, io.Discard), io.Discard)
	if err == nil || !strings.Contains(err.Error(), "another event log") || !strings.Contains(err.Error(), "linkd replay") {
		t.Fatalf("a data directory of the embedded log opened on PostgreSQL: %v", err)
	}
	// The log now has events of its own (another instance's): still refused.
	other := apptest.Start(t, func(c *app.Config) { c.EventStore = dsn })
	other.MustCreate("/v1/links", apptest.OperatorKey, map[string]any{"original_url": "https://example.com/postgres"})
	other.Stop()
	if _, err := app.Open(context.Background(), cfg, app.NewLogger(cfg, io.Discard), io.Discard); err == nil || !strings.Contains(err.Error(), "another event log") {
		t.Fatalf("a data directory of the embedded log opened on a PostgreSQL log with events: %v", err)
	}
	if err := app.Replay(context.Background(), cfg, app.NewLogger(cfg, io.Discard), nil, nil, io.Discard); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Addr = ln.Addr().String()
	s := apptest.StartWith(t, cfg, ln)
	defer s.Stop()
	r := s.Do("GET", "/v1/links", apptest.OperatorKey, nil)
	if r.Status != 200 || !strings.Contains(string(r.Body), "example.com/postgres") || strings.Contains(string(r.Body), "example.com/embedded") {
		t.Fatalf("after the replay, links are %d %s; want PostgreSQL's only", r.Status, r.Body)
	}
}
