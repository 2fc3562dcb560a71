package radar

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"strings"

	"github.com/cockroachdb/pebble/v2"

	"github.com/linkd/linkd/internal/storage/sidedb"
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
// changes): package sidedb says how they stay in step with the checkpoint.

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
// compact a quarter as often (5% of a sale's CPU).
// Pebble reserves its memtables in the block cache, hence 48 MiB.
func openConversions(dir string) (*pebble.DB, error) {
	return sidedb.Open(dir, 48<<20, 16<<20, "radar")
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

// moveConversions moves the rows of the SQLite table of schema version 2,
// if it is still there, into db, then drops the table.
func moveConversions(ctx context.Context, w *sql.DB, db *pebble.DB) error {
	return sidedb.MoveTable(ctx, w, db, "conversions", `SELECT click_id, conversion_id, kind, customer, amount_minor, currency, at FROM conversions`,
		func(rows *sql.Rows, key, val []byte) ([]byte, []byte, error) {
			var click string
			var c conversionRow
			if err := rows.Scan(&click, &c.id, &c.kind, &c.customer, &c.amount, &c.currency, &c.at); err != nil {
				return nil, nil, err
			}
			return conversionKey(key, click, c.id), encodeConversion(val, c), nil
		})
}
