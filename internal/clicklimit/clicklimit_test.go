package clicklimit

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"testing"
	"time"
)

func TestLimitPerVisitorLinkAndHour(t *testing.T) {
	l := New(3, 0)
	now := time.Date(2026, 11, 24, 12, 10, 0, 0, time.UTC)
	a := l.KeyOf(netip.MustParseAddr("203.0.113.7"), "ua", "link-1")
	counted := 0
	for i := 0; i < 10; i++ {
		if !l.Over(a, now) {
			l.Add(a, now)
			counted++
		}
	}
	if counted != 3 || l.Uncounted() != 7 {
		t.Fatalf("counted %d, uncounted %d; want 3 and 7", counted, l.Uncounted())
	}
	for name, k := range map[string]Key{
		"another link":       l.KeyOf(netip.MustParseAddr("203.0.113.7"), "ua", "link-2"),
		"another address":    l.KeyOf(netip.MustParseAddr("203.0.113.8"), "ua", "link-1"),
		"another user agent": l.KeyOf(netip.MustParseAddr("203.0.113.7"), "ua2", "link-1"),
	} {
		if l.Over(k, now) {
			t.Errorf("%s is over the limit", name)
		}
	}
	if l.Over(a, now.Add(50*time.Minute)) {
		t.Errorf("still over the limit in the next hour")
	}
	if New(0, 0) != nil || New(0, 0).Over(a, now) {
		t.Errorf("a zero limit limits")
	}
}

// One address sending a new user agent with every click is a new visitor
// each time; the network's own limit still stops its clicks counting past
// netLimit on a link, and leaves its other links and other networks alone.
func TestNetworkLimitHoldsAgainstRotatingUserAgents(t *testing.T) {
	l := New(1000, 50)
	now := time.Date(2026, 11, 24, 12, 10, 0, 0, time.UTC)
	ip := netip.MustParseAddr("203.0.113.7")
	counted := 0
	for i := 0; i < 200; i++ {
		if !l.Take(l.KeyOf(ip, fmt.Sprintf("Mozilla/5.0 rotating/%d", i), "link-1"), now) {
			counted++
		}
	}
	if counted != 50 {
		t.Fatalf("counted %d clicks with rotating user agents; want the network limit, 50", counted)
	}
	for name, k := range map[string]Key{
		"another link":    l.KeyOf(ip, "Mozilla/5.0 rotating/999", "link-2"),
		"another network": l.KeyOf(netip.MustParseAddr("203.0.113.8"), "Mozilla/5.0 rotating/999", "link-1"),
	} {
		if l.Over(k, now) {
			t.Errorf("%s is over the limit", name)
		}
	}
	// The same network in an IPv6 /64 is one network: callers pass the
	// network, so one /64 prefix is one key whatever the address.
	if l.Over(l.KeyOf(ip, "new", "link-1"), now.Add(time.Hour)) {
		t.Errorf("still over the network limit in the next hour")
	}
	// With the network limit off, rotation is unbounded (the per-visitor
	// limit alone).
	off := New(1000, 0)
	for i := 0; i < 200; i++ {
		if off.Take(off.KeyOf(ip, fmt.Sprintf("ua/%d", i), "link-1"), now) {
			t.Fatalf("click %d refused with the network limit off", i)
		}
	}
	// And the network limit alone works without the per-visitor one.
	only := New(0, 2)
	k := only.KeyOf(ip, "ua", "link-1")
	if only.Take(k, now) || only.Take(k, now) || !only.Take(k, now) {
		t.Errorf("network limit 2 alone: want two clicks counted, then refused")
	}
}

// Many other visitors on many links do not push one visitor over the
// limit (collisions overestimate, but little).
func TestManyVisitorsStayUnderTheirOwnLimit(t *testing.T) {
	l := New(1000, 0)
	now := time.Now()
	for i := 0; i < 2_000_000; i++ {
		ip := netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)})
		l.Add(l.KeyOf(ip, "ua", "link-x"), now)
	}
	me := l.KeyOf(netip.MustParseAddr("198.51.100.1"), "ua", "link-x")
	// 2 M clicks of 4 counters each spread over 2^21 counters add about 4
	// to each: the smallest of a key's 4 counters overestimates by a few
	// at most.
	for i := 0; i < 990; i++ {
		l.Add(me, now)
	}
	if l.Over(me, now) {
		t.Fatalf("990 clicks are over a limit of 1,000 after 2 M others")
	}
	for i := 0; i < 10; i++ {
		l.Add(me, now)
	}
	if !l.Over(me, now) {
		t.Fatalf("1,000 clicks are not over the limit")
	}
}

func BenchmarkOverAndAdd(b *testing.B) {
	l := New(1000, 0)
	now := time.Now()
	ip := netip.MustParseAddr("2001:db8::1")
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		k := l.KeyOf(ip, "Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X)", "0190a1b2-0000-7000-8000-000000000001")
		if !l.Over(k, now) {
			l.Add(k, now)
		}
	}
}

// BenchmarkOverAndAddManyLinks is the redirect load of bench/redirect.sh:
// one address, four user agents, 1,000 links clicked at random, with
// 64 KiB of other memory cleared per click, as the rest of a request's
// work in a server evicts the sketch's lines from the caches. "floor" is
// that work without the limiter: the limiter's cost is the difference.
func BenchmarkOverAndAddManyLinks(b *testing.B) {
	l := New(1000, 0)
	now := time.Now()
	ip := netip.MustParseAddr("203.0.113.7")
	uas := []string{"desktop Chrome", "iPhone Safari", "Android Chrome", "Instagram"}
	var keys []Key
	for i := range 1000 {
		for _, ua := range uas {
			keys = append(keys, l.KeyOf(ip, ua, fmt.Sprintf("0190a1b2-0000-7000-8000-%012d", i)))
		}
	}
	other := make([]byte, 64<<20)
	for _, c := range []struct {
		name string
		l    *Limiter
	}{{"limit", l}, {"floor", nil}} {
		b.Run(c.name, func(b *testing.B) {
			rng := rand.New(rand.NewPCG(1, 2))
			for i := 0; b.Loop(); i++ {
				clear(other[i%1024*65536:][:65536])
				k := keys[rng.IntN(len(keys))]
				if !c.l.Over(k, now) {
					c.l.Add(k, now)
				}
			}
		})
	}
}

// TestTake: Take counts a visitor's clicks until the limit, then refuses
// them without counting, as Over then Add did; other keys are untouched.
func TestTake(t *testing.T) {
	l := New(3, 0)
	now := time.Date(2026, 11, 27, 18, 40, 0, 0, time.UTC)
	a := l.KeyOf(netip.MustParseAddr("203.0.113.7"), "ua", "link-1")
	b := l.KeyOf(netip.MustParseAddr("203.0.113.7"), "ua", "link-2")
	taken := 0
	for range 10 {
		if !l.Take(a, now) {
			taken++
		}
	}
	if taken != 3 || l.Uncounted() != 7 {
		t.Fatalf("took %d, refused %d; want 3 and 7", taken, l.Uncounted())
	}
	if l.Over(b, now) || !l.Over(a, now) {
		t.Fatal("Over disagrees with Take")
	}
	if l.Take(a, now.Add(time.Hour)) {
		t.Fatal("a new hour starts from zero")
	}
	var none *Limiter
	if none.Take(a, now) {
		t.Fatal("no limiter refuses nothing")
	}
}
