package clickindex

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

// expireChunk is how many tagID records one expiry batch deletes.
const expireChunk = 4096

// Expire deletes the tracking ids that have expired by Options.Now(), and
// returns how many it deleted one by one (ids not under tagV7; the UUIDv7
// ids go by one range deletion, uncounted). Click already answers not found
// for an expired id; Expire gives the space back:
//
//   - UUIDv7 ids (keys in time order): one DeleteRange of every key whose
//     UUID time is before now - TTL - Slack, committed only when there is
//     such a key. Pebble drops the covered files whole in a delete-only
//     compaction.
//   - other ids: the expiry index, read in day order up to the current UTC
//     day, names the records to delete; each record and its index key are
//     deleted in batches of expireChunk.
//
// An id is thus deleted at most 2 x Slack (UUIDv7) or one day (others)
// after it expires, never before. Expire runs beside Apply and Click (a
// background goroutine calls it every Options.ExpireEvery); it needs no
// checkpoint: what it deletes is gone for good.
func (s *Store) Expire(ctx context.Context) (int, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.db == nil {
		return 0, ErrClosed
	}
	now := s.opts.Now()
	if err := s.expireV7(now.Add(-ttl - Slack)); err != nil {
		return 0, fmt.Errorf("clickindex: expire: %w", err)
	}
	n, err := s.expireIndexed(ctx, expiryDayKey(nil, dayOf(now)))
	if err != nil {
		return n, fmt.Errorf("clickindex: expire: %w", err)
	}
	return n, nil
}

// expireV7 deletes the tagV7 records of UUIDs made before t.
func (s *Store) expireV7(t time.Time) error {
	upper, ok := v7Prefix(nil, t)
	if !ok {
		return nil
	}
	lower := []byte{tagV7}
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return err
	}
	found := it.First()
	if err := it.Close(); err != nil {
		return err
	}
	if !found {
		return nil // no tombstone when there is nothing to delete
	}
	b := s.db.NewBatch()
	defer b.Close()
	if err := b.DeleteRange(lower, upper, nil); err != nil {
		return err
	}
	// Losing an expiry in a crash only delays it to the next run.
	return b.Commit(pebble.NoSync)
}

// expireIndexed deletes the tagID records whose expiry-index keys sort below
// upper, with those keys. Only keys it has read are deleted: a record
// Apply adds meanwhile is left for the next run, never orphaned.
func (s *Store) expireIndexed(ctx context.Context, upper []byte) (int, error) {
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: []byte{tagExpiry}, UpperBound: upper})
	if err != nil {
		return 0, err
	}
	defer it.Close()
	b := s.db.NewBatch()
	defer func() { b.Close() }()
	n, inBatch := 0, 0
	var key []byte
	commit := func() error {
		if inBatch == 0 {
			return nil
		}
		if err := b.Commit(pebble.NoSync); err != nil {
			return err
		}
		n += inBatch
		inBatch = 0
		b.Close()
		b = s.db.NewBatch()
		return ctx.Err()
	}
	for it.First(); it.Valid(); it.Next() {
		k := it.Key()
		if len(k) < 5 || !bytes.HasPrefix(k, []byte{tagExpiry}) {
			continue
		}
		key = idKey(key[:0], k[5:])
		if err := b.Delete(key, nil); err != nil {
			return n, err
		}
		if err := b.Delete(k, nil); err != nil {
			return n, err
		}
		if inBatch++; inBatch == expireChunk {
			if err := commit(); err != nil {
				return n, err
			}
		}
	}
	if err := it.Error(); err != nil {
		return n, err
	}
	return n, commit()
}

// expireLoop runs Expire every interval, the first time at once, until ctx
// ends.
func (s *Store) expireLoop(ctx context.Context, every time.Duration) {
	defer close(s.expiryDone)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		if n, err := s.Expire(ctx); err != nil && ctx.Err() == nil {
			s.log.Warn("expiring tracking ids failed", "err", err)
		} else if n > 0 {
			s.log.Debug("tracking ids expired", "deleted", n)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
