package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/linkd/linkd/internal/testsupport/pgtest"
)

// TestEventStoreDown: with its PostgreSQL event store down, linkd answers
// writes and counted redirects 503 quickly, with Retry-After (nothing is
// acknowledged that is not stored), keeps answering reads from its read
// models, and recovers by itself when the server is back.
func TestEventStoreDown(t *testing.T) {
	c := pgtest.Start(t, pgtest.Options{TestSettings: true})
	dsn := c.NewDatabase(t)
	p := start(t, t.TempDir(), freeAddr(t), "LINKD_EVENTSTORE="+dsn)
	defer p.stop()
	id, code, err := createLink(p.url, "https://example.com/down")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Stop(false); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	st, b, h, err := do("POST", p.url+"/v1/links", operatorKey, map[string]any{"original_url": "https://example.com/while-down"})
	if err != nil || st != 503 || h.Get("Retry-After") == "" || !strings.Contains(string(b), "event store is unavailable") {
		t.Errorf("a write while the store is down: %d %v %v %s", st, err, h, b)
	}
	if d := time.Since(t0); d > 6*time.Second {
		t.Errorf("the write took %v to fail", d)
	}
	if st, _, _, _ := do("GET", p.url+"/"+code, "", nil, "User-Agent", browserUA); st != 503 {
		t.Errorf("a redirect whose click cannot be stored: %d, want 503", st)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		_, _, err := createLink(p.url, "https://example.com/after")
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("linkd did not recover after the store came back: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if st, _, _, _ := do("GET", p.url+"/"+code, "", nil, "User-Agent", browserUA); st != 302 {
		t.Errorf("a redirect after the store came back: %d", st)
	}
	if st, b, _, _ := do("GET", p.url+"/v1/links/"+id, operatorKey, nil); st != 200 {
		t.Errorf("read after recovery: %d %s", st, b)
	}
}
