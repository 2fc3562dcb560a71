// Package ratelimit counts API requests per key ("link:<id>",
// "domains:<workspace>", ...) against limits such as 500 per hour, with the
// generic cell rate algorithm (GCRA), and wrong passwords per client and
// target in a sliding window (Attempts): in memory for one instance, or for
// a whole deployment through a shared Backend and AttemptsBackend
// (internal/ratelimit/pglimit), which fail open to the in-memory ones
// (Shared, SharedAttempts, Guard; ADR 0107).
//
// GCRA keeps one number per key, its theoretical arrival time (TAT): the
// moment at which the key's quota would be whole again. A request at time
// now is allowed when TAT+E-now <= limit×E (E = per/limit, the emission
// interval) and then moves TAT to max(TAT, now)+E. So a fresh key may spend
// its whole limit in a burst, and one request's worth comes back every E
// (7.2 s for 500 per hour). A key whose TAT has passed is exactly a fresh
// key, which is what keeps memory bounded: such keys are dropped.
//
// Why not github.com/throttled/throttled/v2 (v2.15.0, also GCRA): its
// in-memory store needs github.com/hashicorp/golang-lru, which is not in
// this module's graph; it bounds memory by LRU eviction, which forgets the
// debt of busy keys under pressure instead of dropping only idle ones; a
// limiter has one fixed quota, where callers here pass the limit per call
// (500 or 100, and plan-based limits later); it reads the clock itself, so
// tests cannot pass time; and its reset is relative. The algorithm itself
// is a dozen lines. Measured on the shared 2-core build machine (under
// load, so noisy): this Allow 145-220 ns for one key, 230-420 ns cycling
// over 10k keys, no allocation; throttled's GCRA over a minimal map store
// (its memstore cannot be built here) about 350 ns for one key.
package ratelimit

import (
	"hash/maphash"
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// Limits of the interface specification, section 8.
const (
	Window = time.Hour
	// PerResource is the limit per project, workspace, link and stats
	// resource.
	PerResource = 500
	// PerDomain is the limit for domain operations.
	PerDomain = 100
)

// Defaults of a Limiter.
const (
	DefaultMaxKeys    = 1 << 20
	DefaultSweepEvery = time.Minute
	shards            = 64
)

// Decision is the outcome of one Allow.
type Decision struct {
	Allowed bool
	// Limit is the number of requests allowed per period.
	Limit int
	// Remaining is how many more requests would be allowed right now.
	Remaining int
	// Reset is when the key's quota is whole again (Remaining == Limit).
	Reset time.Time
	// RetryAfter is, for a refused request, how long until one request is
	// allowed again; 0 when allowed.
	RetryAfter time.Duration
}

// Limiter holds the state of every key. It is safe for concurrent use.
type Limiter struct {
	seed        maphash.Seed
	shards      [shards]shard
	maxPerShard int
	sweepEvery  int64
}

type shard struct {
	mu        sync.Mutex
	tat       map[string]int64 // key -> TAT, Unix nanoseconds
	nextSweep int64
}

// Option configures a Limiter.
type Option func(*Limiter)

// WithMaxKeys bounds the keys held (default DefaultMaxKeys, about 100 MB at
// most with keys of 40 bytes). Idle keys (quota whole again) are dropped
// first; when the bound is still reached a new key evicts an arbitrary busy
// one, whose next request then starts with a whole quota.
func WithMaxKeys(n int) Option {
	return func(l *Limiter) {
		if n > 0 {
			l.maxPerShard = max(1, n/shards)
		}
	}
}

// WithSweepEvery sets how often (in the time passed to Allow) each shard
// drops its idle keys; default DefaultSweepEvery.
func WithSweepEvery(d time.Duration) Option {
	return func(l *Limiter) {
		if d > 0 {
			l.sweepEvery = int64(d)
		}
	}
}

// New returns an empty Limiter.
func New(opts ...Option) *Limiter {
	l := &Limiter{
		seed:        maphash.MakeSeed(),
		maxPerShard: DefaultMaxKeys / shards,
		sweepEvery:  int64(DefaultSweepEvery),
	}
	for _, o := range opts {
		o(l)
	}
	for i := range l.shards {
		l.shards[i].tat = make(map[string]int64)
	}
	return l
}

// Allow counts one request of key at time now against limit requests per
// per, and says whether it may proceed. Use a key with one limit and period
// only. limit < 1 or per <= 0 allows nothing.
func (l *Limiter) Allow(key string, limit int, per time.Duration, now time.Time) Decision {
	g, ok := NewGCRA(limit, per)
	if !ok {
		return Nothing(limit, per, now)
	}
	n := now.UnixNano()

	s := &l.shards[maphash.String(l.seed, key)%shards]
	s.mu.Lock()
	if n >= s.nextSweep {
		s.sweep(n)
		s.nextSweep = n + l.sweepEvery
	}
	tat, known := s.tat[key]
	newTAT, allowed := g.Take(tat, n)
	if !allowed {
		s.mu.Unlock()
		return g.Refused(tat, n)
	}
	if !known && len(s.tat) >= l.maxPerShard {
		s.sweep(n)
		for k := range s.tat { // still full: evict an arbitrary key
			if len(s.tat) < l.maxPerShard {
				break
			}
			delete(s.tat, k)
		}
	}
	s.tat[key] = newTAT
	s.mu.Unlock()
	return g.Granted(newTAT, n)
}

// GCRA is the arithmetic of one limit, shared by the Limiter and the
// deployment-wide backends (internal/ratelimit/pglimit) so that both
// answer alike. Times are Unix nanoseconds.
type GCRA struct {
	Limit int
	// Interval is the emission interval, per/limit: one request's worth
	// of quota comes back every Interval.
	Interval int64
	// Burst is Limit × Interval (per, give or take rounding): a key may be
	// at most that far in debt.
	Burst int64
}

// NewGCRA returns the arithmetic of limit requests per per; false when
// limit < 1 or per <= 0 (allow nothing: see Nothing).
func NewGCRA(limit int, per time.Duration) (GCRA, bool) {
	if limit < 1 || per <= 0 {
		return GCRA{}, false
	}
	e := max(int64(per)/int64(limit), 1)
	return GCRA{Limit: limit, Interval: e, Burst: e * int64(limit)}, true
}

// Take says whether a request at n is allowed for a key whose theoretical
// arrival time is tat (0 or any time before n for a fresh key), and the
// key's TAT after it: max(tat, n) + Interval, to be stored when allowed.
// The request is allowed when that TAT is at most Burst after n.
func (g GCRA) Take(tat, n int64) (newTAT int64, allowed bool) {
	newTAT = max(tat, n) + g.Interval
	return newTAT, newTAT-g.Burst <= n
}

// Granted is the decision for a request at n that was allowed and moved
// the key's TAT to newTAT.
func (g GCRA) Granted(newTAT, n int64) Decision {
	return Decision{
		Allowed:   true,
		Limit:     g.Limit,
		Remaining: int(max(min((n+g.Burst-newTAT)/g.Interval, int64(g.Limit)), 0)),
		Reset:     time.Unix(0, newTAT),
	}
}

// Refused is the decision for a request at n that was refused, the key's
// TAT being tat.
func (g GCRA) Refused(tat, n int64) Decision {
	tat = max(tat, n)
	return Decision{
		Limit:      g.Limit,
		Remaining:  0,
		Reset:      time.Unix(0, tat),
		RetryAfter: time.Duration(max(tat+g.Interval-g.Burst-n, 1)),
	}
}

// Nothing is the decision of a limit that allows nothing (limit < 1 or
// per <= 0).
func Nothing(limit int, per time.Duration, now time.Time) Decision {
	return Decision{Limit: max(limit, 0), Reset: now, RetryAfter: max(per, time.Second)}
}

// sweep drops keys whose quota is whole again at n.
func (s *shard) sweep(n int64) {
	for k, tat := range s.tat {
		if tat <= n {
			delete(s.tat, k)
		}
	}
}

// Len returns the number of keys held.
func (l *Limiter) Len() int {
	total := 0
	for i := range l.shards {
		s := &l.shards[i]
		s.mu.Lock()
		total += len(s.tat)
		s.mu.Unlock()
	}
	return total
}

// SetHeaders sets X-RateLimit-Limit, X-RateLimit-Remaining and
// X-RateLimit-Reset (Unix seconds, rounded up), and Retry-After (seconds,
// rounded up, at least 1) when the request was refused.
func (d Decision) SetHeaders(h http.Header) {
	h.Set("X-RateLimit-Limit", strconv.Itoa(d.Limit))
	h.Set("X-RateLimit-Remaining", strconv.Itoa(d.Remaining))
	h.Set("X-RateLimit-Reset", strconv.FormatInt(ceilUnix(d.Reset), 10))
	if !d.Allowed {
		h.Set("Retry-After", strconv.FormatInt(d.RetryAfterSeconds(), 10))
	}
}

// RetryAfterSeconds is RetryAfter in whole seconds, rounded up, at least 1
// for a refused request; 0 when allowed.
func (d Decision) RetryAfterSeconds() int64 {
	if d.Allowed {
		return 0
	}
	return max(1, int64(math.Ceil(d.RetryAfter.Seconds())))
}

// RefusalBody is the body of a 429 answer.
const RefusalBody = `{"detail":"Rate limit exceeded"}`

// WriteRefusal answers a refused request: the headers of SetHeaders, status
// 429 and RefusalBody as JSON.
func (d Decision) WriteRefusal(w http.ResponseWriter) {
	h := w.Header()
	d.SetHeaders(h)
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(RefusalBody)))
	w.WriteHeader(http.StatusTooManyRequests)
	_, _ = w.Write([]byte(RefusalBody))
}

func ceilUnix(t time.Time) int64 {
	s := t.Unix()
	if t.Nanosecond() > 0 {
		s++
	}
	return s
}
