package app_test

import (
	"context"
	"io"
	"net"
	"strings"
	"testing"

	"github.com/linkd/linkd/cmd/linkd/app"
	"github.com/linkd/linkd/cmd/linkd/app/apptest"
	"github.com/linkd/linkd/internal/testsupport/chtest"
	"github.com/linkd/linkd/internal/testsupport/pgtest"
	ch "github.com/linkd/linkd/projections/clickhouse"
)

// A ClickHouse database whose statistics were built from one event log is
// refused by an instance of another (ADR 0131), rather than resuming at
// the other log's positions; a replay of its two projections makes it the
// new log's.
func TestClickHouseOfAnotherLogIsRefused(t *testing.T) {
	chDSN, first, second := chtest.DSN(t), pgtest.DSN(t), pgtest.DSN(t)
	on := func(store string) apptest.Option {
		return func(c *app.Config) { c.EventStore, c.ClickHouseDSN = store, chDSN }
	}
	s := apptest.Start(t, on(first))
	s.MustCreate("/v1/links", apptest.OperatorKey, map[string]any{"original_url": "https://example.com/first"})
	s.Stop()

	// Another log, empty, then with events of its own: refused both times.
	cfg := app.Defaults()
	cfg.InitialAPIKey, cfg.EventStore, cfg.ClickHouseDSN = apptest.OperatorKey, second, chDSN
	ctx := context.Background()
	open := func(what string) {
		t.Helper()
		cfg.DataDir = t.TempDir()
		a, err := app.Open(ctx, cfg, app.NewLogger(cfg, io.Discard), io.Discard)
		if err == nil {
			a.Close()
		}
		if err == nil || !strings.Contains(err.Error(), "ClickHouse database") || !strings.Contains(err.Error(), "--projection clickhouse_radar") {
			t.Fatalf("%s: ClickHouse of another log opened: %v", what, err)
		}
	}
	open("an empty log")
	o := apptest.Start(t, func(c *app.Config) { c.EventStore = second })
	o.MustCreate("/v1/links", apptest.OperatorKey, map[string]any{"original_url": "https://example.com/second"})
	o.Stop()
	open("a log with events")

	// A replay of one of the two leaves it refused; of both, accepted.
	cfg.DataDir = t.TempDir()
	if err := app.Replay(ctx, cfg, app.NewLogger(cfg, io.Discard), []string{"clickhouse"}, nil, io.Discard); err != nil {
		t.Fatal(err)
	}
	open("after a replay of clickhouse alone")
	if err := app.Replay(ctx, cfg, app.NewLogger(cfg, io.Discard), []string{"clickhouse", "clickhouse_radar"}, nil, io.Discard); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Addr, cfg.DataDir = ln.Addr().String(), t.TempDir()
	s = apptest.StartWith(t, cfg, ln)
	defer s.Stop()
	links := s.Do("GET", "/v1/links", apptest.OperatorKey, nil)
	if links.Status != 200 || !strings.Contains(string(links.Body), "example.com/second") {
		t.Fatalf("links on the second log: %d %s", links.Status, links.Body)
	}
}

// A ClickHouse database built from the embedded log, made before it
// recorded its log, is named the embedded log's by linkd copy-log: a
// start on the copy in PostgreSQL (other positions) is refused until
// a replay of both ClickHouse projections.
func TestCopyLogNamesTheLogOfClickHouse(t *testing.T) {
	chDSN, to, dir := chtest.DSN(t), pgtest.DSN(t), t.TempDir()
	s := apptest.Start(t, func(c *app.Config) { c.DataDir, c.ClickHouseDSN, c.EventStore = dir, chDSN, "" })
	s.MustCreate("/v1/links", apptest.OperatorKey, map[string]any{"original_url": "https://example.com/embedded"})
	s.Stop()
	ctx := context.Background()
	db, err := ch.Open(ctx, chDSN, ch.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Conn().Exec(ctx, "TRUNCATE TABLE "+db.Table("event_log")); err != nil {
		t.Fatal(err)
	}
	cfg := app.Defaults()
	cfg.DataDir, cfg.ClickHouseDSN, cfg.InitialAPIKey = dir, chDSN, apptest.OperatorKey
	logger := app.NewLogger(cfg, io.Discard)
	if _, err := app.CopyLog(ctx, cfg, to, logger, io.Discard); err != nil {
		t.Fatal(err)
	}
	if _, kind, ok, err := db.EventLog(ctx); err != nil || !ok || kind != "embedded" {
		t.Fatalf("ClickHouse's log after the copy: %q %v %v", kind, ok, err)
	}
	cfg.EventStore, cfg.DataDir = to, t.TempDir()
	if _, err := app.Open(ctx, cfg, logger, io.Discard); err == nil || !strings.Contains(err.Error(), "ClickHouse database") || !strings.Contains(err.Error(), "other positions") {
		t.Fatalf("ClickHouse of the embedded log opened on its copy: %v", err)
	}
}
