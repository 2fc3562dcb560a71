// Package sidedb holds what the projections that keep some of their rows
// in a Pebble database beside their SQLite file share: opening one,
// emptying it, and moving an SQLite table of an older schema into it.
//
// Such rows are those written at random places at a high rate (a sale, a
// hit): one row in an SQLite B-tree is a page written to the WAL and back,
// while Pebble writes it in its memtable and sorts it on flush. The
// projection commits its Pebble batch, synced, before the SQLite
// transaction that holds its checkpoint, and its writes are idempotent (an
// event writes the same key and value every time it is applied), so a
// crash between the two applies the events again to the same effect.
//
// The sync is needed even against a process being killed: Pebble keeps a
// write that is not synced in its log writer's buffer until a block fills,
// while SQLite hands every commit to the system (synchronous NORMAL). A
// kill could lose the Pebble rows of batches whose checkpoint SQLite kept
// (tests/e2e's crash test lost 8 to 26 sales of each customer's journey).
// One fsync per applied batch costs little: batches hold hundreds of
// events under load. ADR 0010.
package sidedb

import (
	"context"
	"database/sql"
	"errors"
	"os"

	"github.com/cockroachdb/pebble/v2"

	"github.com/linkd/linkd/internal/storage/pebbleheap"
	"github.com/linkd/linkd/internal/storage/pebblelog"
)

// Open opens (creating it) a Pebble database at dir, with a block cache
// and memtables of the sizes given; name tags its log lines. Pebble
// reserves its memtables (up to two) in the block cache: cache must leave
// room for them.
func Open(dir string, cache int64, memtable uint64, name string) (*pebble.DB, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	c := pebble.NewCache(cache)
	defer c.Unref() // the DB holds its own reference
	return pebbleheap.Open(dir, &pebble.Options{
		Cache:              c,
		MemTableSize:       memtable,
		FormatMajorVersion: pebble.FormatNewest,
		Logger:             pebblelog.New(nil, name),
	})
}

// Commit commits the batches that hold writes, synced: what a projection
// does before the SQLite transaction that holds its checkpoint commits
// (the package's doc says why synced).
func Commit(batches ...*pebble.Batch) error {
	for _, b := range batches {
		if b.Empty() {
			continue
		}
		if err := b.Commit(pebble.Sync); err != nil {
			return err
		}
	}
	return nil
}

// Close flushes db's memtables, then closes it: a write-ahead log left on
// disk would be replayed into memory by the next Open (up to two
// memtables' worth, before any request).
func Close(db *pebble.DB) error {
	return errors.Join(db.Flush(), pebbleheap.Close(db))
}

// Reset deletes every key of db, durably.
func Reset(db *pebble.DB) error {
	it, err := db.NewIter(nil)
	if err != nil {
		return err
	}
	var end []byte
	if it.Last() {
		end = append(append(end, it.Key()...), 0)
	}
	if err := it.Close(); err != nil {
		return err
	}
	if end == nil {
		return nil
	}
	if err := db.DeleteRange([]byte{}, end, pebble.Sync); err != nil {
		return err
	}
	return db.Flush()
}

// MoveTable moves the rows of an SQLite table that an earlier schema
// version kept, if it is still there, into db, then drops it: query reads
// them, and kv appends a row's key and value to key and val. The keys are
// synced before the table goes, so a crash in between moves them again
// (the same keys).
func MoveTable(ctx context.Context, w *sql.DB, db *pebble.DB, table, query string, kv func(rows *sql.Rows, key, val []byte) ([]byte, []byte, error)) error {
	var tables int
	if err := w.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?`, table).Scan(&tables); err != nil {
		return err
	}
	if tables == 0 {
		return nil
	}
	rows, err := w.QueryContext(ctx, query)
	if err != nil {
		return err
	}
	defer rows.Close()
	b := db.NewBatch()
	defer b.Close()
	var key, val []byte
	for rows.Next() {
		if key, val, err = kv(rows, key[:0], val[:0]); err != nil {
			return err
		}
		if err := b.Set(key, val, nil); err != nil {
			return err
		}
		if b.Len() >= 16<<20 { // keep a large table's move in bounded memory
			if err := b.Commit(pebble.NoSync); err != nil {
				return err
			}
			b.Reset()
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	rows.Close()
	if err := b.Commit(pebble.Sync); err != nil {
		return err
	}
	_, err = w.ExecContext(ctx, `DROP TABLE `+table)
	return err
}
