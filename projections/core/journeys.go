package core

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"strings"

	"github.com/cockroachdb/pebble/v2"

	"github.com/linkd/linkd/internal/storage/sidedb"
	"github.com/linkd/linkd/queries"
)

// Customers' journeys (every lead and sale, each with its click) are kept
// in a Pebble database beside the SQLite file, keyed by customer and stream
// version:
//
//	<customer id> 0x00 be64(version)  ->  kind, first, clicked at, amount, at,
//	    then uvarint-prefixed: conversion id, event name, link id, click id,
//	    currency; then the metadata
//
// Sales name customers in no order (a returning customer's row goes
// anywhere in the table), and one row per sale in an SQLite B-tree keyed by
// customer was a page written to the WAL and back per sale: most of what
// this projection spent on a sale (issue 11). Customer ids are UUIDs, never
// holding 0x00. Writes are idempotent (a journey row's value never
// changes): package sidedb says how they stay in step with the checkpoint.
// Until the SQLite transaction commits, a reader may count a lead or sale
// of a batch whose customer row it sees from before that batch.

// journeysDir is the Pebble directory of the SQLite file at path.
func journeysDir(path string) string {
	return strings.TrimSuffix(path, ".db") + "-journeys"
}

// openJourneys opens the journeys' database: 16 MiB memtables (keys in no
// order: larger memtables flush and compact less often), reserved in a
// block cache of 48 MiB.
func openJourneys(dir string) (*pebble.DB, error) {
	return sidedb.Open(dir, 48<<20, 16<<20, "core journeys")
}

// journeyPrefix appends the key prefix of a customer's journey.
func journeyPrefix(dst []byte, customerID string) []byte {
	dst = append(dst, customerID...)
	return append(dst, 0)
}

func journeyKey(dst []byte, customerID string, version uint64) []byte {
	return binary.BigEndian.AppendUint64(journeyPrefix(dst, customerID), version)
}

func encodeJourneyEvent(dst []byte, e queries.CustomerEvent) []byte {
	kind := byte('s')
	if e.Kind == "lead" {
		kind = 'l'
	}
	first := byte(0)
	if e.First {
		first = 1
	}
	dst = append(dst, kind, first)
	dst = binary.AppendVarint(dst, e.ClickedAt.UnixNano())
	dst = binary.AppendVarint(dst, e.AmountMinor)
	dst = binary.AppendVarint(dst, e.Timestamp.UnixNano())
	for _, s := range []string{e.ConversionID, e.EventName, e.LinkID, e.ClickID, e.Currency} {
		dst = binary.AppendUvarint(dst, uint64(len(s)))
		dst = append(dst, s...)
	}
	return append(dst, e.Metadata...)
}

var errBadJourneyEvent = errors.New("core: corrupt journey event")

func decodeJourneyEvent(v []byte) (queries.CustomerEvent, error) {
	var e queries.CustomerEvent
	if len(v) < 2 {
		return e, errBadJourneyEvent
	}
	e.Kind = "sale"
	if v[0] == 'l' {
		e.Kind = "lead"
	}
	e.First = v[1] == 1
	v = v[2:]
	var ints [3]int64
	for i := range ints {
		x, n := binary.Varint(v)
		if n <= 0 {
			return e, errBadJourneyEvent
		}
		ints[i], v = x, v[n:]
	}
	e.ClickedAt, e.AmountMinor, e.Timestamp = ts(ints[0]), ints[1], ts(ints[2])
	for _, s := range []*string{&e.ConversionID, &e.EventName, &e.LinkID, &e.ClickID, &e.Currency} {
		l, n := binary.Uvarint(v)
		if n <= 0 || uint64(len(v)-n) < l {
			return e, errBadJourneyEvent
		}
		*s, v = string(v[n:n+int(l)]), v[n+int(l):]
	}
	if len(v) > 0 {
		e.Metadata = bytes.Clone(v)
	}
	return e, nil
}

// journey calls f with each event of a customer's journey, in the order
// they were recorded. it is an iterator the caller reuses across customers.
func journey(it *pebble.Iterator, customerID string, f func(queries.CustomerEvent)) error {
	prefix := journeyPrefix(nil, customerID)
	for ok := it.SeekGE(prefix); ok && bytes.HasPrefix(it.Key(), prefix); ok = it.Next() {
		v, err := it.ValueAndErr()
		if err != nil {
			return err
		}
		e, err := decodeJourneyEvent(v)
		if err != nil {
			return err
		}
		f(e)
	}
	return it.Error()
}

// moveJourneys moves the rows of schema version 5's SQLite table of
// journeys, if it is still there, into db, then drops the table.
func moveJourneys(ctx context.Context, w *sql.DB, db *pebble.DB) error {
	return sidedb.MoveTable(ctx, w, db, "customer_events", `SELECT customer_id, seq, kind, conversion_id, event_name, link_id, click_id, clicked_at, amount_minor, currency, first, metadata, at FROM customer_events`,
		func(rows *sql.Rows, key, val []byte) ([]byte, []byte, error) {
			var id, md string
			var seq, clicked, at int64
			var e queries.CustomerEvent
			if err := rows.Scan(&id, &seq, &e.Kind, &e.ConversionID, &e.EventName, &e.LinkID, &e.ClickID, &clicked, &e.AmountMinor, &e.Currency, &e.First, &md, &at); err != nil {
				return nil, nil, err
			}
			e.ClickedAt, e.Timestamp, e.Metadata = ts(clicked), ts(at), []byte(md)
			return journeyKey(key, id, uint64(seq)), encodeJourneyEvent(val, e), nil
		})
}
