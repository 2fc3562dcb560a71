package radar

import (
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"strings"

	"github.com/cockroachdb/pebble/v2"

	"github.com/linkd/linkd/internal/storage/sidedb"
)

// Hits (every page view and custom event) are kept in a Pebble database
// beside the SQLite file, in the order reads want them, by project and
// time:
//
//	uvarint(len(project)) project  be64(ts ^ 1<<63)  uvarint(len(visitor)) visitor  be64(seq)
//	  ->  kind, then uvarint-prefixed: session, name, pathname, hostname,
//	      source, country, browser, os, device, click id, props (JSON)
//
// ts is the hit's time in Unix milliseconds and seq its version in the
// visitor's stream. In SQLite, a hit was a row of sixteen columns in a
// B-tree whose key began with the project's id: about 10 µs of a hit's 25
// to apply (BenchmarkApplyHits), in record comparisons, page splits and
// WAL frames. Pebble appends it to its log and memtable, and sorts on
// flush.
//
// Writes are idempotent (a hit's key and value never change), so the batch
// is committed before the SQLite transaction that holds the checkpoint, as
// conversions are: a crash between the two applies the events again, which
// writes the same keys. Until then the hits of the lost transaction are in
// Pebble alone: recompute (rollup.go) counts a hit only when its version is
// one its visitor's row has applied, and the people list skips a visitor
// without a row.

// hit is one stored hit.
type hit struct {
	ts       int64 // Unix milliseconds
	visitor  string
	seq      int64 // the hit's version in its visitor's stream
	session  string
	kind     int // 0 page view, 1 custom event
	name     string
	pathname string
	hostname string
	source   string
	country  string
	browser  string
	os       string
	device   string
	clickID  string
	props    string // JSON object, or ""
}

// hitsDir is the Pebble directory of the SQLite file at path.
func hitsDir(path string) string {
	return strings.TrimSuffix(path, ".db") + "-hits"
}

func openHits(dir string) (*pebble.DB, error) {
	return sidedb.Open(dir, 32<<20, 16<<20, "radar hits")
}

// hitTime orders times as unsigned bytes do.
func hitTime(ts int64) uint64 { return uint64(ts) ^ 1<<63 }

// hitsFrom appends the key where project's hits at or after ts start.
func hitsFrom(dst []byte, project string, ts int64) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(project)))
	dst = append(dst, project...)
	return binary.BigEndian.AppendUint64(dst, hitTime(ts))
}

func hitKey(dst []byte, project string, h *hit) []byte {
	dst = hitsFrom(dst, project, h.ts)
	dst = binary.AppendUvarint(dst, uint64(len(h.visitor)))
	dst = append(dst, h.visitor...)
	return binary.BigEndian.AppendUint64(dst, uint64(h.seq))
}

func encodeHit(dst []byte, h *hit) []byte {
	dst = append(dst, byte(h.kind))
	for _, s := range [...]string{h.session, h.name, h.pathname, h.hostname, h.source, h.country, h.browser, h.os, h.device, h.clickID, h.props} {
		dst = binary.AppendUvarint(dst, uint64(len(s)))
		dst = append(dst, s...)
	}
	return dst
}

var errBadHit = errors.New("radar: corrupt hit")

// decodeHit reads a hit of project's (plen: the length of the key's
// project part, uvarint included) from its key and value.
func decodeHit(plen int, k, v []byte) (hit, error) {
	var h hit
	if len(k) < plen+8+1+8 || len(v) < 1 {
		return h, errBadHit
	}
	h.ts = int64(binary.BigEndian.Uint64(k[plen:]) ^ 1<<63)
	k = k[plen+8:]
	l, n := binary.Uvarint(k)
	if n <= 0 || uint64(len(k)-n) != l+8 {
		return h, errBadHit
	}
	h.visitor = string(k[n : n+int(l)])
	h.seq = int64(binary.BigEndian.Uint64(k[n+int(l):]))
	h.kind = int(v[0])
	v = v[1:]
	for _, f := range [...]*string{&h.session, &h.name, &h.pathname, &h.hostname, &h.source, &h.country, &h.browser, &h.os, &h.device, &h.clickID, &h.props} {
		l, n := binary.Uvarint(v)
		if n <= 0 || uint64(len(v)-n) < l {
			return h, errBadHit
		}
		*f = string(v[n : n+int(l)])
		v = v[n+int(l):]
	}
	if len(v) != 0 {
		return h, errBadHit
	}
	return h, nil
}

// scanHits calls f with project's hits in [lo, hi] (Unix milliseconds) in
// key order (time, then visitor and version), or the reverse, until f
// returns false.
func scanHits(db pebble.Reader, project string, lo, hi int64, reverse bool, f func(*hit) (bool, error)) error {
	if lo > hi {
		return nil
	}
	lower := hitsFrom(nil, project, lo)
	upper := hitsFrom(nil, project, hi)
	if hi == 1<<63-1 {
		upper = binary.AppendUvarint(nil, uint64(len(project)))
		upper = append(upper, project...)
		upper = append(upper, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff)
	} else {
		upper = hitsFrom(upper[:0], project, hi+1)
	}
	plen := len(lower) - 8
	it, err := db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return err
	}
	first, next := it.First, it.Next
	if reverse {
		first, next = it.Last, it.Prev
	}
	for ok := first(); ok; ok = next() {
		h, err := decodeHit(plen, it.Key(), it.Value())
		if err != nil {
			it.Close()
			return err
		}
		more, err := f(&h)
		if err != nil || !more {
			return errors.Join(err, it.Close())
		}
	}
	return errors.Join(it.Error(), it.Close())
}

// moveHits moves the rows of the SQLite table of schema version 4 and
// before, if it is still there, into db, then drops the table.
func moveHits(ctx context.Context, w *sql.DB, db *pebble.DB) error {
	return sidedb.MoveTable(ctx, w, db, "hits", `SELECT project_id, ts, seq, visitor_id, session_id, kind, name, pathname, hostname, source, country, browser, os, device, click_id, props FROM hits`,
		func(rows *sql.Rows, key, val []byte) ([]byte, []byte, error) {
			var project string
			var h hit
			if err := rows.Scan(&project, &h.ts, &h.seq, &h.visitor, &h.session, &h.kind, &h.name, &h.pathname, &h.hostname, &h.source,
				&h.country, &h.browser, &h.os, &h.device, &h.clickID, &h.props); err != nil {
				return nil, nil, err
			}
			return hitKey(key, project, &h), encodeHit(val, &h), nil
		})
}
