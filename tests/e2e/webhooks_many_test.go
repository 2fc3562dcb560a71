package e2e

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
)

// hookCounter is a webhook receiver that verifies every signature and
// counts the deliveries of each webhook-id and of each click.
type hookCounter struct {
	t      *testing.T
	mu     sync.Mutex
	secret string
	delay  time.Duration
	ids    map[string]int // 2xx answers by webhook-id
	clicks map[string]int // by click id
	// cut are the webhook-ids of requests whose sender went away before
	// the answer (killed), ok when each arrived with a 2xx.
	cut map[string]bool
	ok  map[string]time.Time
}

func (h *hookCounter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	id := r.Header.Get("webhook-id")
	h.mu.Lock()
	secret, delay := h.secret, h.delay
	h.mu.Unlock()
	if !signedBy(secret, r, body) {
		h.t.Errorf("bad signature on %s", id)
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	time.Sleep(delay)
	if r.Context().Err() != nil {
		h.mu.Lock()
		h.cut[id] = true
		h.mu.Unlock()
		return
	}
	h.mu.Lock()
	h.ids[id]++
	if _, seen := h.ok[id]; !seen {
		h.ok[id] = time.Now()
	}
	h.clicks[clickID(body)]++
	h.mu.Unlock()
}

// counts is how many distinct webhook-ids and clicks arrived, and how many
// webhook-ids arrived more than once.
func (h *hookCounter) counts() (ids, clicks, twice int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, n := range h.ids {
		if n > 1 {
			twice++
		}
	}
	return len(h.ids), len(h.clicks), twice
}

func (h *hookCounter) waitFor(t *testing.T, n int, within time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	for {
		ids, clicks, _ := h.counts()
		if ids >= n && clicks >= n {
			return time.Since(start)
		}
		if time.Since(start) > within {
			t.Fatalf("%d webhook-ids and %d clicks of %d arrived within %v", ids, clicks, n, within)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// deliveryLog reads a webhook's whole deliveries log on one instance.
func deliveryLog(t *testing.T, url, hookID string) []string {
	t.Helper()
	var out []string
	for page := 1; ; page++ {
		st, b, _, err := do("GET", fmt.Sprintf("%s/v1/webhooks/%s/deliveries?page_size=100&page=%d", url, hookID, page), operatorKey, nil)
		if err != nil || st != 200 {
			t.Fatalf("deliveries: %d %v %s", st, err, b)
		}
		p := decode[struct {
			Items []struct {
				ID        string `json:"id"`
				MessageID string `json:"message_id"`
				Attempt   int    `json:"attempt"`
				Status    string `json:"status"`
				CreatedAt string `json:"created_at"`
			} `json:"items"`
			HasNext bool `json:"has_next"`
		}](t, b)
		for _, d := range p.Items {
			out = append(out, fmt.Sprintf("%s %s %d %s %s", d.ID, d.MessageID, d.Attempt, d.Status, d.CreatedAt))
		}
		if !p.HasNext {
			return out
		}
	}
}

// TestWebhooksOnManyInstances: three instances on one PostgreSQL deliver
// each click of a webhook once, whichever instance answered it, and list
// the same deliveries; when one is killed while it holds messages, another
// delivers them after its claims end (duplicates only around the kill).
func TestWebhooksOnManyInstances(t *testing.T) {
	rc := &hookCounter{t: t, ids: map[string]int{}, clicks: map[string]int{}, cut: map[string]bool{}, ok: map[string]time.Time{}}
	srv := httptest.NewServer(rc)
	defer srv.Close()
	d := newDeployment(t, 3, "LINKD_WEBHOOK_ALLOWED_NETWORKS=127.0.0.0/8", "LINKD_WEBHOOK_TIMEOUT=10s", "LINKD_WEBHOOK_CLAIM_TIMEOUT=6s",
		"LINKD_WEBHOOK_RETRY_SCHEDULE="+strings.Repeat("200ms,", 20)+"200ms")
	st, b, _, err := do("POST", d.url(0)+"/v1/webhooks", operatorKey, map[string]any{"url": srv.URL + "/hook", "events": []string{"link.clicked"}})
	if err != nil || st != 201 {
		t.Fatalf("create webhook: %d %v %s", st, err, b)
	}
	hook := decode[struct{ ID, Secret string }](t, b)
	rc.mu.Lock()
	rc.secret = hook.Secret
	rc.mu.Unlock()
	st, b, _, err = do("POST", d.url(1)+"/v1/links", operatorKey, map[string]any{"original_url": "https://example.com/hooked-many"})
	if err != nil || st != 201 {
		t.Fatalf("create link: %d %v %s", st, err, b)
	}
	code := decode[struct{ Code string }](t, b).Code
	clicks := func(from, n int) {
		t.Helper()
		var wg sync.WaitGroup
		for c := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := from + c; i < from+n; i += 4 {
					if st, _, _, err := do("GET", d.url(i)+"/"+code, "", nil, "User-Agent", browserUA); err != nil || st != 302 {
						t.Errorf("click %d: %d %v", i, st, err)
					}
				}
			}()
		}
		wg.Wait()
	}

	// Clicks on every instance: each delivered once.
	const n1 = 300
	clicks(0, n1)
	took := rc.waitFor(t, n1, 30*time.Second)
	time.Sleep(time.Second) // a second delivery would come now
	if ids, _, twice := rc.counts(); ids != n1 || twice != 0 {
		t.Errorf("%d webhook-ids for %d clicks, %d delivered more than once", ids, n1, twice)
	}
	t.Logf("%d clicks over three instances delivered once each, within %v of the last click", n1, took)
	logs := [3][]string{}
	for j := range 3 {
		logs[j] = deliveryLog(t, d.url(j), hook.ID)
	}
	if len(logs[0]) != n1 || !reflect.DeepEqual(logs[0], logs[1]) || !reflect.DeepEqual(logs[0], logs[2]) {
		t.Errorf("deliveries: %d, %d and %d lines on the three instances, want %d and the same", len(logs[0]), len(logs[1]), len(logs[2]), n1)
	}

	// A slow receiver: each instance holds messages when one is killed;
	// the receiver is fast again after the kill.
	rc.mu.Lock()
	rc.delay = 1500 * time.Millisecond
	rc.mu.Unlock()
	const n2 = 200
	var killed time.Time
	for i := 0; i < n2; i++ {
		// Clicks on every instance, then, once the first has taken some
		// messages, it is killed: the others take the rest of the clicks.
		j := i % 3
		if i == 60 {
			time.Sleep(300 * time.Millisecond)
			d.procs[0].kill()
			killed = time.Now()
			rc.mu.Lock()
			rc.delay = 0
			rc.mu.Unlock()
		}
		if i >= 60 {
			j = 1 + i%2
		}
		if st, _, _, err := do("GET", d.url(j)+"/"+code, "", nil, "User-Agent", browserUA); err != nil || st != 302 {
			t.Fatalf("click %d on instance %d: %d %v", i, j, st, err)
		}
	}
	took = rc.waitFor(t, n1+n2, 60*time.Second)
	afterKill := time.Since(killed)
	time.Sleep(time.Second)
	ids, nclicks, twice := rc.counts()
	if ids != n1+n2 || nclicks != n1+n2 {
		t.Errorf("%d webhook-ids and %d clicks, want %d", ids, nclicks, n1+n2)
	}
	// Only what the killed instance had sent and not yet recorded may have
	// arrived twice.
	if twice > 32 {
		t.Errorf("%d messages delivered twice around one kill", twice)
	}
	// The requests the kill cut (the only ones: the timeout is longer than
	// the receiver's delay) arrive when the killed instance's claims end,
	// 4 to 6 s after the kill (it renewed them every 2 s).
	rc.mu.Lock()
	cut := len(rc.cut)
	for id := range rc.cut {
		if after := rc.ok[id].Sub(killed); after < 3*time.Second {
			t.Errorf("%s, held by the killed instance, delivered %v after the kill, before its claims ended", id, after)
		}
	}
	rc.mu.Unlock()
	if cut == 0 {
		t.Errorf("the kill cut no request: the test did not kill an instance while it held messages")
	}
	t.Logf("a SIGKILL while delivering cut %d requests: all %d delivered %v after the clicks (%v after the kill), %d twice", cut, n2, took, afterKill, twice)

	d.procs[0] = start(t, d.dirs[0], d.addrs[0], d.env...)
	for j := range 3 {
		logs[j] = deliveryLog(t, d.url(j), hook.ID)
	}
	if len(logs[0]) < n1+n2 || !reflect.DeepEqual(logs[0], logs[1]) || !reflect.DeepEqual(logs[0], logs[2]) {
		t.Errorf("deliveries after the kill: %d, %d and %d lines, want %d or more and the same", len(logs[0]), len(logs[1]), len(logs[2]), n1+n2)
	}
}
