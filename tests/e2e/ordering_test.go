package e2e

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/linkd/linkd/internal/testsupport/pgtest"
)

// TestOrderingOnPostgres: thousands of concurrent writes on one instance
// with its log in PostgreSQL (links from 64 clients, redirects on them),
// then every acknowledged one in the read models of that instance and of a
// fresh one started on the same log (a new data directory, the
// deployment's secret), which builds its read models from the log alone.
func TestOrderingOnPostgres(t *testing.T) {
	dsn := pgtest.DSN(t)
	secret := "LINKD_SECRET=6f72646572696e672d7465737420736563726574206b65792c2033322062797465"
	p := start(t, t.TempDir(), freeAddr(t), "LINKD_EVENTSTORE="+dsn, secret)
	defer p.stop()
	const clients, perClient = 64, 40
	var mu sync.Mutex
	acked := map[string]string{} // id -> code
	var clicks atomic.Int64
	var wg sync.WaitGroup
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perClient {
				id, code, err := createLink(p.url, fmt.Sprintf("https://example.com/order/%d/%d", c, i))
				if err != nil {
					t.Errorf("create: %v", err)
					return
				}
				mu.Lock()
				acked[id] = code
				mu.Unlock()
				if st, _, _, err := do("GET", p.url+"/"+code, "", nil, "User-Agent", browserUA); err != nil || st != 302 {
					t.Errorf("redirect %s: %d %v", code, st, err)
					return
				}
				clicks.Add(1)
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	check := func(url, who string) {
		t.Helper()
		links := allLinks(t, url, false)
		var counted int64
		for id := range acked {
			n, ok := links[id]
			if !ok {
				t.Errorf("%s: link %s, acknowledged, is not listed", who, id)
				continue
			}
			counted += int64(n)
		}
		if len(links) != len(acked) || counted != clicks.Load() {
			t.Errorf("%s: %d links listed, %d acknowledged; %d clicks counted, %d redirects answered", who, len(links), len(acked), counted, clicks.Load())
		}
	}
	check(p.url, "the running instance")
	t0 := time.Now()
	fresh := start(t, t.TempDir(), freeAddr(t), "LINKD_EVENTSTORE="+dsn, secret)
	defer fresh.stop()
	t.Logf("%d links and %d redirects from %d clients; a fresh instance healthy after %v", len(acked), clicks.Load(), clients, time.Since(t0))
	check(fresh.url, "a fresh instance")
	// And redirects every link it never saw made (an access: counted).
	for id, code := range acked {
		if st, _, _, err := do("GET", fresh.url+"/"+code, "", nil, "User-Agent", browserUA); err != nil || st != 302 {
			t.Errorf("the fresh instance: link %s by its code %s: %d %v", id, code, st, err)
		}
	}
}
