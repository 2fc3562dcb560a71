package enrich

import (
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"
)

func TestVisitorHash(t *testing.T) {
	e := newTestEnricher(t, Config{})
	ua := goldenCases[0].ua
	ip := netip.MustParseAddr("81.2.69.142")
	day := time.Date(2026, 3, 14, 0, 0, 0, 0, time.UTC)
	h := func(ip netip.Addr, ua string, at time.Time) string {
		return e.EnrichParts(ua, "", "", ip, at).VisitorHash
	}
	base := h(ip, ua, day.Add(30*time.Second))

	// Stable within a UTC day, whatever the time zone of now.
	for _, at := range []time.Time{
		day,
		day.Add(12 * time.Hour),
		day.Add(24*time.Hour - time.Nanosecond),
		day.Add(20 * time.Hour).In(time.FixedZone("UTC+5", 5*3600)), // Mar 15 01:00 local, Mar 14 UTC
	} {
		if got := h(ip, ua, at); got != base {
			t.Errorf("at %v: %s, want %s", at, got, base)
		}
	}
	// Different on other days, including going back to an earlier day after
	// a later one was cached.
	seen := map[string]bool{base: true}
	for _, at := range []time.Time{day.Add(24 * time.Hour), day.Add(-time.Nanosecond), day.AddDate(1, 0, 0), day.AddDate(0, 0, -1)} {
		got := h(ip, ua, at)
		if got == base {
			t.Errorf("at %v: same hash as on %v", at, day)
		}
		seen[got] = true
	}
	if len(seen) != 4 { // day-1 appears twice (-1ns and AddDate -1)
		t.Errorf("expected 4 distinct daily hashes, got %d", len(seen))
	}
	if h(ip, ua, day) != base {
		t.Error("hash changed after visiting other days")
	}

	// Different for another IP or user agent.
	if h(netip.MustParseAddr("81.2.69.143"), ua, day) == base {
		t.Error("same hash for a different IP")
	}
	if h(ip, ua+" ", day) == base {
		t.Error("same hash for a different UA")
	}
	// IP and UA are separated: "1.2.3.4" + "5x" differs from "1.2.3.45" + "x".
	if h(netip.MustParseAddr("1.2.3.4"), "5x", day) == h(netip.MustParseAddr("1.2.3.45"), "x", day) {
		t.Error("ambiguous concatenation")
	}

	// Another secret gives other hashes.
	e2 := newTestEnricher(t, Config{Secret: []byte("another secret of 32 bytes......")})
	if e2.EnrichParts(ua, "", "", ip, day).VisitorHash == base {
		t.Error("secret does not change the hash")
	}

	// Never the IP, in any form: 32 lower-case hex digits.
	if len(base) != 32 || strings.Trim(base, "0123456789abcdef") != "" {
		t.Errorf("hash %q is not 32 hex digits", base)
	}
	for _, a := range []string{"81.2.69.142", "8.8.8.8", "2001:4860:4860::8888", "10.0.0.1"} {
		r := e.EnrichParts(ua, "", "", netip.MustParseAddr(a), day)
		if js := mustJSON(t, r); strings.Contains(js, a) || strings.Contains(js, strings.ReplaceAll(a, ".", "")) {
			t.Errorf("result for %s contains the address: %s", a, js)
		}
	}
}

func TestVisitorKeyMatchesDefinition(t *testing.T) {
	// key(day) = HMAC-SHA256(secret, "YYYY-MM-DD"); hash = HMAC(key, ip 0x00 ua)[:16].
	k := newVisitorKeys(testSecret)
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	got := k.hash(netip.MustParseAddr("192.0.2.1"), "UA", at)
	key := hmacSHA256(testSecret, []byte("2026-01-02"))
	want := hmacSHA256(key, []byte("192.0.2.1\x00UA"))[:16]
	if got != hexString(want) {
		t.Fatalf("got %s, want %s", got, hexString(want))
	}
}

func TestUTCDay(t *testing.T) {
	for _, c := range []struct {
		t    time.Time
		want int64
	}{
		{time.Unix(0, 0), 0},
		{time.Unix(86399, 0), 0},
		{time.Unix(86400, 0), 1},
		{time.Unix(-1, 0), -1},
		{time.Unix(-86400, 0), -1},
		{time.Unix(-86401, 0), -2},
	} {
		if got := utcDay(c.t); got != c.want {
			t.Errorf("utcDay(%v) = %d, want %d", c.t.UTC(), got, c.want)
		}
	}
}

func TestAddressKey(t *testing.T) {
	trusted, err := ParseTrustedProxies("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	e := newTestEnricher(t, Config{TrustedProxies: trusted})
	day := time.Date(2026, 3, 14, 9, 0, 0, 0, time.UTC)
	key := func(remote, xff, ua string, at time.Time) string {
		r := httptest.NewRequest("POST", "http://lnk.example/abc", nil)
		r.RemoteAddr = remote
		if xff != "" {
			r.Header.Set("X-Forwarded-For", xff)
		}
		r.Header.Set("User-Agent", ua)
		return e.AddressKey(r, at)
	}
	base := key("81.2.69.142:5000", "", "a", day)
	// The user agent, the port and the time of day do not matter.
	if key("81.2.69.142:6000", "", "b", day.Add(10*time.Hour)) != base {
		t.Error("address key depends on the user agent, port or hour")
	}
	// The client address does, and a trusted proxy's X-Forwarded-For names it.
	if key("81.2.69.143:5000", "", "a", day) == base {
		t.Error("same key for another address")
	}
	if key("127.0.0.1:9", "81.2.69.142", "c", day) != base {
		t.Error("a trusted proxy's X-Forwarded-For is not the client")
	}
	if key("8.8.8.8:9", "81.2.69.142", "a", day) == base {
		t.Error("an untrusted peer's X-Forwarded-For was believed")
	}
	// Keyed per day, never the address, and not the visitor hash of a
	// request without a user agent.
	if key("81.2.69.142:5000", "", "a", day.AddDate(0, 0, 1)) == base {
		t.Error("address key does not rotate daily")
	}
	if len(base) != 32 || strings.Trim(base, "0123456789abcdef") != "" || strings.Contains(base, "81.2.69") {
		t.Errorf("address key %q", base)
	}
	if e.EnrichParts("", "", "", netip.MustParseAddr("81.2.69.142"), day).VisitorHash == base {
		t.Error("address key equals a visitor hash")
	}
}
