package api_test

import (
	"encoding/json"
	"github.com/linkd/linkd/cmd/linkd/app/apptest"
	"net/http"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"
)

// Spec 2.5, 3 and 4.5.

// linkFields are the keys every representation of a link carries.
var linkFields = []string{
	"id", "created_at", "updated_at", "project_id", "domain_id", "pixel_id", "original_url", "name", "description",
	"code", "short_url", "app", "app_logo", "android_link", "ios_link", "windows_link", "macos_link", "whatsapp_message",
	"metadata", "qr_code_options", "utm_name", "utm_source", "utm_medium", "utm_campaign", "utm_term", "utm_content",
	"utm_template_id", "referrer", "password", "password_description", "excluded_countries", "has_public_stat",
	"enable_conversion_tracking", "is_archived", "is_active", "expiration_date", "expiration_click_count", "clicks",
}

// fullLink is a create body with every optional field of spec 2.5 set.
func fullLink(projectID, domainID string) map[string]any {
	return map[string]any{
		"original_url":         "https://example.com/landing?x=1",
		"custom_code":          "Full_Link-1",
		"project_id":           projectID,
		"domain_id":            domainID,
		"pixel_id":             "px_123",
		"name":                 "Spring sale",
		"description":          "All the spring offers",
		"app":                  "Shop",
		"app_logo":             "https://cdn.example.com/logo.png",
		"android_link":         "shop://product/1",
		"ios_link":             "https://apps.example.com/ios/product/1",
		"windows_link":         "ms-windows-store://pdp/?productid=9NBLGGH4R32N",
		"macos_link":           "macappstore://apps.apple.com/app/id123",
		"whatsapp_message":     "Look at this!",
		"metadata":             map[string]any{"title": "Spring", "description": "Offers", "favicon": "https://example.com/f.ico", "social_image": "https://example.com/s.png"},
		"qr_code_options":      map[string]any{"size": 300, "color": "#112233", "background_color": "#FFFFFF", "logo": "https://example.com/l.png", "logo_size": 60, "error_correction_level": "Q"},
		"utm_name":             "spring",
		"utm_source":           "newsletter",
		"utm_medium":           "email",
		"utm_campaign":         "spring-2025",
		"utm_term":             "shoes",
		"utm_content":          "banner",
		"utm_template_id":      "tpl_1",
		"referrer":             "https://news.example.com/",
		"password":             "s3cret!",
		"password_description": "Ask the shop",
		"excluded_countries": []any{
			map[string]any{"code": "US", "label": "United States", "phone": "1", "suggested": false, "lang": "en", "continent": "NA"},
			map[string]any{"code": "DE", "label": "Germany", "phone": "49", "suggested": true, "lang": "de", "continent": "EU"},
		},
		"has_public_stat":            true,
		"enable_conversion_tracking": false,
		"expiration_date":            "2031-06-01T12:30:00Z",
		"expiration_click_count":     1000,
	}
}

// sameJSON reports whether two decoded JSON values are equal.
func sameJSON(a, b any) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	var x, y any
	_ = json.Unmarshal(ja, &x)
	_ = json.Unmarshal(jb, &y)
	return reflect.DeepEqual(x, y)
}

// checkLink compares a link's fields with the body that made it.
func checkLink(t *testing.T, what string, got, body map[string]any) {
	t.Helper()
	for _, k := range linkFields {
		if _, ok := got[k]; !ok {
			t.Errorf("%s lacks %q", what, k)
		}
	}
	for k, want := range body {
		switch k {
		case "custom_code":
			if str(got, "code") != want {
				t.Errorf("%s code %q, want %q", what, str(got, "code"), want)
			}
		case "workspace_id":
		case "expiration_date":
			if want == nil {
				if got[k] != nil {
					t.Errorf("%s expiration_date %v, want null", what, got[k])
				}
				continue
			}
			if !timestamp(t, k, got[k]).Equal(timestamp(t, k, want)) {
				t.Errorf("%s expiration_date %v, want %v", what, got[k], want)
			}
			if ws, ok := want.(string); ok && strings.HasSuffix(ws, ":00Z") && got[k] != ws {
				t.Errorf("%s expiration_date %q does not come back as sent (%q)", what, got[k], ws)
			}
		default:
			if !sameJSON(got[k], want) {
				t.Errorf("%s %s = %v, want %v", what, k, got[k], want)
			}
		}
	}
}

func TestLinkEveryFieldRoundTrips(t *testing.T) {
	t.Parallel()
	s := start(t)
	alice := s.NewKey("alice", "full", nil)
	proj := str(s.MustCreate("/v1/projects", alice, map[string]any{"name": "P"}), "id")
	dom := str(s.MustCreate("/v1/domains", alice, map[string]any{"domain": "go.example.com"}), "id")
	body := withRefs(t, s, alice, fullLink(proj, dom))

	created := obj(t, s.Do("POST", "/v1/links", alice, body), http.StatusCreated)
	checkLink(t, "created", created, body)
	id := str(created, "id")
	if created["is_archived"] != false || created["is_active"] != true || created["clicks"] != 0.0 {
		t.Errorf("initial state: archived %v active %v clicks %v", created["is_archived"], created["is_active"], created["clicks"])
	}
	if created["created_at"] != created["updated_at"] {
		t.Errorf("created_at %v != updated_at %v", created["created_at"], created["updated_at"])
	}
	if str(created, "short_url") != "http://go.example.com/Full_Link-1" {
		t.Errorf("short_url %q", str(created, "short_url"))
	}

	got := obj(t, s.Do("GET", "/v1/links/"+id, alice, nil), http.StatusOK)
	checkLink(t, "get", got, body)
	listed := envelope(t, s.Do("GET", "/v1/links", alice, nil))
	if len(listed.Items) != 1 {
		t.Fatalf("listed %d links", len(listed.Items))
	}
	checkLink(t, "listed", listed.Items[0].(map[string]any), body)

	// An update that sends the same values back changes nothing.
	upBody := map[string]any{}
	for k, v := range body {
		if k != "custom_code" && k != "domain_id" {
			upBody[k] = v
		}
	}
	upBody["code"] = "Full_Link-1"
	up := obj(t, s.Do("PUT", "/v1/links/"+id, alice, upBody), http.StatusOK)
	checkLink(t, "updated", up, body)

	// A minimal link has empty values, not missing keys.
	min := obj(t, s.Do("POST", "/v1/links", alice, map[string]any{"original_url": "https://min.example"}), http.StatusCreated)
	checkLink(t, "minimal", min, map[string]any{
		"project_id": nil, "domain_id": nil, "pixel_id": nil, "password": nil, "expiration_date": nil,
		"expiration_click_count": nil, "excluded_countries": []any{}, "has_public_stat": false, "name": "",
	})
}

func TestLinkURLSchemes(t *testing.T) {
	t.Parallel()
	s := start(t)
	alice := s.NewKey("alice", "full", nil)
	good := []string{
		"http://example.com", "https://example.com/a/b?c=d#e", "HTTPS://EXAMPLE.COM", "https://例え.jp/パス",
		"http://127.0.0.1:8080/x", "https://[::1]/", "mailto:someone@example.com", "mailto:a@b.c?subject=hi",
		"tel:+15551234567", "sms:+15551234567?body=hi", "whatsapp://send?text=hello", "tg://resolve?domain=channel",
		"skype:echo123?call",
	}
	for _, u := range good {
		l := obj(t, s.Do("POST", "/v1/links", alice, map[string]any{"original_url": u}), http.StatusCreated)
		if str(l, "original_url") != u {
			t.Errorf("original_url %q came back %q", u, str(l, "original_url"))
		}
	}
	bad := []any{
		"", "example.com", "www.example.com/path", "ftp://example.com/file", "javascript:alert(1)", "data:text/html,<b>x</b>",
		"file:///etc/passwd", "http://", "https://", "http:///path", "mailto:", "tel:", "https://exa mple.com",
		" https://example.com", "https://example.com\n", "vbscript:msgbox", "chrome://settings", "//example.com",
		"http//example.com", "https:example.com", "ws://example.com", "intent://scan/#Intent;scheme=zxing;end",
		"https://example.com:99999999/", strings.Repeat("https://e.com/", 1000),
		"http://.com", "http://a..b.com", "https://-a.com", "https://exa$mple.com",
	}
	for _, u := range bad {
		wantError(t, s.Do("POST", "/v1/links", alice, map[string]any{"original_url": u}), http.StatusBadRequest, msgInvalidURL)
	}
	wantError(t, s.Do("POST", "/v1/links", alice, map[string]any{}), http.StatusBadRequest, "")
	wantError(t, s.Do("POST", "/v1/links", alice, map[string]any{"original_url": 42}), http.StatusBadRequest, "")
	// The same rule applies to updates.
	id := str(newLink(s, alice, "https://ok.example"), "id")
	for _, u := range []string{"ftp://example.com", "javascript:alert(1)", "", "nota url"} {
		wantError(t, s.Do("PUT", "/v1/links/"+id, alice, map[string]any{"original_url": u}), http.StatusBadRequest, msgInvalidURL)
	}
	wantError(t, s.Do("PUT", "/v1/links/"+id, alice, `{"original_url": null}`), http.StatusBadRequest, msgInvalidURL)
	if l := obj(t, s.Do("GET", "/v1/links/"+id, alice, nil), http.StatusOK); str(l, "original_url") != "https://ok.example" {
		t.Errorf("a refused update changed the URL: %v", l["original_url"])
	}
	if n := len(envelope(t, s.Do("GET", "/v1/links?page_size=100", alice, nil)).Items); n != len(good)+1 {
		t.Errorf("%d links, want %d: refused creates left something", n, len(good)+1)
	}
	// Deep links may use an app's own scheme, but never one that runs code.
	obj(t, s.Do("POST", "/v1/links", alice, map[string]any{"original_url": "https://x.example", "ios_link": "fb://profile/1", "android_link": "intent://x#Intent;end"}), http.StatusCreated)
	for _, f := range []string{"ios_link", "android_link", "windows_link", "macos_link"} {
		wantError(t, s.Do("POST", "/v1/links", alice, map[string]any{"original_url": "https://x.example", f: "javascript:alert(1)"}), http.StatusBadRequest, "")
		wantError(t, s.Do("POST", "/v1/links", alice, map[string]any{"original_url": "https://x.example", f: "not a url"}), http.StatusBadRequest, "")
	}
}

var codePattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,50}$`)

func TestLinkCodes(t *testing.T) {
	t.Parallel()
	s := start(t)
	alice, bob := s.NewKey("alice", "full", nil), s.NewKey("bob", "full", nil)
	seen := map[string]bool{}
	for i := 0; i < 30; i++ {
		l := newLink(s, alice, q("https://gen%d.example", i))
		code := str(l, "code")
		if !codePattern.MatchString(code) || len(code) < 5 {
			t.Errorf("generated code %q", code)
		}
		if seen[code] {
			t.Errorf("generated code %q twice", code)
		}
		seen[code] = true
		if str(l, "short_url") != "http://"+s.Host+"/"+code {
			t.Errorf("short_url %q for code %q", str(l, "short_url"), code)
		}
	}

	createLink(s, alice, map[string]any{"original_url": "https://a.example", "custom_code": "promo"})
	// Unique per domain, across users and workspaces, case-sensitive.
	wantError(t, s.Do("POST", "/v1/links", alice, map[string]any{"original_url": "https://b.example", "custom_code": "promo"}), http.StatusConflict, msgCodeExists)
	wantError(t, s.Do("POST", "/v1/links", bob, map[string]any{"original_url": "https://b.example", "custom_code": "promo"}), http.StatusConflict, msgCodeExists)
	createLink(s, bob, map[string]any{"original_url": "https://b.example", "custom_code": "Promo"})
	// Limits: 1 to 50 letters, digits, - and _.
	createLink(s, alice, map[string]any{"original_url": "https://c.example", "custom_code": strings.Repeat("x", 50)})
	createLink(s, alice, map[string]any{"original_url": "https://c.example", "custom_code": "a"})
	createLink(s, alice, map[string]any{"original_url": "https://c.example", "custom_code": "A-b_9"})
	for _, bad := range []any{strings.Repeat("y", 51), "has space", "slash/code", "dot.code", "ümlaut", "percent%20", "q?x", 12} {
		wantError(t, s.Do("POST", "/v1/links", alice, map[string]any{"original_url": "https://d.example", "custom_code": bad}), http.StatusBadRequest, "")
	}
	// Paths the listener serves itself are reserved.
	for _, reserved := range []string{"healthz", "metrics", "openapi.json", "radar.js", "v1", "api", "Healthz"} {
		wantError(t, s.Do("POST", "/v1/links", alice, map[string]any{"original_url": "https://e.example", "custom_code": reserved}), http.StatusBadRequest, "")
	}

	// Changing a code: to a taken one is 409; the old one is freed.
	l := createLink(s, alice, map[string]any{"original_url": "https://f.example", "custom_code": "before"})
	wantError(t, s.Do("PUT", "/v1/links/"+str(l, "id"), alice, map[string]any{"code": "promo"}), http.StatusConflict, msgCodeExists)
	wantError(t, s.Do("PUT", "/v1/links/"+str(l, "id"), alice, map[string]any{"code": "bad code"}), http.StatusBadRequest, "")
	up := obj(t, s.Do("PUT", "/v1/links/"+str(l, "id"), alice, map[string]any{"code": "after"}), http.StatusOK)
	if str(up, "code") != "after" || !strings.HasSuffix(str(up, "short_url"), "/after") {
		t.Errorf("code change: %v %v", up["code"], up["short_url"])
	}
	wantError(t, s.Do("GET", "/v1/links/code/before", "", nil), http.StatusNotFound, msgLinkNotFound)
	obj(t, s.Do("GET", "/v1/links/code/after", "", nil), http.StatusOK)
	createLink(s, bob, map[string]any{"original_url": "https://g.example", "custom_code": "before"})
	// Deleting frees the code.
	wantMessage(t, s.Do("DELETE", "/v1/links/"+str(up, "id"), alice, nil))
	createLink(s, bob, map[string]any{"original_url": "https://h.example", "custom_code": "after"})
}

// updateCases change one field each (spec 4.5 PUT list).
var updateCases = []struct {
	field string
	value any
}{
	{"name", "New name"}, {"description", "New description"}, {"original_url", "https://changed.example/x"},
	{"code", "new-code"}, {"pixel_id", "px_9"}, {"app", "App2"}, {"app_logo", "https://cdn.example.com/2.png"},
	{"android_link", "https://play.example.com/2"}, {"ios_link", "app2://open"}, {"windows_link", "https://win.example.com/2"},
	{"macos_link", "https://mac.example.com/2"}, {"whatsapp_message", "Hi there"},
	{"metadata", map[string]any{"title": "T2", "image": "https://example.com/i.png"}},
	{"qr_code_options", map[string]any{"size": 512, "color": "#ABCDEF", "error_correction_level": "H"}},
	{"utm_name", "n2"}, {"utm_source", "s2"}, {"utm_medium", "m2"}, {"utm_campaign", "c2"}, {"utm_term", "t2"},
	{"utm_content", "k2"}, {"utm_template_id", "tpl_2"}, {"referrer", "https://ref2.example"}, {"password", "pw-2"},
	{"password_description", "Ask again"},
	{"excluded_countries", []any{map[string]any{"code": "FR", "label": "France", "phone": "33", "suggested": false, "lang": "fr", "continent": "EU"}}},
	{"has_public_stat", false}, {"enable_conversion_tracking", true}, {"is_archived", true},
	{"expiration_date", "2032-01-02T03:04:05Z"}, {"expiration_click_count", 7},
}

func TestLinkPartialUpdate(t *testing.T) {
	t.Parallel()
	clk := apptest.NewClock()
	s := start(t, apptest.WithClock(clk))
	alice := s.NewKey("alice", "full", nil)
	proj := str(s.MustCreate("/v1/projects", alice, map[string]any{"name": "P"}), "id")
	proj2 := str(s.MustCreate("/v1/projects", alice, map[string]any{"name": "P2"}), "id")
	cases := append(updateCases[:len(updateCases):len(updateCases)], struct {
		field string
		value any
	}{"project_id", proj2})
	tpl, px := linkRefs(t, s, alice)
	tpl2, px2 := linkRefs(t, s, alice)
	for i, c := range cases {
		switch c.field { // the template and pixel named must exist
		case "utm_template_id":
			c.value = tpl2
		case "pixel_id":
			c.value = px2
		}
		body := fullLink(proj, "")
		body["utm_template_id"], body["pixel_id"] = tpl, px
		delete(body, "domain_id")
		body["custom_code"] = q("upd-%d", i)
		before := createLink(s, alice, body)
		id := str(before, "id")
		clk.Advance(time.Second)
		after := obj(t, s.Do("PUT", "/v1/links/"+id, alice, map[string]any{c.field: c.value}), http.StatusOK)
		got := obj(t, s.Do("GET", "/v1/links/"+id, alice, nil), http.StatusOK)
		if !sameJSON(after, got) {
			t.Errorf("%s: PUT answer and GET differ:\n%v\n%v", c.field, after, got)
		}
		for _, k := range linkFields {
			changed := k == c.field || k == "updated_at" ||
				(c.field == "code" && k == "short_url") ||
				(c.field == "expiration_date" || c.field == "expiration_click_count") && k == "is_active"
			switch {
			case k == c.field && k == "expiration_date":
				if !timestamp(t, k, got[k]).Equal(timestamp(t, k, c.value)) {
					t.Errorf("%s: got %v", k, got[k])
				}
			case k == c.field:
				if !sameJSON(got[k], c.value) {
					t.Errorf("%s: got %v, want %v", k, got[k], c.value)
				}
			case !changed && !sameJSON(got[k], before[k]):
				t.Errorf("updating %s changed %s: %v -> %v", c.field, k, before[k], got[k])
			}
		}
		if !timestamp(t, "updated_at", got["updated_at"]).After(timestamp(t, "updated_at", before["updated_at"])) {
			t.Errorf("updating %s left updated_at at %v", c.field, got["updated_at"])
		}
		if got["created_at"] != before["created_at"] {
			t.Errorf("updating %s moved created_at", c.field)
		}
	}
}

func TestLinkUpdateClearsAndRefuses(t *testing.T) {
	t.Parallel()
	s := start(t)
	alice, bob := s.NewKey("alice", "full", nil), s.NewKey("bob", "full", nil)
	proj := str(s.MustCreate("/v1/projects", alice, map[string]any{"name": "P"}), "id")
	bobProj := str(s.MustCreate("/v1/projects", bob, map[string]any{"name": "B"}), "id")
	body := withRefs(t, s, alice, fullLink(proj, ""))
	delete(body, "domain_id")
	id := str(createLink(s, alice, body), "id")

	// null clears what may be empty.
	got := obj(t, s.Do("PUT", "/v1/links/"+id, alice, `{"project_id": null, "pixel_id": null, "expiration_date": null,
		"expiration_click_count": null, "password": null, "name": null, "metadata": null, "qr_code_options": null, "excluded_countries": []}`), http.StatusOK)
	for _, k := range []string{"project_id", "pixel_id", "expiration_date", "expiration_click_count", "password", "metadata", "qr_code_options"} {
		if got[k] != nil {
			t.Errorf("%s not cleared: %v", k, got[k])
		}
	}
	if str(got, "name") != "" || len(got["excluded_countries"].([]any)) != 0 {
		t.Errorf("name %v countries %v", got["name"], got["excluded_countries"])
	}
	if str(got, "description") != "All the spring offers" {
		t.Errorf("description changed: %v", got["description"])
	}

	for _, c := range []struct {
		name   string
		body   any
		status int
		detail string
	}{
		{"bool as string", map[string]any{"is_archived": "yes"}, 400, ""},
		{"bool null", `{"has_public_stat": null}`, 400, ""},
		{"count as string", map[string]any{"expiration_click_count": "7"}, 400, ""},
		{"count zero", map[string]any{"expiration_click_count": 0}, 400, ""},
		{"bad date", map[string]any{"expiration_date": "next week"}, 400, ""},
		{"countries need label and phone", map[string]any{"excluded_countries": []any{map[string]any{"code": "FR"}}}, 400, ""},
		{"bad country code", map[string]any{"excluded_countries": []any{map[string]any{"code": "France", "label": "F", "phone": "33"}}}, 400, ""},
		{"bad qr level", map[string]any{"qr_code_options": map[string]any{"error_correction_level": "Z"}}, 400, ""},
		{"bad qr colour", map[string]any{"qr_code_options": map[string]any{"color": "blue"}}, 400, ""},
		{"unknown project", map[string]any{"project_id": "nope"}, 404, msgProjNotFound},
		{"another user's project", map[string]any{"project_id": bobProj}, 403, msgDeniedWS},
		{"not an object", `["name"]`, 400, ""},
		{"malformed", `{"name": "x"`, 400, ""},
		{"empty body", ``, 400, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			wantError(t, s.Do("PUT", "/v1/links/"+id, alice, c.body), c.status, c.detail)
		})
	}
	// None of the refusals changed the link.
	if now := obj(t, s.Do("GET", "/v1/links/"+id, alice, nil), http.StatusOK); !sameJSON(now, got) {
		t.Errorf("a refused update changed the link:\n%v\n%v", got, now)
	}
	wantError(t, s.Do("PUT", "/v1/links/nope", alice, map[string]any{"name": "x"}), http.StatusNotFound, msgLinkNotFound)
	wantError(t, s.Do("DELETE", "/v1/links/nope", alice, nil), http.StatusNotFound, msgLinkNotFound)
	wantError(t, s.Do("GET", "/v1/links/nope", alice, nil), http.StatusNotFound, msgLinkNotFound)
}

func TestLinkArchive(t *testing.T) {
	t.Parallel()
	clk := apptest.NewClock()
	s := start(t, apptest.WithClock(clk))
	alice := s.NewKey("alice", "full", nil)
	l := newLink(s, alice, "https://arch.example")
	keep := newLink(s, alice, "https://keep.example")
	id := str(l, "id")
	clk.Advance(time.Second)
	a := obj(t, s.Do("PUT", "/v1/links/"+id, alice, map[string]any{"is_archived": true}), http.StatusOK)
	if a["is_archived"] != true || !timestamp(t, "updated_at", a["updated_at"]).After(timestamp(t, "updated_at", l["updated_at"])) {
		t.Errorf("archive: %v %v", a["is_archived"], a["updated_at"])
	}
	if got := ids(envelope(t, s.Do("GET", "/v1/links", alice, nil)).Items); len(got) != 1 || got[0] != str(keep, "id") {
		t.Errorf("default list shows %v, want only the unarchived link", got)
	}
	for _, v := range []string{"true", "1", "True"} {
		if got := ids(envelope(t, s.Do("GET", "/v1/links?archived="+v, alice, nil)).Items); len(got) != 1 || got[0] != id {
			t.Errorf("archived=%s shows %v", v, got)
		}
	}
	if got := ids(envelope(t, s.Do("GET", "/v1/links?archived=false", alice, nil)).Items); len(got) != 1 || got[0] != str(keep, "id") {
		t.Errorf("archived=false shows %v", got)
	}
	wantError(t, s.Do("GET", "/v1/links?archived=maybe", alice, nil), http.StatusBadRequest, "")
	// An archived link is still readable by id; archiving twice is harmless.
	obj(t, s.Do("GET", "/v1/links/"+id, alice, nil), http.StatusOK)
	obj(t, s.Do("PUT", "/v1/links/"+id, alice, map[string]any{"is_archived": true}), http.StatusOK)
	clk.Advance(time.Second)
	u := obj(t, s.Do("PUT", "/v1/links/"+id, alice, map[string]any{"is_archived": false, "name": "back"}), http.StatusOK)
	if u["is_archived"] != false || str(u, "name") != "back" || !timestamp(t, "updated_at", u["updated_at"]).After(timestamp(t, "updated_at", a["updated_at"])) {
		t.Errorf("unarchive: %v", u)
	}
	if n := len(envelope(t, s.Do("GET", "/v1/links", alice, nil)).Items); n != 2 {
		t.Errorf("%d links after unarchive", n)
	}
}

func TestLinkListFilters(t *testing.T) {
	t.Parallel()
	clk := apptest.NewClock()
	s := start(t, apptest.WithClock(clk))
	alice, bob := s.NewKey("alice", "full", nil), s.NewKey("bob", "full", nil)
	ws1, ws2 := workspace(s, alice, "One"), workspace(s, alice, "Two")
	bobWS := workspace(s, bob, "Bob")
	p1 := str(s.MustCreate("/v1/projects", alice, map[string]any{"name": "P1", "workspace_id": ws1}), "id")
	var all, inWS1, inP1 []string
	for i := 0; i < 6; i++ {
		body := map[string]any{"original_url": q("https://f%d.example", i), "workspace_id": ws1}
		if i%2 == 1 {
			body["workspace_id"] = ws2
		}
		if i == 2 || i == 4 {
			body["project_id"] = p1
		}
		id := str(createLink(s, alice, body), "id")
		all = append(all, id)
		if i%2 == 0 {
			inWS1 = append(inWS1, id)
		}
		if i == 2 || i == 4 {
			inP1 = append(inP1, id)
		}
		clk.Advance(time.Second)
	}
	newLink(s, bob, "https://bob.example")
	rev := func(in []string) []string {
		out := append([]string(nil), in...)
		for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
			out[i], out[j] = out[j], out[i]
		}
		return out
	}
	for _, c := range []struct {
		query string
		want  []string
	}{
		{"", rev(all)},
		{"?sort_order=desc", rev(all)},
		{"?sort_order=asc", all},
		{"?sort_order=ASC", all},
		{"?workspace_id=" + ws1, rev(inWS1)},
		{"?workspace_id=" + ws1 + "&sort_order=asc", inWS1},
		{"?project_id=" + p1, rev(inP1)},
		{"?project_id=" + p1 + "&workspace_id=" + ws2, nil},
		{"?project_id=nope", nil},
		{"?workspace_id=" + ws2 + "&archived=true", nil},
	} {
		got := ids(envelope(t, s.Do("GET", "/v1/links"+c.query, alice, nil)).Items)
		if !reflect.DeepEqual(got, c.want) && !(len(got) == 0 && len(c.want) == 0) {
			t.Errorf("GET /v1/links%s = %v, want %v", c.query, got, c.want)
		}
	}
	wantError(t, s.Do("GET", "/v1/links?sort_order=up", alice, nil), http.StatusBadRequest, "")
	wantError(t, s.Do("GET", "/v1/links?workspace_id=nope", alice, nil), http.StatusNotFound, msgWSNotFound)
	wantForbidden(t, s.Do("GET", "/v1/links?workspace_id="+bobWS, alice, nil))
	for _, bad := range []string{"page=0", "page=-1", "page=x", "page_size=0", "page_size=101", "page_size=x", "cursor=abc", "cursor=eyJ0IjoxfQ"} {
		wantError(t, s.Do("GET", "/v1/links?"+bad, alice, nil), http.StatusBadRequest, "")
	}
	p := envelope(t, s.Do("GET", "/v1/links?page_size=100", alice, nil))
	if p.PageSize != 100 || len(p.Items) != 6 {
		t.Errorf("page_size=100: %d items, size %d", len(p.Items), p.PageSize)
	}
}

func TestLinkOfAnotherUser(t *testing.T) {
	t.Parallel()
	s := start(t)
	alice, bob := s.NewKey("alice", "full", nil), s.NewKey("bob", "full", nil)
	l := createLink(s, alice, map[string]any{"original_url": "https://private.example", "name": "mine"})
	id := str(l, "id")
	// A resource not owned: "Insufficient permissions" (spec section 5) ...
	wantError(t, s.Do("GET", "/v1/links/"+id, bob, nil), http.StatusForbidden, msgInsufficient)
	wantError(t, s.Do("PUT", "/v1/links/"+id, bob, map[string]any{"name": "stolen"}), http.StatusForbidden, msgInsufficient)
	wantError(t, s.Do("PUT", "/v1/links/"+id, bob, map[string]any{"is_archived": true}), http.StatusForbidden, msgInsufficient)
	wantError(t, s.Do("DELETE", "/v1/links/"+id, bob, nil), http.StatusForbidden, msgInsufficient)
	wantError(t, s.Do("GET", "/v1/links/"+id+"/qr", bob, nil), http.StatusForbidden, msgInsufficient)
	// ... a workspace one is not in: "Access denied to this workspace".
	wantError(t, s.Do("POST", "/v1/links", bob, map[string]any{"original_url": "https://x.example", "workspace_id": str(l, "workspace_id")}), http.StatusForbidden, msgDeniedWS)
	if got := obj(t, s.Do("GET", "/v1/links/"+id, alice, nil), http.StatusOK); str(got, "name") != "mine" || got["is_archived"] != false {
		t.Errorf("bob changed alice's link: %v", got)
	}
	if n := len(envelope(t, s.Do("GET", "/v1/links", bob, nil)).Items); n != 0 {
		t.Errorf("bob lists %d links", n)
	}
	// Moving a link into a workspace one does not belong to is refused.
	bobWS := workspace(s, bob, "B")
	wantForbidden(t, s.Do("PUT", "/v1/links/"+id, alice, map[string]any{"workspace_id": bobWS}))
}

func TestLinkDelete(t *testing.T) {
	t.Parallel()
	s := start(t)
	alice := s.NewKey("alice", "full", nil)
	l := createLink(s, alice, map[string]any{"original_url": "https://del.example", "custom_code": "gone"})
	wantMessage(t, s.Do("DELETE", "/v1/links/"+str(l, "id"), alice, nil))
	wantError(t, s.Do("GET", "/v1/links/"+str(l, "id"), alice, nil), http.StatusNotFound, msgLinkNotFound)
	wantError(t, s.Do("DELETE", "/v1/links/"+str(l, "id"), alice, nil), http.StatusNotFound, msgLinkNotFound)
	wantError(t, s.Do("PUT", "/v1/links/"+str(l, "id"), alice, map[string]any{"name": "x"}), http.StatusNotFound, msgLinkNotFound)
	wantError(t, s.Do("GET", "/v1/links/code/gone", "", nil), http.StatusNotFound, msgLinkNotFound)
	if r := s.Do("GET", "/gone", "", nil); r.Status != http.StatusNotFound {
		t.Errorf("short URL of a deleted link: %d", r.Status)
	}
	if n := len(envelope(t, s.Do("GET", "/v1/links?archived=true", alice, nil)).Items) + len(envelope(t, s.Do("GET", "/v1/links", alice, nil)).Items); n != 0 {
		t.Errorf("deleted link listed")
	}
}

// GET /v1/links/code/{code} is public and counts a click per access.
func TestLinkPublicByCode(t *testing.T) {
	t.Parallel()
	s := start(t)
	alice := s.NewKey("alice", "full", nil)
	l := createLink(s, alice, map[string]any{"original_url": "https://pub.example", "custom_code": "pub", "name": "Public"})
	for i := 1; i <= 3; i++ {
		got := obj(t, s.Do("GET", "/v1/links/code/pub", "", nil), http.StatusOK)
		if str(got, "id") != str(l, "id") || got["clicks"] != float64(i) || str(got, "original_url") != "https://pub.example" {
			t.Errorf("access %d: %v", i, got)
		}
		if _, shown := got["password"]; shown {
			t.Errorf("public answer shows the password key")
		}
	}
	// Reads follow the accesses.
	if got := obj(t, s.Do("GET", "/v1/links/"+str(l, "id"), alice, nil), http.StatusOK); got["clicks"] != 3.0 {
		t.Errorf("clicks after 3 public accesses: %v", got["clicks"])
	}
	wantError(t, s.Do("GET", "/v1/links/code/nothing-here", "", nil), http.StatusNotFound, msgLinkNotFound)
	// A bad key does not matter on the public endpoint.
	obj(t, s.Do("GET", "/v1/links/code/pub", "svc_sk_wrong", nil), http.StatusOK)
	// Codes are case-sensitive.
	wantError(t, s.Do("GET", "/v1/links/code/PUB", "", nil), http.StatusNotFound, msgLinkNotFound)
}

func TestLinkPasswordAndExpiry(t *testing.T) {
	t.Parallel()
	s := start(t)
	alice := s.NewKey("alice", "full", nil)
	l := createLink(s, alice, map[string]any{"original_url": "https://pw.example", "custom_code": "pw", "password": "open sesame", "password_description": "Ask Ali"})
	if str(l, "password") != "open sesame" {
		t.Errorf("password not returned to the owner: %v", l["password"])
	}
	r := s.Do("GET", "/v1/links/code/pw", "", nil)
	wantError(t, r, http.StatusUnauthorized, msgPasswordReq)
	if str(r.JSON(t), "password_description") != "Ask Ali" {
		t.Errorf("password_description: %s", r.Body)
	}
	wantError(t, s.Do("GET", "/v1/links/code/pw", "", nil, "X-Link-Password", "wrong"), http.StatusUnauthorized, msgPasswordWrong)
	got := obj(t, s.Do("GET", "/v1/links/code/pw", "", nil, "X-Link-Password", "open sesame"), http.StatusOK)
	if _, shown := got["password"]; shown || got["clicks"] != 1.0 {
		t.Errorf("public answer: password shown %v, clicks %v", got["password"], got["clicks"])
	}
	// Clearing the password opens the link.
	obj(t, s.Do("PUT", "/v1/links/"+str(l, "id"), alice, map[string]any{"password": ""}), http.StatusOK)
	obj(t, s.Do("GET", "/v1/links/code/pw", "", nil), http.StatusOK)

	// Expiry by clicks: is_active turns false, the public read answers 410.
	c := createLink(s, alice, map[string]any{"original_url": "https://cnt.example", "custom_code": "twice", "expiration_click_count": 2})
	obj(t, s.Do("GET", "/v1/links/code/twice", "", nil), http.StatusOK)
	obj(t, s.Do("GET", "/v1/links/code/twice", "", nil), http.StatusOK)
	wantError(t, s.Do("GET", "/v1/links/code/twice", "", nil), http.StatusGone, msgLinkExpired)
	got = obj(t, s.Do("GET", "/v1/links/"+str(c, "id"), alice, nil), http.StatusOK)
	if got["is_active"] != false || got["clicks"] != 2.0 {
		t.Errorf("after the click limit: active %v clicks %v", got["is_active"], got["clicks"])
	}
	// Expiry by date.
	d := createLink(s, alice, map[string]any{"original_url": "https://old.example", "custom_code": "old", "expiration_date": "2020-01-01T00:00:00Z"})
	if d["is_active"] != false {
		t.Errorf("a link past its date is active")
	}
	wantError(t, s.Do("GET", "/v1/links/code/old", "", nil), http.StatusGone, msgLinkExpired)
	if got := obj(t, s.Do("GET", "/v1/links/"+str(d, "id"), alice, nil), http.StatusOK); got["clicks"] != 0.0 {
		t.Errorf("expired accesses counted: %v", got["clicks"])
	}
	// Moving the date ahead revives it.
	up := obj(t, s.Do("PUT", "/v1/links/"+str(d, "id"), alice, map[string]any{"expiration_date": time.Now().Add(time.Hour).UTC().Format(time.RFC3339)}), http.StatusOK)
	if up["is_active"] != true {
		t.Errorf("revived link inactive")
	}
}

// Plan-gated fields on the free plan: 403 with a message to upgrade.
func TestFreePlan(t *testing.T) {
	t.Parallel()
	s := start(t, freePlan)
	alice := s.NewKey("alice", "full", nil)
	gated := []struct {
		field string
		value any
	}{
		{"password", "pw"}, {"expiration_date", "2031-01-01T00:00:00Z"}, {"expiration_click_count", 5},
		{"utm_template_id", "tpl"}, {"pixel_id", "px"}, {"metadata", map[string]any{"title": "T"}},
	}
	for _, g := range gated {
		r := s.Do("POST", "/v1/links", alice, map[string]any{"original_url": "https://free.example", g.field: g.value})
		wantError(t, r, http.StatusForbidden, "")
		if d := strings.ToLower(r.Detail(t)); !strings.Contains(d, "upgrade") || !strings.Contains(d, "plan") {
			t.Errorf("%s refusal %q does not say to upgrade", g.field, r.Detail(t))
		}
	}
	if n := len(envelope(t, s.Do("GET", "/v1/links", alice, nil)).Items); n != 0 {
		t.Errorf("refused creates made %d links", n)
	}
	l := createLink(s, alice, map[string]any{"original_url": "https://free.example", "name": "plain", "metadata": map[string]any{}})
	if l["enable_conversion_tracking"] != false {
		t.Errorf("free plan default of enable_conversion_tracking: %v", l["enable_conversion_tracking"])
	}
	for _, g := range append(gated, struct {
		field string
		value any
	}{"original_url", "https://elsewhere.example"}) {
		r := s.Do("PUT", "/v1/links/"+str(l, "id"), alice, map[string]any{g.field: g.value})
		wantError(t, r, http.StatusForbidden, "")
		if !strings.Contains(strings.ToLower(r.Detail(t)), "upgrade") {
			t.Errorf("%s update refusal %q", g.field, r.Detail(t))
		}
	}
	// Ungated changes pass; sending the same URL is not a change.
	obj(t, s.Do("PUT", "/v1/links/"+str(l, "id"), alice, map[string]any{"name": "renamed", "original_url": "https://free.example", "utm_source": "x"}), http.StatusOK)
	obj(t, s.Do("PUT", "/v1/links/"+str(l, "id"), alice, `{"password": null, "pixel_id": null, "expiration_date": null}`), http.StatusOK)
	if got := obj(t, s.Do("GET", "/v1/links/"+str(l, "id"), alice, nil), http.StatusOK); str(got, "original_url") != "https://free.example" || str(got, "name") != "renamed" {
		t.Errorf("after updates: %v", got)
	}

	// The pro plan (the default) has everything and tracks conversions by default.
	pro := start(t)
	bob := pro.NewKey("bob", "full", nil)
	pl := createLink(pro, bob, withRefs(t, pro, bob, fullLink("", "")))
	if pl["enable_conversion_tracking"] != false {
		t.Errorf("explicit false not kept")
	}
	if d := newLink(pro, bob, "https://pro.example"); d["enable_conversion_tracking"] != true {
		t.Errorf("pro default of enable_conversion_tracking: %v", d["enable_conversion_tracking"])
	}
}

// The code alias: custom_code names the requested code on creation; code is
// accepted as well.
func TestLinkCreateCodeAlias(t *testing.T) {
	t.Parallel()
	s := start(t)
	alice := s.NewKey("alice", "full", nil)
	l := createLink(s, alice, map[string]any{"original_url": "https://alias.example", "code": "via-code"})
	if str(l, "code") != "via-code" {
		t.Errorf("code on create: %v", l["code"])
	}
	l = createLink(s, alice, map[string]any{"original_url": "https://alias.example", "code": "ignored", "custom_code": "wins"})
	if str(l, "code") != "wins" {
		t.Errorf("custom_code beside code: %v", l["code"])
	}
}
