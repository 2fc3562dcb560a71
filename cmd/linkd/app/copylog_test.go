package app_test

import (
	"context"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/linkd/linkd/cmd/linkd/app"
	"github.com/linkd/linkd/cmd/linkd/app/apptest"
	"github.com/linkd/linkd/internal/testsupport/pgtest"
)

// From make run to PostgreSQL: linkd copy-log puts the embedded log into
// an empty database, goes on from where an earlier copy stopped, and
// refuses a database of another log. The data directory's read models are
// then refused on the copy (other positions) until linkd replay, after
// which linkd on PostgreSQL answers what it answered on the embedded store.
// A copy from that database into another keeps positions: no replay.
func TestCopyLogFromEmbeddedToPostgres(t *testing.T) {
	to := pgtest.DSN(t)
	dir := t.TempDir()
	cfg := app.Defaults()
	cfg.DataDir, cfg.InitialAPIKey, cfg.LogLevel, cfg.DefaultDomain = dir, apptest.OperatorKey, "warn", "go.example"
	logger := app.NewLogger(cfg, io.Discard)
	ctx := context.Background()

	onDir := func(c *app.Config) { c.DataDir, c.DefaultDomain, c.EventStore = dir, cfg.DefaultDomain, "" }
	// Links and clicks on the embedded store; a first copy; more later.
	s := apptest.Start(t, onDir)
	l1 := s.MustCreate("/v1/links", apptest.OperatorKey, map[string]any{"original_url": "https://example.com/first"})
	clicks(t, s, l1, 3)
	s.Stop()
	first, err := app.CopyLog(ctx, cfg, to, logger, io.Discard)
	if err != nil || first.Copied == 0 || first.Present != 0 {
		t.Fatalf("first copy: %+v %v", first, err)
	}
	s = apptest.Start(t, onDir)
	l2 := s.MustCreate("/v1/links", apptest.OperatorKey, map[string]any{"original_url": "https://example.com/second"})
	clicks(t, s, l2, 2)
	want := s.Do("GET", "/v1/links?sort=created_at", apptest.OperatorKey, nil)
	s.Stop()
	second, err := app.CopyLog(ctx, cfg, to, logger, io.Discard)
	if err != nil || second.Present != first.Copied || second.Copied == 0 {
		t.Fatalf("second copy: %+v %v; the first copied %d", second, err, first.Copied)
	}
	if again, err := app.CopyLog(ctx, cfg, to, logger, io.Discard); err != nil || again.Copied != 0 || again.Present != first.Copied+second.Copied {
		t.Fatalf("a copy with nothing new: %+v %v", again, err)
	}

	// A database of another log is refused, whatever it holds.
	other := pgtest.DSN(t)
	o := apptest.Start(t, func(c *app.Config) { c.EventStore = other })
	o.Stop()
	if _, err := app.CopyLog(ctx, cfg, other, logger, io.Discard); err == nil || !strings.Contains(err.Error(), "not a copy") {
		t.Fatalf("a copy into another log's database: %v", err)
	}

	// The data directory on the copy: refused, replayed, then the same.
	pg := cfg
	pg.EventStore = to
	if _, err := app.Open(ctx, pg, logger, io.Discard); err == nil || !strings.Contains(err.Error(), "other positions") {
		t.Fatalf("read models of the embedded log opened on its copy: %v", err)
	}
	if err := app.Replay(ctx, pg, logger, nil, nil, io.Discard); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	pg.Addr = ln.Addr().String()
	s = apptest.StartWith(t, pg, ln)
	got := s.Do("GET", "/v1/links?sort=created_at", apptest.OperatorKey, nil)
	if got.Status != 200 || string(got.Body) != string(want.Body) {
		t.Fatalf("links on the copy:\n%d %s\nwant, as on the embedded store:\n%d %s", got.Status, got.Body, want.Status, want.Body)
	}
	// Writes go on after the copied history.
	s.MustCreate("/v1/links", apptest.OperatorKey, map[string]any{"original_url": "https://example.com/third"})
	clicks(t, s, l1, 1)
	want = s.Do("GET", "/v1/links?sort=created_at", apptest.OperatorKey, nil)
	s.Stop()

	// From one PostgreSQL database to another the positions stay: the
	// same data directory serves the second copy without a replay.
	pg2 := pg
	pg2.EventStore = pgtest.DSN(t)
	if _, err := app.CopyLog(ctx, pg, pg2.EventStore, logger, io.Discard); err != nil {
		t.Fatal(err)
	}
	if ln, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	pg2.Addr = ln.Addr().String()
	s = apptest.StartWith(t, pg2, ln)
	defer s.Stop()
	if got := s.Do("GET", "/v1/links?sort=created_at", apptest.OperatorKey, nil); string(got.Body) != string(want.Body) {
		t.Fatalf("links on the second copy:\n%s\nwant:\n%s", got.Body, want.Body)
	}
	clicks(t, s, l2, 1)
}

// clicks follows link's short URL n times and waits until its clicks are
// counted.
func clicks(t *testing.T, s *apptest.Server, link map[string]any, n int) {
	t.Helper()
	id, code := link["id"].(string), link["code"].(string)
	before := s.Do("GET", "/v1/links/"+id, apptest.OperatorKey, nil).JSON(t)["clicks"].(float64)
	for range n {
		if r := s.Do("GET", "/"+code, "", nil, "Host", s.Config.DefaultDomain, "User-Agent", "Mozilla/5.0 (X11; Linux x86_64) Chrome/120.0 Safari/537.36"); r.Status/100 != 3 {
			t.Fatalf("GET /%s: %d %s", code, r.Status, r.Body)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		c := s.Do("GET", "/v1/links/"+id, apptest.OperatorKey, nil).JSON(t)["clicks"].(float64)
		if int(c-before) == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("link %s counted %v clicks, want %v", id, c-before, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
