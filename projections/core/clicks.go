package core

import (
	"context"
	"time"

	"github.com/linkd/linkd/eventstore"
	"github.com/linkd/linkd/internal/storage/sqlitedb"
)

// Click counts written behind. With many links clicked at random, every
// batch of clicks upserted a row per link it touched (one per click with
// 10,000 links: 7% of a redirect's CPU). With WriteClicksBehind, Apply
// keeps each link's count (its click stream's version plus one, and the
// last click's time) in memory and writes them all every five seconds, or
// when they are many; reads take the greater of the row's count and the
// pending one, so they show every click applied. Once a second, 10,000
// links clicked at random still cost 2-4% of linkd's CPU in upserts (each
// link's row every second); every five seconds a fifth of it, for at most
// five seconds of clicks fed to core again after a crash (core applies
// more than 500,000 events a second, skipping those it has). ADR 0006.
//
// Crash safety: the checkpoint in the database is only moved by a batch
// after which nothing is pending. Until the pending counts are written it
// stays before the first of their clicks, so a restart feeds those clicks
// again (and the other events since, which every row skips by its
// version: Apply is idempotent). Close writes what is pending.
type pendingClicks struct {
	on      bool
	m       map[string]clickAgg // link id -> count, last click
	since   time.Time           // when m got its first entry
	applied eventstore.Position // the last batch applied: Close's checkpoint
}

const (
	clicksEvery = 5 * time.Second
	clicksMax   = 1 << 15
)

// WriteClicksBehind turns the writing behind of click counts on; call it
// before the first Apply. Only for a feeder that resumes after
// Checkpoint(), as the in-process runner does: a Kafka runner commits its
// offsets after each Apply, which pending counts would not survive.
func (s *Store) WriteClicksBehind() { s.clicks.on = true }

// addClicks merges a batch's click counts into the pending ones and
// reports whether they are due to be written (the projector's goroutine).
func (s *Store) addClicks(clicks map[string]clickAgg) bool {
	s.clicksMu.Lock()
	defer s.clicksMu.Unlock()
	p := &s.clicks
	if p.m == nil {
		p.m = make(map[string]clickAgg)
	}
	if len(p.m) == 0 && len(clicks) > 0 {
		p.since = time.Now()
	}
	for id, c := range clicks {
		p.m[id] = c.merge(p.m[id])
	}
	return len(p.m) >= clicksMax || (len(p.m) > 0 && time.Since(p.since) >= clicksEvery)
}

// clearClicks forgets the pending counts once they are in the database.
func (s *Store) clearClicks() {
	s.clicksMu.Lock()
	clear(s.clicks.m)
	s.clicksMu.Unlock()
}

// pendingCount is the count of a link's clicks applied but not yet in the
// database, 0 when none.
func (s *Store) pendingCount(linkID string) int64 {
	s.clicksMu.RLock()
	defer s.clicksMu.RUnlock()
	return s.clicks.m[linkID].count
}

// flushClicks writes the pending counts with the checkpoint of the last
// batch applied (Close).
func (s *Store) flushClicks(ctx context.Context) error {
	if len(s.clicks.m) == 0 {
		return nil
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := upsertClicks(ctx, tx, s.clicks.m); err != nil {
		return err
	}
	if err := sqlitedb.NewBatch(ctx, tx).SaveCheckpoint(s.clicks.applied); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	s.clearClicks()
	return nil
}

// merge adds up two counts of one link: the greater count, the later click.
func (c clickAgg) merge(o clickAgg) clickAgg {
	return clickAgg{count: max(c.count, o.count), last: max(c.last, o.last)}
}
