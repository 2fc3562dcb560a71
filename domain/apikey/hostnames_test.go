package apikey_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/linkd/linkd/domain/apikey"
)

func TestHostAllowed(t *testing.T) {
	t.Parallel()
	shop := []string{"shop.example.com"}
	wild := []string{"*.example.com"}
	cases := []struct {
		name            string
		allowed         []string
		origin, referer string
		host            string // "" when no host is read
		ok              bool
	}{
		// Exact hosts.
		{"exact", shop, "https://shop.example.com", "", "shop.example.com", true},
		{"exact over http", shop, "http://shop.example.com", "", "shop.example.com", true},
		{"exact with port", shop, "https://shop.example.com:8443", "", "shop.example.com", true},
		{"other scheme", shop, "chrome-extension://shop.example.com", "", "shop.example.com", true},
		{"uppercase origin", shop, "HTTPS://SHOP.Example.COM", "", "shop.example.com", true},
		{"uppercase entry", []string{"Shop.EXAMPLE.com"}, "https://shop.example.com", "", "shop.example.com", true},
		{"trailing dot in origin", shop, "https://shop.example.com.", "", "shop.example.com", true},
		{"trailing dot in entry", []string{"shop.example.com."}, "https://shop.example.com", "", "shop.example.com", true},
		{"entry with scheme and port", []string{"https://shop.example.com:443/"}, "https://shop.example.com", "", "shop.example.com", true},
		{"entry with port", []string{"localhost:3000"}, "http://localhost:5173", "", "localhost", true},
		{"entry with spaces", []string{"  shop.example.com "}, "https://shop.example.com", "", "shop.example.com", true},
		{"second entry", []string{"a.test", "shop.example.com"}, "https://shop.example.com", "", "shop.example.com", true},
		{"exact is not its subdomain", shop, "https://www.shop.example.com", "", "www.shop.example.com", false},
		{"exact is not its parent", shop, "https://example.com", "", "example.com", false},
		{"localhost", []string{"localhost"}, "http://localhost:3000", "", "localhost", true},

		// Wildcards: subdomains at any depth, never the bare domain.
		{"wildcard subdomain", wild, "https://shop.example.com", "", "shop.example.com", true},
		{"wildcard deep subdomain", wild, "https://a.b.example.com", "", "a.b.example.com", true},
		{"wildcard not the bare domain", wild, "https://example.com", "", "example.com", false},
		{"wildcard and bare listed", []string{"*.example.com", "example.com"}, "https://example.com", "", "example.com", true},
		{"wildcard uppercase", []string{"*.EXAMPLE.com"}, "https://Shop.example.com", "", "shop.example.com", true},
		{"wildcard of a public suffix", []string{"*.com"}, "https://example.com", "", "example.com", false},
		{"bare star", []string{"*"}, "https://example.com", "", "example.com", false},
		{"star inside", []string{"shop.*.com"}, "https://shop.example.com", "", "shop.example.com", false},
		{"star without dot", []string{"*example.com"}, "https://evilexample.com", "", "evilexample.com", false},

		// Look-alikes.
		{"suffix look-alike", shop, "https://shop.example.com.evil.net", "", "shop.example.com.evil.net", false},
		{"prefix look-alike", shop, "https://evil-shop.example.com", "", "evil-shop.example.com", false},
		{"wildcard suffix look-alike", wild, "https://shop.example.com.evil.net", "", "shop.example.com.evil.net", false},
		{"wildcard glued look-alike", wild, "https://evilexample.com", "", "evilexample.com", false},
		{"wildcard of sub, look-alike", []string{"*.shop.example.com"}, "https://evil-shop.example.com", "", "evil-shop.example.com", false},
		{"userinfo look-alike", shop, "", "https://shop.example.com@evil.net/", "evil.net", false},
		{"fragment look-alike", shop, "https://evil.net#.shop.example.com", "", "evil.net", false},
		{"query look-alike", shop, "", "https://evil.net/?shop.example.com", "evil.net", false},
		{"path look-alike", shop, "", "https://evil.net/shop.example.com", "evil.net", false},
		{"empty label", wild, "https://.example.com", "", "", false},

		// Internationalised names: compared in punycode.
		{"punycode", []string{"xn--bcher-kva.example"}, "https://xn--bcher-kva.example", "", "xn--bcher-kva.example", true},
		{"punycode wildcard", []string{"*.xn--bcher-kva.example"}, "https://shop.xn--bcher-kva.example", "", "shop.xn--bcher-kva.example", true},
		{"unicode origin", []string{"xn--bcher-kva.example"}, "https://bücher.example", "", "", false},
		{"unicode entry never matches", []string{"bücher.example"}, "https://xn--bcher-kva.example", "", "xn--bcher-kva.example", false},
		{"escaped unicode origin", []string{"xn--bcher-kva.example"}, "https://b%C3%BCcher.example", "", "", false},

		// IP literals.
		{"ipv4", []string{"127.0.0.1"}, "http://127.0.0.1:8080", "", "127.0.0.1", true},
		{"ipv6", []string{"::1"}, "http://[::1]:3000", "", "::1", true},
		{"ipv6 entry in brackets", []string{"[::1]"}, "http://[::1]", "", "::1", true},
		{"ipv6 entry with port", []string{"[::1]:3000"}, "http://[::1]", "", "::1", true},
		{"ipv6 long form", []string{"0:0:0:0:0:0:0:1"}, "http://[::1]", "", "::1", true},
		{"ipv6 uppercase", []string{"2001:DB8::1"}, "http://[2001:db8::1]", "", "2001:db8::1", true},
		{"ipv6 other", []string{"::1"}, "http://[::2]", "", "::2", false},
		{"ipv6 zone", []string{"fe80::1"}, "http://[fe80::1%25en0]", "", "", false},
		{"ipv4 is not a wildcard subdomain", []string{"*.0.0.1"}, "http://127.0.0.1", "", "127.0.0.1", false},
		{"ipv4 is not localhost", []string{"localhost"}, "http://127.0.0.1", "", "127.0.0.1", false},

		// Origin decides; Referer is the fallback.
		{"referer when no origin", shop, "", "https://shop.example.com/cart?x=1", "shop.example.com", true},
		{"referer with port", shop, "", "https://shop.example.com:8080/", "shop.example.com", true},
		{"origin wins over referer", shop, "https://evil.net", "https://shop.example.com/", "evil.net", false},
		{"origin allowed, referer not", shop, "https://shop.example.com", "https://evil.net/", "shop.example.com", true},
		{"null origin", shop, "null", "https://shop.example.com/", "", false},
		{"malformed origin", shop, "https://shop example.com", "https://shop.example.com/", "", false},
		{"neither header", shop, "", "", "", false},
		{"blank headers", shop, "  ", " ", "", false},
		{"no scheme", shop, "shop.example.com", "", "", false},
		{"scheme only", shop, "https://", "", "", false},
		{"opaque url", shop, "mailto:shop.example.com", "", "", false},
		{"port is ignored, even out of range", shop, "https://shop.example.com:99999999999999999999", "", "shop.example.com", true},
		{"port not a number", shop, "https://shop.example.com:https", "", "", false},
		{"control character", shop, "https://shop.example.com\x00", "", "", false},
		{"space in host", shop, "", "https://shop .example.com/", "", false},
		{"empty allowed list", nil, "https://shop.example.com", "", "shop.example.com", false},
		{"empty entry", []string{""}, "https://shop.example.com", "", "shop.example.com", false},
		{"overlong label", []string{"*.example.com"}, "https://" + strings.Repeat("a", 64) + ".example.com", "", "", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			host, ok := apikey.HostAllowed(c.allowed, c.origin, c.referer)
			if host != c.host || ok != c.ok {
				t.Errorf("HostAllowed(%q, %q, %q) = %q, %v; want %q, %v", c.allowed, c.origin, c.referer, host, ok, c.host, c.ok)
			}
		})
	}
}

func TestNormalizeAllowedHostname(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"shop.example.com":             "shop.example.com",
		" Shop.Example.COM. ":          "shop.example.com",
		"https://shop.example.com/a":   "shop.example.com",
		"http://shop.example.com:8080": "shop.example.com",
		"localhost:3000":               "localhost",
		"*.Example.com":                "*.example.com",
		"*.example.com.":               "*.example.com",
		"*.co.uk":                      "*.co.uk",
		"127.0.0.1":                    "127.0.0.1",
		"::ffff:127.0.0.1":             "127.0.0.1",
		"[::1]":                        "::1",
		"[::1]:8080":                   "::1",
		"2001:0DB8:0:0:0:0:0:1":        "2001:db8::1",
		"xn--bcher-kva.example":        "xn--bcher-kva.example",
		"under_score.example.com":      "under_score.example.com",
	} {
		got, err := apikey.NormalizeAllowedHostname(in)
		if err != nil || got != want {
			t.Errorf("NormalizeAllowedHostname(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for in, want := range map[string]error{
		"":                                       apikey.ErrHostnameEmpty,
		"  ":                                     apikey.ErrHostnameEmpty,
		"*":                                      apikey.ErrHostnameWildcard,
		"*.com":                                  apikey.ErrHostnameWildcard,
		"*.127.0.0.1":                            apikey.ErrHostnameWildcard,
		"a.*.example.com":                        apikey.ErrHostnameWildcard,
		"*example.com":                           apikey.ErrHostnameWildcard,
		"*.*.example.com":                        apikey.ErrHostnameInvalid,
		"bücher.example":                         apikey.ErrHostnameUnicode,
		"*.bücher.example":                       apikey.ErrHostnameUnicode,
		"shop..example.com":                      apikey.ErrHostnameInvalid,
		".example.com":                           apikey.ErrHostnameInvalid,
		"shop example.com":                       apikey.ErrHostnameInvalid,
		"shop.example.com/a":                     apikey.ErrHostnameInvalid,
		"https://":                               apikey.ErrHostnameInvalid,
		"fe80::1%en0":                            apikey.ErrHostnameInvalid,
		strings.Repeat("a", 64) + ".com":         apikey.ErrHostnameInvalid,
		strings.Repeat("abcdefghi.", 26) + "com": apikey.ErrHostnameInvalid,
	} {
		got, err := apikey.NormalizeAllowedHostname(in)
		if !errors.Is(err, want) {
			t.Errorf("NormalizeAllowedHostname(%q) = %q, %v; want %v", in, got, err, want)
		}
	}
}

// A normalised entry is a fixed point, and every request host that
// matches an entry also matches its normal form.
func TestNormalizeIsIdempotent(t *testing.T) {
	t.Parallel()
	for _, in := range []string{"Shop.Example.com.", "*.EXAMPLE.com", "[::1]:80", "https://a.b:1/x", "127.0.0.1"} {
		once, err := apikey.NormalizeAllowedHostname(in)
		if err != nil {
			t.Fatal(err)
		}
		twice, err := apikey.NormalizeAllowedHostname(once)
		if err != nil || twice != once {
			t.Errorf("%q: %q then %q, %v", in, once, twice, err)
		}
	}
}

func FuzzHostAllowed(f *testing.F) {
	f.Add("*.example.com", "https://a.example.com", "")
	f.Add("shop.example.com", "", "https://shop.example.com.evil.net/")
	f.Add("::1", "http://[::1]:3000", "")
	f.Fuzz(func(t *testing.T, entry, origin, referer string) {
		host, ok := apikey.HostAllowed([]string{entry}, origin, referer)
		if !ok {
			return
		}
		// An accepted host is the allowed host itself or one of its
		// subdomains, never a look-alike.
		e, err := apikey.NormalizeAllowedHostname(entry)
		if err != nil {
			t.Fatalf("%q matched the invalid entry %q", host, entry)
		}
		if base, wild := strings.CutPrefix(e, "*."); wild {
			if !strings.HasSuffix(host, "."+base) || strings.HasPrefix(host, ".") || strings.Contains(host, "..") {
				t.Fatalf("%q matched %q", host, e)
			}
		} else if host != e {
			t.Fatalf("%q matched %q", host, e)
		}
	})
}
