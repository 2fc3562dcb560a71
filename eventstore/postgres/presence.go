package postgres

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"time"
)

// Presence: every process with the store open says so every second in
// linkd_instances (PostgreSQL's clock, so no two machines' clocks are
// compared), and counts the others seen lately. A process alone on the
// store needs no read of the log's head before a read of its own read
// models (eventstore.Follower): its read models follow its own writes.
//
// The hazard is a second process that starts writing before the first
// knows of it. A process that finds others when it opens the store holds
// its appends until presenceJoin after that, longer than the others take
// to notice it (presenceEvery), so no write of its can be answered before
// every other process follows the log's head again (joined).
const (
	presenceEvery = time.Second
	presenceJoin  = 2*presenceEvery + 500*time.Millisecond
	// presenceGone: a process not seen for this long is not counted (it
	// died, or was stopped).
	presenceGone = 5 * time.Second
)

// seenSQL is now on PostgreSQL's clock, in milliseconds.
const seenSQL = `(extract(epoch from clock_timestamp()) * 1000)::bigint`

// announce makes the store's first presence, waits presenceJoin when it
// finds others, and starts saying so every presenceEvery.
func (s *Store) announce(ctx context.Context) error {
	n, err := s.present(ctx)
	if err != nil {
		return fmt.Errorf("postgres: presence: %w", s.dbErr(ctx, "presence", err))
	}
	if n > 0 {
		s.joinAt = time.Now().Add(presenceJoin)
	}
	s.bg.Add(1)
	go func() {
		defer s.bg.Done()
		t := time.NewTicker(presenceEvery)
		defer t.Stop()
		for {
			select {
			case <-t.C:
			case <-s.ctx.Done():
				return
			}
			ctx, cancel := context.WithTimeout(s.ctx, presenceEvery)
			if _, err := s.present(ctx); err != nil && s.ctx.Err() == nil {
				// Unknown: count others, so that reads follow the head.
				s.others.Store(1)
				s.log.Warn("postgres: presence not written", "err", err)
			}
			cancel()
		}
	}()
	return nil
}

// present writes this process's presence and counts the others seen
// within presenceGone; it forgets processes gone for an hour.
func (s *Store) present(ctx context.Context) (int, error) {
	var n int
	err := s.pool.QueryRow(ctx, `WITH me AS (
			INSERT INTO linkd_instances (id, seen) VALUES ($1, `+seenSQL+`)
			ON CONFLICT (id) DO UPDATE SET seen = excluded.seen RETURNING seen),
		old AS (DELETE FROM linkd_instances WHERE seen < (SELECT seen FROM me) - 3600000)
		SELECT count(*) FROM linkd_instances, me WHERE id <> $1 AND linkd_instances.seen > me.seen - $2`,
		s.instance, presenceGone.Milliseconds()).Scan(&n)
	if err != nil {
		return 0, err
	}
	s.others.Store(int32(n))
	return n, nil
}

// joined waits, before an append, until the other processes found at
// Open have noticed this one.
func (s *Store) joined(ctx context.Context) error {
	d := time.Until(s.joinAt)
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// leave removes this process's presence (Close): the others need not
// wait presenceGone to be alone again.
func (s *Store) leave() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_, _ = s.pool.Exec(ctx, `DELETE FROM linkd_instances WHERE id = $1`, s.instance)
}

// Alone implements eventstore.Presence: no other process had the store
// open lately (as of the last presence, at most presenceEvery ago).
func (s *Store) Alone() bool { return s.others.Load() == 0 }

// newInstanceID names a process in linkd_instances and in its
// notifications: 16 random hex digits.
func newInstanceID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
