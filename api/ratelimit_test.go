package api

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/linkd/linkd/queries"
)

// keysOnly is a read model that knows API keys and nothing else: enough
// for requests that stop at authentication or the rate limit.
type keysOnly struct {
	queries.CoreReadModel // nil: any other call panics (and answers 500)
	keys                  map[string]queries.APIKey
}

func (k keysOnly) APIKeyByHash(_ context.Context, hash string) (queries.APIKey, bool, error) {
	v, ok := k.keys[hash]
	return v, ok, nil
}

type plainHasher struct{}

func (plainHasher) Hash(key string) string { return "h:" + key }

// countingLimiter allows `allow` requests per key, then refuses.
type countingLimiter struct {
	mu    sync.Mutex
	allow int
	seen  map[string]int
	limit map[string]int // key -> limit it was asked for
}

func (c *countingLimiter) Allow(_ context.Context, key string, limit int, per time.Duration, now time.Time) RateDecision {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seen[key]++
	c.limit[key] = limit
	n := c.seen[key]
	d := RateDecision{Allowed: n <= c.allow, Limit: limit, Remaining: c.allow - n, Reset: now.Add(per).Truncate(time.Second)}
	if !d.Allowed {
		d.RetryAfter = 41500 * time.Millisecond
	}
	return d
}

func rateServer(t *testing.T, allow int) (*httptest.Server, *countingLimiter) {
	t.Helper()
	lim := &countingLimiter{allow: allow, seen: map[string]int{}, limit: map[string]int{}}
	rm := keysOnly{keys: map[string]queries.APIKey{
		"h:user":     {ID: "k1", UserID: "u", Access: "full", Kind: "secret", IsActive: true},
		"h:readonly": {ID: "k2", UserID: "u", Access: "read_only", Kind: "secret", IsActive: true},
		"h:operator": {ID: "k3", UserID: "admin", Access: "full", Kind: "secret", IsActive: true, Operator: true},
	}}
	s := New(Config{ResourceLimit: 500, DomainLimit: 100}, Deps{Queries: queries.New(queries.Sources{Core: rm}), Hasher: plainHasher{}, Limiter: lim,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	srv := httptest.NewServer(s.Handler(nil))
	t.Cleanup(srv.Close)
	return srv, lim
}

func get(t *testing.T, url, key string) (*http.Response, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	return resp, m
}

func TestRateLimitExceeded(t *testing.T) {
	srv, _ := rateServer(t, 2)
	for i := 0; i < 2; i++ {
		resp, _ := get(t, srv.URL+"/v1/api-keys/validate", "user")
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("request %d: %d", i, resp.StatusCode)
		}
		if got := resp.Header.Get("X-RateLimit-Remaining"); got != strconv.Itoa(1-i) {
			t.Errorf("request %d: remaining %q", i, got)
		}
		if resp.Header.Get("Retry-After") != "" {
			t.Errorf("Retry-After on an allowed request")
		}
	}
	resp, body := get(t, srv.URL+"/v1/api-keys/validate", "user")
	if resp.StatusCode != http.StatusTooManyRequests || body["detail"] != "Rate limit exceeded" || len(body) != 1 {
		t.Fatalf("over the limit: %d %v", resp.StatusCode, body)
	}
	if ra := resp.Header.Get("Retry-After"); ra != "42" {
		t.Errorf("Retry-After %q, want 42 (seconds, rounded up)", ra)
	}
	if resp.Header.Get("X-RateLimit-Remaining") != "0" || resp.Header.Get("X-RateLimit-Limit") != "500" {
		t.Errorf("headers on 429: %v", resp.Header)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("429 Content-Type %q", ct)
	}
	reset, err := strconv.ParseInt(resp.Header.Get("X-RateLimit-Reset"), 10, 64)
	if now := time.Now().Unix(); err != nil || reset < now || reset > now+3601 {
		t.Errorf("X-RateLimit-Reset %q is not Unix seconds of the window's end", resp.Header.Get("X-RateLimit-Reset"))
	}
	// A refused permission is counted and refused the same way.
	srv2, _ := rateServer(t, 0)
	resp, body = get(t, srv2.URL+"/v1/links", "readonly")
	if resp.StatusCode != http.StatusTooManyRequests || body["detail"] != "Rate limit exceeded" {
		t.Errorf("limit before permission: %d %v", resp.StatusCode, body)
	}
}

func TestRateLimitOperatorExempt(t *testing.T) {
	srv, _ := rateServer(t, 0)
	resp, _ := get(t, srv.URL+"/v1/api-keys/validate", "operator")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("operator limited: %d", resp.StatusCode)
	}
	if resp.Header.Get("X-RateLimit-Limit") == "" {
		t.Errorf("operator answer lacks the headers")
	}
}

func TestRateLimitKeysAndLimits(t *testing.T) {
	srv, lim := rateServer(t, 1000)
	for _, p := range []string{"/v1/domains/d1", "/v1/domains/d1/verify", "/v1/links/l1", "/v1/projects/p1",
		"/v1/workspaces/w1", "/v1/stats/links/l1", "/v1/links", "/v1/api-keys/validate"} {
		resp, _ := get(t, srv.URL+p, "readonly")
		if resp.Header.Get("X-RateLimit-Limit") == "" {
			t.Errorf("%s: no rate-limit headers (status %d)", p, resp.StatusCode)
		}
	}
	want := map[string]int{
		"domains|domain_id:d1|user:u": 100, "links|link_id:l1|user:u": 500, "projects|project_id:p1|user:u": 500,
		"workspaces|workspace_id:w1|user:u": 500, "analytics|link_id:l1|user:u": 500, "links|user:u": 500,
	}
	for k, l := range want {
		if lim.limit[k] != l {
			t.Errorf("limiter key %q: limit %d, want %d (keys seen: %v)", k, lim.limit[k], l, lim.limit)
		}
	}
	if lim.seen["domains|domain_id:d1|user:u"] != 2 {
		t.Errorf("the two requests on one domain counted %d times", lim.seen["domains|domain_id:d1|user:u"])
	}
	// Unauthenticated requests are neither counted nor given headers.
	before := len(lim.seen)
	resp, _ := get(t, srv.URL+"/v1/links", "")
	if resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("X-RateLimit-Limit") != "" || len(lim.seen) != before {
		t.Errorf("unauthenticated: %d, headers %v", resp.StatusCode, resp.Header)
	}
}

// A handler that panics answers 500 {"detail"} and the server lives on.
func TestPanicAnswers500(t *testing.T) {
	srv, _ := rateServer(t, 1000)
	// keysOnly has no workspaces: listing them panics on the nil ReadModel.
	resp, body := get(t, srv.URL+"/v1/workspaces", "user")
	if resp.StatusCode != http.StatusInternalServerError || body["detail"] != "Internal server error" || len(body) != 1 {
		t.Fatalf("panic: %d %v", resp.StatusCode, body)
	}
	if resp, _ := get(t, srv.URL+"/v1/api-keys/validate", "user"); resp.StatusCode != http.StatusOK {
		t.Errorf("after a panic: %d", resp.StatusCode)
	}
}
