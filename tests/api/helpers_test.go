// Package api_test tests the link-management interface (spec sections 4.1
// to 4.6, 5, 7 and 8, and DECISIONS.md) through real HTTP against a whole
// linkd started in process by apptest. Every test starts its own server or
// uses its own users, so tests run in parallel without seeing each other.
package api_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/linkd/linkd/cmd/linkd/app"
	"github.com/linkd/linkd/cmd/linkd/app/apptest"
)

const op = apptest.OperatorKey

// The texts the interface fixes (spec section 7).
const (
	msgInvalidKey    = "Invalid API key"
	msgInsufficient  = "Insufficient permissions for this operation"
	msgDeniedWS      = "Access denied to this workspace"
	msgInvalidURL    = "Invalid URL format"
	msgCodeExists    = "Custom code already exists"
	msgLinkNotFound  = "Link not found"
	msgProjNameReq   = "Project name is required"
	msgProjNotFound  = "Project not found"
	msgProjExists    = "Project name already exists in this workspace"
	msgWSNameReq     = "Workspace name is required"
	msgWSNotFound    = "Workspace not found"
	msgWSExists      = "Workspace name already exists"
	msgDomainExists  = "Domain already exists in this workspace"
	msgDomainNF      = "Domain not found"
	msgDomainInUse   = "Domain is already in use by another workspace"
	msgDeniedLink    = "Access denied to this link"
	msgNoStats       = "No stats found for this link"
	msgRateLimited   = "Rate limit exceeded"
	msgBodyTooLarge  = "Request body too large"
	msgPasswordReq   = "Password required"
	msgPasswordWrong = "Invalid password"
	msgLinkExpired   = "Link has expired"
)

// start runs a linkd for one test. Its DNS server is a local one that
// knows no names (options may name another), so that verifying a domain
// never waits for the network.
func start(t *testing.T, opts ...apptest.Option) *apptest.Server {
	t.Helper()
	dns := dnsServer(t, nil)
	base := append(postgresOption(t), func(c *app.Config) { c.DNSServer = dns })
	return apptest.Start(t, append(base, opts...)...)
}

// freePlan makes new workspaces use the free plan.
func freePlan(c *app.Config) { c.DefaultPlan = "free" }

// users makes a full-access key for each name.
func users(s *apptest.Server, names ...string) []string {
	keys := make([]string, len(names))
	for i, n := range names {
		keys[i] = s.NewKey(n, "full", nil)
	}
	return keys
}

// obj decodes a JSON object body, failing the test with the response when
// the status is not want.
func obj(t *testing.T, r apptest.Response, want int) map[string]any {
	t.Helper()
	if r.Status != want {
		t.Fatalf("status %d, want %d: %s", r.Status, want, r.Body)
	}
	return r.JSON(t)
}

// list decodes a JSON array body after checking the status.
func list(t *testing.T, r apptest.Response, want int) []any {
	t.Helper()
	if r.Status != want {
		t.Fatalf("status %d, want %d: %s", r.Status, want, r.Body)
	}
	return r.List(t)
}

// wantError checks an error answer: the status, the JSON content type, and
// the body {"detail": detail} (extra keys only where the interface adds
// them). An empty detail accepts any non-empty text.
func wantError(t *testing.T, r apptest.Response, status int, detail string) {
	t.Helper()
	if r.Status != status {
		t.Fatalf("status %d, want %d: %s", r.Status, status, r.Body)
	}
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Errorf("error Content-Type %q, want application/json", ct)
	}
	var body map[string]any
	if err := json.Unmarshal(r.Body, &body); err != nil {
		t.Fatalf("error body is not a JSON object: %v: %s", err, r.Body)
	}
	got, ok := body["detail"].(string)
	if !ok || got == "" {
		t.Fatalf("error body has no detail text: %s", r.Body)
	}
	if detail != "" && got != detail {
		t.Errorf("detail %q, want %q", got, detail)
	}
	for k := range body {
		if k != "detail" && k != "password_description" {
			t.Errorf("error body has extra key %q: %s", k, r.Body)
		}
	}
	if strings.Contains(got, "goroutine") || strings.Contains(got, ".go:") {
		t.Errorf("error detail leaks internals: %q", got)
	}
}

// wantForbidden accepts the 403 texts DECISIONS.md allows for a resource of
// another user or workspace.
func wantForbidden(t *testing.T, r apptest.Response, texts ...string) {
	t.Helper()
	wantError(t, r, http.StatusForbidden, "")
	if len(texts) == 0 {
		texts = []string{msgInsufficient, msgDeniedWS}
	}
	got := r.Detail(t)
	for _, x := range texts {
		if got == x {
			return
		}
	}
	t.Errorf("403 detail %q, want one of %q", got, texts)
}

// wantMessage checks a {"message": ...} answer (deletes, members).
func wantMessage(t *testing.T, r apptest.Response) {
	t.Helper()
	m := obj(t, r, http.StatusOK)
	if msg, ok := m["message"].(string); !ok || msg == "" {
		t.Errorf("want {message}, got %s", r.Body)
	}
}

func str(m map[string]any, k string) string {
	s, _ := m[k].(string)
	return s
}

// createLink posts a link and returns it.
func createLink(s *apptest.Server, key string, body map[string]any) map[string]any {
	return s.MustCreate("/v1/links", key, body)
}

func newLink(s *apptest.Server, key, url string) map[string]any {
	return createLink(s, key, map[string]any{"original_url": url})
}

// workspace creates a workspace and returns its id.
func workspace(s *apptest.Server, key, name string) string {
	return str(s.MustCreate("/v1/workspaces", key, map[string]any{"name": name}), "id")
}

// addMember adds user to a workspace with a role.
func addMember(t *testing.T, s *apptest.Server, key, wsID, user, role string) {
	t.Helper()
	wantMessage(t, s.Do("POST", "/v1/workspaces/"+wsID+"/members?user_id="+user+"&role="+role, key, nil))
}

// ids returns the ids of a list of objects.
func ids(items []any) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = str(it.(map[string]any), "id")
	}
	return out
}

// page reads a pagination envelope and checks its shape (spec 2.6).
type page struct {
	Items      []any
	Page       int
	PageSize   int
	HasNext    bool
	HasPrev    bool
	NextCursor string
	PrevCursor string
}

func envelope(t *testing.T, r apptest.Response) page {
	t.Helper()
	m := obj(t, r, http.StatusOK)
	for _, k := range []string{"items", "page", "page_size", "has_next", "has_prev", "next_cursor", "prev_cursor"} {
		if _, ok := m[k]; !ok {
			t.Fatalf("envelope lacks %q: %s", k, r.Body)
		}
	}
	var p page
	var ok bool
	if p.Items, ok = m["items"].([]any); !ok {
		t.Fatalf("items is not an array: %s", r.Body)
	}
	p.Page, p.PageSize = int(m["page"].(float64)), int(m["page_size"].(float64))
	p.HasNext, p.HasPrev = m["has_next"].(bool), m["has_prev"].(bool)
	for k, dst := range map[string]*string{"next_cursor": &p.NextCursor, "prev_cursor": &p.PrevCursor} {
		switch v := m[k].(type) {
		case nil:
		case string:
			if v == "" {
				t.Errorf("%s is an empty string; want null or a cursor", k)
			}
			*dst = v
		default:
			t.Fatalf("%s is %T, want string or null", k, v)
		}
	}
	if p.HasNext != (p.NextCursor != "") {
		t.Errorf("has_next %v but next_cursor %q", p.HasNext, p.NextCursor)
	}
	return p
}

// timestamp checks that v is an ISO 8601 timestamp and returns it.
func timestamp(t *testing.T, field string, v any) time.Time {
	t.Helper()
	s, ok := v.(string)
	if !ok {
		t.Fatalf("%s is %T (%v), want an ISO 8601 string", field, v, v)
	}
	ts, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatalf("%s %q is not ISO 8601: %v", field, s, err)
	}
	return ts
}

// wantKeys checks that m has exactly the keys given.
func wantKeys(t *testing.T, what string, m map[string]any, keys ...string) {
	t.Helper()
	want := map[string]bool{}
	for _, k := range keys {
		want[k] = true
		if _, ok := m[k]; !ok {
			t.Errorf("%s lacks %q: %v", what, k, m)
		}
	}
	for k := range m {
		if !want[k] {
			t.Errorf("%s has unexpected key %q", what, k)
		}
	}
}

// rateHeaders checks the rate-limit headers of an authenticated answer.
func rateHeaders(t *testing.T, what string, r apptest.Response) {
	t.Helper()
	for _, h := range []string{"X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset"} {
		v := r.Header.Get(h)
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			t.Errorf("%s: %s = %q, want a non-negative integer", what, h, v)
		}
	}
	limit, _ := strconv.Atoi(r.Header.Get("X-RateLimit-Limit"))
	rem, _ := strconv.Atoi(r.Header.Get("X-RateLimit-Remaining"))
	if limit <= 0 || rem > limit {
		t.Errorf("%s: limit %d remaining %d", what, limit, rem)
	}
	reset, _ := strconv.ParseInt(r.Header.Get("X-RateLimit-Reset"), 10, 64)
	now := time.Now().Unix()
	if reset < now-5 || reset > now+2*3600 {
		t.Errorf("%s: X-RateLimit-Reset %d is not Unix seconds within the hour (now %d)", what, reset, now)
	}
}

func q(format string, args ...any) string { return fmt.Sprintf(format, args...) }
