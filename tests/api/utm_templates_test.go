package api_test

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/linkd/linkd/cmd/linkd/app/apptest"
)

// UTM templates and tracking pixels (issue 14, extensions of
// DECISIONS.md "Link fields with behaviour").

const (
	msgTplNotFound   = "UTM template not found"
	msgTplNameReq    = "UTM template name is required"
	msgPixelNotFound = "Pixel not found"
	msgPlanTemplates = "Your plan does not include UTM templates. Upgrade to the pro plan to use it."
	msgPlanPixels    = "Your plan does not include tracking pixels. Upgrade to the pro plan to use it."
)

var templateKeys = []string{"id", "workspace_id", "name", "utm_source", "utm_medium", "utm_campaign", "utm_term", "utm_content", "utm_name", "created_at", "updated_at"}

// location follows nothing: it returns the Location of a 302 from /{code}.
func location(t *testing.T, s *apptest.Server, code string, headers ...string) string {
	t.Helper()
	r := s.Do("GET", "/"+code, "", nil, headers...)
	if r.Status != http.StatusFound {
		t.Fatalf("GET /%s: %d, want 302: %s", code, r.Status, r.Body)
	}
	return r.Header.Get("Location")
}

// linkRefs creates a UTM template and a pixel in key's default workspace,
// for links to name.
func linkRefs(t *testing.T, s *apptest.Server, key string) (template, pixel string) {
	t.Helper()
	template = str(s.MustCreate("/v1/utm-templates", key, map[string]any{"name": "Template", "utm_source": "tpl"}), "id")
	pixel = str(s.MustCreate("/v1/pixels", key, map[string]any{"name": "Pixel", "type": "meta", "pixel_id": "123"}), "id")
	return template, pixel
}

// withRefs points a link body's utm_template_id and pixel_id at a real
// template and pixel of key's default workspace.
func withRefs(t *testing.T, s *apptest.Server, key string, body map[string]any) map[string]any {
	t.Helper()
	body["utm_template_id"], body["pixel_id"] = linkRefs(t, s, key)
	return body
}

func query(t *testing.T, raw string) url.Values {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u.Query()
}

func TestUTMTemplateCRUD(t *testing.T) {
	t.Parallel()
	s := start(t)
	alice := users(s, "alice")[0]
	workspace(s, alice, "Marketing") // the default workspace
	ws := workspace(s, alice, "Other")

	created := obj(t, s.Do("POST", "/v1/utm-templates", alice, map[string]any{
		"name": " Newsletter ", "workspace_id": ws, "utm_source": "news", "utm_medium": "email", "utm_campaign": "spring",
	}), http.StatusCreated)
	wantKeys(t, "template", created, templateKeys...)
	id := str(created, "id")
	if str(created, "name") != "Newsletter" || str(created, "workspace_id") != ws || str(created, "utm_source") != "news" ||
		str(created, "utm_medium") != "email" || str(created, "utm_campaign") != "spring" || str(created, "utm_term") != "" {
		t.Errorf("created: %v", created)
	}
	timestamp(t, "created_at", created["created_at"])

	got := obj(t, s.Do("GET", "/v1/utm-templates/"+id, alice, nil), http.StatusOK)
	if str(got, "name") != "Newsletter" || str(got, "utm_campaign") != "spring" {
		t.Errorf("get: %v", got)
	}
	// A second one in the default workspace; the list covers both, newest first.
	other := obj(t, s.Do("POST", "/v1/utm-templates", alice, map[string]any{"name": "Ads", "utm_source": "ads"}), http.StatusCreated)
	p := envelope(t, s.Do("GET", "/v1/utm-templates", alice, nil))
	if ids := ids(p.Items); len(ids) != 2 || ids[0] != str(other, "id") || ids[1] != id {
		t.Errorf("list: %v", ids)
	}
	p = envelope(t, s.Do("GET", "/v1/utm-templates?workspace_id="+ws+"&page_size=1", alice, nil))
	if ids := ids(p.Items); len(ids) != 1 || ids[0] != id || p.HasNext || p.PageSize != 1 {
		t.Errorf("list of one workspace: %v %+v", ids, p)
	}

	// Only the fields given change; null clears a value.
	upd := obj(t, s.Do("PUT", "/v1/utm-templates/"+id, alice, map[string]any{"name": "Weekly", "utm_medium": nil, "utm_term": "shoes"}), http.StatusOK)
	wantKeys(t, "updated template", upd, templateKeys...)
	if str(upd, "name") != "Weekly" || str(upd, "utm_source") != "news" || str(upd, "utm_medium") != "" || str(upd, "utm_term") != "shoes" || str(upd, "utm_campaign") != "spring" {
		t.Errorf("updated: %v", upd)
	}

	wantMessage(t, s.Do("DELETE", "/v1/utm-templates/"+id, alice, nil))
	wantError(t, s.Do("GET", "/v1/utm-templates/"+id, alice, nil), http.StatusNotFound, msgTplNotFound)
	wantError(t, s.Do("PUT", "/v1/utm-templates/"+id, alice, map[string]any{"name": "x"}), http.StatusNotFound, msgTplNotFound)
	wantError(t, s.Do("DELETE", "/v1/utm-templates/"+id, alice, nil), http.StatusNotFound, msgTplNotFound)
	if ids := ids(envelope(t, s.Do("GET", "/v1/utm-templates", alice, nil)).Items); len(ids) != 1 {
		t.Errorf("after delete: %v", ids)
	}
}

func TestUTMTemplateRefusals(t *testing.T) {
	t.Parallel()
	s := start(t)
	k := users(s, "alice", "bob", "carol")
	alice, bob, carol := k[0], k[1], k[2]
	ws := workspace(s, alice, "Team")
	addMember(t, s, alice, ws, "carol", "member")
	tpl := str(s.MustCreate("/v1/utm-templates", alice, map[string]any{"name": "T", "workspace_id": ws}), "id")

	for _, c := range []struct {
		name   string
		body   any
		detail string
	}{
		{"no name", map[string]any{"utm_source": "x"}, msgTplNameReq},
		{"blank name", map[string]any{"name": "  "}, msgTplNameReq},
		{"long value", map[string]any{"name": "x", "utm_campaign": strings.Repeat("c", 600)}, "utm_campaign is too long (at most 512 bytes)"},
		{"wrong type", map[string]any{"name": 5}, ""},
		{"not JSON", "{", ""},
	} {
		wantError(t, s.Do("POST", "/v1/utm-templates", alice, c.body), http.StatusBadRequest, c.detail)
	}
	wantError(t, s.Do("PUT", "/v1/utm-templates/"+tpl, alice, map[string]any{"name": nil}), http.StatusBadRequest, msgTplNameReq)

	wantError(t, s.Do("GET", "/v1/utm-templates/no-such-id", alice, nil), http.StatusNotFound, msgTplNotFound)
	wantError(t, s.Do("GET", "/v1/utm-templates", "", nil), http.StatusUnauthorized, msgInvalidKey)
	// Another user's template: 403, whatever the operation.
	wantForbidden(t, s.Do("GET", "/v1/utm-templates/"+tpl, bob, nil), msgInsufficient)
	wantForbidden(t, s.Do("PUT", "/v1/utm-templates/"+tpl, bob, map[string]any{"name": "x"}), msgInsufficient)
	wantForbidden(t, s.Do("DELETE", "/v1/utm-templates/"+tpl, bob, nil), msgInsufficient)
	wantForbidden(t, s.Do("POST", "/v1/utm-templates", bob, map[string]any{"name": "x", "workspace_id": ws}), msgDeniedWS)
	wantForbidden(t, s.Do("GET", "/v1/utm-templates?workspace_id="+ws, bob, nil), msgDeniedWS)
	// Members read and use templates; admins manage them.
	obj(t, s.Do("GET", "/v1/utm-templates/"+tpl, carol, nil), http.StatusOK)
	wantForbidden(t, s.Do("POST", "/v1/utm-templates", carol, map[string]any{"name": "x", "workspace_id": ws}), msgInsufficient)
	wantForbidden(t, s.Do("PUT", "/v1/utm-templates/"+tpl, carol, map[string]any{"name": "x"}), msgInsufficient)
	wantForbidden(t, s.Do("DELETE", "/v1/utm-templates/"+tpl, carol, nil), msgInsufficient)
	// A read-only key reads, and writes nothing.
	ro := s.NewKey("alice", "read_only", nil)
	obj(t, s.Do("GET", "/v1/utm-templates/"+tpl, ro, nil), http.StatusOK)
	wantError(t, s.Do("POST", "/v1/utm-templates", ro, map[string]any{"name": "x"}), http.StatusForbidden, msgInsufficient)
}

func TestUTMTemplatesArePlanGated(t *testing.T) {
	t.Parallel()
	s := start(t, freePlan)
	alice := users(s, "alice")[0]
	wantError(t, s.Do("POST", "/v1/utm-templates", alice, map[string]any{"name": "x", "utm_source": "s"}), http.StatusForbidden, msgPlanTemplates)
	wantError(t, s.Do("POST", "/v1/pixels", alice, map[string]any{"name": "x", "type": "meta", "pixel_id": "1"}), http.StatusForbidden, msgPlanPixels)
	if p := envelope(t, s.Do("GET", "/v1/utm-templates", alice, nil)); len(p.Items) != 0 {
		t.Errorf("free list: %v", p.Items)
	}
	if p := envelope(t, s.Do("GET", "/v1/pixels", alice, nil)); len(p.Items) != 0 {
		t.Errorf("free list: %v", p.Items)
	}
}

// A link naming a template gets, at redirect time, the template's value of
// every utm_* it does not set; a change to the template shows at the next
// click; a deleted template leaves the link working without it.
func TestUTMTemplateAtRedirect(t *testing.T) {
	t.Parallel()
	s := start(t)
	k := users(s, "alice", "bob")
	alice, bob := k[0], k[1]
	tpl := str(s.MustCreate("/v1/utm-templates", alice, map[string]any{
		"name": "News", "utm_source": "news", "utm_medium": "email", "utm_campaign": "spring", "utm_name": "n",
	}), "id")
	l := createLink(s, alice, map[string]any{"original_url": "https://shop.example/p?ref=1", "utm_template_id": tpl, "utm_source": "own",
		"enable_conversion_tracking": false})
	if str(l, "utm_template_id") != tpl || str(l, "utm_source") != "own" || str(l, "utm_medium") != "" {
		t.Errorf("link echoes %v", l)
	}
	plain := createLink(s, alice, map[string]any{"original_url": "https://shop.example/plain", "enable_conversion_tracking": false})
	code := str(l, "code")

	got := location(t, s, code)
	if want := "https://shop.example/p?ref=1&utm_source=own&utm_medium=email&utm_campaign=spring&utm_name=n"; got != want {
		t.Errorf("Location %s, want %s", got, want)
	}
	if got := location(t, s, str(plain, "code")); got != "https://shop.example/plain" {
		t.Errorf("a link without template: %s", got)
	}

	obj(t, s.Do("PUT", "/v1/utm-templates/"+tpl, alice, map[string]any{"utm_campaign": "summer", "utm_medium": nil, "utm_term": "t"}), http.StatusOK)
	if q := query(t, location(t, s, code)); q.Get("utm_campaign") != "summer" || q.Has("utm_medium") || q.Get("utm_term") != "t" || q.Get("utm_source") != "own" {
		t.Errorf("after the template changed: %v", q)
	}
	// The link's own values win, also when set later.
	obj(t, s.Do("PUT", "/v1/links/"+str(l, "id"), alice, map[string]any{"utm_campaign": "mine"}), http.StatusOK)
	if q := query(t, location(t, s, code)); q.Get("utm_campaign") != "mine" || q.Get("utm_term") != "t" {
		t.Errorf("after the link changed: %v", q)
	}

	wantMessage(t, s.Do("DELETE", "/v1/utm-templates/"+tpl, alice, nil))
	if got := location(t, s, code); got != "https://shop.example/p?ref=1&utm_source=own&utm_campaign=mine" {
		t.Errorf("after the template was deleted: %s", got)
	}
	read := obj(t, s.Do("GET", "/v1/links/"+str(l, "id"), alice, nil), http.StatusOK)
	if str(read, "utm_template_id") != tpl {
		t.Errorf("the link's utm_template_id became %v", read["utm_template_id"])
	}
	// The link sent back as read is accepted; a new dangling id is not.
	obj(t, s.Do("PUT", "/v1/links/"+str(l, "id"), alice, map[string]any{"utm_template_id": tpl, "name": "x"}), http.StatusOK)
	wantError(t, s.Do("PUT", "/v1/links/"+str(plain, "id"), alice, map[string]any{"utm_template_id": tpl}), http.StatusNotFound, msgTplNotFound)

	// Unknown and foreign templates are refused at create and update.
	bobs := str(s.MustCreate("/v1/utm-templates", bob, map[string]any{"name": "Bob's", "utm_source": "bob"}), "id")
	wantError(t, s.Do("POST", "/v1/links", alice, map[string]any{"original_url": "https://x.example", "utm_template_id": "nope"}), http.StatusNotFound, msgTplNotFound)
	wantError(t, s.Do("POST", "/v1/links", alice, map[string]any{"original_url": "https://x.example", "utm_template_id": bobs}), http.StatusForbidden, msgDeniedWS)
	wantError(t, s.Do("PUT", "/v1/links/"+str(plain, "id"), alice, map[string]any{"utm_template_id": "nope"}), http.StatusNotFound, msgTplNotFound)
	wantError(t, s.Do("PUT", "/v1/links/"+str(plain, "id"), alice, map[string]any{"utm_template_id": bobs}), http.StatusForbidden, msgDeniedWS)
	// Clearing it is always possible.
	cleared := obj(t, s.Do("PUT", "/v1/links/"+str(l, "id"), alice, map[string]any{"utm_template_id": ""}), http.StatusOK)
	if str(cleared, "utm_template_id") != "" {
		t.Errorf("cleared: %v", cleared["utm_template_id"])
	}
}

// A template or pixel named by the path has its own rate-limit count; the
// collections count with the caller's links.
func TestUTMTemplateAndPixelRateLimits(t *testing.T) {
	t.Parallel()
	s := start(t)
	alice := users(s, "alice")[0]
	tpl, px := linkRefs(t, s, alice)
	remaining := func(path string) int {
		t.Helper()
		r := s.Do("GET", path, alice, nil)
		rateHeaders(t, path, r)
		n, err := strconv.Atoi(r.Header.Get("X-RateLimit-Remaining"))
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	for _, path := range []string{"/v1/utm-templates/" + tpl, "/v1/pixels/" + px} {
		before := remaining("/v1/links")
		first := remaining(path)
		if second := remaining(path); second != first-1 {
			t.Errorf("%s: remaining %d then %d", path, first, second)
		}
		if after := remaining("/v1/links"); after != before-1 {
			t.Errorf("%s counts with the collection: %d then %d", path, before, after)
		}
	}
	a, b := remaining("/v1/utm-templates"), remaining("/v1/pixels")
	if c := remaining("/v1/links"); b != a-1 || c != b-1 {
		t.Errorf("collections: %d %d %d, want one count", a, b, c)
	}
}

// Templates and pixels go with their workspace.
func TestUTMTemplatesAndPixelsGoWithTheirWorkspace(t *testing.T) {
	t.Parallel()
	s := start(t)
	alice := users(s, "alice")[0]
	workspace(s, alice, "Main")
	ws := workspace(s, alice, "Campaign")
	tpl := str(s.MustCreate("/v1/utm-templates", alice, map[string]any{"name": "T", "workspace_id": ws}), "id")
	px := str(s.MustCreate("/v1/pixels", alice, map[string]any{"name": "P", "type": "tiktok", "pixel_id": "C4ABC", "workspace_id": ws}), "id")
	wantMessage(t, s.Do("DELETE", "/v1/workspaces/"+ws, alice, nil))
	wantError(t, s.Do("GET", "/v1/utm-templates/"+tpl, alice, nil), http.StatusNotFound, msgTplNotFound)
	wantError(t, s.Do("PUT", "/v1/utm-templates/"+tpl, alice, map[string]any{"name": "x"}), http.StatusNotFound, msgTplNotFound)
	wantError(t, s.Do("DELETE", "/v1/pixels/"+px, alice, nil), http.StatusNotFound, msgPixelNotFound)
	wantError(t, s.Do("GET", "/v1/pixels/"+px, alice, nil), http.StatusNotFound, msgPixelNotFound)
	if p := envelope(t, s.Do("GET", "/v1/utm-templates", alice, nil)); len(p.Items) != 0 {
		t.Errorf("templates of a deleted workspace listed: %v", ids(p.Items))
	}
	if p := envelope(t, s.Do("GET", "/v1/pixels", alice, nil)); len(p.Items) != 0 {
		t.Errorf("pixels of a deleted workspace listed: %v", ids(p.Items))
	}
}
