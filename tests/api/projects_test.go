package api_test

import (
	"github.com/linkd/linkd/cmd/linkd/app/apptest"
	"net/http"
	"strings"
	"testing"
	"time"
)

// Spec 2.3 and 4.3.

func TestProjectCRUDAndFieldSets(t *testing.T) {
	t.Parallel()
	clk := apptest.NewClock()
	s := start(t, apptest.WithClock(clk))
	alice := s.NewKey("alice", "full", nil)
	ws := workspace(s, alice, "W")

	created := obj(t, s.Do("POST", "/v1/projects", alice, map[string]any{"name": "Launch", "description": "Q3", "color": "#a1b2c3", "workspace_id": ws}), http.StatusCreated)
	wantKeys(t, "created project", created, "id", "created_at", "name", "description", "color")
	if str(created, "color") != "#A1B2C3" || str(created, "name") != "Launch" || str(created, "description") != "Q3" {
		t.Errorf("created: %v", created)
	}
	id := str(created, "id")
	timestamp(t, "created_at", created["created_at"])

	got := obj(t, s.Do("GET", "/v1/projects/"+id, alice, nil), http.StatusOK)
	wantKeys(t, "project", got, "id", "name", "description", "created_at", "updated_at")
	if got["created_at"] != created["created_at"] || str(got, "name") != "Launch" {
		t.Errorf("get: %v", got)
	}

	p := envelope(t, s.Do("GET", "/v1/projects", alice, nil))
	if len(p.Items) != 1 || p.Page != 1 || p.PageSize != 10 || p.HasNext || p.HasPrev {
		t.Fatalf("list: %+v", p)
	}
	wantKeys(t, "listed project", p.Items[0].(map[string]any), "id", "name", "description", "created_at", "updated_at")

	clk.Advance(time.Second)
	up := obj(t, s.Do("PUT", "/v1/projects/"+id, alice, map[string]any{"description": "Q4"}), http.StatusOK)
	wantKeys(t, "updated project", up, "id", "name", "description", "updated_at")
	if str(up, "name") != "Launch" || str(up, "description") != "Q4" {
		t.Errorf("update: %v", up)
	}
	if !timestamp(t, "updated_at", up["updated_at"]).After(timestamp(t, "created_at", created["created_at"])) {
		t.Errorf("updated_at did not move")
	}
	up = obj(t, s.Do("PUT", "/v1/projects/"+id, alice, map[string]any{"name": "Relaunch", "color": "#fff"}), http.StatusOK)
	if str(up, "name") != "Relaunch" || str(up, "description") != "Q4" {
		t.Errorf("update name: %v", up)
	}

	wantMessage(t, s.Do("DELETE", "/v1/projects/"+id, alice, nil))
	wantError(t, s.Do("GET", "/v1/projects/"+id, alice, nil), http.StatusNotFound, msgProjNotFound)
	wantError(t, s.Do("PUT", "/v1/projects/"+id, alice, map[string]any{"name": "x"}), http.StatusNotFound, msgProjNotFound)
	wantError(t, s.Do("DELETE", "/v1/projects/"+id, alice, nil), http.StatusNotFound, msgProjNotFound)
	if n := len(envelope(t, s.Do("GET", "/v1/projects", alice, nil)).Items); n != 0 {
		t.Errorf("%d projects after delete", n)
	}
	// The name is free again.
	s.MustCreate("/v1/projects", alice, map[string]any{"name": "Relaunch", "workspace_id": ws})
}

func TestProjectColours(t *testing.T) {
	t.Parallel()
	s := start(t)
	alice := s.NewKey("alice", "full", nil)
	cases := []struct {
		give any // nil: not sent
		want string
	}{
		{nil, "#000000"},
		{"#000000", "#000000"},
		{"#abc", "#ABC"},
		{"#ABC", "#ABC"},
		{"#a1B2c3", "#A1B2C3"},
		{"#FFFFFF", "#FFFFFF"},
		{"", "#000000"},
	}
	for i, c := range cases {
		body := map[string]any{"name": q("colour %d", i)}
		if c.give != nil {
			body["color"] = c.give
		}
		p := obj(t, s.Do("POST", "/v1/projects", alice, body), http.StatusCreated)
		if str(p, "color") != c.want {
			t.Errorf("color %v: got %q, want %q", c.give, str(p, "color"), c.want)
		}
	}
	for _, bad := range []any{"000000", "#12", "#1234", "#12345", "#1234567", "#ggg", "red", "#12345G", " #abc", 123, true} {
		wantError(t, s.Do("POST", "/v1/projects", alice, map[string]any{"name": q("bad %v", bad), "color": bad}), http.StatusBadRequest, "")
	}
	id := str(s.MustCreate("/v1/projects", alice, map[string]any{"name": "recolour"}), "id")
	obj(t, s.Do("PUT", "/v1/projects/"+id, alice, map[string]any{"color": "#0f0"}), http.StatusOK)
	wantError(t, s.Do("PUT", "/v1/projects/"+id, alice, map[string]any{"color": "green"}), http.StatusBadRequest, "")
	// Refused colours created nothing.
	if n := len(envelope(t, s.Do("GET", "/v1/projects?page_size=100", alice, nil)).Items); n != len(cases)+1 {
		t.Errorf("%d projects, want %d", n, len(cases)+1)
	}
}

func TestProjectValidationAndUniqueness(t *testing.T) {
	t.Parallel()
	s := start(t)
	alice, bob := s.NewKey("alice", "full", nil), s.NewKey("bob", "full", nil)
	ws1, ws2 := workspace(s, alice, "One"), workspace(s, alice, "Two")
	bobWS := workspace(s, bob, "Bob's")
	s.MustCreate("/v1/projects", alice, map[string]any{"name": "Alpha", "workspace_id": ws1})
	beta := str(s.MustCreate("/v1/projects", alice, map[string]any{"name": "Beta", "workspace_id": ws1}), "id")
	bobProj := str(s.MustCreate("/v1/projects", bob, map[string]any{"name": "Alpha", "workspace_id": bobWS}), "id")

	cases := []struct {
		name, method, path string
		body               any
		status             int
		detail             string
	}{
		{"name missing", "POST", "/v1/projects", map[string]any{"workspace_id": ws1}, 400, msgProjNameReq},
		{"name empty", "POST", "/v1/projects", map[string]any{"name": "", "workspace_id": ws1}, 400, msgProjNameReq},
		{"name blank", "POST", "/v1/projects", map[string]any{"name": " ", "workspace_id": ws1}, 400, msgProjNameReq},
		{"name wrong type", "POST", "/v1/projects", `{"name": ["x"]}`, 400, ""},
		{"too long", "POST", "/v1/projects", map[string]any{"name": strings.Repeat("p", 300)}, 400, ""},
		{"duplicate", "POST", "/v1/projects", map[string]any{"name": "Alpha", "workspace_id": ws1}, 409, msgProjExists},
		{"duplicate other case", "POST", "/v1/projects", map[string]any{"name": "ALPHA", "workspace_id": ws1}, 409, msgProjExists},
		{"rename to existing", "PUT", "/v1/projects/" + beta, map[string]any{"name": "alpha"}, 409, msgProjExists},
		{"rename to empty", "PUT", "/v1/projects/" + beta, map[string]any{"name": ""}, 400, msgProjNameReq},
		{"unknown workspace", "POST", "/v1/projects", map[string]any{"name": "X", "workspace_id": "nope"}, 404, msgWSNotFound},
		{"unknown project", "GET", "/v1/projects/nope", nil, 404, msgProjNotFound},
		{"bad page", "GET", "/v1/projects?page=0", nil, 400, ""},
		{"bad page size", "GET", "/v1/projects?page_size=101", nil, 400, ""},
		{"bad cursor", "GET", "/v1/projects?cursor=garbage", nil, 400, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			wantError(t, s.Do(c.method, c.path, alice, c.body), c.status, c.detail)
		})
	}
	// Unique within a workspace only.
	s.MustCreate("/v1/projects", alice, map[string]any{"name": "Alpha", "workspace_id": ws2})
	// Another user's workspace and projects.
	wantError(t, s.Do("POST", "/v1/projects", alice, map[string]any{"name": "X", "workspace_id": bobWS}), http.StatusForbidden, msgDeniedWS)
	wantError(t, s.Do("GET", "/v1/projects?workspace_id="+bobWS, alice, nil), http.StatusForbidden, msgDeniedWS)
	wantError(t, s.Do("GET", "/v1/projects/"+bobProj, alice, nil), http.StatusForbidden, msgInsufficient)
	wantError(t, s.Do("PUT", "/v1/projects/"+bobProj, alice, map[string]any{"name": "Mine"}), http.StatusForbidden, msgInsufficient)
	wantError(t, s.Do("DELETE", "/v1/projects/"+bobProj, alice, nil), http.StatusForbidden, msgInsufficient)
	if str(obj(t, s.Do("GET", "/v1/projects/"+bobProj, bob, nil), http.StatusOK), "name") != "Alpha" {
		t.Errorf("bob's project changed")
	}
	// Lists cover the caller's workspaces only.
	if n := len(envelope(t, s.Do("GET", "/v1/projects", alice, nil)).Items); n != 3 {
		t.Errorf("alice lists %d projects, want 3", n)
	}
	if n := len(envelope(t, s.Do("GET", "/v1/projects?workspace_id="+ws2, alice, nil)).Items); n != 1 {
		t.Errorf("workspace filter: %d", n)
	}
}

// Deleting a project keeps its links; they lose the project.
func TestProjectDeleteKeepsLinks(t *testing.T) {
	t.Parallel()
	s := start(t)
	alice := s.NewKey("alice", "full", nil)
	p := str(s.MustCreate("/v1/projects", alice, map[string]any{"name": "P"}), "id")
	other := str(s.MustCreate("/v1/projects", alice, map[string]any{"name": "Other"}), "id")
	var in []string
	for i := 0; i < 3; i++ {
		in = append(in, str(createLink(s, alice, map[string]any{"original_url": q("https://in%d.example", i), "project_id": p}), "id"))
	}
	out := str(createLink(s, alice, map[string]any{"original_url": "https://out.example", "project_id": other}), "id")
	if n := len(envelope(t, s.Do("GET", "/v1/links?project_id="+p, alice, nil)).Items); n != 3 {
		t.Fatalf("project filter before: %d", n)
	}

	wantMessage(t, s.Do("DELETE", "/v1/projects/"+p, alice, nil))
	for _, id := range in {
		l := obj(t, s.Do("GET", "/v1/links/"+id, alice, nil), http.StatusOK)
		if l["project_id"] != nil {
			t.Errorf("link %s keeps project_id %v", id, l["project_id"])
		}
	}
	if l := obj(t, s.Do("GET", "/v1/links/"+out, alice, nil), http.StatusOK); str(l, "project_id") != other {
		t.Errorf("link of another project lost it: %v", l["project_id"])
	}
	if n := len(envelope(t, s.Do("GET", "/v1/links", alice, nil)).Items); n != 4 {
		t.Errorf("%d links after project delete, want 4", n)
	}
	if n := len(envelope(t, s.Do("GET", "/v1/links?project_id="+p, alice, nil)).Items); n != 0 {
		t.Errorf("deleted project still filters %d links", n)
	}
	// A deleted project cannot be used.
	wantError(t, s.Do("POST", "/v1/links", alice, map[string]any{"original_url": "https://x.example", "project_id": p}), http.StatusNotFound, msgProjNotFound)
}
