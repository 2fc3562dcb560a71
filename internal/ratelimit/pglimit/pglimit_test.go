package pglimit

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/linkd/linkd/eventstore/postgres"
	"github.com/linkd/linkd/internal/ratelimit"
	"github.com/linkd/linkd/internal/testsupport/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// database is a fresh database with linkd's schema.
func database(t testing.TB) string {
	t.Helper()
	dsn := pgtest.DSN(t)
	if err := postgres.Migrate(t.Context(), dsn); err != nil {
		t.Fatal(err)
	}
	return dsn
}

// instances opens n Stores on one database: n linkd instances.
func instances(t testing.TB, dsn string, n int) []*Store {
	t.Helper()
	var ss []*Store
	for range n {
		s, err := Open(dsn, Options{PruneEvery: -1})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		ss = append(ss, s)
	}
	return ss
}

// The PostgreSQL backend decides exactly as the in-memory Limiter, headers
// included, over a random sequence of keys and times.
func TestAllowMatchesTheLimiter(t *testing.T) {
	t.Parallel()
	s := instances(t, database(t), 1)[0]
	mem := ratelimit.New()
	rng := rand.New(rand.NewPCG(1, 2))
	now := t0
	for i := range 600 {
		key := fmt.Sprintf("k%d", rng.IntN(3))
		limit, per := 5, time.Minute
		if key == "k2" {
			limit, per = 7, time.Hour // not divisible
		}
		now = now.Add(time.Duration(rng.IntN(8000)) * time.Millisecond)
		want := mem.Allow(key, limit, per, now)
		got, err := s.Allow(t.Context(), key, limit, per, now)
		if err != nil {
			t.Fatal(err)
		}
		if got.Allowed != want.Allowed || got.Limit != want.Limit || got.Remaining != want.Remaining ||
			!got.Reset.Equal(want.Reset) || got.RetryAfter != want.RetryAfter {
			t.Fatalf("request %d (%s at +%v): got %+v, want %+v", i, key, now.Sub(t0), got, want)
		}
	}
	if d, err := s.Allow(t.Context(), "none", 0, time.Hour, now); err != nil || d.Allowed {
		t.Errorf("limit 0: %+v, %v", d, err)
	}
}

// A client spreading requests over three instances gets what one instance
// would give it, not three times as much: at one moment from many
// goroutines at once, and as a stream of 50 a second over a period.
func TestLimitHoldsForTheDeployment(t *testing.T) {
	t.Parallel()
	ss := instances(t, database(t), 3)
	ctx := t.Context()

	t.Run("burst", func(t *testing.T) {
		const limit = 100
		var allowed atomic.Int64
		var wg sync.WaitGroup
		for g := range 12 {
			wg.Go(func() {
				for range 3 * limit / 12 {
					d, err := ss[g%3].Allow(ctx, "burst", limit, time.Hour, t0)
					if err != nil {
						t.Error(err)
						return
					}
					if d.Allowed {
						allowed.Add(1)
					}
				}
			})
		}
		wg.Wait()
		if n := allowed.Load(); n != limit {
			t.Errorf("%d of %d requests at one moment allowed, want %d", n, 3*limit, limit)
		}
	})

	t.Run("50 a second", func(t *testing.T) {
		// 100 a minute; 50 requests a second for 30 s, request i at
		// t0 + 20ms×i to instance i%3, the three instances' streams sent
		// concurrently. One limiter alone allows the burst and one
		// request per 0.6 s after it.
		const limit, requests = 100, 1500
		per, step := time.Minute, 20*time.Millisecond
		mem := ratelimit.New()
		want := 0
		for i := range requests {
			if mem.Allow("stream", limit, per, t0.Add(time.Duration(i)*step)).Allowed {
				want++
			}
		}
		perInstance := 0 // what three in-memory limiters would allow
		for j := range 3 {
			l := ratelimit.New()
			for i := j; i < requests; i += 3 {
				if l.Allow("stream", limit, per, t0.Add(time.Duration(i)*step)).Allowed {
					perInstance++
				}
			}
		}
		var allowed atomic.Int64
		var wg sync.WaitGroup
		for j := range 3 {
			wg.Go(func() {
				for i := j; i < requests; i += 3 {
					d, err := ss[j].Allow(ctx, "stream", limit, per, t0.Add(time.Duration(i)*step))
					if err != nil {
						t.Error(err)
						return
					}
					if d.Allowed {
						allowed.Add(1)
					}
				}
			})
		}
		wg.Wait()
		n := int(allowed.Load())
		t.Logf("allowed %d of %d over 3 instances; one limiter: %d; three per-instance limiters: %d", n, requests, want, perInstance)
		if n > want*110/100 {
			t.Errorf("allowed %d, more than 10%% over the %d of one limiter", n, want)
		}
		if n < want*90/100 {
			t.Errorf("allowed %d, far below the %d of one limiter", n, want)
		}
	})
}

// Wrong passwords spread over three instances: a client gets its five (at
// most three more: here none), a target its thirty, even when every guess
// is sent at once.
func TestAttemptsHoldForTheDeployment(t *testing.T) {
	t.Parallel()
	ss := instances(t, database(t), 3)
	ctx := t.Context()
	const perClient, perTarget = 5, 30
	window := time.Minute
	try := func(target, client string, at time.Time, i int) bool {
		ok, err := ss[i%3].TryAttempt(ctx, target, client, at, perClient, perTarget, window)
		if err != nil {
			t.Error(err)
		}
		return ok
	}
	count := func(n int, f func(i int) bool) int {
		var got atomic.Int64
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				if f(i) {
					got.Add(1)
				}
			})
		}
		wg.Wait()
		return int(got.Load())
	}

	// One client, 50 guesses at once over the instances.
	if n := count(50, func(i int) bool { return try("link-1", "client-a", t0.Add(time.Duration(i)), i) }); n != perClient {
		t.Errorf("one client: %d guesses counted, want %d", n, perClient)
	}
	// A stream of 50 a second for two windows: five per window.
	n := 0
	for i := range 6000 { // 120 s
		if try("link-2", "client-b", t0.Add(time.Duration(i)*20*time.Millisecond), i) {
			n++
		}
	}
	if want := perClient * 2; n > want+3 || n < want {
		t.Errorf("a stream of 50/s over 2 min: %d guesses, want %d (at most 3 more)", n, want)
	}
	// Many clients at once: the target takes thirty.
	if n := count(200, func(i int) bool { return try("link-3", fmt.Sprintf("c%d", i), t0, i) }); n != perTarget {
		t.Errorf("many clients: %d guesses counted, want %d", n, perTarget)
	}
	// After the window, the owner may try again.
	if !try("link-3", "owner", t0.Add(window+time.Second), 0) {
		t.Error("the target still refuses after the window")
	}
}

// Undo takes back one attempt, the one of that client at that time.
func TestUndoAttempt(t *testing.T) {
	t.Parallel()
	s := instances(t, database(t), 1)[0]
	ctx := t.Context()
	try := func(client string, at time.Time) bool {
		ok, err := s.TryAttempt(ctx, "l", client, at, 2, 10, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	if !try("a", t0) || !try("a", t0.Add(time.Second)) {
		t.Fatal("first two refused")
	}
	if try("a", t0.Add(2*time.Second)) {
		t.Fatal("third allowed")
	}
	if err := s.UndoAttempt(ctx, "l", "a", t0.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := s.UndoAttempt(ctx, "l", "b", t0); err != nil { // not there: nothing happens
		t.Fatal(err)
	}
	if !try("a", t0.Add(3*time.Second)) {
		t.Error("refused after an undo")
	}
	if try("a", t0.Add(4*time.Second)) {
		t.Error("the undo took back more than one")
	}
}

// Prune deletes what holds nothing any more, and nothing else.
func TestPrune(t *testing.T) {
	t.Parallel()
	s := instances(t, database(t), 1)[0]
	ctx := t.Context()
	for i := range 10 {
		if _, err := s.Allow(ctx, fmt.Sprintf("old%d", i), 10, time.Minute, t0); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.TryAttempt(ctx, "old", "a", t0, 5, 30, time.Minute); err != nil {
		t.Fatal(err)
	}
	later := t0.Add(time.Hour)
	if _, err := s.Allow(ctx, "new", 10, time.Hour, later); err != nil {
		t.Fatal(err)
	}
	n, err := s.Prune(ctx, later)
	if err != nil || n != 11 {
		t.Fatalf("pruned %d rows (%v), want 11", n, err)
	}
	d, err := s.Allow(ctx, "new", 10, time.Hour, later)
	if err != nil || d.Remaining != 8 {
		t.Errorf("the live key after pruning: %+v, %v", d, err)
	}
}

// With the shared backend unreachable, the limits fall back to the
// instance's own quickly, and come back to the backend once it answers.
func TestFailOpen(t *testing.T) {
	t.Parallel()
	c := pgtest.Start(t, pgtest.Options{TestSettings: true})
	dsn := c.NewDatabase(t)
	if err := postgres.Migrate(t.Context(), dsn); err != nil {
		t.Fatal(err)
	}
	s, err := Open(dsn, Options{PruneEvery: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// A timeout a loaded machine's PostgreSQL always meets: a refused
	// connection (the server down) fails at once anyway.
	guard := ratelimit.NewGuard("test", 3*time.Second, 100*time.Millisecond, nil)
	lim := ratelimit.NewShared(s, ratelimit.New(), guard)
	att := ratelimit.NewSharedAttempts(s, ratelimit.NewAttempts(5, 30, time.Minute), guard, "link|")
	ctx := t.Context()
	if d := lim.Allow(ctx, "k", 3, time.Hour, t0); !d.Allowed || d.Remaining != 2 || guard.Fallbacks() != 0 {
		t.Fatalf("first request: %+v, %d fallbacks", d, guard.Fallbacks())
	}
	// A clean stop: a crash (Stop(true)) would empty the unlogged tables.
	if err := c.Stop(false); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	d := lim.Allow(ctx, "k", 3, time.Hour, t0)
	if el := time.Since(start); el > time.Second {
		t.Errorf("the first request with the backend down took %v", el)
	}
	if !d.Allowed || d.Remaining != 1 { // the local limiter held this instance's count
		t.Errorf("with the backend down: %+v, want allowed with 1 left", d)
	}
	if !att.Try(ctx, "a", "l", t0) {
		t.Error("a password attempt was refused with the backend down")
	}
	if guard.Fallbacks() < 2 {
		t.Errorf("%d fallbacks", guard.Fallbacks())
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		var err error
		if _, err = s.Allow(ctx, "probe", 3, time.Hour, t0); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the backend does not answer after the restart: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(150 * time.Millisecond) // the rest ends
	if d := lim.Allow(ctx, "k", 3, time.Hour, t0); !d.Allowed || d.Remaining != 1 {
		t.Errorf("back on the backend: %+v, want its count (1 left)", d)
	}
}

// An unreachable server fails a request with an error, not a hang.
func TestUnreachable(t *testing.T) {
	t.Parallel()
	s, err := Open("postgres://nobody@127.0.0.1:1/none?sslmode=disable&connect_timeout=1", Options{PruneEvery: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	defer cancel()
	if _, err := s.Allow(ctx, "k", 1, time.Hour, t0); err == nil || errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Allow on a closed port: %v, want a connection error", err)
	}
}

// BenchmarkAllow is one request's cost on the PostgreSQL backend (one
// round trip to a local server, the statement, its row lock) against the
// in-memory Limiter: one key, 10,000 keys, and parallel; and a wrong
// password's. The server runs with its durable defaults (fsync and
// synchronous_commit on), as users run it; "logged" is the same table
// without UNLOGGED, to show what that spares.
func BenchmarkAllow(b *testing.B) {
	c := pgtest.Start(b, pgtest.Options{})
	dsn := c.NewDatabase(b)
	if err := postgres.Migrate(context.Background(), dsn); err != nil {
		b.Fatal(err)
	}
	s := instances(b, dsn, 1)[0]
	ctx := context.Background()
	keys := make([]string, 10_000)
	for i := range keys {
		keys[i] = fmt.Sprintf("links|link_id:0190a1b2-0000-7000-8000-%012d|user:u", i)
	}
	var step atomic.Int64 // every call a later time: never refused
	run := func(b *testing.B, allow func(key string, now time.Time)) {
		b.Run("one key", func(b *testing.B) {
			for b.Loop() {
				allow(keys[0], t0.Add(time.Duration(step.Add(1))*8*time.Second))
			}
		})
		b.Run("10k keys", func(b *testing.B) {
			for b.Loop() {
				i := step.Add(1)
				allow(keys[i%int64(len(keys))], t0.Add(time.Duration(i)*8*time.Second))
			}
		})
		b.Run("parallel", func(b *testing.B) {
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					i := step.Add(1)
					allow(keys[i%int64(len(keys))], t0.Add(time.Duration(i)*8*time.Second))
				}
			})
		})
	}
	pg := func(b *testing.B, key string, now time.Time) {
		if _, err := s.Allow(ctx, key, 500, time.Hour, now); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("postgres", func(b *testing.B) {
		run(b, func(key string, now time.Time) { pg(b, key, now) })
	})
	b.Run("postgres logged", func(b *testing.B) {
		if _, err := s.pool.Exec(ctx, "ALTER TABLE linkd_rate_limits SET LOGGED"); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { s.pool.Exec(ctx, "ALTER TABLE linkd_rate_limits SET UNLOGGED") })
		run(b, func(key string, now time.Time) { pg(b, key, now) })
	})
	b.Run("memory", func(b *testing.B) {
		l := ratelimit.New()
		run(b, func(key string, now time.Time) { l.Allow(key, 500, time.Hour, now) })
	})
	b.Run("password attempt", func(b *testing.B) {
		for b.Loop() {
			i := step.Add(1)
			if _, err := s.TryAttempt(ctx, keys[i%int64(len(keys))], "client", t0.Add(time.Duration(i)*time.Minute), 5, 30, time.Minute); err != nil {
				b.Fatal(err)
			}
		}
	})
}
