package e2e

import (
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

const browserUA = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36"

// TestCrashKeepsAcknowledgedWritesAndClicks runs linkd, writes links and
// clicks from many goroutines, kills the process with SIGKILL in the
// middle, starts it again, and checks that every acknowledged link is
// listed and every answered access (redirect or public read) is counted.
func TestCrashKeepsAcknowledgedWritesAndClicks(t *testing.T) {
	crashScenario(t)
}

// crashScenario is the crash test with extra settings of the child's
// environment (the Kafka variant passes LINKD_KAFKA_BROKERS).
func crashScenario(t *testing.T, extra ...string) {
	rounds := 1
	if os.Getenv("LINKD_INTEGRATION") != "" {
		rounds = 3
	}
	dir := t.TempDir()
	addr := freeAddr(t)
	acked := map[string]bool{}
	answered := map[string]int64{}  // link id -> answered accesses
	attempted := map[string]int64{} // link id -> accesses sent
	codes := map[string]string{}    // link id -> code
	for round := 0; round < rounds; round++ {
		p := start(t, dir, addr, extra...)
		if round > 0 {
			check(t, p.url, acked, answered, attempted)
		}
		// Seed links to click.
		for i := 0; i < 10; i++ {
			id, code, err := createLink(p.url, fmt.Sprintf("https://example.com/seed/%d/%d", round, i))
			if err != nil {
				t.Fatal(err)
			}
			acked[id], codes[id] = true, code
		}
		var mu sync.Mutex
		var stop atomic.Bool
		var wg sync.WaitGroup
		ids := make([]string, 0, len(codes))
		for id := range codes {
			ids = append(ids, id)
		}
		for w := 0; w < 8; w++ {
			wg.Add(1)
			go func(w int) { // writers
				defer wg.Done()
				for n := 0; !stop.Load(); n++ {
					id, code, err := createLink(p.url, fmt.Sprintf("https://example.com/w/%d/%d/%d", round, w, n))
					if err == nil {
						mu.Lock()
						acked[id], codes[id] = true, code
						mu.Unlock()
					}
				}
			}(w)
		}
		for c := 0; c < 16; c++ {
			wg.Add(1)
			go func(c int) { // clickers
				defer wg.Done()
				rng := rand.New(rand.NewSource(int64(c)))
				for !stop.Load() {
					id := ids[rng.Intn(len(ids))]
					mu.Lock()
					code := codes[id]
					attempted[id]++
					mu.Unlock()
					var st int
					var err error
					if c%2 == 0 {
						st, _, _, err = do("GET", p.url+"/"+code, "", nil, "User-Agent", browserUA)
						if st != 302 {
							err = fmt.Errorf("status %d", st)
						}
					} else {
						st, _, _, err = do("GET", p.url+"/v1/links/code/"+code, "", nil, "User-Agent", browserUA)
						if st != 200 {
							err = fmt.Errorf("status %d", st)
						}
					}
					if err == nil {
						mu.Lock()
						answered[id]++
						mu.Unlock()
					}
				}
			}(c)
		}
		time.Sleep(time.Duration(800+rand.Intn(700)) * time.Millisecond)
		p.kill() // SIGKILL while requests are in flight
		stop.Store(true)
		wg.Wait()
		t.Logf("round %d: %d links acknowledged, %d accesses answered", round, len(acked), sum(answered))
	}
	p := start(t, dir, addr, extra...)
	defer p.stop()
	check(t, p.url, acked, answered, attempted)
}

func sum(m map[string]int64) int64 {
	var n int64
	for _, v := range m {
		n += v
	}
	return n
}

func check(t *testing.T, url string, acked map[string]bool, answered, attempted map[string]int64) {
	t.Helper()
	listed := allLinks(t, url, false)
	for id := range acked {
		if _, ok := listed[id]; !ok {
			t.Errorf("acknowledged link %s is missing after the crash", id)
		}
	}
	for id, n := range answered {
		got := int64(listed[id])
		if got < n {
			t.Errorf("link %s: %d clicks counted, %d accesses were answered", id, got, n)
		}
		if got > attempted[id] {
			t.Errorf("link %s: %d clicks counted, only %d accesses were sent", id, got, attempted[id])
		}
	}
}

func createLink(url, target string) (string, string, error) {
	st, b, _, err := do("POST", url+"/v1/links", operatorKey, map[string]any{"original_url": target, "enable_conversion_tracking": false})
	if err != nil {
		return "", "", err
	}
	if st != 201 {
		return "", "", fmt.Errorf("create link: %d %s", st, b)
	}
	var l struct{ ID, Code string }
	if err := json.Unmarshal(b, &l); err != nil {
		return "", "", err
	}
	return l.ID, l.Code, nil
}
