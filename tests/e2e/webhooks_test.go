package e2e

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// signedBy says whether r carries body signed with secret as Standard
// Webhooks says (written here from the specification, not linkd's code).
func signedBy(secret string, r *http.Request, body []byte) bool {
	key, _ := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(r.Header.Get("webhook-id") + "." + r.Header.Get("webhook-timestamp") + "." + string(body)))
	return r.Header.Get("webhook-signature") == "v1,"+base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// clickID is the id of the click of a link.clicked body.
func clickID(body []byte) string {
	var m struct {
		Data struct {
			Click struct {
				ID string `json:"id"`
			} `json:"click"`
		} `json:"data"`
	}
	_ = json.Unmarshal(body, &m)
	return m.Data.Click.ID
}

// TestWebhookSurvivesSIGKILL clicks a link with a link.clicked webhook
// while its receiver is down, kills linkd with SIGKILL, brings the
// receiver up and starts linkd again: every click is delivered, signed,
// and the messages tried before the crash keep their webhook-id.
func TestWebhookSurvivesSIGKILL(t *testing.T) {
	var mu sync.Mutex
	down := true
	var secret string
	failed, ok := map[string]bool{}, map[string]bool{}
	clicks := map[string]bool{} // click ids delivered
	rc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		id := r.Header.Get("webhook-id")
		mu.Lock()
		defer mu.Unlock()
		if !signedBy(secret, r, body) {
			t.Errorf("bad signature on %s", id)
		}
		if down {
			failed[id] = true
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		ok[id], clicks[clickID(body)] = true, true
	}))
	defer rc.Close()

	dir, addr := t.TempDir(), freeAddr(t)
	extra := []string{"LINKD_WEBHOOK_ALLOWED_NETWORKS=127.0.0.0/8", "LINKD_WEBHOOK_RETRY_SCHEDULE=" + strings.Repeat("200ms,", 30) + "200ms"}
	p := start(t, dir, addr, extra...)
	st, b, _, err := do("POST", p.url+"/v1/webhooks", operatorKey, map[string]any{"url": rc.URL + "/hook", "events": []string{"link.clicked"}})
	if err != nil || st != 201 {
		p.kill()
		t.Fatalf("create webhook: %d %v %s", st, err, b)
	}
	var wh struct{ Secret string }
	_ = json.Unmarshal(b, &wh)
	mu.Lock()
	secret = wh.Secret
	mu.Unlock()
	_, code, err := createLink(p.url, "https://example.com/hooked")
	if err != nil {
		p.kill()
		t.Fatal(err)
	}
	const n = 200
	for i := 0; i < n; i++ {
		if st, _, _, err := do("GET", p.url+"/"+code, "", nil, "User-Agent", browserUA); err != nil || st != http.StatusFound {
			p.kill()
			t.Fatalf("click %d: %d %v", i, st, err)
		}
	}
	time.Sleep(20 * time.Millisecond) // some messages tried and failed, some perhaps not yet made
	p.kill()
	mu.Lock()
	tried := make(map[string]bool, len(failed))
	for id := range failed {
		tried[id] = true
	}
	down = false
	mu.Unlock()

	p = start(t, dir, addr, extra...)
	defer p.stop()
	deadline := time.Now().Add(60 * time.Second)
	for {
		mu.Lock()
		got := len(clicks)
		mu.Unlock()
		if got >= n {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d clicks delivered after the crash (%d tried before it)", got, n, len(tried))
		}
		time.Sleep(50 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	for id := range tried {
		if !ok[id] {
			t.Errorf("message %s, tried before the crash, never arrived with its id", id)
		}
	}
	if len(ok) != n {
		t.Errorf("%d distinct webhook-ids delivered, want %d", len(ok), n)
	}
	t.Logf("%d messages tried before the SIGKILL, all %d delivered after it", len(tried), n)
}
