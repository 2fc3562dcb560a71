package api_test

import (
	"github.com/linkd/linkd/cmd/linkd/app/apptest"
	"net/http"
	"strings"
	"testing"
	"time"
)

// Spec 2.2 and 4.2.

func TestWorkspaceCRUD(t *testing.T) {
	t.Parallel()
	clk := apptest.NewClock()
	s := start(t, apptest.WithClock(clk))
	alice := s.NewKey("alice", "full", nil)

	ws := obj(t, s.Do("POST", "/v1/workspaces", alice, map[string]any{"name": "Marketing", "description": "campaigns"}), http.StatusCreated)
	id := str(ws, "id")
	if id == "" || str(ws, "name") != "Marketing" || str(ws, "description") != "campaigns" {
		t.Fatalf("created: %v", ws)
	}
	created := timestamp(t, "created_at", ws["created_at"])
	timestamp(t, "updated_at", ws["updated_at"])

	got := obj(t, s.Do("GET", "/v1/workspaces/"+id, alice, nil), http.StatusOK)
	for _, k := range []string{"id", "name", "description", "created_at", "updated_at"} {
		if got[k] != ws[k] {
			t.Errorf("get %s = %v, want %v", k, got[k], ws[k])
		}
	}

	// The list is a plain array of the caller's workspaces.
	all := list(t, s.Do("GET", "/v1/workspaces", alice, nil), http.StatusOK)
	if len(all) != 1 || str(all[0].(map[string]any), "id") != id {
		t.Fatalf("list: %v", all)
	}

	clk.Advance(time.Second)
	// Partial update: only the given field changes.
	up := obj(t, s.Do("PUT", "/v1/workspaces/"+id, alice, map[string]any{"description": "all campaigns"}), http.StatusOK)
	if str(up, "name") != "Marketing" || str(up, "description") != "all campaigns" {
		t.Errorf("update description: %v", up)
	}
	if !timestamp(t, "updated_at", up["updated_at"]).After(created) {
		t.Errorf("updated_at did not move: %v", up["updated_at"])
	}
	up = obj(t, s.Do("PUT", "/v1/workspaces/"+id, alice, map[string]any{"name": "Growth"}), http.StatusOK)
	if str(up, "name") != "Growth" || str(up, "description") != "all campaigns" {
		t.Errorf("update name: %v", up)
	}
	// An empty body changes nothing.
	up = obj(t, s.Do("PUT", "/v1/workspaces/"+id, alice, map[string]any{}), http.StatusOK)
	if str(up, "name") != "Growth" {
		t.Errorf("empty update: %v", up)
	}

	wantMessage(t, s.Do("DELETE", "/v1/workspaces/"+id, alice, nil))
	wantError(t, s.Do("GET", "/v1/workspaces/"+id, alice, nil), http.StatusNotFound, msgWSNotFound)
	wantError(t, s.Do("PUT", "/v1/workspaces/"+id, alice, map[string]any{"name": "x"}), http.StatusNotFound, msgWSNotFound)
	wantError(t, s.Do("DELETE", "/v1/workspaces/"+id, alice, nil), http.StatusNotFound, msgWSNotFound)
	if n := len(list(t, s.Do("GET", "/v1/workspaces", alice, nil), http.StatusOK)); n != 0 {
		t.Errorf("%d workspaces left after delete", n)
	}
	// The name is free again.
	obj(t, s.Do("POST", "/v1/workspaces", alice, map[string]any{"name": "Growth"}), http.StatusCreated)
}

func TestWorkspaceValidationAndUniqueness(t *testing.T) {
	t.Parallel()
	s := start(t)
	alice, bob := s.NewKey("alice", "full", nil), s.NewKey("bob", "full", nil)
	id := workspace(s, alice, "Sales")
	other := workspace(s, alice, "Support")

	cases := []struct {
		name, method, path string
		body               any
		status             int
		detail             string
	}{
		{"name missing", "POST", "/v1/workspaces", map[string]any{"description": "x"}, 400, msgWSNameReq},
		{"name empty", "POST", "/v1/workspaces", map[string]any{"name": ""}, 400, msgWSNameReq},
		{"name blank", "POST", "/v1/workspaces", map[string]any{"name": "   "}, 400, msgWSNameReq},
		{"name null", "POST", "/v1/workspaces", `{"name": null}`, 400, msgWSNameReq},
		{"name not a string", "POST", "/v1/workspaces", `{"name": 12}`, 400, ""},
		{"duplicate", "POST", "/v1/workspaces", map[string]any{"name": "Sales"}, 409, msgWSExists},
		{"duplicate other case", "POST", "/v1/workspaces", map[string]any{"name": "sALES"}, 409, msgWSExists},
		{"rename to existing", "PUT", "/v1/workspaces/" + other, map[string]any{"name": "Sales"}, 409, msgWSExists},
		{"rename to empty", "PUT", "/v1/workspaces/" + other, map[string]any{"name": ""}, 400, msgWSNameReq},
		{"rename to null", "PUT", "/v1/workspaces/" + other, `{"name": null}`, 400, msgWSNameReq},
		{"unknown", "GET", "/v1/workspaces/nope", nil, 404, msgWSNotFound},
		{"unknown update", "PUT", "/v1/workspaces/nope", map[string]any{"name": "x"}, 404, msgWSNotFound},
		{"unknown delete", "DELETE", "/v1/workspaces/nope", nil, 404, msgWSNotFound},
		{"too long", "POST", "/v1/workspaces", map[string]any{"name": strings.Repeat("w", 300)}, 400, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			wantError(t, s.Do(c.method, c.path, alice, c.body), c.status, c.detail)
		})
	}
	// Renaming a workspace to its own name (any case) is fine.
	obj(t, s.Do("PUT", "/v1/workspaces/"+id, alice, map[string]any{"name": "SALES"}), http.StatusOK)
	// Names are unique per user: bob may have his own "Sales".
	obj(t, s.Do("POST", "/v1/workspaces", bob, map[string]any{"name": "Sales"}), http.StatusCreated)
	// Nothing half-applied: alice still has exactly two workspaces.
	if n := len(list(t, s.Do("GET", "/v1/workspaces", alice, nil), http.StatusOK)); n != 2 {
		t.Errorf("alice has %d workspaces, want 2", n)
	}
}

func TestWorkspaceOfAnotherUser(t *testing.T) {
	t.Parallel()
	s := start(t)
	alice, bob := s.NewKey("alice", "full", nil), s.NewKey("bob", "full", nil)
	id := workspace(s, alice, "Private")
	for _, c := range []struct{ method, path string }{
		{"GET", "/v1/workspaces/" + id},
		{"PUT", "/v1/workspaces/" + id},
		{"DELETE", "/v1/workspaces/" + id},
		{"GET", "/v1/workspaces/" + id + "/members"},
		{"POST", "/v1/workspaces/" + id + "/members?user_id=bob"},
		{"PUT", "/v1/workspaces/" + id + "/members/alice?role=member"},
		{"DELETE", "/v1/workspaces/" + id + "/members/alice"},
	} {
		var body any
		if c.method == "PUT" && !strings.Contains(c.path, "members") {
			body = map[string]any{"name": "Mine now"}
		}
		wantForbidden(t, s.Do(c.method, c.path, bob, body))
	}
	if n := len(list(t, s.Do("GET", "/v1/workspaces", bob, nil), http.StatusOK)); n != 0 {
		t.Errorf("bob lists %d workspaces", n)
	}
	ws := obj(t, s.Do("GET", "/v1/workspaces/"+id, alice, nil), http.StatusOK)
	if str(ws, "name") != "Private" {
		t.Errorf("workspace changed by bob: %v", ws)
	}
	if n := len(list(t, s.Do("GET", "/v1/workspaces/"+id+"/members", alice, nil), http.StatusOK)); n != 1 {
		t.Errorf("members changed by bob: %d", n)
	}
}

func TestWorkspaceMembers(t *testing.T) {
	t.Parallel()
	s := start(t)
	alice, bob, carol := s.NewKey("alice", "full", nil), s.NewKey("bob", "full", nil), s.NewKey("carol", "full", nil)
	id := workspace(s, alice, "Team")
	members := func(key string) map[string]map[string]any {
		out := map[string]map[string]any{}
		for _, m := range list(t, s.Do("GET", "/v1/workspaces/"+id+"/members", key, nil), http.StatusOK) {
			mm := m.(map[string]any)
			wantKeys(t, "member", mm, "user_id", "email", "role", "joined_at")
			timestamp(t, "joined_at", mm["joined_at"])
			out[str(mm, "user_id")] = mm
		}
		return out
	}
	// The creator is the first admin.
	if m := members(alice); len(m) != 1 || str(m["alice"], "role") != "admin" {
		t.Fatalf("initial members: %v", m)
	}
	// Query-parameter style; role defaults to member.
	wantMessage(t, s.Do("POST", "/v1/workspaces/"+id+"/members?user_id=bob&email=bob@example.com", alice, nil))
	m := members(alice)
	if str(m["bob"], "role") != "member" || str(m["bob"], "email") != "bob@example.com" {
		t.Errorf("bob: %v", m["bob"])
	}
	addMember(t, s, alice, id, "carol", "admin")
	if m := members(bob); str(m["carol"], "role") != "admin" || len(m) != 3 {
		t.Errorf("members seen by bob: %v", m)
	}
	// bob now sees the workspace.
	if l := list(t, s.Do("GET", "/v1/workspaces", bob, nil), http.StatusOK); len(l) != 1 {
		t.Errorf("bob's workspaces: %v", l)
	}

	cases := []struct {
		name, method, path string
		key                string
		status             int
		detail             string
	}{
		{"user_id required", "POST", "/members", alice, 400, "user_id is required"},
		{"bad role", "POST", "/members?user_id=dave&role=owner", alice, 400, "role must be admin or member"},
		{"role required", "PUT", "/members/bob", alice, 400, "role is required"},
		{"bad new role", "PUT", "/members/bob?role=owner", alice, 400, "role must be admin or member"},
		{"unknown member role", "PUT", "/members/zed?role=admin", alice, 404, "Member not found"},
		{"unknown member remove", "DELETE", "/members/zed", alice, 404, "Member not found"},
		{"member adds", "POST", "/members?user_id=dave", bob, 403, msgInsufficient},
		{"member changes role", "PUT", "/members/bob?role=admin", bob, 403, msgInsufficient},
		{"member removes", "DELETE", "/members/carol", bob, 403, msgInsufficient},
		{"unknown workspace", "POST", "/members?user_id=dave", alice, 404, msgWSNotFound},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			base := "/v1/workspaces/" + id
			if c.name == "unknown workspace" {
				base = "/v1/workspaces/nope"
			}
			wantError(t, s.Do(c.method, base+c.path, c.key, nil), c.status, c.detail)
		})
	}

	// Admins change roles.
	wantMessage(t, s.Do("PUT", "/v1/workspaces/"+id+"/members/bob?role=admin", carol, nil))
	if str(members(alice)["bob"], "role") != "admin" {
		t.Errorf("bob not promoted")
	}
	wantMessage(t, s.Do("PUT", "/v1/workspaces/"+id+"/members/bob?role=member", alice, nil))
	// Remove: carol loses access.
	wantMessage(t, s.Do("DELETE", "/v1/workspaces/"+id+"/members/carol", alice, nil))
	wantForbidden(t, s.Do("GET", "/v1/workspaces/"+id, carol, nil))
	if _, ok := members(alice)["carol"]; ok {
		t.Errorf("carol still listed")
	}
	// The last admin stays.
	wantError(t, s.Do("DELETE", "/v1/workspaces/"+id+"/members/alice", alice, nil), http.StatusBadRequest, "A workspace needs at least one admin")
	wantError(t, s.Do("PUT", "/v1/workspaces/"+id+"/members/alice?role=member", alice, nil), http.StatusBadRequest, "A workspace needs at least one admin")
	// A member body is ignored: parameters come in the query.
	wantMessage(t, s.Do("POST", "/v1/workspaces/"+id+"/members?user_id=erin", alice, map[string]any{"user_id": "frank", "role": "admin"}))
	if m := members(alice); str(m["erin"], "role") != "member" || m["frank"] != nil {
		t.Errorf("after body-carrying add: %v", m)
	}
}

// Roles (spec 2.2): admins manage settings, members, links, projects and
// domains; members create, update and delete their own links, see the
// workspace's links and analytics, use its projects and domains, and manage
// nothing else.
func TestWorkspaceRoles(t *testing.T) {
	t.Parallel()
	s := start(t)
	alice, bob, carol := s.NewKey("alice", "full", nil), s.NewKey("bob", "full", nil), s.NewKey("carol", "full", nil)
	ws := workspace(s, alice, "Shared")
	addMember(t, s, alice, ws, "bob", "member")
	addMember(t, s, alice, ws, "carol", "member")
	proj := str(s.MustCreate("/v1/projects", alice, map[string]any{"name": "P", "workspace_id": ws}), "id")
	dom := str(s.MustCreate("/v1/domains", alice, map[string]any{"domain": "roles.example.com", "workspace_id": ws}), "id")
	adminLink := str(createLink(s, alice, map[string]any{"original_url": "https://a.example", "workspace_id": ws}), "id")

	// A member creates links in the workspace, with its project and domain.
	bobLink := str(createLink(s, bob, map[string]any{"original_url": "https://b.example", "workspace_id": ws, "project_id": proj, "domain_id": dom}), "id")
	carolLink := str(createLink(s, carol, map[string]any{"original_url": "https://c.example", "workspace_id": ws}), "id")

	// ... sees every link of the workspace,
	if n := len(envelope(t, s.Do("GET", "/v1/links?workspace_id="+ws, bob, nil)).Items); n != 3 {
		t.Errorf("bob lists %d links, want 3", n)
	}
	obj(t, s.Do("GET", "/v1/links/"+adminLink, bob, nil), http.StatusOK)
	// ... updates and deletes his own,
	obj(t, s.Do("PUT", "/v1/links/"+bobLink, bob, map[string]any{"name": "mine"}), http.StatusOK)
	// ... but not those of others.
	wantError(t, s.Do("PUT", "/v1/links/"+adminLink, bob, map[string]any{"name": "x"}), http.StatusForbidden, msgInsufficient)
	wantError(t, s.Do("PUT", "/v1/links/"+carolLink, bob, map[string]any{"name": "x"}), http.StatusForbidden, msgInsufficient)
	wantError(t, s.Do("DELETE", "/v1/links/"+carolLink, bob, nil), http.StatusForbidden, msgInsufficient)
	// Admins update and delete any link.
	obj(t, s.Do("PUT", "/v1/links/"+carolLink, alice, map[string]any{"name": "by admin"}), http.StatusOK)
	wantMessage(t, s.Do("DELETE", "/v1/links/"+carolLink, alice, nil))
	wantMessage(t, s.Do("DELETE", "/v1/links/"+bobLink, bob, nil))

	// A member reads projects and domains and verifies domains ...
	obj(t, s.Do("GET", "/v1/projects/"+proj, bob, nil), http.StatusOK)
	obj(t, s.Do("GET", "/v1/domains/"+dom, bob, nil), http.StatusOK)
	obj(t, s.Do("GET", "/v1/domains/"+dom+"/verify", bob, nil), http.StatusOK)
	if n := len(envelope(t, s.Do("GET", "/v1/projects?workspace_id="+ws, bob, nil)).Items); n != 1 {
		t.Errorf("bob lists %d projects", n)
	}
	// ... and sees the workspace's statistics,
	list(t, s.Do("GET", "/v1/stats/workspaces/"+ws, bob, nil), http.StatusOK)
	// ... but manages neither projects, domains, settings nor members.
	for _, c := range []struct {
		method, path string
		body         any
	}{
		{"POST", "/v1/projects", map[string]any{"name": "Q", "workspace_id": ws}},
		{"PUT", "/v1/projects/" + proj, map[string]any{"name": "Q"}},
		{"DELETE", "/v1/projects/" + proj, nil},
		{"POST", "/v1/domains", map[string]any{"domain": "member.example.com", "workspace_id": ws}},
		{"PUT", "/v1/domains/" + dom, map[string]any{"description": "x"}},
		{"DELETE", "/v1/domains/" + dom, nil},
		{"PUT", "/v1/workspaces/" + ws, map[string]any{"name": "Taken over"}},
		{"DELETE", "/v1/workspaces/" + ws, nil},
		{"POST", "/v1/workspaces/" + ws + "/members?user_id=eve", nil},
	} {
		wantError(t, s.Do(c.method, c.path, bob, c.body), http.StatusForbidden, msgInsufficient)
	}
	// A promoted member gains the admin rights.
	wantMessage(t, s.Do("PUT", "/v1/workspaces/"+ws+"/members/bob?role=admin", alice, nil))
	obj(t, s.Do("PUT", "/v1/projects/"+proj, bob, map[string]any{"name": "Renamed"}), http.StatusOK)
	obj(t, s.Do("PUT", "/v1/links/"+adminLink, bob, map[string]any{"name": "by bob"}), http.StatusOK)
}

// Deleting a workspace removes its links, projects, domains and member
// access, and cannot be undone.
func TestWorkspaceDeleteCascades(t *testing.T) {
	t.Parallel()
	s := start(t)
	alice, bob := s.NewKey("alice", "full", nil), s.NewKey("bob", "full", nil)
	ws := workspace(s, alice, "Doomed")
	keep := workspace(s, alice, "Kept")
	addMember(t, s, alice, ws, "bob", "member")
	proj := str(s.MustCreate("/v1/projects", alice, map[string]any{"name": "P", "workspace_id": ws}), "id")
	dom := str(s.MustCreate("/v1/domains", alice, map[string]any{"domain": "doomed.example.com", "workspace_id": ws}), "id")
	l1 := createLink(s, alice, map[string]any{"original_url": "https://one.example", "workspace_id": ws, "project_id": proj, "custom_code": "doomed-one"})
	l2 := createLink(s, bob, map[string]any{"original_url": "https://two.example", "workspace_id": ws})
	kept := createLink(s, alice, map[string]any{"original_url": "https://kept.example", "workspace_id": keep})

	wantError(t, s.Do("DELETE", "/v1/workspaces/"+ws, bob, nil), http.StatusForbidden, msgInsufficient)
	wantMessage(t, s.Do("DELETE", "/v1/workspaces/"+ws, alice, nil))

	for _, id := range []string{str(l1, "id"), str(l2, "id")} {
		wantError(t, s.Do("GET", "/v1/links/"+id, alice, nil), http.StatusNotFound, msgLinkNotFound)
	}
	wantError(t, s.Do("GET", "/v1/links/code/doomed-one", "", nil), http.StatusNotFound, msgLinkNotFound)
	wantError(t, s.Do("GET", "/v1/projects/"+proj, alice, nil), http.StatusNotFound, msgProjNotFound)
	wantError(t, s.Do("GET", "/v1/domains/"+dom, alice, nil), http.StatusNotFound, msgDomainNF)
	for _, key := range []string{alice, bob} {
		for _, w := range list(t, s.Do("GET", "/v1/workspaces", key, nil), http.StatusOK) {
			if str(w.(map[string]any), "id") == ws {
				t.Errorf("deleted workspace still listed")
			}
		}
		if items := envelope(t, s.Do("GET", "/v1/links", key, nil)).Items; len(items) > 1 {
			t.Errorf("links left: %v", ids(items))
		}
	}
	wantError(t, s.Do("GET", "/v1/links?workspace_id="+ws, bob, nil), http.StatusNotFound, msgWSNotFound)
	// The other workspace is untouched.
	obj(t, s.Do("GET", "/v1/links/"+str(kept, "id"), alice, nil), http.StatusOK)
	// The names it held are free: its code, its domain.
	createLink(s, alice, map[string]any{"original_url": "https://again.example", "custom_code": "doomed-one"})
	s.MustCreate("/v1/domains", alice, map[string]any{"domain": "doomed.example.com"})
}

// A user's first workspace is made on demand, and links without
// workspace_id go to it.
func TestDefaultWorkspace(t *testing.T) {
	t.Parallel()
	s := start(t)
	alice := s.NewKey("alice", "full", nil)
	if n := len(list(t, s.Do("GET", "/v1/workspaces", alice, nil), http.StatusOK)); n != 0 {
		t.Fatalf("a new user has %d workspaces", n)
	}
	a := createLink(s, alice, map[string]any{"original_url": "https://a.example"})
	b := createLink(s, alice, map[string]any{"original_url": "https://b.example"})
	if str(a, "workspace_id") == "" || str(a, "workspace_id") != str(b, "workspace_id") {
		t.Fatalf("default workspace: %v vs %v", a["workspace_id"], b["workspace_id"])
	}
	all := list(t, s.Do("GET", "/v1/workspaces", alice, nil), http.StatusOK)
	if len(all) != 1 || str(all[0].(map[string]any), "id") != str(a, "workspace_id") {
		t.Errorf("workspaces: %v", all)
	}
	// Projects and domains without workspace_id go there too.
	p := s.MustCreate("/v1/projects", alice, map[string]any{"name": "P"})
	l := createLink(s, alice, map[string]any{"original_url": "https://c.example", "project_id": str(p, "id")})
	if str(l, "workspace_id") != str(a, "workspace_id") {
		t.Errorf("project of the default workspace used from another")
	}
}

// A user's first own workspace is their default one; a link given only a
// project or a domain goes to the workspace of that project or domain.
func TestFirstWorkspaceIsDefault(t *testing.T) {
	t.Parallel()
	s := start(t)
	alice := s.NewKey("alice", "full", nil)
	first := workspace(s, alice, "First")
	second := workspace(s, alice, "Second")
	l := newLink(s, alice, "https://default.example")
	if str(l, "workspace_id") != first {
		t.Errorf("link without workspace_id went to %s, want the first workspace %s", str(l, "workspace_id"), first)
	}
	p := s.MustCreate("/v1/projects", alice, map[string]any{"name": "In first"})
	if n := len(envelope(t, s.Do("GET", "/v1/projects?workspace_id="+first, alice, nil)).Items); n != 1 || str(p, "id") == "" {
		t.Errorf("project without workspace_id is not in the first workspace")
	}
	if n := len(list(t, s.Do("GET", "/v1/workspaces", alice, nil), http.StatusOK)); n != 2 {
		t.Errorf("%d workspaces, want 2: no extra default workspace", n)
	}
	// The caller's workspace statistics are those of the first workspace.
	obj(t, s.Do("GET", "/v1/links/code/"+str(l, "code"), "", nil), http.StatusOK)
	if days := list(t, s.Do("GET", "/v1/stats/workspaces", alice, nil), http.StatusOK); len(days) != 1 || days[0].(map[string]any)["total_clicks"] != 1.0 {
		t.Errorf("stats of the caller's workspace: %v", days)
	}
	// A project or a domain of the second workspace takes the link there.
	p2 := str(s.MustCreate("/v1/projects", alice, map[string]any{"name": "In second", "workspace_id": second}), "id")
	d2 := str(s.MustCreate("/v1/domains", alice, map[string]any{"domain": "second.example.com", "workspace_id": second}), "id")
	for _, body := range []map[string]any{
		{"original_url": "https://p.example", "project_id": p2},
		{"original_url": "https://d.example", "domain_id": d2},
		{"original_url": "https://pd.example", "project_id": p2, "domain_id": d2},
	} {
		if l := createLink(s, alice, body); str(l, "workspace_id") != second {
			t.Errorf("%v went to %s, want %s", body, str(l, "workspace_id"), second)
		}
	}
	// A project and a domain of different workspaces do not mix.
	wantForbidden(t, s.Do("POST", "/v1/links", alice, map[string]any{"original_url": "https://x.example", "project_id": str(p, "id"), "domain_id": d2}))
	// Deleting the default workspace passes the default on to the oldest
	// remaining own workspace: no surprise new workspace.
	third := workspace(s, alice, "Third")
	wantMessage(t, s.Do("DELETE", "/v1/workspaces/"+first, alice, nil))
	l = newLink(s, alice, "https://again.example")
	if ws := str(l, "workspace_id"); ws != second {
		t.Errorf("after deleting the default workspace a link went to %q, want the second workspace %s", ws, second)
	}
	if p := s.MustCreate("/v1/projects", alice, map[string]any{"name": "After"}); str(p, "id") == "" {
		t.Errorf("project without workspace_id after the delete: %v", p)
	}
	if n := len(envelope(t, s.Do("GET", "/v1/projects?workspace_id="+second, alice, nil)).Items); n != 2 {
		t.Errorf("second workspace has %d projects, want 2 (the new one without workspace_id)", n)
	}
	if n := len(list(t, s.Do("GET", "/v1/workspaces", alice, nil), http.StatusOK)); n != 2 {
		t.Errorf("%d workspaces after the delete, want 2: no extra default workspace", n)
	}
	obj(t, s.Do("GET", "/v1/links/code/"+str(l, "code"), "", nil), http.StatusOK)
	if days := list(t, s.Do("GET", "/v1/stats/workspaces", alice, nil), http.StatusOK); len(days) != 1 || days[0].(map[string]any)["total_clicks"] != 1.0 {
		t.Errorf("stats of the caller's workspace after the delete: %v", days)
	}
	// A workspace another user made, where alice is only a member, never
	// becomes her default.
	bob := s.NewKey("bob", "full", nil)
	bobs := workspace(s, bob, "Bob's")
	addMember(t, s, bob, bobs, "alice", "admin")
	wantMessage(t, s.Do("DELETE", "/v1/workspaces/"+second, alice, nil))
	if ws := str(newLink(s, alice, "https://third.example"), "workspace_id"); ws != third {
		t.Errorf("after deleting the second default a link went to %q, want the third workspace %s", ws, third)
	}
	// With no own workspace left, the next default is made on demand.
	wantMessage(t, s.Do("DELETE", "/v1/workspaces/"+third, alice, nil))
	l = newLink(s, alice, "https://last.example")
	if ws := str(l, "workspace_id"); ws == first || ws == second || ws == third || ws == bobs || ws == "" {
		t.Errorf("with no own workspace left a link went to %q", ws)
	}
}

// Re-adding a member without a role keeps the role; a re-add cannot demote
// the last admin.
func TestReAddMember(t *testing.T) {
	t.Parallel()
	s := start(t)
	alice := s.NewKey("alice", "full", nil)
	ws := workspace(s, alice, "W")
	addMember(t, s, alice, ws, "bob", "admin")
	wantMessage(t, s.Do("POST", "/v1/workspaces/"+ws+"/members?user_id=bob", alice, nil))
	roles := map[string]string{}
	for _, m := range list(t, s.Do("GET", "/v1/workspaces/"+ws+"/members", alice, nil), http.StatusOK) {
		roles[str(m.(map[string]any), "user_id")] = str(m.(map[string]any), "role")
	}
	if roles["bob"] != "admin" || len(roles) != 2 {
		t.Errorf("after re-adding bob without a role: %v", roles)
	}
	wantMessage(t, s.Do("POST", "/v1/workspaces/"+ws+"/members?user_id=bob&role=member", alice, nil))
	wantError(t, s.Do("POST", "/v1/workspaces/"+ws+"/members?user_id=alice&role=member", alice, nil), http.StatusBadRequest, "A workspace needs at least one admin")
}
