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

// Limiter counts clicks per (visitor, link) in the current clock hour.
type Limiter struct {
	limit uint32
	seed  maphash.Seed

	mu     sync.Mutex // serialises the start of a new hour
	cur    atomic.Pointer[sketch]
	denied atomic.Uint64
}

// sketch is one hour's counters, lines*perLine of them.
type sketch struct {
	hour int64
	c    []uint32
}

// New returns a limiter of limit counted clicks per visitor, link and hour;
// nil for a limit of 0 (no limit).
func New(limit int) *Limiter {
	if limit <= 0 {
		return nil
	}
	return &Limiter{limit: uint32(min(limit, 1<<31)), seed: maphash.MakeSeed()}
}

// Key identifies a visitor on a link: its counters' indexes in the sketch.
type Key [rows]uint32

// KeyOf is the key of a visitor (client network and user agent) on a link.
func (l *Limiter) KeyOf(network netip.Addr, userAgent, linkID string) Key {
	var h maphash.Hash
	h.SetSeed(l.seed)
	b := network.As16()
	h.Write(b[:])
	h.WriteString(userAgent)
	h.WriteByte(0)
	h.WriteString(linkID)
	x := h.Sum64()
	// A line, then 4 distinct counters of its 16: first + i*step mod 16
	// with step odd.
	line := uint32(x%lines) * perLine
	first, step := uint32(x>>32)%perLine, uint32(x>>40)%(perLine/2)*2+1
	var k Key
	for i := range k {
		k[i] = line + (first+uint32(i)*step)%perLine
	}
	return k
}

// counters returns the sketch of now's hour, starting a new one when the
// hour changed.
func (l *Limiter) counters(now time.Time) []uint32 {
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
// this hour: the next is not to be counted.
func (l *Limiter) Over(k Key, now time.Time) bool {
	if l == nil {
		return false
	}
	c := l.counters(now)
	for _, i := range k {
		if atomic.LoadUint32(&c[i]) < l.limit {
			return false
		}
	}
	l.denied.Add(1)
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
	c := l.counters(now)
	for _, i := range k {
		atomic.AddUint32(&c[i], 1)
	}
}

// Uncounted is how many accesses Over has refused to count so far.
func (l *Limiter) Uncounted() uint64 {
	if l == nil {
		return 0
	}
	return l.denied.Load()
}
