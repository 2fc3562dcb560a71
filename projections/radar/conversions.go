package radar

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"os"
	"strings"

	"github.com/cockroachdb/pebble/v2"

	"github.com/linkd/linkd/internal/pebblelog"
)

// Conversions (the leads and sales of every click, from the customer
// streams) are kept in a Pebble database beside the SQLite file, keyed by
// click: a shop's sales name clicks in no order, and one row per sale in a
// SQLite B-tree keyed by click meant one page written (to the WAL, then
// back) per sale, most of what a sale cost this projection. Pebble writes a
// sale in its memtable and sorts on flush.
//
//	<click id> 0x00 <conversion id>  ->  kind, at, amount, currency, customer
//
// Click and conversion ids never hold 0x00 (they are JSON strings of
// printable ids). Writes are idempotent (a conversion's value never
// changes), so the batch is committed before the SQLite transaction that
// holds the checkpoint: a crash between the two applies the events again,
// which writes the same keys. The write-ahead log is kept and not synced,
// as SQLite's commits are (synchronous NORMAL): both survive the process
// being killed.

// conversionRow is one lead or sale of a click.
type conversionRow struct {
	id       string
	kind     string // "lead" or "sale"
	at       int64  // Unix milliseconds
	amount   int64  // minor units; 0 for a lead
	currency string // "" for a lead
	customer string // the customer's stream, for a lead; else ""
}

// conversionsDir is the Pebble directory of the SQLite file at path.
func conversionsDir(path string) string {
	return strings.TrimSuffix(path, ".db") + "-conversions"
}

// openConversions opens the conversions' database. Its keys come in no
// order, so every flush overlaps the whole of the level below, which a
// compaction then rewrites: memtables of 16 MiB rather than 4 flush and
// compact a quarter as often (5% of a sale's CPU, measured 2026-11-25).
// Pebble reserves its memtables in the block cache, hence 48 MiB.
func openConversions(dir string) (*pebble.DB, error) {
	return openPebble(dir, 48<<20, 16<<20, "radar")
}

// openPebble opens (creating it) one of the Pebble databases beside the
// SQLite file, with a block cache and memtables of the sizes given; name
// tags its log lines.
func openPebble(dir string, cache int64, memtable uint64, name string) (*pebble.DB, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	c := pebble.NewCache(cache)
	defer c.Unref()
	return pebble.Open(dir, &pebble.Options{
		Cache:              c,
		MemTableSize:       memtable,
		FormatMajorVersion: pebble.FormatNewest,
		Logger:             pebblelog.New(nil, name),
	})
}

func conversionKey(dst []byte, clickID, id string) []byte {
	dst = append(dst, clickID...)
	dst = append(dst, 0)
	return append(dst, id...)
}

func encodeConversion(dst []byte, c conversionRow) []byte {
	kind := byte('s')
	if c.kind == "lead" {
		kind = 'l'
	}
	dst = append(dst, kind)
	dst = binary.AppendVarint(dst, c.at)
	dst = binary.AppendVarint(dst, c.amount)
	dst = binary.AppendUvarint(dst, uint64(len(c.currency)))
	dst = append(dst, c.currency...)
	return append(dst, c.customer...)
}

var errBadConversion = errors.New("radar: corrupt conversion")

func decodeConversion(id string, v []byte) (conversionRow, error) {
	c := conversionRow{id: id, kind: "sale"}
	if len(v) == 0 {
		return c, errBadConversion
	}
	if v[0] == 'l' {
		c.kind = "lead"
	}
	v = v[1:]
	var n int
	if c.at, n = binary.Varint(v); n <= 0 {
		return c, errBadConversion
	}
	v = v[n:]
	if c.amount, n = binary.Varint(v); n <= 0 {
		return c, errBadConversion
	}
	v = v[n:]
	l, n := binary.Uvarint(v)
	if n <= 0 || uint64(len(v)-n) < l {
		return c, errBadConversion
	}
	v = v[n:]
	c.currency, c.customer = string(v[:l]), string(v[l:])
	return c, nil
}

// clickConversions calls f with each conversion of clickID, in the order
// of their ids. it is an iterator the caller reuses across clicks.
func clickConversions(it *pebble.Iterator, clickID string, f func(conversionRow) error) error {
	prefix := conversionKey(nil, clickID, "")
	for ok := it.SeekGE(prefix); ok && bytes.HasPrefix(it.Key(), prefix); ok = it.Next() {
		v, err := it.ValueAndErr()
		if err != nil {
			return err
		}
		c, err := decodeConversion(string(it.Key()[len(prefix):]), v)
		if err != nil {
			return err
		}
		if err := f(c); err != nil {
			return err
		}
	}
	return it.Error()
}

// resetConversions deletes every conversion, durably.
func resetConversions(db *pebble.DB) error {
	if err := db.DeleteRange([]byte{}, []byte{0xff}, pebble.Sync); err != nil {
		return err
	}
	return db.Flush()
}

// moveConversions moves the rows of the SQLite table of schema version 2,
// if it is still there, into db, then drops the table.
func moveConversions(ctx context.Context, w *sql.DB, db *pebble.DB) error {
	return moveTable(ctx, w, db, "conversions", `SELECT click_id, conversion_id, kind, customer, amount_minor, currency, at FROM conversions`,
		func(rows *sql.Rows, key, val []byte) ([]byte, []byte, error) {
			var click string
			var c conversionRow
			if err := rows.Scan(&click, &c.id, &c.kind, &c.customer, &c.amount, &c.currency, &c.at); err != nil {
				return nil, nil, err
			}
			return conversionKey(key, click, c.id), encodeConversion(val, c), nil
		})
}

// moveTable moves the rows of an SQLite table that an earlier schema
// version kept, if it is still there, into db, then drops it: query reads
// them, and kv appends a row's key and value to key and val. The keys are
// synced before the table goes, so a crash in between moves them again
// (the same keys).
func moveTable(ctx context.Context, w *sql.DB, db *pebble.DB, table, query string, kv func(rows *sql.Rows, key, val []byte) ([]byte, []byte, error)) error {
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
