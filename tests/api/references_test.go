package api_test

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/linkd/linkd/cmd/linkd/app/apptest"
)

// References that stop existing (docs/decisions.md, "References that stop
// existing"): a key bound to a project acts for it only while its user is
// a member of the project's workspace and the project exists. Each row
// ends the reference one way; each column presents the key one way; every
// cell must answer "Invalid API key" at once, in the interface's shape,
// while the workspace admin's own keys keep working.

type projectKeys struct {
	s        *apptest.Server
	alice    string // admin of the workspace
	bob      string // member: the keys below are his
	ws, proj string
	read     string // bob's read-only key bound to the project
	readID   string
	pub      string // bob's publishable key bound to the project
	pubID    string
	own      string // alice's read-only key bound to the project
	day      string
}

func newProjectKeys(t *testing.T) *projectKeys {
	t.Helper()
	s := start(t)
	k := &projectKeys{s: s, day: time.Now().UTC().Format(time.DateOnly)}
	k.alice, k.bob = s.NewKey("alice", "full", nil), s.NewKey("bob", "full", nil)
	k.ws = workspace(s, k.alice, "Shop")
	addMember(t, s, k.alice, k.ws, "bob", "member")
	k.proj = str(s.MustCreate("/v1/projects", k.alice, map[string]any{"name": "Site", "workspace_id": k.ws}), "id")
	read := s.MustCreate("/v1/api-keys", k.bob, map[string]any{"name": "reports", "access": "read_only", "project_id": k.proj})
	pub := s.MustCreate("/v1/api-keys", k.bob, map[string]any{"name": "tracker", "kind": "publishable", "project_id": k.proj,
		"allowed_hostnames": []string{"shop.example"}})
	k.read, k.readID, k.pub, k.pubID = str(read, "key"), str(read, "id"), str(pub, "key"), str(pub, "id")
	k.own = str(s.MustCreate("/v1/api-keys", k.alice, map[string]any{"name": "mine", "access": "read_only", "project_id": k.proj}), "key")
	return k
}

func (k *projectKeys) radarRead(key string) apptest.Response {
	return k.s.Do("GET", "/api/v1/radar/people?start="+k.day+"&end="+k.day, key, nil)
}

func (k *projectKeys) personDetails(key string) apptest.Response {
	return k.s.Do("GET", "/api/v1/radar/people/details?visitorId=v1&start="+k.day+"&end="+k.day, key, nil)
}

func (k *projectKeys) collect(pub string) apptest.Response {
	b, _ := json.Marshal(map[string]any{"type": "pageview", "visitorId": "v1", "url": "https://shop.example/", "key": pub})
	return k.s.Do("POST", "/api/v1/radar/collect", "", string(b), "Content-Type", "text/plain;charset=UTF-8",
		"Origin", "https://shop.example", "User-Agent", chromeUA)
}

// wantKeyError checks an {"error": "Invalid API key"} answer of the Radar
// and conversion interfaces.
func wantKeyError(t *testing.T, what string, r apptest.Response) {
	t.Helper()
	if r.Status != http.StatusUnauthorized {
		t.Errorf("%s: status %d, want 401: %s", what, r.Status, r.Body)
		return
	}
	var body map[string]any
	if err := json.Unmarshal(r.Body, &body); err != nil || body["error"] != msgInvalidKey {
		t.Errorf("%s: body %s, want {\"error\": %q}", what, r.Body, msgInvalidKey)
	}
}

func TestProjectKeysEndWithTheirReference(t *testing.T) {
	t.Parallel()
	ends := map[string]func(t *testing.T, k *projectKeys){
		"member removed": func(t *testing.T, k *projectKeys) {
			wantMessage(t, k.s.Do("DELETE", "/v1/workspaces/"+k.ws+"/members/bob", k.alice, nil))
		},
		"project deleted": func(t *testing.T, k *projectKeys) {
			wantMessage(t, k.s.Do("DELETE", "/v1/projects/"+k.proj, k.alice, nil))
		},
		"workspace deleted": func(t *testing.T, k *projectKeys) {
			wantMessage(t, k.s.Do("DELETE", "/v1/workspaces/"+k.ws, k.alice, nil))
		},
	}
	for name, end := range ends {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			k := newProjectKeys(t)
			// Before: every presentation works.
			if r := k.collect(k.pub); r.Status != http.StatusAccepted {
				t.Fatalf("collect before: %d %s", r.Status, r.Body)
			}
			for what, r := range map[string]apptest.Response{
				"people": k.radarRead(k.read), "details": k.personDetails(k.read),
				"validate": k.s.Do("GET", "/v1/api-keys/validate", k.read, nil),
			} {
				if r.Status != http.StatusOK {
					t.Fatalf("%s before: %d %s", what, r.Status, r.Body)
				}
			}
			end(t, k)
			// After, at once: every presentation of bob's keys is refused.
			wantKeyError(t, "people", k.radarRead(k.read))
			wantKeyError(t, "people details (names and emails)", k.personDetails(k.read))
			wantKeyError(t, "collect", k.collect(k.pub))
			wantError(t, k.s.Do("GET", "/v1/api-keys/validate", k.read, nil), http.StatusUnauthorized, msgInvalidKey)
			wantError(t, k.s.Do("GET", "/v1/api-keys/validate", k.pub, nil), http.StatusUnauthorized, msgInvalidKey)
			// Bob's own unbound key and alice's keys are untouched by a
			// member's removal.
			if name == "member removed" {
				if r := k.radarRead(k.own); r.Status != http.StatusOK {
					t.Errorf("alice's project key after bob left: %d %s", r.Status, r.Body)
				}
				if r := k.s.Do("GET", "/v1/api-keys/validate", k.bob, nil); r.Status != http.StatusOK {
					t.Errorf("bob's unbound key after he left: %d %s", r.Status, r.Body)
				}
			} else {
				wantKeyError(t, "alice's key of the gone project", k.radarRead(k.own))
			}
			// Nothing was collected after the end: the visitor collected
			// before is all there is (asked with a key that still works,
			// where one does).
			if name == "member removed" {
				people := obj(t, k.radarRead(k.own), http.StatusOK)
				if n := len(people["data"].([]any)); n != 1 {
					t.Errorf("people after the refused collect: %d, want 1", n)
				}
			}
		})
	}
}

// A member's keys bound to a project are not the member's alone: a
// workspace admin may deactivate them, before or after the member left;
// another member, or an admin of another workspace, may not.
func TestAdminDeactivatesProjectKeysOfTheWorkspace(t *testing.T) {
	t.Parallel()
	k := newProjectKeys(t)
	carol, dave := k.s.NewKey("carol", "full", nil), k.s.NewKey("dave", "full", nil)
	addMember(t, k.s, k.alice, k.ws, "carol", "member")
	other := workspace(k.s, dave, "Elsewhere")
	addMember(t, k.s, dave, other, "bob", "admin")
	wantForbidden(t, k.s.Do("DELETE", "/v1/api-keys/"+k.readID, carol, nil), msgInsufficient)
	wantForbidden(t, k.s.Do("DELETE", "/v1/api-keys/"+k.readID, dave, nil), msgInsufficient)
	if r := k.radarRead(k.read); r.Status != http.StatusOK {
		t.Fatalf("bob's key after refused deactivations: %d %s", r.Status, r.Body)
	}
	wantMessage(t, k.s.Do("DELETE", "/v1/api-keys/"+k.readID, k.alice, nil))
	wantKeyError(t, "deactivated by the admin", k.radarRead(k.read))

	wantMessage(t, k.s.Do("DELETE", "/v1/workspaces/"+k.ws+"/members/bob", k.alice, nil))
	wantMessage(t, k.s.Do("DELETE", "/v1/api-keys/"+k.pubID, k.alice, nil))
	keys := list(t, k.s.Do("GET", "/v1/api-keys", k.bob, nil), http.StatusOK)
	for _, it := range keys {
		m := it.(map[string]any)
		if (m["id"] == k.readID || m["id"] == k.pubID) && m["is_active"] != false {
			t.Errorf("bob's key %v still active after the admin deactivated it", m["id"])
		}
	}
}

// A publishable key validates as what it can do under /v1: nothing.
func TestPublishableKeyValidatesAsNone(t *testing.T) {
	t.Parallel()
	k := newProjectKeys(t)
	v := obj(t, k.s.Do("GET", "/v1/api-keys/validate", k.pub, nil), http.StatusOK)
	perms, _ := v["permissions"].(map[string]any)
	for _, res := range []string{"domains", "links", "projects", "workspaces", "analytics"} {
		if perms[res] != "none" {
			t.Errorf("publishable key: %s is %v, want none (%v)", res, perms[res], v)
		}
	}
	if v["access"] == "full" || v["kind"] != "publishable" {
		t.Errorf("publishable key validates as access %v kind %v", v["access"], v["kind"])
	}
	if r := k.s.Do("GET", "/v1/links", k.pub, nil); r.Status != http.StatusForbidden {
		t.Errorf("publishable key on /v1/links: %d", r.Status)
	}
	full := obj(t, k.s.Do("GET", "/v1/api-keys/validate", k.alice, nil), http.StatusOK)
	if full["permissions"].(map[string]any)["links"] != "write" || full["access"] != "full" {
		t.Errorf("a full key validates as %v", full)
	}
}

// What a deleted workspace owned goes with it: its projects, domains, UTM
// templates, pixels and links answer 404 to its former admin,
// and a former member's keys bound to it are invalid (above).
func TestWorkspaceDeletionEndsWhatItOwned(t *testing.T) {
	t.Parallel()
	k := newProjectKeys(t)
	s := k.s
	tpl := str(s.MustCreate("/v1/utm-templates", k.alice, map[string]any{"name": "News", "utm_source": "n", "workspace_id": k.ws}), "id")
	px := str(s.MustCreate("/v1/pixels", k.alice, map[string]any{"name": "Meta", "type": "meta", "pixel_id": "1234567890123456", "workspace_id": k.ws}), "id")
	dom := str(s.MustCreate("/v1/domains", k.alice, map[string]any{"domain": "go.shop.example", "workspace_id": k.ws}), "id")
	ln := str(createLink(s, k.alice, map[string]any{"original_url": "https://shop.example/", "workspace_id": k.ws, "enable_conversion_tracking": true}), "id")
	wantMessage(t, s.Do("DELETE", "/v1/workspaces/"+k.ws, k.alice, nil))
	for what, path := range map[string]string{
		"project": "/v1/projects/" + k.proj, "UTM template": "/v1/utm-templates/" + tpl, "pixel": "/v1/pixels/" + px,
		"domain": "/v1/domains/" + dom, "link": "/v1/links/" + ln,
	} {
		if r := s.Do("GET", path, k.alice, nil); r.Status != http.StatusNotFound {
			t.Errorf("%s of the deleted workspace: %d %s, want 404", what, r.Status, r.Body)
		}
	}
}
