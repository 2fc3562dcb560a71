package enrich

import (
	"net/http/httptest"
	"net/netip"
	"testing"
)

func TestParseTrustedProxies(t *testing.T) {
	got, err := ParseTrustedProxies(" 10.0.0.0/8, 192.168.1.10 ,,fd00::/8, 2001:db8::1, 172.16.5.4/12, ::ffff:100.64.0.0/106")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"10.0.0.0/8", "192.168.1.10/32", "fd00::/8", "2001:db8::1/128", "172.16.0.0/12", "100.64.0.0/10"}
	if len(got) != len(want) {
		t.Fatalf("got %v", got)
	}
	for i := range want {
		if got[i].String() != want[i] {
			t.Errorf("item %d = %s, want %s", i, got[i], want[i])
		}
	}
	if p, err := ParseTrustedProxies(""); err != nil || len(p) != 0 {
		t.Errorf("empty: %v %v", p, err)
	}
	for _, bad := range []string{"10.0.0.0/33", "not-an-ip", "10.0.0.1, 300.1.1.1", "fe80::1%eth0", "10.0.0.0/"} {
		if _, err := ParseTrustedProxies(bad); err == nil {
			t.Errorf("%q: want an error", bad)
		}
	}
}

func TestClientIP(t *testing.T) {
	trusted, err := ParseTrustedProxies("10.0.0.0/8, 2001:db8:ffff::/48, 127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name    string
		remote  string
		xff     []string // header lines
		trusted []netip.Prefix
		want    string // "" for the zero Addr
	}{
		{name: "no proxies configured, XFF ignored", remote: "203.0.113.7:4000", xff: []string{"1.2.3.4"}, want: "203.0.113.7"},
		{name: "untrusted peer, XFF ignored", remote: "198.51.100.1:4000", xff: []string{"1.2.3.4"}, trusted: trusted, want: "198.51.100.1"},
		{name: "trusted peer, one hop", remote: "10.0.0.2:4000", xff: []string{"203.0.113.7"}, trusted: trusted, want: "203.0.113.7"},
		{name: "trusted peer, spoofed left entries ignored", remote: "10.0.0.2:4000", xff: []string{"6.6.6.6, 203.0.113.7"}, trusted: trusted, want: "203.0.113.7"},
		{name: "two trusted hops", remote: "10.0.0.2:4000", xff: []string{"1.1.1.1, 203.0.113.7, 10.9.9.9"}, trusted: trusted, want: "203.0.113.7"},
		{name: "several header lines", remote: "10.0.0.2:4000", xff: []string{"1.1.1.1, 203.0.113.7", "10.9.9.9"}, trusted: trusted, want: "203.0.113.7"},
		{name: "trusted peer, no XFF", remote: "10.0.0.2:4000", trusted: trusted, want: "10.0.0.2"},
		{name: "all entries trusted", remote: "10.0.0.2:4000", xff: []string{"10.1.1.1, 10.2.2.2"}, trusted: trusted, want: "10.1.1.1"},
		{name: "malformed rightmost entry", remote: "10.0.0.2:4000", xff: []string{"203.0.113.7, garbage"}, trusted: trusted, want: "10.0.0.2"},
		{name: "malformed behind a trusted hop", remote: "10.0.0.2:4000", xff: []string{"bogus, 10.3.3.3"}, trusted: trusted, want: "10.3.3.3"},
		{name: "empty items skipped", remote: "10.0.0.2:4000", xff: []string{" , 203.0.113.7 ,, "}, trusted: trusted, want: "203.0.113.7"},
		{name: "entry with port", remote: "10.0.0.2:4000", xff: []string{"203.0.113.7:5555"}, trusted: trusted, want: "203.0.113.7"},
		{name: "IPv6 client via IPv6 proxy", remote: "[2001:db8:ffff::1]:443", xff: []string{"2001:db8:1::42"}, trusted: trusted, want: "2001:db8:1::42"},
		{name: "IPv6 entry with brackets and port", remote: "10.0.0.2:4000", xff: []string{"[2001:db8:1::42]:1234"}, trusted: trusted, want: "2001:db8:1::42"},
		{name: "IPv6 peer untrusted", remote: "[2001:db8:1::9]:443", xff: []string{"1.2.3.4"}, trusted: trusted, want: "2001:db8:1::9"},
		{name: "IPv6 zone dropped", remote: "[fe80::1%eth0]:443", want: "fe80::1"},
		{name: "IPv4-mapped peer is trusted as IPv4", remote: "[::ffff:10.0.0.2]:4000", xff: []string{"203.0.113.7"}, trusted: trusted, want: "203.0.113.7"},
		{name: "IPv4-mapped entry unmapped", remote: "10.0.0.2:4000", xff: []string{"::ffff:203.0.113.7"}, trusted: trusted, want: "203.0.113.7"},
		{name: "loopback proxy", remote: "127.0.0.1:9999", xff: []string{"198.51.100.20"}, trusted: trusted, want: "198.51.100.20"},
		{name: "RemoteAddr without port", remote: "198.51.100.1", want: "198.51.100.1"},
		{name: "RemoteAddr garbage", remote: "@unix", want: ""},
		{name: "RemoteAddr empty", remote: "", want: ""},
		{name: "bad port in XFF", remote: "10.0.0.2:4000", xff: []string{"203.0.113.7:99999x"}, trusted: trusted, want: "10.0.0.2"},
		{name: "unclosed bracket in XFF", remote: "10.0.0.2:4000", xff: []string{"[2001:db8::1"}, trusted: trusted, want: "10.0.0.2"},
	}
	for _, c := range cases {
		r := httptest.NewRequest("GET", "/x", nil)
		r.RemoteAddr = c.remote
		for _, v := range c.xff {
			r.Header.Add("X-Forwarded-For", v)
		}
		got := ClientIP(r, c.trusted)
		var want netip.Addr
		if c.want != "" {
			want = netip.MustParseAddr(c.want)
		}
		if got != want {
			t.Errorf("%s: got %v, want %v", c.name, got, want)
		}
	}
}
