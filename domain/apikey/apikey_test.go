package apikey_test

import (
	"strings"
	"testing"

	"github.com/linkd/linkd/domain"
	"github.com/linkd/linkd/domain/apikey"
	. "github.com/linkd/linkd/domain/domaintest"
)

func spec(access string, perms apikey.Permissions) apikey.Created {
	return apikey.Created{KeyID: "k1", UserID: "alice", Name: "ci", Kind: apikey.KindSecret, Access: access, Permissions: perms,
		Hash: "hash", Prefix: "svc_sk_abcde", At: T0}
}

func all(v string) apikey.Permissions {
	return apikey.Permissions{"domains": v, "links": v, "projects": v, "workspaces": v, "analytics": v}
}

func TestCreate(t *testing.T) {
	for _, c := range []struct {
		name   string
		access string
		given  apikey.Permissions
		want   apikey.Permissions
	}{
		{"full writes everything", apikey.AccessFull, nil, all(apikey.PermWrite)},
		{"full ignores given permissions", apikey.AccessFull, apikey.Permissions{"links": "none"}, all(apikey.PermWrite)},
		{"read only reads everything", apikey.AccessReadOnly, nil, all(apikey.PermRead)},
		{"limited fills none", apikey.AccessLimited, apikey.Permissions{"links": "write", "analytics": "read"},
			apikey.Permissions{"domains": "none", "links": "write", "projects": "none", "workspaces": "none", "analytics": "read"}},
		{"limited with nothing", apikey.AccessLimited, nil, all(apikey.PermNone)},
	} {
		t.Run(c.name, func(t *testing.T) {
			k, err := apikey.Create(spec(c.access, c.given))
			if err != nil {
				t.Fatal(err)
			}
			want := spec(c.access, c.want)
			Then(t, k, &want)
			if !k.Active || !k.Exists() {
				t.Errorf("a new key is inactive")
			}
		})
	}
	for _, c := range []struct {
		name   string
		change func(*apikey.Created)
		msg    string
	}{
		{"no name", func(c *apikey.Created) { c.Name = "" }, "Key name is required"},
		{"long name", func(c *apikey.Created) { c.Name = strings.Repeat("n", 256) }, "Key name is too long"},
		{"bad kind", func(c *apikey.Created) { c.Kind = "root" }, "kind must be secret or publishable"},
		{"bad access", func(c *apikey.Created) { c.Access = "admin" }, "access must be full, read_only or limited"},
		{"unknown resource", func(c *apikey.Created) {
			c.Access, c.Permissions = apikey.AccessLimited, apikey.Permissions{"users": "read"}
		}, ""},
		{"bad value", func(c *apikey.Created) {
			c.Access, c.Permissions = apikey.AccessLimited, apikey.Permissions{"links": "admin"}
		}, "permission values are read, write or none"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := spec(apikey.AccessFull, nil)
			c.change(&s)
			_, err := apikey.Create(s)
			ThenError(t, err, domain.KindInvalid, c.msg)
		})
	}
}

func TestDeactivate(t *testing.T) {
	s := spec(apikey.AccessFull, all(apikey.PermWrite))
	k, err := apikey.Load(Given(t, &s))
	if err != nil {
		t.Fatal(err)
	}
	if err := k.Deactivate("alice", At(1)); err != nil {
		t.Fatal(err)
	}
	Then(t, k, &apikey.Deactivated{KeyID: "k1", UserID: "alice", By: "alice", At: At(1)})
	if k.Active {
		t.Errorf("still active")
	}
	k.ClearPending()
	if err := k.Deactivate("alice", At(2)); err != nil {
		t.Fatal(err)
	}
	ThenNothing(t, k)
	none, _ := apikey.Load(nil)
	ThenError(t, none.Deactivate("alice", At(1)), domain.KindNotFound, "API key not found")
}
