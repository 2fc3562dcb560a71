package app

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/linkd/linkd/api"
	"github.com/linkd/linkd/eventstore/postgres"
	"github.com/linkd/linkd/internal/ratelimit"
	"github.com/linkd/linkd/internal/ratelimit/pglimit"
	"github.com/linkd/linkd/queries"
)

// limits are an instance's request rate limits (spec section 8) and its
// throttles of wrong passwords (links; dashboard sign-in and invitations).
// They hold for the whole deployment when the event store is PostgreSQL:
// every instance counts in the same tables (pglimit), and falls back to its
// own counts for a few seconds when they do not answer (ratelimit.Guard).
// Otherwise they are in memory, per instance: the embedded store is one
// instance, and with EventStoreDB each instance enforces the limits alone
// (ADR 0107).
type limits struct {
	requests  api.Limiter
	passwords queries.PasswordThrottle
	signIn    queries.PasswordThrottle
	// guard is the shared backend's; nil in memory.
	guard *ratelimit.Guard
	close func() error
}

// openLimits makes the limits of cfg.
func openLimits(cfg Config, log *slog.Logger) (limits, error) {
	local := ratelimit.New()
	passwords := ratelimit.NewAttempts(0, 0, 0)
	signIn := ratelimit.NewAttempts(5, 30, time.Minute)
	if !postgres.IsDSN(cfg.EventStore) {
		inMemory := func(_ context.Context, key string, limit int, per time.Duration, now time.Time) ratelimit.Decision {
			return local.Allow(key, limit, per, now)
		}
		return limits{requests: limiter(inMemory), passwords: passwords, signIn: signIn, close: func() error { return nil }}, nil
	}
	store, err := pglimit.Open(cfg.EventStore, pglimit.Options{Logger: log})
	if err != nil {
		return limits{}, fmt.Errorf("limits: %w", err)
	}
	guard := ratelimit.NewGuard("limits", 0, 0, log)
	shared := ratelimit.NewShared(store, local, guard)
	return limits{
		requests:  limiter(shared.Allow),
		passwords: ratelimit.NewSharedAttempts(store, passwords, guard, "link|"),
		signIn:    ratelimit.NewSharedAttempts(store, signIn, guard, "dashboard|"),
		guard:     guard,
		close:     store.Close,
	}, nil
}

// limiter adapts internal/ratelimit to the API.
type limiter func(ctx context.Context, key string, limit int, per time.Duration, now time.Time) ratelimit.Decision

func (l limiter) Allow(ctx context.Context, key string, limit int, per time.Duration, now time.Time) api.RateDecision {
	d := l(ctx, key, limit, per, now)
	return api.RateDecision{Allowed: d.Allowed, Limit: d.Limit, Remaining: d.Remaining, Reset: d.Reset, RetryAfter: d.RetryAfter}
}
