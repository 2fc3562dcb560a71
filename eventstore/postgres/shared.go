package postgres

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/linkd/linkd/eventstore"
)

var (
	_ eventstore.Leaser        = (*Store)(nil)
	_ eventstore.Checkpoints   = (*Store)(nil)
	_ eventstore.CategoryHeads = (*Store)(nil)
)

// leaseRetry is how often a process waiting for a lease asks for it, and
// leaseCheck how often a holder checks that its session is alive.
var (
	leaseRetry = 500 * time.Millisecond
	leaseCheck = time.Second
)

// AcquireLease implements eventstore.Leaser with a session-level advisory
// lock on a connection of its own: PostgreSQL frees it when the session
// ends, which it does at once when the holding process dies (its socket
// closes). A holder that cannot reach the database for leaseCheck plus a
// few seconds gives the lease up. A holder that is frozen, not dead, keeps
// its session: a process waiting for the lease ends that session once it
// has been silent for Options.LeaseStale (breakFrozen).
func (s *Store) AcquireLease(ctx context.Context, name string) (context.Context, func(), error) {
	for {
		if err := s.enter(ctx); err != nil {
			return nil, nil, err
		}
		conn, ok, err := s.tryLease(ctx, name)
		s.exit()
		if ok {
			held, cancel := context.WithCancel(ctx)
			done := make(chan struct{})
			go s.keepLease(held, cancel, conn, done)
			return held, func() { cancel(); <-done }, nil
		}
		if err != nil && ctx.Err() == nil {
			s.log.Warn("postgres: lease", "lease", name, "err", redact(err))
		}
		select {
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		case <-s.ctx.Done():
			return nil, nil, eventstore.ErrClosed
		case <-time.After(leaseRetry):
		}
	}
}

func (s *Store) tryLease(ctx context.Context, name string) (*pgx.Conn, bool, error) {
	cctx, cancel := context.WithTimeout(ctx, s.opts.ConnectTimeout)
	defer cancel()
	conn, err := pgx.Connect(cctx, s.dsn)
	if err != nil {
		return nil, false, err
	}
	var ok bool
	err = conn.QueryRow(cctx, "SELECT pg_try_advisory_lock($1, hashtext($2))", leaseClass, name).Scan(&ok)
	if err == nil && !ok {
		err = s.breakFrozen(cctx, conn, name)
	}
	if err != nil || !ok {
		conn.Close(context.Background())
		return nil, false, err
	}
	return conn, true, nil
}

// breakFrozen ends the session that holds the lease name if it has been
// idle for LeaseStale: its holder checks it every leaseCheck, so it is
// frozen (stopped, or its host hung) and would hold the lease until it runs
// again. When it does, its next check fails and it stops. The lock is free
// once the session has ended: the next attempt takes it.
func (s *Store) breakFrozen(ctx context.Context, conn *pgx.Conn, name string) error {
	rows, err := conn.Query(ctx, `SELECT a.pid, pg_terminate_backend(a.pid)
		FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
		WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 2
			AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
			AND l.classid = $1::int4::oid AND l.objid = hashtext($2)::oid
			AND a.state = 'idle' AND a.state_change < now() - make_interval(secs => $3)`,
		leaseClass, name, s.opts.LeaseStale.Seconds())
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var pid int32
		var ended bool
		if err := rows.Scan(&pid, &ended); err != nil {
			return err
		}
		s.log.Warn("postgres: the lease's holder was silent; its session is ended", "lease", name, "pid", pid, "silent_for_more_than", s.opts.LeaseStale, "ended", ended)
	}
	return rows.Err()
}

// keepLease checks the lease's session until held ends or the session
// fails, then closes the session, which frees the lock.
func (s *Store) keepLease(held context.Context, cancel context.CancelFunc, conn *pgx.Conn, done chan struct{}) {
	defer close(done)
	defer func() {
		cctx, c := context.WithTimeout(context.Background(), 2*time.Second)
		conn.Close(cctx)
		c()
	}()
	defer cancel()
	t := time.NewTicker(leaseCheck)
	defer t.Stop()
	for {
		select {
		case <-held.Done():
			return
		case <-s.ctx.Done():
			return
		case <-t.C:
			if f := s.opts.leaseSilent; f != nil && f.Load() {
				continue
			}
			cctx, c := context.WithTimeout(held, 3*time.Second)
			err := conn.Ping(cctx)
			c()
			if err != nil {
				if held.Err() == nil {
					s.log.Warn("postgres: lease lost", "err", redact(err))
				}
				return
			}
		}
	}
}

// LoadCheckpoint implements eventstore.Checkpoints.
func (s *Store) LoadCheckpoint(ctx context.Context, name string) (eventstore.Position, error) {
	if err := s.enter(ctx); err != nil {
		return eventstore.Start, err
	}
	defer s.exit()
	var p int64
	err := s.pool.QueryRow(ctx, "SELECT position FROM linkd_checkpoints WHERE name = $1", name).Scan(&p)
	if errors.Is(err, pgx.ErrNoRows) {
		return eventstore.Start, nil
	}
	if err != nil {
		return eventstore.Start, s.dbErr(ctx, "load checkpoint", err)
	}
	return position(p), nil
}

// SaveCheckpoint implements eventstore.Checkpoints.
func (s *Store) SaveCheckpoint(ctx context.Context, name string, p eventstore.Position) error {
	if err := s.enter(ctx); err != nil {
		return err
	}
	defer s.exit()
	_, err := s.pool.Exec(ctx, `INSERT INTO linkd_checkpoints (name, position) VALUES ($1, $2)
		ON CONFLICT (name) DO UPDATE SET position = greatest(linkd_checkpoints.position, excluded.position)`, name, int64(p.Commit))
	if err != nil {
		return s.dbErr(ctx, "save checkpoint", err)
	}
	return nil
}

// CategoryHead implements eventstore.CategoryHeads. The first call reads
// linkd_heads, which every append writes, and seeds the store's memory
// with it; after that, the heads come from memory, which takes in every
// event of the log after the seed in order and keeps each category's last
// position, once a fill that began after the call has read the log to its
// end. The fill brings the events the subscriptions need next, so that
// with many instances the freshness of a read costs no query of its own
// (ADR 0123). A category is compared by its part before the first "-".
func (s *Store) CategoryHead(ctx context.Context, categories []string) (eventstore.Position, error) {
	if err := s.enter(ctx); err != nil {
		return eventstore.Start, err
	}
	defer s.exit()
	cats := make([]string, len(categories))
	for i, c := range categories {
		cats[i], _, _ = strings.Cut(c, "-")
	}
	if err := s.freshen(ctx); err != nil {
		return eventstore.Start, s.dbErr(ctx, "category head", err)
	}
	return position(s.recent.head(cats)), nil
}

// seedHeads reads every category's head and the log's end in one
// statement (one snapshot) into the store's memory, under fillMu. It
// reports whether memory took them (recentLog.seed): if not, the caller
// reads again.
func (s *Store) seedHeads(ctx context.Context) (bool, error) {
	n := s.fillsBegun.Add(1)
	s.seedReads.Add(1)
	var end int64
	var cats []string
	var heads []int64
	err := s.pool.QueryRow(ctx, `SELECT (SELECT coalesce(max(position), 0) FROM linkd_events),
		coalesce(array_agg(category), '{}'), coalesce(array_agg(position), '{}') FROM linkd_heads`).Scan(&end, &cats, &heads)
	if err != nil {
		return false, err
	}
	if !s.recent.seed(end, cats, heads) {
		return false, nil
	}
	s.freshFill = max(s.freshFill, n)
	return true, nil
}
