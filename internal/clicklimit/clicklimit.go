// Package clicklimit bounds the clicks one visitor can make count on one
// link in an hour, in fixed memory: a count-min sketch per clock hour.
//
// A visitor is a client network (an IPv4 address, an IPv6 /64: rotating
// addresses within it changes nothing) with its user agent, as linkd's
// visitor hash is an address with its user agent: people behind one NAT
// with different browsers, and a load test that mixes user agents, are
// several visitors. The sketch keeps only counters, no key: no address is
// stored, even in memory. It may
// overestimate a count (collisions), never underestimate it: with 2^21
// counters, 4 per key, 100 million clicks in an hour add about 190 to a
// counter, far below the default limit of 1,000, which no person reaches.
//
// A key's 4 counters lie in one 64-byte line of the sketch (a blocked
// count-min sketch): a click costs one cache miss, not four. Under the
// redirect load of many links the sketch's lines do not stay in a core's
// caches, and its four misses per click were 2% of the server's CPU
// (ADR 0009).
//
// A second limit counts the clicks of a whole client network on a link,
// whatever its user agents: one address sending a new user agent with each
// request is a new visitor each time, and without it could make every
// click count. It is far above the per-visitor limit (default 10,000), so
// a NAT of many people stays counted, and its key lies in the same sketch
// (one more cache line per click).
package clicklimit

import (
	"hash/maphash"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"
)

const (
	rows    = 4       // counters per key
	perLine = 16      // uint32 counters in a 64-byte cache line
	lines   = 1 << 17 // 2^17 lines x 64 bytes = 8 MiB per hour
)

// Limiter counts clicks per (visitor, link) and per (network, link) in the
// current clock hour.
type Limiter struct {
	limit    uint32 // per visitor and link; 0: none
	netLimit uint32 // per network and link; 0: none
	seed     maphash.Seed

	mu     sync.Mutex // serialises the start of a new hour
	cur    atomic.Pointer[sketch]
	denied atomic.Uint64
}

// sketch is one hour's counters, lines*perLine of them.
type sketch struct {
	hour int64
	c    []uint32
}

// New returns a limiter of limit counted clicks per visitor, link and hour
// and of network counted clicks per client network, link and hour; a limit
// of 0 is none, and nil is returned when both are 0.
func New(limit, network int) *Limiter {
	if limit <= 0 && network <= 0 {
		return nil
	}
	clamp := func(n int) uint32 { return uint32(min(max(n, 0), 1<<31)) }
	return &Limiter{limit: clamp(limit), netLimit: clamp(network), seed: maphash.MakeSeed()}
}

// Key identifies a visitor on a link, and its network on the link: their
// counters' indexes in the sketch.
type Key struct {
	visitor, network [rows]uint32
}

// KeyOf is the key of a visitor (client network and user agent) on a link.
func (l *Limiter) KeyOf(network netip.Addr, userAgent, linkID string) Key {
	b := network.As16()
	var k Key
	if l.limit > 0 {
		var h maphash.Hash
		h.SetSeed(l.seed)
		h.Write(b[:])
		h.WriteString(userAgent)
		h.WriteByte(0)
		h.WriteString(linkID)
		k.visitor = counters(h.Sum64())
	}
	if l.netLimit > 0 {
		var h maphash.Hash
		h.SetSeed(l.seed)
		h.WriteByte(1) // not a visitor's key: no user agent
		h.Write(b[:])
		h.WriteString(linkID)
		k.network = counters(h.Sum64())
	}
	return k
}

// counters places a key's hash: a line, then 4 distinct counters of its
// 16: first + i*step mod 16 with step odd.
func counters(x uint64) [rows]uint32 {
	line := uint32(x%lines) * perLine
	first, step := uint32(x>>32)%perLine, uint32(x>>40)%(perLine/2)*2+1
	var c [rows]uint32
	for i := range c {
		c[i] = line + (first+uint32(i)*step)%perLine
	}
	return c
}

// sketch returns the counters of now's hour, starting a new sketch when
// the hour changed.
func (l *Limiter) sketch(now time.Time) []uint32 {
	hour := now.Unix() / 3600
	if s := l.cur.Load(); s != nil && s.hour == hour {
		return s.c
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.cur.Load()
	if s == nil || s.hour != hour {
		s = &sketch{hour: hour, c: make([]uint32, lines*perLine)}
		l.cur.Store(s)
	}
	return s.c
}

// Over reports whether the visitor has made limit clicks on the link count
// this hour, or its network netLimit clicks: the next is not to be counted.
func (l *Limiter) Over(k Key, now time.Time) bool {
	if l == nil {
		return false
	}
	c := l.sketch(now)
	if full(c, &k.visitor, l.limit) || full(c, &k.network, l.netLimit) {
		l.denied.Add(1)
		return true
	}
	return false
}

// full reports whether every counter of a key has reached limit (never,
// for a limit of 0).
func full(c []uint32, k *[rows]uint32, limit uint32) bool {
	if limit == 0 {
		return false
	}
	for _, i := range k {
		if atomic.LoadUint32(&c[i]) < limit {
			return false
		}
	}
	return true
}

// Take is Over, and when the visitor is not over the limit, Add at once,
// while the key's cache line is at hand: under the load of many links the
// line is gone again by the time the click is recorded, and Over and Add
// apart cost two misses. A click that then fails to be recorded is counted
// all the same, which the sketch allows (it may overestimate a count,
// never underestimate one).
func (l *Limiter) Take(k Key, now time.Time) (over bool) {
	if l.Over(k, now) {
		return true
	}
	l.Add(k, now)
	return false
}

// Add counts a click of the visitor on the link.
func (l *Limiter) Add(k Key, now time.Time) {
	if l == nil {
		return
	}
	c := l.sketch(now)
	if l.limit > 0 {
		for _, i := range k.visitor {
			atomic.AddUint32(&c[i], 1)
		}
	}
	if l.netLimit > 0 {
		for _, i := range k.network {
			atomic.AddUint32(&c[i], 1)
		}
	}
}

// Uncounted is how many accesses Over has refused to count so far.
func (l *Limiter) Uncounted() uint64 {
	if l == nil {
		return 0
	}
	return l.denied.Load()
}
