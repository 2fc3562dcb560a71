package api_test

import (
	"net/http"
	"strings"
	"testing"
)

// Spec 4.1 and the key creation extension of DECISIONS.md.

func TestAPIKeyCreateShowsTheFullKeyOnce(t *testing.T) {
	t.Parallel()
	s := start(t)
	alice := s.NewKey("alice", "full", nil)

	created := obj(t, s.Do("POST", "/v1/api-keys", alice, map[string]any{"name": "ci"}), http.StatusCreated)
	wantKeys(t, "created key", created, "id", "name", "key", "is_active", "access_full", "access_read_only", "access_limited",
		"created_at", "user_id", "kind", "permissions", "project_id", "allowed_hostnames")
	full := str(created, "key")
	if !strings.HasPrefix(full, "svc_sk_") || len(full) < 30 || strings.HasSuffix(full, "...") {
		t.Fatalf("created key %q: want the whole svc_sk_ key", full)
	}
	if created["is_active"] != true || created["access_full"] != true || created["access_read_only"] != false || created["access_limited"] != false {
		t.Errorf("default key flags: %v", created)
	}
	if str(created, "name") != "ci" || str(created, "user_id") != "alice" {
		t.Errorf("name/user: %v", created)
	}
	timestamp(t, "created_at", created["created_at"])

	// The new key works at once and belongs to alice.
	v := obj(t, s.Do("GET", "/v1/api-keys/validate", full, nil), http.StatusOK)
	if v["valid"] != true || str(v, "user_id") != "alice" {
		t.Errorf("validate of the new key: %v", v)
	}

	// The listing shows it masked: 12 characters and "...".
	keys := list(t, s.Do("GET", "/v1/api-keys", alice, nil), http.StatusOK)
	if len(keys) != 2 {
		t.Fatalf("alice has %d keys, want 2", len(keys))
	}
	for _, k := range keys {
		m := k.(map[string]any)
		masked := str(m, "key")
		if len(masked) != 15 || !strings.HasSuffix(masked, "...") || !strings.HasPrefix(masked, "svc_sk_") {
			t.Errorf("listed key %q: want 12 characters and ...", masked)
		}
		if str(m, "id") == str(created, "id") && masked != full[:12]+"..." {
			t.Errorf("listed key %q, want %q", masked, full[:12]+"...")
		}
		if strings.Contains(string(s.Do("GET", "/v1/api-keys", alice, nil).Body), full) {
			t.Errorf("the listing shows a full key")
		}
	}
}

func TestAPIKeyPublishableKind(t *testing.T) {
	t.Parallel()
	s := start(t)
	alice := s.NewKey("alice", "full", nil)
	k := obj(t, s.Do("POST", "/v1/api-keys", alice, map[string]any{"name": "web", "kind": "publishable"}), http.StatusCreated)
	pk := str(k, "key")
	if !strings.HasPrefix(pk, "svc_pk_") || str(k, "kind") != "publishable" {
		t.Fatalf("publishable key %q kind %q", pk, str(k, "kind"))
	}
	// A publishable key is for client-side collection: it manages nothing.
	wantError(t, s.Do("GET", "/v1/links", pk, nil), http.StatusForbidden, msgInsufficient)
	wantError(t, s.Do("POST", "/v1/links", pk, map[string]any{"original_url": "https://example.com"}), http.StatusForbidden, msgInsufficient)
	// It is still a valid key.
	v := obj(t, s.Do("GET", "/v1/api-keys/validate", pk, nil), http.StatusOK)
	if v["valid"] != true || str(v, "user_id") != "alice" {
		t.Errorf("validate publishable: %v", v)
	}
}

func TestAPIKeyCreateRules(t *testing.T) {
	t.Parallel()
	s := start(t)
	alice := s.NewKey("alice", "full", nil)
	ro := s.NewKey("alice", "read_only", nil)
	lim := s.NewKey("alice", "limited", map[string]string{"links": "write", "domains": "write", "projects": "write", "workspaces": "write", "analytics": "write"})

	cases := []struct {
		name   string
		key    string
		body   any
		status int
		detail string
	}{
		{"name required", alice, map[string]any{"access": "full"}, 400, "Key name is required"},
		{"empty name", alice, map[string]any{"name": "  "}, 400, "Key name is required"},
		{"bad access", alice, map[string]any{"name": "x", "access": "admin"}, 400, "access must be full, read_only or limited"},
		{"bad kind", alice, map[string]any{"name": "x", "kind": "root"}, 400, "kind must be secret or publishable"},
		{"bad permission value", alice, map[string]any{"name": "x", "access": "limited", "permissions": map[string]any{"links": "admin"}}, 400, ""},
		{"unknown resource", alice, map[string]any{"name": "x", "access": "limited", "permissions": map[string]any{"users": "read"}}, 400, ""},
		{"wrong type", alice, `{"name": 5}`, 400, ""},
		{"another user's key", alice, map[string]any{"name": "x", "user_id": "bob"}, 403, msgInsufficient},
		{"read-only key", ro, map[string]any{"name": "x"}, 403, msgInsufficient},
		{"limited key", lim, map[string]any{"name": "x"}, 403, msgInsufficient},
		{"no key", "", map[string]any{"name": "x"}, 401, msgInvalidKey},
		{"unknown project", alice, map[string]any{"name": "x", "project_id": "nope"}, 404, msgProjNotFound},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			wantError(t, s.Do("POST", "/v1/api-keys", c.key, c.body), c.status, c.detail)
		})
	}
	// A key may create a key for its own user by naming it.
	obj(t, s.Do("POST", "/v1/api-keys", alice, map[string]any{"name": "self", "user_id": "alice"}), http.StatusCreated)
	// Nothing was created by the refused requests: alice has her 3 keys and "self".
	if n := len(list(t, s.Do("GET", "/v1/api-keys", alice, nil), http.StatusOK)); n != 4 {
		t.Errorf("alice has %d keys, want 4", n)
	}
}

func TestAPIKeyListingIsPerUser(t *testing.T) {
	t.Parallel()
	s := start(t)
	alice, bob := s.NewKey("alice", "full", nil), s.NewKey("bob", "full", nil)
	s.NewKey("alice", "read_only", nil)
	for _, c := range []struct {
		key  string
		user string
		n    int
	}{{alice, "alice", 2}, {bob, "bob", 1}} {
		keys := list(t, s.Do("GET", "/v1/api-keys", c.key, nil), http.StatusOK)
		if len(keys) != c.n {
			t.Errorf("%s sees %d keys, want %d", c.user, len(keys), c.n)
		}
		for _, k := range keys {
			if u := str(k.(map[string]any), "user_id"); u != c.user {
				t.Errorf("%s sees a key of %s", c.user, u)
			}
		}
	}
	// A query parameter does not widen the listing.
	keys := list(t, s.Do("GET", "/v1/api-keys?user_id=alice", bob, nil), http.StatusOK)
	if len(keys) != 1 {
		t.Errorf("bob with ?user_id=alice sees %d keys", len(keys))
	}
	// Read-only keys list too (GET).
	ro := s.NewKey("bob", "read_only", nil)
	list(t, s.Do("GET", "/v1/api-keys", ro, nil), http.StatusOK)
}

func TestAPIKeyValidatePermissions(t *testing.T) {
	t.Parallel()
	s := start(t)
	all := func(v string) map[string]any {
		return map[string]any{"domains": v, "links": v, "projects": v, "workspaces": v, "analytics": v}
	}
	cases := []struct {
		access string
		perms  map[string]string
		want   map[string]any
		flags  [3]bool
	}{
		{"full", nil, all("write"), [3]bool{true, false, false}},
		{"read_only", nil, all("read"), [3]bool{false, true, false}},
		{"limited", map[string]string{"links": "write", "analytics": "read"},
			map[string]any{"domains": "none", "links": "write", "projects": "none", "workspaces": "none", "analytics": "read"}, [3]bool{false, false, true}},
		{"limited", map[string]string{"domains": "read", "links": "read", "projects": "write", "workspaces": "write", "analytics": "none"},
			map[string]any{"domains": "read", "links": "read", "projects": "write", "workspaces": "write", "analytics": "none"}, [3]bool{false, false, true}},
	}
	for _, c := range cases {
		key := s.NewKey("carol", c.access, c.perms)
		v := obj(t, s.Do("GET", "/v1/api-keys/validate", key, nil), http.StatusOK)
		if v["valid"] != true || str(v, "user_id") != "carol" {
			t.Errorf("%s: %v", c.access, v)
		}
		perms, _ := v["permissions"].(map[string]any)
		wantKeys(t, "permissions", perms, "domains", "links", "projects", "workspaces", "analytics")
		for r, want := range c.want {
			if perms[r] != want {
				t.Errorf("%s %v: permissions[%s] = %v, want %v", c.access, c.perms, r, perms[r], want)
			}
		}
		// The listing's flags agree.
		for _, k := range list(t, s.Do("GET", "/v1/api-keys", key, nil), http.StatusOK) {
			m := k.(map[string]any)
			if str(m, "key") != key[:12]+"..." {
				continue
			}
			got := [3]bool{m["access_full"] == true, m["access_read_only"] == true, m["access_limited"] == true}
			if got != c.flags {
				t.Errorf("%s: flags %v, want %v", c.access, got, c.flags)
			}
		}
	}
	wantError(t, s.Do("GET", "/v1/api-keys/validate", "svc_sk_nope", nil), http.StatusUnauthorized, msgInvalidKey)
}

func TestAPIKeyDeactivate(t *testing.T) {
	t.Parallel()
	s := start(t)
	alice, bob := s.NewKey("alice", "full", nil), s.NewKey("bob", "full", nil)
	spare := s.NewKey("alice", "full", nil)
	ro := s.NewKey("alice", "read_only", nil)
	keys := list(t, s.Do("GET", "/v1/api-keys", alice, nil), http.StatusOK)
	idOf := func(full string) string {
		for _, k := range keys {
			if m := k.(map[string]any); str(m, "key") == full[:12]+"..." {
				return str(m, "id")
			}
		}
		t.Fatalf("key %s... not listed", full[:12])
		return ""
	}
	spareID, roID := idOf(spare), idOf(ro)

	wantError(t, s.Do("DELETE", "/v1/api-keys/"+spareID, bob, nil), http.StatusForbidden, msgInsufficient)
	wantError(t, s.Do("DELETE", "/v1/api-keys/"+spareID, ro, nil), http.StatusForbidden, msgInsufficient)
	wantError(t, s.Do("DELETE", "/v1/api-keys/no-such-key", alice, nil), http.StatusNotFound, "API key not found")
	wantError(t, s.Do("DELETE", "/v1/api-keys/"+spareID, "", nil), http.StatusUnauthorized, msgInvalidKey)
	// The refused attempts left the key working.
	obj(t, s.Do("GET", "/v1/api-keys/validate", spare, nil), http.StatusOK)

	wantMessage(t, s.Do("DELETE", "/v1/api-keys/"+spareID, alice, nil))
	wantError(t, s.Do("GET", "/v1/api-keys/validate", spare, nil), http.StatusUnauthorized, msgInvalidKey)
	wantError(t, s.Do("GET", "/v1/links", spare, nil), http.StatusUnauthorized, msgInvalidKey)
	// Listed as inactive.
	for _, k := range list(t, s.Do("GET", "/v1/api-keys", alice, nil), http.StatusOK) {
		if m := k.(map[string]any); str(m, "id") == spareID && m["is_active"] != false {
			t.Errorf("deactivated key listed active: %v", m)
		}
	}
	// Deactivating again is harmless.
	wantMessage(t, s.Do("DELETE", "/v1/api-keys/"+spareID, alice, nil))
	// The operator may deactivate anyone's key.
	wantMessage(t, s.Do("DELETE", "/v1/api-keys/"+roID, op, nil))
	wantError(t, s.Do("GET", "/v1/links", ro, nil), http.StatusUnauthorized, msgInvalidKey)
	// A key can deactivate itself.
	aliceID := idOf(alice)
	wantMessage(t, s.Do("DELETE", "/v1/api-keys/"+aliceID, alice, nil))
	wantError(t, s.Do("GET", "/v1/api-keys", alice, nil), http.StatusUnauthorized, msgInvalidKey)
}

func TestOperatorKey(t *testing.T) {
	t.Parallel()
	s := start(t)
	v := obj(t, s.Do("GET", "/v1/api-keys/validate", op, nil), http.StatusOK)
	if str(v, "user_id") != "admin" {
		t.Errorf("operator user %v, want admin", v["user_id"])
	}
	// The operator creates keys for any user.
	k := obj(t, s.Do("POST", "/v1/api-keys", op, map[string]any{"name": "for dave", "user_id": "dave", "access": "read_only"}), http.StatusCreated)
	if str(k, "user_id") != "dave" || k["access_read_only"] != true {
		t.Errorf("operator-made key: %v", k)
	}
}
