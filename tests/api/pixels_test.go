package api_test

import (
	"net/http"
	"strings"
	"testing"
)

var pixelKeys = []string{"id", "workspace_id", "name", "type", "pixel_id", "created_at", "updated_at"}

const browserAccept = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"

func TestPixelCRUDAndRefusals(t *testing.T) {
	t.Parallel()
	s := start(t)
	k := users(s, "alice", "bob", "carol")
	alice, bob, carol := k[0], k[1], k[2]
	ws := workspace(s, alice, "Ads")
	addMember(t, s, alice, ws, "carol", "member")

	created := obj(t, s.Do("POST", "/v1/pixels", alice, map[string]any{"name": "Retargeting", "type": "Meta", "pixel_id": "1234567890123456", "workspace_id": ws}), http.StatusCreated)
	wantKeys(t, "pixel", created, pixelKeys...)
	id := str(created, "id")
	if str(created, "type") != "meta" || str(created, "pixel_id") != "1234567890123456" || str(created, "workspace_id") != ws {
		t.Errorf("created: %v", created)
	}
	for _, typ := range []string{"google", "linkedin", "tiktok", "x"} {
		s.MustCreate("/v1/pixels", alice, map[string]any{"name": typ, "type": typ, "pixel_id": "G-ABC123"})
	}
	p := envelope(t, s.Do("GET", "/v1/pixels?page_size=2", alice, nil))
	if len(p.Items) != 2 || !p.HasNext {
		t.Errorf("first page: %+v", p)
	}
	all := envelope(t, s.Do("GET", "/v1/pixels?page_size=100", alice, nil))
	if len(all.Items) != 5 || ids(all.Items)[4] != id {
		t.Errorf("all: %v", ids(all.Items))
	}
	upd := obj(t, s.Do("PUT", "/v1/pixels/"+id, alice, map[string]any{"type": "google", "pixel_id": "G-XYZ"}), http.StatusOK)
	if str(upd, "type") != "google" || str(upd, "pixel_id") != "G-XYZ" || str(upd, "name") != "Retargeting" {
		t.Errorf("updated: %v", upd)
	}
	if got := obj(t, s.Do("GET", "/v1/pixels/"+id, carol, nil), http.StatusOK); str(got, "pixel_id") != "G-XYZ" {
		t.Errorf("get: %v", got)
	}

	for _, c := range []struct {
		body   map[string]any
		detail string
	}{
		{map[string]any{"type": "meta", "pixel_id": "1"}, "Pixel name is required"},
		{map[string]any{"name": "x", "pixel_id": "1"}, "Pixel type is required (one of meta, google, linkedin, tiktok, x)"},
		{map[string]any{"name": "x", "type": "snapchat", "pixel_id": "1"}, "Invalid pixel type. Use one of meta, google, linkedin, tiktok, x"},
		{map[string]any{"name": "x", "type": "meta"}, "pixel_id is required"},
		{map[string]any{"name": "x", "type": "meta", "pixel_id": `1");alert(1)//`}, ""},
	} {
		wantError(t, s.Do("POST", "/v1/pixels", alice, c.body), http.StatusBadRequest, c.detail)
	}
	wantError(t, s.Do("PUT", "/v1/pixels/"+id, alice, map[string]any{"type": "myspace"}), http.StatusBadRequest, "")
	wantError(t, s.Do("GET", "/v1/pixels/nope", alice, nil), http.StatusNotFound, msgPixelNotFound)
	wantForbidden(t, s.Do("GET", "/v1/pixels/"+id, bob, nil), msgInsufficient)
	wantForbidden(t, s.Do("PUT", "/v1/pixels/"+id, bob, map[string]any{"name": "x"}), msgInsufficient)
	wantForbidden(t, s.Do("DELETE", "/v1/pixels/"+id, bob, nil), msgInsufficient)
	wantForbidden(t, s.Do("POST", "/v1/pixels", bob, map[string]any{"name": "x", "type": "x", "pixel_id": "o1", "workspace_id": ws}), msgDeniedWS)
	wantForbidden(t, s.Do("PUT", "/v1/pixels/"+id, carol, map[string]any{"name": "x"}), msgInsufficient)
	wantForbidden(t, s.Do("DELETE", "/v1/pixels/"+id, carol, nil), msgInsufficient)

	wantMessage(t, s.Do("DELETE", "/v1/pixels/"+id, alice, nil))
	wantError(t, s.Do("GET", "/v1/pixels/"+id, alice, nil), http.StatusNotFound, msgPixelNotFound)
	wantError(t, s.Do("DELETE", "/v1/pixels/"+id, alice, nil), http.StatusNotFound, msgPixelNotFound)
}

// A browser that accepts HTML gets the pixel page, counted as one click;
// scripts, crawlers and HEAD get the 302.
func TestPixelAtRedirect(t *testing.T) {
	t.Parallel()
	s := start(t)
	k := users(s, "alice", "bob")
	alice, bob := k[0], k[1]
	px := s.MustCreate("/v1/pixels", alice, map[string]any{"name": "Meta", "type": "meta", "pixel_id": "1234567890123456"})
	target := "https://shop.example/it's?a=1&b=</script>"
	l := createLink(s, alice, map[string]any{"original_url": target, "pixel_id": str(px, "id"), "utm_source": "s"})
	if str(l, "pixel_id") != str(px, "id") {
		t.Errorf("link echoes pixel_id %v", l["pixel_id"])
	}
	code, linkID := str(l, "code"), str(l, "id")

	for _, c := range []struct{ name, ua, accept string }{
		{"curl", "curl/8.5.0", "*/*"},
		{"script asking for HTML", "python-requests/2.31", "text/html"},
		{"browser not asking for HTML", chromeUA, "application/json"},
		{"crawler", googlebot, browserAccept},
		{"no user agent", "", browserAccept},
	} {
		r := s.Do("GET", "/"+code, "", nil, "User-Agent", c.ua, "Accept", c.accept)
		if r.Status != http.StatusFound || !strings.HasPrefix(r.Header.Get("Location"), "https://shop.example/") {
			t.Errorf("%s: %d %s", c.name, r.Status, r.Header.Get("Location"))
		}
	}
	if r := s.Do("HEAD", "/"+code, "", nil, "User-Agent", chromeUA, "Accept", browserAccept); r.Status != http.StatusFound {
		t.Errorf("HEAD: %d", r.Status)
	}
	before := obj(t, s.Do("GET", "/v1/links/"+linkID, alice, nil), http.StatusOK)["clicks"].(float64)

	r := s.Do("GET", "/"+code, "", nil, "User-Agent", chromeUA, "Accept", browserAccept)
	if r.Status != http.StatusOK {
		t.Fatalf("browser: %d %s", r.Status, r.Body)
	}
	h := r.Header
	if h.Get("Content-Type") != "text/html; charset=utf-8" || h.Get("Cache-Control") != "no-store" || h.Get("Location") != "" {
		t.Errorf("headers: %v", h)
	}
	csp := h.Get("Content-Security-Policy")
	if !strings.Contains(csp, "default-src 'none'") || !strings.Contains(csp, "https://connect.facebook.net") || strings.Contains(csp, "script-src *") {
		t.Errorf("CSP %q", csp)
	}
	var tid string
	for _, c := range r.Header.Values("Set-Cookie") {
		if v, ok := strings.CutPrefix(c, "svc_tid="); ok {
			tid, _, _ = strings.Cut(v, ";")
		}
	}
	if tid == "" {
		t.Errorf("no svc_tid cookie: %v", r.Header.Values("Set-Cookie"))
	}
	body := string(r.Body)
	for _, want := range []string{
		`"https://connect.facebook.net/en_US/fbevents.js"`,
		`"1234567890123456"`,
		`fbq("track","PageView")`,
		`<noscript><meta http-equiv="refresh" content="1;url=`,
		`https://www.facebook.com/tr?id=1234567890123456&amp;ev=PageView&amp;noscript=1`,
		"svc_tid=" + tid,
		"utm_source=s",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("page lacks %q:\n%s", want, body)
		}
	}
	// The target is escaped everywhere: no raw quote or closing tag of it.
	if strings.Contains(body, "url=https://shop.example/it's") || !strings.Contains(body, `b=\u003c/script\u003e`) || strings.Count(body, "</script>") != 1 {
		t.Errorf("target not escaped:\n%s", body)
	}
	if len(body) > 4096 {
		t.Errorf("page is %d bytes", len(body))
	}
	after := obj(t, s.Do("GET", "/v1/links/"+linkID, alice, nil), http.StatusOK)["clicks"].(float64)
	if after != before+1 {
		t.Errorf("clicks %v then %v: the page counts once", before, after)
	}

	// An automated browser runs pages too: it gets the page, uncounted.
	headless := "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/126.0.0.0 Safari/537.36"
	if r := s.Do("GET", "/"+code, "", nil, "User-Agent", headless, "Accept", browserAccept); r.Status != http.StatusOK || !strings.Contains(string(r.Body), "fbevents.js") {
		t.Errorf("HeadlessChrome: %d", r.Status)
	}
	if n := obj(t, s.Do("GET", "/v1/links/"+linkID, alice, nil), http.StatusOK)["clicks"].(float64); n != after {
		t.Errorf("HeadlessChrome counted: clicks %v, want %v", n, after)
	}

	// Another type, after the pixel changes; none after it is deleted.
	obj(t, s.Do("PUT", "/v1/pixels/"+str(px, "id"), alice, map[string]any{"type": "google", "pixel_id": "G-TEST42"}), http.StatusOK)
	r = s.Do("GET", "/"+code, "", nil, "User-Agent", chromeUA, "Accept", browserAccept)
	if r.Status != http.StatusOK || !strings.Contains(string(r.Body), `"https://www.googletagmanager.com/gtag/js?id=G-TEST42"`) ||
		!strings.Contains(string(r.Body), `<meta http-equiv="refresh" content="0;url=`) {
		t.Errorf("google page: %d %s", r.Status, r.Body)
	}
	wantMessage(t, s.Do("DELETE", "/v1/pixels/"+str(px, "id"), alice, nil))
	if r := s.Do("GET", "/"+code, "", nil, "User-Agent", chromeUA, "Accept", browserAccept); r.Status != http.StatusFound {
		t.Errorf("after the pixel was deleted: %d", r.Status)
	}
	obj(t, s.Do("GET", "/v1/links/"+linkID, alice, nil), http.StatusOK)

	// Unknown and foreign pixels are refused at create and update.
	bobs := str(s.MustCreate("/v1/pixels", bob, map[string]any{"name": "b", "type": "x", "pixel_id": "o1abc"}), "id")
	wantError(t, s.Do("POST", "/v1/links", alice, map[string]any{"original_url": "https://x.example", "pixel_id": "nope"}), http.StatusNotFound, msgPixelNotFound)
	wantError(t, s.Do("POST", "/v1/links", alice, map[string]any{"original_url": "https://x.example", "pixel_id": bobs}), http.StatusForbidden, msgDeniedWS)
	wantError(t, s.Do("PUT", "/v1/links/"+linkID, alice, map[string]any{"pixel_id": bobs}), http.StatusForbidden, msgDeniedWS)
	wantError(t, s.Do("PUT", "/v1/links/"+linkID, alice, map[string]any{"pixel_id": "nope"}), http.StatusNotFound, msgPixelNotFound)
	obj(t, s.Do("PUT", "/v1/links/"+linkID, alice, map[string]any{"pixel_id": nil}), http.StatusOK)
}
