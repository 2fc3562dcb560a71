package redirect_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// The target is chosen by the visitor's device: ios_link on iOS,
// android_link on Android, windows_link on Windows, macos_link on macOS,
// else original_url; an empty per-platform link falls back to original_url.
func TestTargetByDevice(t *testing.T) {
	t.Parallel()
	s := start(t)
	const (
		orig = "https://example.com/landing"
		ios  = "https://apps.apple.com/app/id123"
		and  = "https://play.google.com/store/apps/details?id=com.example"
		win  = "ms-windows-store://pdp/?productid=9NBLGGH4NNS1"
		mac  = "macappstore://apps.apple.com/app/id456"
	)
	all := s.newLink(t, map[string]any{"original_url": orig, "custom_code": "all",
		"ios_link": ios, "android_link": and, "windows_link": win, "macos_link": mac})
	none := s.newLink(t, map[string]any{"original_url": orig, "custom_code": "none"})
	// Each platform link alone: only its own platform goes there.
	only := map[string]string{}
	for field, target := range map[string]string{"ios_link": ios, "android_link": and, "windows_link": win, "macos_link": mac} {
		code := "only-" + strings.TrimSuffix(field, "_link")
		s.newLink(t, map[string]any{"original_url": orig, "custom_code": code, field: target})
		only[field] = code
	}

	cases := []struct {
		name  string
		ua    string
		field string // the platform link used, "" for original_url
	}{
		{"iPhone Safari", uaIPhoneSafari, "ios_link"},
		{"iPhone Chrome", uaIPhoneChrome, "ios_link"},
		{"iPad Safari", uaIPadSafari, "ios_link"},
		{"Instagram in-app on iOS", uaInstagramIOS, "ios_link"},
		{"Android Chrome", uaAndroidChrome, "android_link"},
		{"Android tablet Chrome", uaAndroidTablet, "android_link"},
		{"Samsung Internet", uaSamsung, "android_link"},
		{"Facebook in-app on Android", uaFacebookAndroid, "android_link"},
		{"Windows Edge", uaWindowsEdge, "windows_link"},
		{"Windows Chrome", uaWindowsChrome, "windows_link"},
		{"macOS Safari", uaMacSafari, "macos_link"},
		{"macOS Chrome", uaMacChrome, "macos_link"},
		{"Linux Firefox", uaLinuxFirefox, ""},
		{"no user agent", uaEmpty, ""},
		{"Googlebot", uaGooglebot, ""},
	}
	want := map[string]string{"": orig, "ios_link": ios, "android_link": and, "windows_link": win, "macos_link": mac}
	for _, c := range cases {
		wantRedirect(t, c.name+" on all", s.get("/all", c.ua), want[c.field])
		wantRedirect(t, c.name+" on none", s.get("/none", c.ua), orig)
		for field, code := range only {
			exp := orig
			if field == c.field {
				exp = want[field]
			}
			wantRedirect(t, c.name+" on "+code, s.get("/"+code, c.ua), exp)
		}
	}

	// Clearing a platform link falls back to original_url.
	r := s.Do("PUT", "/v1/links/"+str(all, "id"), op, map[string]any{"ios_link": "", "macos_link": ""})
	if r.Status != http.StatusOK {
		t.Fatalf("clear ios_link: %d %s", r.Status, r.Body)
	}
	wantRedirect(t, "iPhone after ios_link cleared", s.get("/all", uaIPhoneSafari), orig)
	wantRedirect(t, "Mac after macos_link cleared", s.get("/all", uaMacSafari), orig)
	wantRedirect(t, "Android still", s.get("/all", uaAndroidChrome), and)

	// The counted clicks record the destination they were sent to.
	evs := s.events(t, str(none, "id"))
	if len(evs) == 0 {
		t.Fatal("no clicks recorded on /none")
	}
	for _, e := range evs {
		if e.Destination != orig || e.Source != "redirect" || e.Code != "none" {
			t.Errorf("click on /none: destination %q source %q code %q", e.Destination, e.Source, e.Code)
		}
	}
}

// The link's utm_* values are added to the target's query: its own query
// and fragment are kept, values are URL-encoded, and targets that are not
// http(s) URLs (mailto:, tel:, app schemes) are left as they are.
func TestUTMValues(t *testing.T) {
	t.Parallel()
	s := start(t)
	utm := map[string]string{
		"utm_source": "news letter", "utm_medium": "e&mail", "utm_campaign": "spring/2025 #1",
		"utm_term": "größe=42", "utm_content": "a+b?c", "utm_name": "Spring sale",
	}
	body := func(code, target string) map[string]any {
		b := map[string]any{"original_url": target, "custom_code": code}
		for k, v := range utm {
			b[k] = v
		}
		return b
	}
	s.newLink(t, body("plain", "https://shop.example/p"))
	s.newLink(t, body("withq", "https://shop.example/p?id=7&ref=home#reviews"))
	s.newLink(t, body("frag", "https://shop.example/app#/route?x=1"))
	s.newLink(t, body("mail", "mailto:sales@example.com?subject=Hello"))
	s.newLink(t, body("tel", "tel:+441234567890"))
	s.newLink(t, body("override", "https://shop.example/p?utm_source=old&keep=1"))
	deep := body("deep", "https://shop.example/p")
	deep["ios_link"], deep["android_link"] = "https://apps.apple.com/app/id1", "myapp://open/item?id=9"
	s.newLink(t, deep)
	s.newLink(t, map[string]any{"original_url": "https://shop.example/p?id=7#top", "custom_code": "noutm"})
	s.newLink(t, map[string]any{"original_url": "https://shop.example/p", "custom_code": "some", "utm_source": "x y", "utm_medium": ""})

	check := func(code, ua, wantBase, wantFrag string, wantOther url.Values) {
		t.Helper()
		r := s.get("/"+code, ua)
		if r.Status != http.StatusFound {
			t.Fatalf("/%s: %d %s", code, r.Status, r.Body)
		}
		loc := r.Header.Get("Location")
		u, err := url.Parse(loc)
		if err != nil {
			t.Fatalf("/%s: Location %q: %v", code, loc, err)
		}
		if base := u.Scheme + "://" + u.Host + u.Path; base != wantBase {
			t.Errorf("/%s: Location %q, want it on %q", code, loc, wantBase)
		}
		if u.Fragment != wantFrag {
			t.Errorf("/%s: Location %q has fragment %q, want %q", code, loc, u.Fragment, wantFrag)
		}
		if strings.ContainsAny(u.RawQuery, " #") {
			t.Errorf("/%s: query %q is not URL-encoded", code, u.RawQuery)
		}
		q := query(t, loc)
		for k, v := range utm {
			if got := q[k]; len(got) != 1 || got[0] != v {
				t.Errorf("/%s: %s = %q, want [%q] (Location %q)", code, k, got, v, loc)
			}
		}
		for k, v := range wantOther {
			if got := q[k]; strings.Join(got, ",") != strings.Join(v, ",") {
				t.Errorf("/%s: %s = %q, want %q (Location %q)", code, k, got, v, loc)
			}
		}
		if len(q) != len(utm)+len(wantOther) {
			t.Errorf("/%s: query has %d names, want %d: %v", code, len(q), len(utm)+len(wantOther), q)
		}
	}
	check("plain", browserUA, "https://shop.example/p", "", nil)
	check("withq", browserUA, "https://shop.example/p", "reviews", url.Values{"id": {"7"}, "ref": {"home"}})
	check("frag", browserUA, "https://shop.example/app", "/route?x=1", nil)
	// A utm value of the link replaces the target's own, once.
	check("override", browserUA, "https://shop.example/p", "", url.Values{"keep": {"1"}})
	// Deep links get them too when they are web URLs.
	check("deep", uaIPhoneSafari, "https://apps.apple.com/app/id1", "", nil)
	wantRedirect(t, "app-scheme deep link", s.get("/deep", uaAndroidChrome), "myapp://open/item?id=9")
	// mailto: and tel: are untouched.
	wantRedirect(t, "mailto", s.get("/mail", browserUA), "mailto:sales@example.com?subject=Hello")
	wantRedirect(t, "tel", s.get("/tel", browserUA), "tel:+441234567890")
	// No utm values: the target exactly as given.
	wantRedirect(t, "no utm", s.get("/noutm", browserUA), "https://shop.example/p?id=7#top")
	// Only the values that are set.
	r := s.get("/some", browserUA)
	if q := query(t, r.Header.Get("Location")); len(q) != 1 || q.Get("utm_source") != "x y" {
		t.Errorf("only utm_source set: Location %q", r.Header.Get("Location"))
	}
}
