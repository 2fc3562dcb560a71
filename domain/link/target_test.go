package link_test

import (
	"testing"

	"github.com/linkd/linkd/domain/link"
)

func TestTargetChoosesThePlatformsDeepLink(t *testing.T) {
	const (
		orig = "https://example.com/page"
		ios  = "https://apps.apple.com/app/id1"
		and  = "intent://open#Intent;scheme=app;end"
		win  = "ms-windows-store://pdp/?productid=X"
		mac  = "macappstore://apps.apple.com/app/id2"
	)
	cases := []struct {
		name                    string
		platform                string
		ios, android, win, macs string
		want                    string
	}{
		{"ios", link.PlatformIOS, ios, and, win, mac, ios},
		{"android", link.PlatformAndroid, ios, and, win, mac, and},
		{"windows", link.PlatformWindows, ios, and, win, mac, win},
		{"macos", link.PlatformMacOS, ios, and, win, mac, mac},
		{"other", link.PlatformOther, ios, and, win, mac, orig},
		{"no platform", "", ios, and, win, mac, orig},
		{"unknown platform", "linux", ios, and, win, mac, orig},
		{"ios unset", link.PlatformIOS, "", and, win, mac, orig},
		{"ios blank", link.PlatformIOS, "   ", and, win, mac, orig},
		{"android unset", link.PlatformAndroid, ios, "", win, mac, orig},
		{"windows unset", link.PlatformWindows, ios, and, "", mac, orig},
		{"macos unset", link.PlatformMacOS, ios, and, win, "", orig},
		{"platforms are lower case", "IOS", ios, and, win, mac, orig},
	}
	for _, c := range cases {
		a := link.Attributes{OriginalURL: orig, IOSLink: c.ios, AndroidLink: c.android, WindowsLink: c.win, MacOSLink: c.macs}
		if got := a.Target(c.platform); got != c.want {
			t.Errorf("%s: Target(%q) = %q, want %q", c.name, c.platform, got, c.want)
		}
	}
}

func TestTargetAddsUTMToHTTPTargetsOnly(t *testing.T) {
	cases := []struct {
		name string
		a    link.Attributes
		want string
	}{
		{"none", link.Attributes{OriginalURL: "https://a.example/p?x=1"}, "https://a.example/p?x=1"},
		{"all six in order", link.Attributes{OriginalURL: "https://a.example/", UTMSource: "s", UTMMedium: "m", UTMCampaign: "c", UTMTerm: "t", UTMContent: "co", UTMName: "n"},
			"https://a.example/?utm_source=s&utm_medium=m&utm_campaign=c&utm_term=t&utm_content=co&utm_name=n"},
		{"replaces the same name once", link.Attributes{OriginalURL: "https://a.example/?utm_source=old&k=v#frag", UTMSource: "new"},
			"https://a.example/?k=v&utm_source=new#frag"},
		{"escapes values", link.Attributes{OriginalURL: "https://a.example/", UTMCampaign: "a b&c"}, "https://a.example/?utm_campaign=a+b%26c"},
		{"mailto untouched", link.Attributes{OriginalURL: "mailto:a@b.example", UTMSource: "s"}, "mailto:a@b.example"},
		{"deep link untouched", link.Attributes{OriginalURL: "https://a.example/", IOSLink: "myapp://x", UTMSource: "s"}, "myapp://x"},
	}
	for _, c := range cases {
		platform := ""
		if c.a.IOSLink != "" {
			platform = link.PlatformIOS
		}
		if got := c.a.Target(platform); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

func TestExcludesCountry(t *testing.T) {
	a := link.Attributes{ExcludedCountries: []link.ExcludedCountry{{Code: "DE"}, {Code: "fr"}}}
	for country, want := range map[string]bool{"DE": true, "de": true, "FR": true, "US": false, "": false} {
		if got := a.ExcludesCountry(country); got != want {
			t.Errorf("ExcludesCountry(%q) = %v, want %v", country, got, want)
		}
	}
}
