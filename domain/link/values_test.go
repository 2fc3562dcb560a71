package link_test

import (
	"net/url"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/linkd/linkd/domain"
	"github.com/linkd/linkd/domain/link"
)

var goodURLs = []string{
	"http://example.com", "https://example.com/a?b=c#d", "HTTPS://EXAMPLE.COM", "https://例え.jp/パス",
	"http://127.0.0.1:8080/x", "https://[::1]:443/", "https://user:pw@example.com/", "mailto:a@b.c",
	"mailto:a@b.c?subject=x", "tel:+1-555-0100", "sms:+15550100?body=hi", "whatsapp://send?text=hi",
	"tg://resolve?domain=x", "skype:echo123?call", "Skype:echo123",
	"http://localhost/x", "https://example.com./", "https://sub_domain.example.com", "https://a-b.c-d.example",
	"https://xn--r8jz45g.jp/", "https://[fe80::1%25en0]/",
}

var badURLs = []string{
	"", " ", "example.com", "/relative", "//example.com", "ftp://example.com", "javascript:alert(1)",
	"data:text/plain,x", "file:///etc/passwd", "http://", "https://", "http:///x", "https:example.com",
	"mailto:", "tel:", "sms:", "https://exa mple.com", " https://example.com", "https://example.com ",
	"https://example.com\t", "https://example.com/\x00", "https://example.com:0/", "https://example.com:65536/",
	"https://example.com:/", "http://[::1", "https://%zz", "ws://example.com", "intent://x", "\xff\xfe",
	"https://" + strings.Repeat("a", link.MaxURLLength),
	"http://.com", "https://.", "http://a..b.com", "https://-a.com", "https://a-.com", "https://example..",
	"https://exa$mple.com", "https://exa!mple.com/", "https://" + strings.Repeat("a", 64) + ".com",
}

func TestValidateURL(t *testing.T) {
	for _, u := range goodURLs {
		if err := link.ValidateURL(u); err != nil {
			t.Errorf("ValidateURL(%q) = %v, want nil", u, err)
		}
	}
	for _, u := range badURLs {
		err := link.ValidateURL(u)
		if err == nil {
			t.Errorf("ValidateURL(%q) accepted", u)
			continue
		}
		if domain.KindOf(err) != domain.KindInvalid || err.Error() != link.MsgInvalidURL {
			t.Errorf("ValidateURL(%q) = %v, want %q", u, err, link.MsgInvalidURL)
		}
	}
}

func TestValidateDeepLink(t *testing.T) {
	for _, u := range []string{"", "fb://profile/1", "intent://scan/#Intent;scheme=zxing;end", "myapp:open", "https://apps.example.com/x", "tel:+1555"} {
		if err := link.ValidateDeepLink("ios_link", u); err != nil {
			t.Errorf("ValidateDeepLink(%q) = %v", u, err)
		}
	}
	for _, u := range []string{"", "fb://profile/1", "intent://scan/#Intent;scheme=zxing;package=com.x;end", "intent://x#Intent;S.browser_fallback_url=https%3A%2F%2Fexample.com%2F;end",
		"ms-windows-store://pdp/?productid=X", "com.example.app://open", "x-callback+v2://y", "macappstore://apps.apple.com/app/id2"} {
		if err := link.ValidateDeepLink("android_link", u); err != nil {
			t.Errorf("ValidateDeepLink(%q) = %v", u, err)
		}
	}
	for _, u := range []string{"javascript:alert(1)", "JavaScript:x", "data:x", "vbscript:x", "file:///x", "no scheme", "relative/path", "https://", "fb://", "a b://x",
		"blob:https://a.example/x", "about:blank", "view-source:https://a.example", "VIEW-SOURCE:x", "jar:https://a.example/x.jar!/", "filesystem:https://a.example/x",
		"mhtml:https://a.example/x", "livescript:x", "x-javascript:x", "ecmascript:x", "chrome://settings", "chrome-extension://abc/x", "moz-extension://abc/x",
		"intent://x#Intent;scheme=javascript;end", "intent://x#Intent;scheme=JavaScript;end", "intent://x#Intent;scheme=data;end",
		"intent://x#Intent;S.browser_fallback_url=javascript%3Aalert(1);end", "intent://x#Intent;S.browser_fallback_url=data%3Atext%2Fhtml,x;end",
		"intent://x#Intent;scheme=view-source;end", "1app://x", "-app://x"} {
		if err := link.ValidateDeepLink("ios_link", u); err == nil {
			t.Errorf("ValidateDeepLink(%q) accepted", u)
		} else if err.Error() != "Invalid URL format for ios_link" {
			t.Errorf("ValidateDeepLink(%q) = %q", u, err)
		}
	}
}

func TestValidateCode(t *testing.T) {
	for _, c := range []string{"a", "Z", "0", "-", "_", "abc-DEF_123", strings.Repeat("x", link.MaxCodeLength)} {
		if err := link.ValidateCode(c); err != nil {
			t.Errorf("ValidateCode(%q) = %v", c, err)
		}
	}
	for _, c := range []string{"", strings.Repeat("x", link.MaxCodeLength+1), "a b", "a/b", "a.b", "ä", "a%20", "healthz", "METRICS", "openapi.json", "radar.js", "v1"} {
		if err := link.ValidateCode(c); domain.KindOf(err) != domain.KindInvalid {
			t.Errorf("ValidateCode(%q) = %v, want invalid", c, err)
		}
	}
}

func TestNormalizeColor(t *testing.T) {
	for in, want := range map[string]string{"#abc": "#ABC", "#ABC": "#ABC", "#a1b2c3": "#A1B2C3", "#000000": "#000000"} {
		if got, ok := link.NormalizeColor(in); !ok || got != want {
			t.Errorf("NormalizeColor(%q) = %q %v, want %q", in, got, ok, want)
		}
	}
	for _, in := range []string{"", "#", "abc", "#ab", "#abcd", "#abcde", "#abcdefg", "#xyz", "##abc", "abcdef0"} {
		if _, ok := link.NormalizeColor(in); ok {
			t.Errorf("NormalizeColor(%q) accepted", in)
		}
	}
}

func TestPreviewIsEmpty(t *testing.T) {
	var nilp *link.Preview
	for _, p := range []*link.Preview{nilp, {}, {Title: ptr("")}, {Image: ptr(""), Favicon: ptr("")}} {
		if !p.IsEmpty() {
			t.Errorf("%+v is not empty", p)
		}
	}
	if (&link.Preview{SocialImage: ptr("x")}).IsEmpty() {
		t.Errorf("a preview with an image is empty")
	}
}

func TestExpired(t *testing.T) {
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	past, future := now.Add(-time.Second), now.Add(time.Second)
	for _, c := range []struct {
		at     *time.Time
		limit  *int64
		clicks int64
		want   bool
	}{
		{nil, nil, 100, false},
		{&future, nil, 0, false},
		{&now, nil, 0, true},
		{&past, nil, 0, true},
		{nil, ptr(int64(3)), 2, false},
		{nil, ptr(int64(3)), 3, true},
		{&future, ptr(int64(3)), 5, true},
	} {
		if got := link.Expired(c.at, c.limit, c.clicks, now); got != c.want {
			t.Errorf("Expired(%v, %v, %d) = %v", c.at, c.limit, c.clicks, got)
		}
	}
}

// FuzzValidateURL: accepted URLs are what the spec allows, refusals always
// say "Invalid URL format", and the scheme's case does not matter.
func FuzzValidateURL(f *testing.F) {
	for _, u := range append(goodURLs, badURLs...) {
		f.Add(u)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		err := link.ValidateURL(raw)
		if err != nil {
			if domain.KindOf(err) != domain.KindInvalid || err.Error() != link.MsgInvalidURL {
				t.Fatalf("ValidateURL(%q) = %v", raw, err)
			}
			return
		}
		if len(raw) > link.MaxURLLength || !utf8.ValidString(raw) || strings.ContainsFunc(raw, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
			t.Fatalf("accepted %q with spaces, controls or bad UTF-8", raw)
		}
		u, perr := url.Parse(raw)
		if perr != nil {
			t.Fatalf("accepted %q that does not parse: %v", raw, perr)
		}
		scheme := strings.ToLower(u.Scheme)
		switch scheme {
		case "http", "https":
			if u.Hostname() == "" {
				t.Fatalf("accepted %q without a host", raw)
			}
		case "mailto", "tel", "sms", "whatsapp", "tg", "skype":
		default:
			t.Fatalf("accepted %q with scheme %q", raw, u.Scheme)
		}
		flipped := strings.ToUpper(raw[:len(u.Scheme)]) + raw[len(u.Scheme):]
		if link.ValidateURL(flipped) != nil {
			t.Fatalf("accepted %q but not %q", raw, flipped)
		}
		// Deep links accept everything original_url accepts.
		if err := link.ValidateDeepLink("ios_link", raw); err != nil {
			t.Fatalf("deep link refuses %q: %v", raw, err)
		}
	})
}

// FuzzValidateDeepLink: never a scheme that runs code in a browser.
func FuzzValidateDeepLink(f *testing.F) {
	for _, u := range append(goodURLs, "fb://x", "intent://x#Intent;end", "JAVASCRIPT:alert(1)", " javascript:x", "java\tscript:x") {
		f.Add(u)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		if link.ValidateDeepLink("l", raw) != nil || raw == "" {
			return
		}
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatalf("accepted %q that does not parse", raw)
		}
		switch strings.ToLower(u.Scheme) {
		case "", "javascript", "data", "vbscript", "file", "blob", "about", "view-source", "jar", "filesystem", "mhtml", "livescript":
			t.Fatalf("accepted %q", raw)
		}
		if link.IsBrowserScheme(u.Scheme) {
			t.Fatalf("accepted %q with a browser scheme", raw)
		}
	})
}

func TestPreviewURLsAreHTTP(t *testing.T) {
	str := func(s string) *string { return &s }
	for _, u := range []string{"", "https://cdn.example/og.png", "http://cdn.example/f.ico"} {
		p := &link.Preview{Image: str(u), Favicon: str(u), SocialImage: str(u)}
		if err := p.Validate(); err != nil {
			t.Errorf("preview %q: %v", u, err)
		}
	}
	for _, u := range []string{"javascript:alert(1)", "data:text/html,<script>alert(1)</script>", "data:image/png;base64,AAAA", "file:///etc/passwd", "ftp://a.example/x", "mailto:a@b.example", "https://", "not a url"} {
		for name, p := range map[string]*link.Preview{
			"metadata.image": {Image: str(u)}, "metadata.favicon": {Favicon: str(u)}, "metadata.social_image": {SocialImage: str(u)},
		} {
			err := p.Validate()
			if err == nil || err.Error() != "Invalid URL format for "+name {
				t.Errorf("%s %q: %v", name, u, err)
			}
		}
	}
}
