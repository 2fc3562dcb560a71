package ssrf

import (
	"context"
	"errors"
	"net/netip"
	"testing"
)

func TestForbidden(t *testing.T) {
	allowed, err := ParseNetworks("10.1.0.0/16, 127.0.0.2")
	if err != nil {
		t.Fatal(err)
	}
	g := New(allowed, nil)
	for addr, want := range map[string]bool{
		"127.0.0.1": true, "::1": true, "10.0.0.1": true, "172.16.3.4": true, "192.168.1.1": true,
		"169.254.169.254": true, "fe80::1": true, "0.0.0.0": true, "::": true, "fd00::1": true, "100.64.1.1": true,
		"::ffff:127.0.0.1": true, "8.8.8.8": false, "2606:4700::1111": false,
		"10.1.2.3": false, "127.0.0.2": false,
	} {
		if got := g.Forbidden(netip.MustParseAddr(addr)); got != want {
			t.Errorf("%s: forbidden %v, want %v", addr, got, want)
		}
	}
	if err := g.Control("tcp", "127.0.0.1:80", nil); !errors.Is(err, ErrForbidden) {
		t.Errorf("dial loopback: %v", err)
	}
	if err := g.Control("tcp", "127.0.0.2:80", nil); err != nil {
		t.Errorf("dial allowed: %v", err)
	}
}

func TestCheckHost(t *testing.T) {
	g := New(nil, nil)
	for host, want := range map[string]Resolution{
		"127.0.0.1": Refused, "[::1]": Refused, "localhost": Refused, "93.184.215.14": Allowed,
		"no-such-host.invalid": Unresolved,
	} {
		if got, _ := g.CheckHost(context.Background(), host); got != want {
			t.Errorf("%s: %v, want %v", host, got, want)
		}
	}
	if _, err := ParseNetworks("10.0.0.0/33"); err == nil {
		t.Error("bad CIDR accepted")
	}
}
