package postgres

import (
	"context"
	"math"
	"strings"
	"sync/atomic"
	"time"
)

// Relaxed commits (Options.Relaxed, ADR 0115). A group whose events are
// all of relaxed categories commits with synchronous_commit off while the
// store is alone on the database: its answer does not wait for the WAL
// flush. Two things keep that safe:
//
//   - Positions are given under the append lock and the lock is held to
//     the commit, so the commit records are in the WAL in position order:
//     a flush that covers a commit covers every position before it. A
//     synchronous commit at position p, or a synchronous transaction that
//     read the log's head p, means every event up to p is flushed
//     (flushedHead).
//   - Subscriptions deliver no event past flushedHead while a relaxed
//     commit may be unflushed: a read model never applies an event that a
//     crash of the server could take back, and whose position the next
//     append would give again. The flusher makes the wait at most
//     FlushInterval.

// relaxable says whether group may commit without waiting for the flush.
func (s *Store) relaxable(group []*appendReq) bool {
	if len(s.opts.Relaxed) == 0 || !s.Alone() {
		return false
	}
	for _, r := range group {
		for _, p := range r.parts {
			if !s.relaxedStream(p.Stream) {
				return false
			}
		}
	}
	return true
}

func (s *Store) relaxedStream(stream string) bool {
	for _, c := range s.opts.Relaxed {
		if strings.HasPrefix(stream, c) && len(stream) > len(c) && stream[len(c)] == '-' {
			return true
		}
	}
	return false
}

// committedAt notes a group committed up to position last: relaxed, it
// waits for the flusher; otherwise its commit flushed everything before.
func (s *Store) committedAt(last int64, relaxed bool) {
	head := &s.flushedHead
	if relaxed {
		head = &s.relaxedHead
	}
	raise(head, last)
	if relaxed {
		select {
		case s.flushNeeded <- struct{}{}:
		default:
		}
	}
}

// raise moves h up to v.
func raise(h *atomic.Int64, v int64) {
	for {
		cur := h.Load()
		if cur >= v || h.CompareAndSwap(cur, v) {
			return
		}
	}
}

// readBound is the last position subscriptions may deliver: flushedHead
// while a relaxed commit may not be flushed, else no bound.
func (s *Store) readBound() int64 {
	if s.flushNeeded == nil {
		return math.MaxInt64
	}
	if s.relaxing.Load() > 0 || s.relaxedHead.Load() > s.flushedHead.Load() {
		return s.flushedHead.Load()
	}
	return math.MaxInt64
}

// flusher forces the WAL flush of relaxed commits at most FlushInterval
// after the first of them, and wakes the subscriptions it lets through.
func (s *Store) flusher() {
	defer s.bg.Done()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-s.flushNeeded:
		}
		select {
		case <-s.ctx.Done():
			return
		case <-time.After(s.opts.FlushInterval):
		}
		for s.relaxedHead.Load() > s.flushedHead.Load() && s.ctx.Err() == nil {
			if err := s.flush(); err != nil {
				s.log.Warn("postgres: flushing relaxed commits; retrying", "err", err)
				select {
				case <-s.ctx.Done():
					return
				case <-time.After(s.opts.FlushInterval):
				}
			}
		}
	}
}

// flush commits a transaction that waits for the WAL flush: it takes a
// transaction id and writes a WAL record (without them its commit does
// not flush), and reads the log's head. Every commit it saw is flushed
// when it returns.
func (s *Store) flush() error {
	ctx, cancel := context.WithTimeout(s.ctx, s.opts.WriteTimeout)
	defer cancel()
	var head int64
	err := s.pool.QueryRow(ctx, `SELECT (SELECT coalesce(max(position), 0) FROM linkd_events), pg_current_xact_id()::text,
		pg_logical_emit_message(false, 'linkd', '')::text`).Scan(&head, new(string), new(string))
	if err != nil {
		return err
	}
	raise(&s.flushedHead, head)
	s.wake.broadcast()
	return nil
}
