package enrich

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"hash"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"
)

// visitorHashBytes is how much of the HMAC-SHA256 is kept (hex doubles it).
const visitorHashBytes = 16

// dayKey holds the visitor-hash key of one UTC day, HMAC(secret,
// "YYYY-MM-DD"), and a pool of HMAC states keyed with it: an hmac.Hash resets
// to its keyed state cheaply, so a pooled one costs only the message blocks.
type dayKey struct {
	day  int64 // days since 1970-01-01 UTC
	pool sync.Pool
}

type visitorHasher struct {
	h   hash.Hash
	buf []byte
	sum [sha256.Size]byte
}

// visitorKeys computes the daily key once per day and caches it.
type visitorKeys struct {
	secret []byte
	cur    atomic.Pointer[dayKey]
}

func newVisitorKeys(secret []byte) *visitorKeys {
	return &visitorKeys{secret: append([]byte(nil), secret...)}
}

func utcDay(t time.Time) int64 {
	s := t.Unix()
	d := s / 86400
	if s%86400 < 0 {
		d--
	}
	return d
}

func (v *visitorKeys) newDayKey(day int64) *dayKey {
	m := hmac.New(sha256.New, v.secret)
	m.Write([]byte(time.Unix(day*86400, 0).UTC().Format(time.DateOnly)))
	key := m.Sum(nil)
	dk := &dayKey{day: day}
	dk.pool.New = func() any {
		return &visitorHasher{h: hmac.New(sha256.New, key), buf: make([]byte, 0, 256)}
	}
	return dk
}

// forDay returns the key of the UTC day of t. The current day's key is
// cached; a request for a later day replaces it. An earlier day (a late
// event, or a request racing midnight) gets a key computed on the spot.
func (v *visitorKeys) forDay(t time.Time) *dayKey {
	day := utcDay(t)
	cur := v.cur.Load()
	if cur != nil && cur.day == day {
		return cur
	}
	dk := v.newDayKey(day)
	if cur == nil || day > cur.day {
		v.cur.CompareAndSwap(cur, dk)
	}
	return dk
}

// hash returns hex(HMAC-SHA256(dayKey, ip + "\x00" + ua)[:16]). The address
// is written in its canonical text form (IPv4-mapped addresses unmapped) and
// never kept.
func (v *visitorKeys) hash(ip netip.Addr, ua string, now time.Time) string {
	dk := v.forDay(now)
	vh := dk.pool.Get().(*visitorHasher)
	b := vh.buf[:0]
	if ip.IsValid() {
		b = ip.WithZone("").Unmap().AppendTo(b)
	}
	b = append(b, 0)
	b = append(b, ua...)
	vh.h.Reset()
	vh.h.Write(b)
	sum := vh.h.Sum(vh.sum[:0])
	var out [2 * visitorHashBytes]byte
	hex.Encode(out[:], sum[:visitorHashBytes])
	if cap(b) <= 4096 {
		vh.buf = b[:0]
	}
	dk.pool.Put(vh)
	return string(out[:])
}
