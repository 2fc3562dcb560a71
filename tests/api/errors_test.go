package api_test

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/linkd/linkd/cmd/linkd/app/apptest"
)

// Spec section 7 and the bad-input rules of DECISIONS.md: every refusal is
// {"detail": text} with its status, never a stack trace, never a
// half-applied change.

// TestSpecErrorTexts produces every v1 text of spec section 7 once, with
// the status DECISIONS.md gives it.
func TestSpecErrorTexts(t *testing.T) {
	t.Parallel()
	s := start(t)
	free := start(t, freePlan)
	alice, bob := s.NewKey("alice", "full", nil), s.NewKey("bob", "full", nil)
	ro := s.NewKey("alice", "read_only", nil)
	ws := workspace(s, alice, "Texts")
	bobWS := workspace(s, bob, "Bob")
	l := createLink(s, alice, map[string]any{"original_url": "https://t.example", "custom_code": "taken", "workspace_id": ws})
	bobLink := createLink(s, bob, map[string]any{"original_url": "https://b.example", "workspace_id": bobWS})
	s.MustCreate("/v1/projects", alice, map[string]any{"name": "Dup", "workspace_id": ws})
	s.MustCreate("/v1/domains", alice, map[string]any{"domain": "texts.example.com", "workspace_id": ws})
	freeKey := free.NewKey("fay", "full", nil)

	cases := []struct {
		text   string
		srv    bool // true: the free-plan server
		method string
		path   string
		key    string
		body   any
		status int
	}{
		{msgInvalidURL, false, "POST", "/v1/links", alice, map[string]any{"original_url": "gopher://x"}, 400},
		{msgCodeExists, false, "POST", "/v1/links", alice, map[string]any{"original_url": "https://x.example", "custom_code": "taken"}, 409},
		{msgLinkNotFound, false, "GET", "/v1/links/missing", alice, nil, 404},
		{"", true, "POST", "/v1/links", freeKey, map[string]any{"original_url": "https://x.example", "password": "pw"}, 403},
		{msgProjNameReq, false, "POST", "/v1/projects", alice, map[string]any{"description": "no name"}, 400},
		{msgProjNotFound, false, "GET", "/v1/projects/missing", alice, nil, 404},
		{msgProjExists, false, "POST", "/v1/projects", alice, map[string]any{"name": "Dup", "workspace_id": ws}, 409},
		{msgWSNameReq, false, "POST", "/v1/workspaces", alice, map[string]any{}, 400},
		{msgWSNotFound, false, "GET", "/v1/workspaces/missing", alice, nil, 404},
		{msgWSExists, false, "POST", "/v1/workspaces", alice, map[string]any{"name": "Texts"}, 409},
		{msgDomainExists, false, "POST", "/v1/domains", alice, map[string]any{"domain": "texts.example.com", "workspace_id": ws}, 409},
		{msgDomainNF, false, "GET", "/v1/domains/missing", alice, nil, 404},
		{msgDomainInUse, false, "POST", "/v1/domains", bob, map[string]any{"domain": "texts.example.com"}, 409},
		{msgDeniedWS, false, "GET", "/v1/workspaces/" + bobWS, alice, nil, 403},
		{msgDeniedWS, false, "POST", "/v1/links", alice, map[string]any{"original_url": "https://x.example", "workspace_id": bobWS}, 403},
		{msgDeniedWS, false, "POST", "/v1/projects", alice, map[string]any{"name": "X", "workspace_id": bobWS}, 403},
		{msgDeniedWS, false, "POST", "/v1/domains", alice, map[string]any{"domain": "denied.example.com", "workspace_id": bobWS}, 403},
		{"Date range cannot exceed 30 days. Current range: 45 days", false, "GET", "/v1/stats/links/" + str(l, "id") + "?start_date=2025-01-01&end_date=2025-02-15", alice, nil, 400},
		{msgDeniedLink, false, "GET", "/v1/stats/links/" + str(bobLink, "id"), alice, nil, 403},
		{msgNoStats, false, "GET", "/v1/stats/links/" + str(l, "id"), alice, nil, 404},
		{msgInvalidKey, false, "GET", "/v1/links", "svc_sk_nope", nil, 401},
		{msgInsufficient, false, "POST", "/v1/links", ro, map[string]any{"original_url": "https://x.example"}, 403},
	}
	for _, c := range cases {
		srv := s
		if c.srv {
			srv = free
		}
		r := srv.Do(c.method, c.path, c.key, c.body)
		wantError(t, r, c.status, c.text)
		if c.text == "" && !strings.Contains(strings.ToLower(r.Detail(t)), "upgrade") {
			t.Errorf("plan refusal %q does not say to upgrade", r.Detail(t))
		}
	}
}

// bodyEndpoints are the requests that read a JSON body.
func bodyEndpoints(s *apptest.Server, key string) []struct{ method, path string } {
	l := s.MustCreate("/v1/links", key, map[string]any{"original_url": "https://body.example"})
	p := s.MustCreate("/v1/projects", key, map[string]any{"name": "Body"})
	d := s.MustCreate("/v1/domains", key, map[string]any{"domain": "body.example.com"})
	return []struct{ method, path string }{
		{"POST", "/v1/links"}, {"PUT", "/v1/links/" + str(l, "id")},
		{"POST", "/v1/projects"}, {"PUT", "/v1/projects/" + str(p, "id")},
		{"POST", "/v1/domains"}, {"PUT", "/v1/domains/" + str(d, "id")},
		{"POST", "/v1/workspaces"}, {"PUT", "/v1/workspaces/" + str(l, "workspace_id")},
		{"POST", "/v1/api-keys"},
	}
}

func TestMalformedBodies(t *testing.T) {
	t.Parallel()
	s := start(t)
	alice := s.NewKey("alice", "full", nil)
	eps := bodyEndpoints(s, alice)
	before := snapshot(t, s, alice)
	bodies := []string{
		``, `   `, `{`, `}`, `{"name": }`, `{"name": "x",}`, `{'name': 'x'}`, `[]`, `[{"name": "x"}]`, `"x"`, `42`, `null`, `true`,
		`{"name": "x"} {"name": "y"}`, `{"name": "x"} trailing`, `{"name": "\x"}`, `{"name": "x"`, "{\"name\": \"x\u0000\"", `NaN`,
		`{"name": 01}`, `<xml/>`, "\xff\xfe{}",
	}
	for _, ep := range eps {
		for _, b := range bodies {
			r := s.Do(ep.method, ep.path, alice, b)
			wantError(t, r, http.StatusBadRequest, "")
		}
	}
	if after := snapshot(t, s, alice); after != before {
		t.Errorf("malformed bodies changed state:\n%s\n%s", before, after)
	}
}

func TestWrongFieldTypes(t *testing.T) {
	t.Parallel()
	s := start(t)
	alice := s.NewKey("alice", "full", nil)
	l := newLink(s, alice, "https://types.example")
	p := s.MustCreate("/v1/projects", alice, map[string]any{"name": "Types"})
	before := snapshot(t, s, alice)
	cases := []struct {
		method, path, body string
	}{
		{"POST", "/v1/links", `{"original_url": ["https://x.example"]}`},
		{"POST", "/v1/links", `{"original_url": "https://x.example", "name": 1}`},
		{"POST", "/v1/links", `{"original_url": "https://x.example", "has_public_stat": "true"}`},
		{"POST", "/v1/links", `{"original_url": "https://x.example", "enable_conversion_tracking": 1}`},
		{"POST", "/v1/links", `{"original_url": "https://x.example", "expiration_click_count": 1.5}`},
		{"POST", "/v1/links", `{"original_url": "https://x.example", "expiration_click_count": "10"}`},
		{"POST", "/v1/links", `{"original_url": "https://x.example", "expiration_click_count": 99999999999999999999}`},
		{"POST", "/v1/links", `{"original_url": "https://x.example", "expiration_date": 1700000000}`},
		{"POST", "/v1/links", `{"original_url": "https://x.example", "expiration_date": "tomorrow"}`},
		{"POST", "/v1/links", `{"original_url": "https://x.example", "metadata": "title"}`},
		{"POST", "/v1/links", `{"original_url": "https://x.example", "metadata": {"title": 5}}`},
		{"POST", "/v1/links", `{"original_url": "https://x.example", "qr_code_options": {"size": "big"}}`},
		{"POST", "/v1/links", `{"original_url": "https://x.example", "qr_code_options": {"size": 10}}`},
		{"POST", "/v1/links", `{"original_url": "https://x.example", "qr_code_options": []}`},
		{"POST", "/v1/links", `{"original_url": "https://x.example", "excluded_countries": {"code": "US"}}`},
		{"POST", "/v1/links", `{"original_url": "https://x.example", "excluded_countries": [{"code": "USA"}]}`},
		{"POST", "/v1/links", `{"original_url": "https://x.example", "excluded_countries": [{"code": "US", "suggested": "no"}]}`},
		{"POST", "/v1/links", `{"original_url": "https://x.example", "workspace_id": 7}`},
		{"POST", "/v1/links", `{"original_url": "https://x.example", "custom_code": false}`},
		{"PUT", "/v1/links/" + str(l, "id"), `{"is_archived": "true"}`},
		{"PUT", "/v1/links/" + str(l, "id"), `{"name": {"first": "x"}}`},
		{"PUT", "/v1/links/" + str(l, "id"), `{"code": 12}`},
		{"PUT", "/v1/links/" + str(l, "id"), `{"expiration_click_count": -3}`},
		{"POST", "/v1/projects", `{"name": "X", "color": 255}`},
		{"POST", "/v1/projects", `{"name": "X", "description": ["a"]}`},
		{"PUT", "/v1/projects/" + str(p, "id"), `{"name": 1}`},
		{"POST", "/v1/workspaces", `{"name": true}`},
		{"POST", "/v1/workspaces", `{"name": "X", "description": 5}`},
		{"POST", "/v1/domains", `{"domain": ["a.example.com"]}`},
		{"POST", "/v1/api-keys", `{"name": "k", "access": 1}`},
		{"POST", "/v1/api-keys", `{"name": "k", "permissions": ["links"]}`},
		{"POST", "/v1/api-keys", `{"name": "k", "allowed_hostnames": "a.com"}`},
	}
	for _, c := range cases {
		r := s.Do(c.method, c.path, alice, c.body)
		wantError(t, r, http.StatusBadRequest, "")
		if d := r.Detail(t); strings.Contains(d, "json:") || strings.Contains(d, "Go struct") || strings.Contains(d, "api.") {
			t.Errorf("%s %s: detail speaks Go: %q", c.method, c.body, d)
		}
	}
	if after := snapshot(t, s, alice); after != before {
		t.Errorf("refused bodies changed state:\n%s\n%s", before, after)
	}
}

func TestOversizedBodies(t *testing.T) {
	t.Parallel()
	s := start(t)
	alice := s.NewKey("alice", "full", nil)
	eps := bodyEndpoints(s, alice)
	before := snapshot(t, s, alice)
	big := `{"original_url": "https://x.example", "name": "x", "description": "` + strings.Repeat("d", 2<<20) + `"}`
	for _, ep := range eps {
		r := s.Do(ep.method, ep.path, alice, big)
		wantError(t, r, http.StatusRequestEntityTooLarge, msgBodyTooLarge)
		rateHeaders(t, "413 "+ep.method+" "+ep.path, r)
		// Without Content-Length (chunked), the limit holds as well.
		req, err := http.NewRequest(ep.method, s.URL+ep.path, io.MultiReader(strings.NewReader(big)))
		if err != nil {
			t.Fatal(err)
		}
		req.ContentLength = -1
		req.Header.Set("Authorization", "Bearer "+alice)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s %s chunked: %v", ep.method, ep.path, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestEntityTooLarge || !bytes.Contains(b, []byte(msgBodyTooLarge)) {
			t.Errorf("%s %s chunked: %d %s", ep.method, ep.path, resp.StatusCode, b)
		}
		if resp.Header.Get("X-RateLimit-Limit") == "" {
			t.Errorf("%s %s chunked 413 lacks the rate-limit headers", ep.method, ep.path)
		}
	}
	// Just under the limit is read (and refused for what it says, not its size).
	nearly := `{"original_url": "https://x.example", "description": "` + strings.Repeat("d", 1<<20-100) + `"}`
	if r := s.Do("POST", "/v1/links", alice, nearly); r.Status == http.StatusRequestEntityTooLarge {
		t.Errorf("a body under the limit got 413")
	}
	if after := snapshot(t, s, alice); after != before {
		t.Errorf("oversized bodies changed state")
	}
}

func TestUnknownRoutes(t *testing.T) {
	t.Parallel()
	s := start(t)
	alice := s.NewKey("alice", "full", nil)
	for _, c := range []struct{ method, path, key string }{
		{"GET", "/v1/nothing", alice}, {"GET", "/v1/nothing", ""}, {"POST", "/v1/links/x/y/z", alice},
		{"GET", "/v1", alice}, {"GET", "/v1/", alice}, {"GET", "/v2/links", alice}, {"DELETE", "/v1/stats", alice},
		{"GET", "/v1/links/", alice}, {"GET", "/v1/api-keys/x/y", alice}, {"GET", "/v1/workspaces/x/members/y/z", alice},
	} {
		r := s.Do(c.method, c.path, c.key, nil)
		if r.Status != http.StatusNotFound && r.Status != http.StatusMethodNotAllowed {
			t.Errorf("%s %s: %d %s", c.method, c.path, r.Status, r.Body)
			continue
		}
		wantError(t, r, r.Status, "")
		// Every authenticated /v1 answer carries the rate-limit headers
		// (DECISIONS.md), a 404 of an unknown path included.
		if strings.HasPrefix(c.path, "/v1/") && c.key != "" {
			rateHeaders(t, c.method+" "+c.path, r)
		} else if v := r.Header.Get("X-RateLimit-Limit"); v != "" {
			t.Errorf("%s %s without a valid key: X-RateLimit-Limit %q", c.method, c.path, v)
		}
	}
	if r := s.Do("GET", "/v1/nothing", "svc_sk_notakey", nil); r.Status != http.StatusNotFound || r.Header.Get("X-RateLimit-Limit") != "" {
		t.Errorf("unknown path with an invalid key: %d, limit header %q", r.Status, r.Header.Get("X-RateLimit-Limit"))
	}
	// A known path with a method it lacks.
	for _, c := range []struct{ method, path string }{{"PATCH", "/v1/links/x"}, {"DELETE", "/v1/links"}, {"PUT", "/v1/api-keys/validate"}} {
		r := s.Do(c.method, c.path, alice, "{}")
		if r.Status != http.StatusNotFound && r.Status != http.StatusMethodNotAllowed {
			t.Errorf("%s %s: %d", c.method, c.path, r.Status)
		}
		wantError(t, r, r.Status, "")
		rateHeaders(t, c.method+" "+c.path, r)
	}
}

// snapshot describes everything a user can list, to compare before and
// after refused requests.
func snapshot(t *testing.T, s *apptest.Server, key string) string {
	t.Helper()
	var b strings.Builder
	for _, p := range []string{"/v1/workspaces", "/v1/projects?page_size=100", "/v1/domains?page_size=100", "/v1/links?page_size=100", "/v1/links?page_size=100&archived=true", "/v1/api-keys"} {
		r := s.Do("GET", p, key, nil)
		if r.Status != http.StatusOK {
			t.Fatalf("GET %s: %d %s", p, r.Status, r.Body)
		}
		b.Write(r.Body)
		b.WriteByte('\n')
	}
	return b.String()
}
