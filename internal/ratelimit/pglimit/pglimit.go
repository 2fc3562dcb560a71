// Package pglimit keeps the counters of rate limits and of wrong passwords
// in PostgreSQL, so that every linkd instance of a deployment counts
// against the same ones (ADR 0107). It is the ratelimit.Backend and
// ratelimit.AttemptsBackend of a deployment whose event store is
// PostgreSQL; its tables are created by that store's migrations
// (eventstore/postgres: linkd_rate_limits, linkd_password_attempts, both
// unlogged).
//
// A request is one statement, atomic by PostgreSQL's row lock:
//   - rate limits keep GCRA's theoretical arrival time per key, as the
//     in-memory ratelimit.Limiter does, moved by one INSERT ... ON
//     CONFLICT DO UPDATE ... WHERE (the request is allowed) RETURNING; a
//     refused request reads the key's row for its headers;
//   - wrong passwords keep, per target, the clients and times of the
//     attempts in the window, and count an attempt only while the client
//     and the target have some left, in one such statement too.
//
// Times are the callers' (Unix nanoseconds of the now they pass): instances
// need synchronised clocks, and a skew of s lets through at most s's worth
// of quota more (s/7.2 s requests under 500 an hour).
package pglimit

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/linkd/linkd/internal/ratelimit"
)

// Options tune a Store. The zero value is ready to use.
type Options struct {
	// MaxConns is the size of the Store's own pool. Zero means 8.
	MaxConns int32
	// PruneEvery is how often rows that no longer hold anything are
	// deleted. Zero means a minute; negative, never (tests).
	PruneEvery time.Duration
	// Now is the clock pruning reads. Nil means time.Now.
	Now func() time.Time
	// Logger receives pruning failures. Nil drops them.
	Logger *slog.Logger
}

// pruneMargin keeps rows that expired lately, so that an instance whose
// clock is ahead does not delete what another still counts.
const pruneMargin = time.Minute

// Store is the counters in one PostgreSQL database. It is safe for
// concurrent use.
type Store struct {
	pool *pgxpool.Pool
	opts Options
	log  *slog.Logger

	stop chan struct{}
	done sync.WaitGroup
	once sync.Once
}

var (
	_ ratelimit.Backend         = (*Store)(nil)
	_ ratelimit.AttemptsBackend = (*Store)(nil)
)

// Open returns a Store on the database connString names (postgres://...,
// the event store's: its migrations made the tables). It connects lazily:
// an unreachable server fails the first requests, not Open.
func Open(connString string, opts Options) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(connString)
	if err != nil {
		return nil, errors.New("pglimit: bad connection string")
	}
	cfg.MaxConns = 8
	if opts.MaxConns > 0 {
		cfg.MaxConns = opts.MaxConns
	}
	if opts.PruneEvery == 0 {
		opts.PruneEvery = time.Minute
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		return nil, fmt.Errorf("pglimit: %w", err)
	}
	s := &Store{pool: pool, opts: opts, log: opts.Logger, stop: make(chan struct{})}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if opts.PruneEvery > 0 {
		s.done.Add(1)
		go s.pruneLoop()
	}
	return s, nil
}

// Close stops pruning and closes the pool.
func (s *Store) Close() error {
	s.once.Do(func() {
		close(s.stop)
		s.done.Wait()
		s.pool.Close()
	})
	return nil
}

const allowSQL = `INSERT INTO linkd_rate_limits AS t (key, tat) VALUES ($1, $2::bigint + $3::bigint)
ON CONFLICT (key) DO UPDATE SET tat = greatest(t.tat, $2::bigint) + $3::bigint
WHERE greatest(t.tat, $2::bigint) + $3::bigint - $4::bigint <= $2::bigint
RETURNING tat`

// Allow counts one request of key at now against limit requests per per,
// for every instance together.
func (s *Store) Allow(ctx context.Context, key string, limit int, per time.Duration, now time.Time) (ratelimit.Decision, error) {
	g, ok := ratelimit.NewGCRA(limit, per)
	if !ok {
		return ratelimit.Nothing(limit, per, now), nil
	}
	n := now.UnixNano()
	var tat int64
	err := s.pool.QueryRow(ctx, allowSQL, key, n, g.Interval, g.Burst).Scan(&tat)
	if err == nil {
		return g.Granted(tat, n), nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return ratelimit.Decision{}, fmt.Errorf("pglimit: %w", err)
	}
	// Refused: the row is there (another statement may have moved it
	// since; read it as it is now, for the headers).
	err = s.pool.QueryRow(ctx, `SELECT tat FROM linkd_rate_limits WHERE key = $1`, key).Scan(&tat)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return ratelimit.Decision{}, fmt.Errorf("pglimit: %w", err)
	}
	return g.Refused(tat, n), nil
}

// tryAttemptSQL counts an attempt of client ($2) on target ($1) at $3
// (window $4) unless the client has $5 or the target $6 in the window
// already; it drops the attempts that left the window on the way.
const tryAttemptSQL = `INSERT INTO linkd_password_attempts AS t (target, clients, attempts, expires)
VALUES ($1, ARRAY[$2::text], ARRAY[$3::bigint], $3::bigint + $4::bigint)
ON CONFLICT (target) DO UPDATE SET
	(clients, attempts) = (
		SELECT coalesce(array_agg(u.c ORDER BY u.o), '{}'::text[]) || $2::text,
		       coalesce(array_agg(u.a ORDER BY u.o), '{}'::bigint[]) || $3::bigint
		FROM unnest(t.clients, t.attempts) WITH ORDINALITY AS u(c, a, o)
		WHERE u.a >= $3::bigint - $4::bigint),
	expires = greatest(t.expires, $3::bigint + $4::bigint)
WHERE (SELECT count(*) FROM unnest(t.attempts) AS u(a) WHERE u.a >= $3::bigint - $4::bigint) < $6::int
	AND (SELECT count(*) FROM unnest(t.clients, t.attempts) AS u(c, a)
		WHERE u.a >= $3::bigint - $4::bigint AND u.c = $2::text) < $5::int
RETURNING true`

// TryAttempt counts a wrong attempt of client on target at now and
// reports true, or reports false and counts nothing when the client has
// perClient, or the target perTarget, attempts in the window already.
func (s *Store) TryAttempt(ctx context.Context, target, client string, now time.Time, perClient, perTarget int, window time.Duration) (bool, error) {
	var ok bool
	err := s.pool.QueryRow(ctx, tryAttemptSQL, target, client, now.UnixNano(), int64(window), perClient, perTarget).Scan(&ok)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("pglimit: %w", err)
	}
	return true, nil
}

// undoAttemptSQL removes one attempt of client ($2) at $3 from target $1.
const undoAttemptSQL = `UPDATE linkd_password_attempts AS t SET (clients, attempts) = (
	SELECT coalesce(array_agg(u.c ORDER BY u.o), '{}'::text[]), coalesce(array_agg(u.a ORDER BY u.o), '{}'::bigint[])
	FROM unnest(t.clients, t.attempts) WITH ORDINALITY AS u(c, a, o)
	WHERE u.o IS DISTINCT FROM (
		SELECT min(v.o) FROM unnest(t.clients, t.attempts) WITH ORDINALITY AS v(c, a, o)
		WHERE v.c = $2::text AND v.a = $3::bigint))
WHERE t.target = $1 AND $3::bigint = ANY (t.attempts)`

// UndoAttempt takes back the attempt that TryAttempt counted for client
// on target at now.
func (s *Store) UndoAttempt(ctx context.Context, target, client string, now time.Time) error {
	if _, err := s.pool.Exec(ctx, undoAttemptSQL, target, client, now.UnixNano()); err != nil {
		return fmt.Errorf("pglimit: %w", err)
	}
	return nil
}

// Prune deletes the rows that hold nothing at now (less a margin for
// clocks that run ahead): keys whose quota is whole again, targets whose
// attempts all left the window. Such a row and no row answer alike.
func (s *Store) Prune(ctx context.Context, now time.Time) (int64, error) {
	edge := now.Add(-pruneMargin).UnixNano()
	a, err := s.pool.Exec(ctx, `DELETE FROM linkd_rate_limits WHERE tat < $1`, edge)
	if err != nil {
		return 0, fmt.Errorf("pglimit: prune: %w", err)
	}
	b, err := s.pool.Exec(ctx, `DELETE FROM linkd_password_attempts WHERE expires < $1`, edge)
	if err != nil {
		return a.RowsAffected(), fmt.Errorf("pglimit: prune: %w", err)
	}
	return a.RowsAffected() + b.RowsAffected(), nil
}

func (s *Store) pruneLoop() {
	defer s.done.Done()
	t := time.NewTicker(s.opts.PruneEvery)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		if _, err := s.Prune(ctx, s.opts.Now()); err != nil {
			s.log.Warn("rate limits: prune", "err", err)
		}
		cancel()
	}
}
