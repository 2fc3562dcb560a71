package api_test

import (
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/linkd/linkd/cmd/linkd/app/apptest"
)

// Spec section 5: bearer keys, access levels, ownership.

func TestAuthenticationFailures(t *testing.T) {
	t.Parallel()
	s := start(t)
	alice := s.NewKey("alice", "full", nil)
	dead := s.NewKey("alice", "full", nil)
	var deadID string
	for _, k := range list(t, s.Do("GET", "/v1/api-keys", alice, nil), http.StatusOK) {
		if m := k.(map[string]any); str(m, "key") == dead[:12]+"..." {
			deadID = str(m, "id")
		}
	}
	wantMessage(t, s.Do("DELETE", "/v1/api-keys/"+deadID, alice, nil))

	paths := []struct{ method, path string }{
		{"GET", "/v1/api-keys"}, {"GET", "/v1/api-keys/validate"}, {"POST", "/v1/api-keys"}, {"DELETE", "/v1/api-keys/x"},
		{"GET", "/v1/workspaces"}, {"POST", "/v1/workspaces"}, {"GET", "/v1/workspaces/x"}, {"GET", "/v1/workspaces/x/members"},
		{"GET", "/v1/projects"}, {"POST", "/v1/projects"}, {"PUT", "/v1/projects/x"},
		{"GET", "/v1/domains"}, {"POST", "/v1/domains"}, {"GET", "/v1/domains/x/verify"},
		{"GET", "/v1/links"}, {"POST", "/v1/links"}, {"GET", "/v1/links/x"}, {"PUT", "/v1/links/x"}, {"DELETE", "/v1/links/x"},
		{"GET", "/v1/stats/links/x"}, {"GET", "/v1/stats/workspaces"}, {"GET", "/v1/stats/workspaces/summary"},
	}
	headers := []struct {
		name   string
		header []string
	}{
		{"no header", nil},
		{"empty bearer", []string{"Authorization", "Bearer "}},
		{"unknown key", []string{"Authorization", "Bearer svc_sk_doesnotexist"}},
		{"key without prefix", []string{"Authorization", "Bearer " + strings.TrimPrefix(alice, "svc_")}},
		{"basic scheme", []string{"Authorization", "Basic " + alice}},
		{"raw key", []string{"Authorization", alice}},
		{"deactivated key", []string{"Authorization", "Bearer " + dead}},
		{"huge key", []string{"Authorization", "Bearer svc_sk_" + strings.Repeat("k", 5000)}},
	}
	for _, h := range headers {
		for _, p := range paths {
			var body any
			if p.method == "POST" || p.method == "PUT" {
				body = map[string]any{"name": "x"}
			}
			wantError(t, s.Do(p.method, p.path, "", body, h.header...), http.StatusUnauthorized, msgInvalidKey)
		}
	}
	// A lower-case scheme is accepted.
	obj(t, s.Do("GET", "/v1/api-keys/validate", "", nil, "Authorization", "bearer "+alice), http.StatusOK)
	// Nothing was created by the refused requests.
	if n := len(list(t, s.Do("GET", "/v1/workspaces", alice, nil), http.StatusOK)); n != 0 {
		t.Errorf("%d workspaces made without a key", n)
	}
}

// Every authenticated /v1 answer carries the rate-limit headers, refusals
// included; the public read by code is not limited by them.
func TestRateLimitHeaders(t *testing.T) {
	t.Parallel()
	s := start(t)
	alice, bob := s.NewKey("alice", "full", nil), s.NewKey("bob", "full", nil)
	ro := s.NewKey("alice", "read_only", nil)
	l := createLink(s, alice, map[string]any{"original_url": "https://rl.example", "custom_code": "rl"})
	ws := str(l, "workspace_id")
	for _, c := range []struct {
		name, method, path, key string
		body                    any
		status                  int
	}{
		{"list", "GET", "/v1/links", alice, nil, 200},
		{"create", "POST", "/v1/links", alice, map[string]any{"original_url": "https://x.example"}, 201},
		{"bad input", "POST", "/v1/links", alice, map[string]any{"original_url": "ftp://x"}, 400},
		{"malformed", "POST", "/v1/links", alice, "{", 400},
		{"permission", "POST", "/v1/links", ro, map[string]any{"original_url": "https://x.example"}, 403},
		{"ownership", "GET", "/v1/links/" + str(l, "id"), bob, nil, 403},
		{"not found", "GET", "/v1/links/nope", alice, nil, 404},
		{"conflict", "POST", "/v1/links", alice, map[string]any{"original_url": "https://x.example", "custom_code": "rl"}, 409},
		{"workspace", "GET", "/v1/workspaces/" + ws, alice, nil, 200},
		{"members", "GET", "/v1/workspaces/" + ws + "/members", alice, nil, 200},
		{"project", "POST", "/v1/projects", alice, map[string]any{"name": "P"}, 201},
		{"domains", "GET", "/v1/domains", alice, nil, 200},
		{"stats", "GET", "/v1/stats/workspaces", alice, nil, 200},
		{"stats rule", "GET", "/v1/stats/workspaces?max_days=99", alice, nil, 400},
		{"keys", "GET", "/v1/api-keys", alice, nil, 200},
		{"validate", "GET", "/v1/api-keys/validate", ro, nil, 200},
		{"operator", "GET", "/v1/links", op, nil, 200},
	} {
		r := s.Do(c.method, c.path, c.key, c.body)
		if r.Status != c.status {
			t.Errorf("%s: status %d, want %d: %s", c.name, r.Status, c.status, r.Body)
		}
		rateHeaders(t, c.name, r)
	}
	if r := s.Do("GET", "/v1/links/code/rl", "", nil); r.Status != 200 || r.Header.Get("X-RateLimit-Limit") != "" {
		t.Errorf("public read by code: %d, limit header %q", r.Status, r.Header.Get("X-RateLimit-Limit"))
	}
}

// The permission matrix: each access level against each resource and
// method. Read-only keys may GET; limited keys follow their per-resource
// permission (write, read or none).
func TestPermissionMatrix(t *testing.T) {
	t.Parallel()
	s := start(t)
	owner := s.NewKey("pat", "full", nil)
	ws := workspace(s, owner, "Matrix")

	// fixtures make a fresh resource of the user with the full key and
	// return the request that acts on it.
	type req struct {
		method, path string
		body         any
		ok           int
	}
	fresh := map[string]func(op string) req{
		"links": func(op string) req {
			id := str(createLink(s, owner, map[string]any{"original_url": "https://m.example", "workspace_id": ws}), "id")
			return map[string]req{
				"list": {"GET", "/v1/links", nil, 200}, "get": {"GET", "/v1/links/" + id, nil, 200},
				"create": {"POST", "/v1/links", map[string]any{"original_url": "https://n.example"}, 201},
				"update": {"PUT", "/v1/links/" + id, map[string]any{"name": "n"}, 200}, "delete": {"DELETE", "/v1/links/" + id, nil, 200},
			}[op]
		},
		"projects": func(op string) req {
			id := str(s.MustCreate("/v1/projects", owner, map[string]any{"name": "p" + randomName(), "workspace_id": ws}), "id")
			return map[string]req{
				"list": {"GET", "/v1/projects", nil, 200}, "get": {"GET", "/v1/projects/" + id, nil, 200},
				"create": {"POST", "/v1/projects", map[string]any{"name": "q" + randomName()}, 201},
				"update": {"PUT", "/v1/projects/" + id, map[string]any{"description": "d"}, 200}, "delete": {"DELETE", "/v1/projects/" + id, nil, 200},
			}[op]
		},
		"domains": func(op string) req {
			id := str(s.MustCreate("/v1/domains", owner, map[string]any{"domain": randomName() + ".example.com", "workspace_id": ws}), "id")
			return map[string]req{
				"list": {"GET", "/v1/domains", nil, 200}, "get": {"GET", "/v1/domains/" + id + "/verify", nil, 200},
				"create": {"POST", "/v1/domains", map[string]any{"domain": randomName() + ".example.org"}, 201},
				"update": {"PUT", "/v1/domains/" + id, map[string]any{"description": "d"}, 200}, "delete": {"DELETE", "/v1/domains/" + id, nil, 200},
			}[op]
		},
		"workspaces": func(op string) req {
			id := workspace(s, owner, "w"+randomName())
			return map[string]req{
				"list": {"GET", "/v1/workspaces", nil, 200}, "get": {"GET", "/v1/workspaces/" + id + "/members", nil, 200},
				"create": {"POST", "/v1/workspaces", map[string]any{"name": "v" + randomName()}, 201},
				"update": {"POST", "/v1/workspaces/" + id + "/members?user_id=zoe", nil, 200}, "delete": {"DELETE", "/v1/workspaces/" + id, nil, 200},
			}[op]
		},
		"analytics": func(op string) req {
			return map[string]req{
				"list": {"GET", "/v1/stats/workspaces", nil, 200}, "get": {"GET", "/v1/stats/workspaces/" + ws + "/summary", nil, 200},
			}[op]
		},
	}
	resources := []string{"links", "projects", "domains", "workspaces", "analytics"}
	ops := []string{"list", "get", "create", "update", "delete"}
	read := map[string]bool{"list": true, "get": true}

	type level struct {
		name   string
		access string
		perms  func(resource string) map[string]string
		allows func(resource, op string) bool
	}
	allOf := func(v string) map[string]string {
		m := map[string]string{}
		for _, r := range resources {
			m[r] = v
		}
		return m
	}
	levels := []level{
		{"full", "full", nil, func(string, string) bool { return true }},
		{"read_only", "read_only", nil, func(_, op string) bool { return read[op] }},
		{"limited write", "limited", func(r string) map[string]string { m := allOf("none"); m[r] = "write"; return m },
			func(string, string) bool { return true }},
		{"limited read", "limited", func(r string) map[string]string { m := allOf("write"); m[r] = "read"; return m },
			func(_, op string) bool { return read[op] }},
		{"limited none", "limited", func(r string) map[string]string { m := allOf("write"); m[r] = "none"; return m },
			func(string, string) bool { return false }},
		{"limited empty", "limited", func(string) map[string]string { return nil }, func(string, string) bool { return false }},
	}
	for _, lv := range levels {
		for _, res := range resources {
			var perms map[string]string
			if lv.perms != nil {
				perms = lv.perms(res)
			}
			key := s.NewKey("pat", lv.access, perms)
			for _, op := range ops {
				rq := fresh[res](op)
				if rq.method == "" {
					continue
				}
				r := s.Do(rq.method, rq.path, key, rq.body)
				if lv.allows(res, op) {
					if r.Status != rq.ok {
						t.Errorf("%s key, %s %s: %d, want %d: %s", lv.name, res, op, r.Status, rq.ok, r.Body)
					}
				} else {
					if r.Status != http.StatusForbidden || r.Detail(t) != msgInsufficient {
						t.Errorf("%s key, %s %s: %d %s, want 403 %q", lv.name, res, op, r.Status, r.Body, msgInsufficient)
					}
				}
			}
		}
	}

	// API keys: every level lists its user's keys and validates itself;
	// only full keys create or deactivate keys.
	for _, lv := range levels {
		var perms map[string]string
		if lv.perms != nil {
			perms = lv.perms("links")
		}
		key := s.NewKey("pat", lv.access, perms)
		list(t, s.Do("GET", "/v1/api-keys", key, nil), http.StatusOK)
		obj(t, s.Do("GET", "/v1/api-keys/validate", key, nil), http.StatusOK)
		r := s.Do("POST", "/v1/api-keys", key, map[string]any{"name": "child"})
		victim := s.NewKey("pat", "read_only", nil)
		var victimID string
		for _, k := range list(t, s.Do("GET", "/v1/api-keys", owner, nil), http.StatusOK) {
			if m := k.(map[string]any); str(m, "key") == victim[:12]+"..." {
				victimID = str(m, "id")
			}
		}
		d := s.Do("DELETE", "/v1/api-keys/"+victimID, key, nil)
		if lv.access == "full" {
			obj(t, r, http.StatusCreated)
			wantMessage(t, d)
		} else {
			wantError(t, r, http.StatusForbidden, msgInsufficient)
			wantError(t, d, http.StatusForbidden, msgInsufficient)
		}
	}
}

var nameCounter atomic.Int64

// randomName returns a fresh lower-case name for fixtures.
func randomName() string { return q("n%x", nameCounter.Add(1)+1000) }

// The operator key is a full key of user admin: it has no rights in other
// users' workspaces.
func TestOperatorOwnership(t *testing.T) {
	t.Parallel()
	s := start(t)
	alice := s.NewKey("alice", "full", nil)
	l := newLink(s, alice, "https://own.example")
	wantForbidden(t, s.Do("GET", "/v1/links/"+str(l, "id"), op, nil))
	wantForbidden(t, s.Do("GET", "/v1/workspaces/"+str(l, "workspace_id"), op, nil))
}

// The limits of spec section 8 through the whole server: 100 requests per
// hour on one domain, then 429 with Retry-After; other resources keep
// their own count; the operator key is exempt.
func TestRateLimitExceeded(t *testing.T) {
	t.Parallel()
	s := start(t)
	alice := s.NewKey("alice", "full", nil)
	dom := str(s.MustCreate("/v1/domains", alice, map[string]any{"domain": "limited.example.com"}), "id")
	path := "/v1/domains/" + dom
	var r apptest.Response
	prev := -1
	for i := 0; i < 100; i++ {
		r = s.Do("GET", path, alice, nil)
		if r.Status == http.StatusTooManyRequests {
			t.Fatalf("limited after %d requests", i)
		}
		rateHeaders(t, "domain", r)
		rem := atoi(r.Header.Get("X-RateLimit-Remaining"))
		if prev >= 0 && rem >= prev {
			t.Fatalf("remaining did not decrease: %d then %d", prev, rem)
		}
		prev = rem
	}
	if lim := r.Header.Get("X-RateLimit-Limit"); lim != "100" {
		t.Errorf("domain limit %s, want 100", lim)
	}
	r = s.Do("GET", path, alice, nil)
	wantError(t, r, http.StatusTooManyRequests, msgRateLimited)
	if ra := atoi(r.Header.Get("Retry-After")); ra < 1 || ra > 3600 {
		t.Errorf("Retry-After %q", r.Header.Get("Retry-After"))
	}
	rateHeaders(t, "429", r)
	if r.Header.Get("X-RateLimit-Remaining") != "0" {
		t.Errorf("remaining on 429: %s", r.Header.Get("X-RateLimit-Remaining"))
	}
	// Writes on the domain are refused too, and change nothing.
	wantError(t, s.Do("PUT", path, alice, map[string]any{"description": "x"}), http.StatusTooManyRequests, msgRateLimited)
	// Other resources and other users have their own counts.
	obj(t, s.Do("POST", "/v1/links", alice, map[string]any{"original_url": "https://still.example"}), http.StatusCreated)
	bob := s.NewKey("bob", "full", nil)
	wantForbidden(t, s.Do("GET", path, bob, nil))
	// The operator key is exempt (it is refused only for lack of rights).
	if r := s.Do("GET", path, op, nil); r.Status == http.StatusTooManyRequests {
		t.Errorf("operator rate limited")
	}
}

// The operator key's exempt traffic does not spend the quota of the other
// keys of its user: a key the operator makes without user_id belongs to
// user admin too, and must not find its quota gone.
func TestOperatorTrafficSparesItsUsersQuota(t *testing.T) {
	t.Parallel()
	s := start(t)
	for i := 0; i < 510; i++ {
		if r := s.Do("GET", "/v1/links", op, nil); r.Status != http.StatusOK {
			t.Fatalf("operator request %d: %d %s", i, r.Status, r.Body)
		}
	}
	ro := str(obj(t, s.Do("POST", "/v1/api-keys", op, map[string]any{"name": "ro", "access": "read_only"}), http.StatusCreated), "key")
	r := s.Do("GET", "/v1/links", ro, nil)
	if r.Status != http.StatusOK {
		t.Fatalf("read-only key of user admin after the operator's traffic: %d %s", r.Status, r.Body)
	}
	rateHeaders(t, "read-only key", r)
	if rem := atoi(r.Header.Get("X-RateLimit-Remaining")); rem != 499 {
		t.Errorf("read-only key's first request leaves %d, want 499", rem)
	}
	wantForbidden(t, s.Do("POST", "/v1/links", ro, map[string]any{"original_url": "https://x.example"}), msgInsufficient)
}

func atoi(s string) int {
	n := 0
	for _, c := range s {
		if c < '0' || c > '9' {
			return -1
		}
		n = n*10 + int(c-'0')
	}
	if s == "" {
		return -1
	}
	return n
}
