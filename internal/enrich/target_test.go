package enrich

import "testing"

func TestChooseTarget(t *testing.T) {
	const (
		orig = "https://example.com/page"
		ios  = "https://apps.apple.com/app/id1"
		and  = "intent://open#Intent;scheme=app;end"
		win  = "ms-windows-store://pdp/?productid=X"
		mac  = "macappstore://apps.apple.com/app/id2"
	)
	cases := []struct {
		platform                string
		ios, android, win, macs string
		want                    string
	}{
		{PlatformIOS, ios, and, win, mac, ios},
		{PlatformAndroid, ios, and, win, mac, and},
		{PlatformWindows, ios, and, win, mac, win},
		{PlatformMacOS, ios, and, win, mac, mac},
		{PlatformOther, ios, and, win, mac, orig},
		{"", ios, and, win, mac, orig},
		{"linux", ios, and, win, mac, orig},
		{PlatformIOS, "", and, win, mac, orig},
		{PlatformIOS, "   ", and, win, mac, orig},
		{PlatformAndroid, ios, "", win, mac, orig},
		{PlatformWindows, ios, and, "", mac, orig},
		{PlatformMacOS, ios, and, win, "", orig},
		{"IOS", ios, and, win, mac, orig}, // platform values are lower case
	}
	for _, c := range cases {
		if got := ChooseTarget(c.platform, orig, c.ios, c.android, c.win, c.macs); got != c.want {
			t.Errorf("ChooseTarget(%q, ...) = %q, want %q", c.platform, got, c.want)
		}
	}
}
