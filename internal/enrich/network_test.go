package enrich

import (
	"net/http/httptest"
	"net/netip"
	"testing"
	"time"
)

func TestClientNetwork(t *testing.T) {
	cases := map[string]string{
		"203.0.113.7":                   "203.0.113.7",
		"::ffff:203.0.113.7":            "203.0.113.7",
		"2001:db8:1:2:aaaa:bbbb:cccc:1": "2001:db8:1:2::",
		"2001:db8:1:2::ffff":            "2001:db8:1:2::",
		"fe80::1%eth0":                  "fe80::",
	}
	for in, want := range cases {
		if got := ClientNetwork(netip.MustParseAddr(in)); got.String() != want {
			t.Errorf("ClientNetwork(%s) = %s, want %s", in, got, want)
		}
	}
	if ClientNetwork(netip.Addr{}).IsValid() {
		t.Errorf("no address has a network")
	}
}

// Addresses of one IPv6 /64 are one client for AddressKey; the next /64
// and IPv4 neighbours are not.
func TestAddressKeyCountsAnIPv6SlashSixtyFourAsOneClient(t *testing.T) {
	e, err := New(Config{Secret: []byte("0123456789abcdef0123456789abcdef")})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	key := func(addr string) string {
		r := httptest.NewRequest("GET", "/x", nil)
		r.RemoteAddr = addr
		return e.AddressKey(r, now)
	}
	a := key("[2001:db8:1:2::1]:1000")
	if b := key("[2001:db8:1:2:ffff:ffff:ffff:ffff]:2000"); a != b {
		t.Errorf("same /64, different keys")
	}
	if c := key("[2001:db8:1:3::1]:1000"); a == c {
		t.Errorf("next /64, same key")
	}
	if key("203.0.113.7:1") == key("203.0.113.8:1") {
		t.Errorf("IPv4 neighbours share a key")
	}
}
