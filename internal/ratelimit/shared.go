package ratelimit

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// Backend counts requests for a whole deployment: every instance asks the
// same one (internal/ratelimit/pglimit keeps it in PostgreSQL). Its
// decisions follow GCRA as the Limiter's do.
type Backend interface {
	Allow(ctx context.Context, key string, limit int, per time.Duration, now time.Time) (Decision, error)
}

// AttemptsBackend counts wrong passwords for a whole deployment, as
// Attempts does in memory. TryAttempt counts an attempt (true) or refuses
// it without counting (false); UndoAttempt takes back the attempt of client
// on target at now.
type AttemptsBackend interface {
	TryAttempt(ctx context.Context, target, client string, now time.Time, perClient, perTarget int, window time.Duration) (bool, error)
	UndoAttempt(ctx context.Context, target, client string, now time.Time) error
}

// Defaults of a Guard.
const (
	// DefaultTimeout bounds one question to a shared backend. A server
	// that is down refuses at once; this only bounds one that hangs, and
	// is long enough that a busy machine's PostgreSQL (a tiny upsert taking
	// a few hundred milliseconds under CPU saturation) is not mistaken for
	// a failed one, which would count per instance for DefaultRest.
	DefaultTimeout = time.Second
	// DefaultRest is how long a backend that failed is left alone.
	DefaultRest = 5 * time.Second
)

// Guard makes a shared backend fail open: each question gets a short
// timeout, and a backend that fails (an error, the timeout) is not asked
// again for a rest period, during which the callers answer from their
// local, per-instance state. Refusing traffic because the counters are
// unreachable would turn a limit into an outage; counting per instance for
// a few seconds lets at most a few seconds' worth of requests more through.
// It logs when the backend fails and when it answers again.
type Guard struct {
	name    string
	timeout time.Duration
	rest    time.Duration
	log     *slog.Logger
	now     func() time.Time

	restUntil atomic.Int64 // Unix ns; 0: in service
	mu        sync.Mutex   // serialises the log's state changes
	down      bool
	fallbacks atomic.Uint64
}

// NewGuard guards the backend called name (for the log). timeout and rest
// <= 0 take DefaultTimeout and DefaultRest; log nil discards.
func NewGuard(name string, timeout, rest time.Duration, log *slog.Logger) *Guard {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	if rest <= 0 {
		rest = DefaultRest
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Guard{name: name, timeout: timeout, rest: rest, log: log, now: time.Now}
}

// Do runs f with the guard's timeout unless the backend is resting, and
// reports whether it succeeded; false means: answer locally. A failure
// rests the backend, unless it came from ctx itself (the caller gave up).
func (g *Guard) Do(ctx context.Context, f func(context.Context) error) bool {
	if until := g.restUntil.Load(); until != 0 && g.now().UnixNano() < until {
		g.fallbacks.Add(1)
		return false
	}
	cctx, cancel := context.WithTimeout(ctx, g.timeout)
	err := f(cctx)
	cancel()
	if err == nil {
		if g.restUntil.Load() != 0 {
			g.mu.Lock()
			if g.down {
				g.down = false
				g.restUntil.Store(0)
				g.log.Info(g.name+": shared backend answers again: limits hold for the deployment", "after", g.fallbacks.Load())
			}
			g.mu.Unlock()
		}
		return true
	}
	g.fallbacks.Add(1)
	if ctx.Err() != nil {
		return false // the caller gave up: not the backend's fault
	}
	g.mu.Lock()
	g.restUntil.Store(g.now().Add(g.rest).UnixNano())
	if !g.down {
		g.down = true
		g.log.Warn(g.name+": shared backend failed: limits count per instance until it answers again",
			"err", err, "retry_in", g.rest.String())
	}
	g.mu.Unlock()
	return false
}

// Fallbacks is how many questions were answered locally because the
// backend failed or was resting.
func (g *Guard) Fallbacks() uint64 { return g.fallbacks.Load() }

// Shared limits requests for the whole deployment through a Backend,
// guarded by a Guard: when the backend fails it answers from a local
// Limiter. The local Limiter counts this instance's allowed requests all
// along, so that, should the backend fail, the instance's own share of
// the deployment's debt is still held.
type Shared struct {
	backend Backend
	local   *Limiter
	guard   *Guard
}

// NewShared limits through backend, falling back to local.
func NewShared(backend Backend, local *Limiter, guard *Guard) *Shared {
	return &Shared{backend: backend, local: local, guard: guard}
}

// Allow counts one request of key at now against limit requests per per.
func (s *Shared) Allow(ctx context.Context, key string, limit int, per time.Duration, now time.Time) Decision {
	var d Decision
	if s.guard.Do(ctx, func(ctx context.Context) (err error) {
		d, err = s.backend.Allow(ctx, key, limit, per, now)
		return err
	}) {
		if d.Allowed {
			s.local.Allow(key, limit, per, now)
		}
		return d
	}
	return s.local.Allow(key, limit, per, now)
}

// SharedAttempts counts wrong passwords for the whole deployment through
// an AttemptsBackend, guarded by a Guard, falling back to a local Attempts
// that counts this instance's attempts all along (those the backend
// counted). It implements queries.PasswordThrottle.
type SharedAttempts struct {
	backend   AttemptsBackend
	local     *Attempts
	guard     *Guard
	namespace string
}

// NewSharedAttempts counts through backend, with the limits of local,
// under targets prefixed with namespace (two throttles may share one
// backend).
func NewSharedAttempts(backend AttemptsBackend, local *Attempts, guard *Guard, namespace string) *SharedAttempts {
	return &SharedAttempts{backend: backend, local: local, guard: guard, namespace: namespace}
}

// Window is how long a wrong attempt counts.
func (s *SharedAttempts) Window() time.Duration { return s.local.window }

// Try counts an attempt of client on target at now as a wrong one and
// reports true, or reports false and counts nothing.
func (s *SharedAttempts) Try(ctx context.Context, client, target string, now time.Time) bool {
	var ok bool
	if s.guard.Do(ctx, func(ctx context.Context) (err error) {
		ok, err = s.backend.TryAttempt(ctx, s.namespace+target, client, now, s.local.perClient, s.local.perTarget, s.local.window)
		return err
	}) {
		if ok {
			s.local.Try(ctx, client, target, now)
		}
		return ok
	}
	return s.local.Try(ctx, client, target, now)
}

// Undo takes back the attempt Try counted for client on target at now.
func (s *SharedAttempts) Undo(ctx context.Context, client, target string, now time.Time) {
	s.local.Undo(ctx, client, target, now)
	s.guard.Do(ctx, func(ctx context.Context) error {
		return s.backend.UndoAttempt(ctx, s.namespace+target, client, now)
	})
}
