package embedded

import (
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"math"

	"github.com/cespare/xxhash/v2"
	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"

	"github.com/linkd/linkd/internal/storage/pebblelog"
)

// The index is a Pebble database beside the log. It can always be rebuilt
// from the log (delete the directory and reopen), so it is written without
// sync; marks written in the same batches as the entries they describe tell
// recovery where to start:
//
//	'e' be64(hash(stream)) be64(version) be64(start) → uvarint(len)
//	    where the event's record lies in the log. The stream is named by
//	    a 64-bit hash of its name (xxhash64), not by the name: event keys
//	    are most of the index, stream names of a hundred bytes (a
//	    workspace id and a sha256) made them five times longer, and every
//	    memtable insert, flush and compaction paid for those bytes. Two
//	    streams may share a hash: the record's start keeps their keys
//	    apart, and every read checks the stream name of the record it
//	    reads from the log, skipping another stream's (owner).
//	'v' packed(stream) → be64(last version) uvarint(end)
//	    the stream's last version and where its record ends: a point key, so
//	    that finding a stream's version (or that it has none, the common
//	    case of a new stream) is one Get that bloom filters answer, instead
//	    of a reverse seek through every level. Named in full, so exact, but
//	    packed (names.go): ids in hex as bytes, a customer's 110-byte
//	    name in 61.
//	"m/format"   the layout of the keys above (indexFormat); an index
//	    without it or with another is rebuilt from the log at Open
//	"m/indexed"  every append that ends at or before this log offset has
//	    its event keys in the index; the later ones are in memory
//	    (pending.go) until a flush, and Open rewrites them from the log
//	"m/versioned" every append that ends at or before this log offset has
//	    its version keys in the index; the later ones are in memory
//	    (pending.go) until a flush, and Open rewrites them from the log
//	"m/durable"  the log had been fsynced up to this offset when the batch was
//	    written, so recovery only needs to verify records after it
//	"m/reserved" no position at or past this offset has been handed out
//	    (fsynced before the writer writes past it)
//	"m/open"     1 while the store is open: still 1 at Open means a crash
var (
	keyIndexed  = []byte("m/indexed")
	keyDurable  = []byte("m/durable")
	keyReserved = []byte("m/reserved")
	keyOpen     = []byte("m/open")
	keyFormat   = []byte("m/format")
	// keyVersioned: "m/versioned", every version key of an append that
	// ends at or before this offset is in the index; those after it may
	// still be in memory only (pending.go). An index of format 3 has
	// none: its upgrade sets it to "m/indexed".
	keyVersioned = []byte("m/versioned")
)

// indexFormat is the layout of the index keys: 4 since version keys may
// lag their events ("m/versioned"), which an older program would not
// know; 3 since version keys pack their stream's name, 2 when event keys
// began to name their stream by its hash (1, unmarked: event keys by the
// name). Format 3 becomes 4 in place; older ones are rebuilt.
const indexFormat = 4

const (
	eventKeyTag   = 'e'
	versionKeyTag = 'v'
)

// pebbleOptions are the index's Pebble options.
func pebbleOptions(log *slog.Logger) *pebble.Options {
	const memTable = 64 << 20
	o := &pebble.Options{
		Logger:             pebblelog.New(log, "embedded event store"),
		FormatMajorVersion: pebble.FormatNewest,
		MemTableSize:       memTable,
		// Pebble reserves its memtables (up to two) in the block cache:
		// without room for them, full memtables leave no block cached and
		// every index read is a system call. 32 MiB of blocks on top.
		CacheSize: 32<<20 + 2*memTable,
	}
	for i := range o.Levels {
		o.Levels[i].FilterPolicy = bloom.FilterPolicy(10)
	}
	return o
}

// nameHash names a stream in its event keys (Options.hash).
func nameHash(stream string) uint64 { return xxhash.Sum64String(stream) }

// eventKeyLen is the length of every event key.
const eventKeyLen = 1 + 8 + 8 + 8

// streamPrefix appends the key prefix shared by every event of a stream
// whose name hashes to h (and of any other stream with that hash).
func streamPrefix(dst []byte, h uint64) []byte {
	dst = append(dst, eventKeyTag)
	return binary.BigEndian.AppendUint64(dst, h)
}

// eventKey appends the key of version of the stream hashed to h, whose
// record starts at start.
func eventKey(dst []byte, h, version uint64, start int64) []byte {
	dst = streamPrefix(dst, h)
	dst = binary.BigEndian.AppendUint64(dst, version)
	return binary.BigEndian.AppendUint64(dst, uint64(start))
}

// eventVal appends the value of an event key: the record's length.
func eventVal(dst []byte, n int) []byte { return binary.AppendUvarint(dst, uint64(n)) }

// decodeEvent reads an event key and its value.
func decodeEvent(k, v []byte) (version uint64, start int64, n int, err error) {
	l, m := binary.Uvarint(v)
	if len(k) != eventKeyLen || k[0] != eventKeyTag || m <= 0 || m != len(v) {
		return 0, 0, 0, errors.New("embedded: corrupt index entry")
	}
	return binary.BigEndian.Uint64(k[9:]), int64(binary.BigEndian.Uint64(k[17:])), int(l), nil
}

// versionKey appends the key of stream's last version: its name packed
// (names.go).
func versionKey(dst []byte, stream string) []byte {
	return packName(append(dst, versionKeyTag), stream)
}

func streamOfVersionKey(k []byte) (string, error) {
	b, err := appendStreamOfVersionKey(nil, k)
	return string(b), err
}

// appendStreamOfVersionKey appends the name of the stream of version key
// k.
func appendStreamOfVersionKey(dst, k []byte) ([]byte, error) {
	if len(k) == 0 || k[0] != versionKeyTag {
		return nil, errors.New("embedded: corrupt index key")
	}
	return unpackName(dst, k[1:])
}

func appendVersion(dst []byte, version uint64, end int64) []byte {
	dst = binary.BigEndian.AppendUint64(dst, version)
	return binary.AppendUvarint(dst, uint64(end))
}

func decodeVersion(v []byte) (version uint64, end int64, err error) {
	if len(v) < 9 {
		return 0, 0, errors.New("embedded: corrupt index entry")
	}
	e, n := binary.Uvarint(v[8:])
	if n <= 0 || 8+n != len(v) {
		return 0, 0, errors.New("embedded: corrupt index entry")
	}
	return binary.BigEndian.Uint64(v), int64(e), nil
}

// streamBounds returns iterator bounds covering exactly the events of the
// streams hashed to h.
func streamBounds(h uint64) (lower, upper []byte) {
	lower = streamPrefix(make([]byte, 0, eventKeyLen), h)
	upper = append(append(make([]byte, 0, eventKeyLen+1), lower...), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff)
	return lower, upper
}

func getOffset(db *pebble.DB, key []byte) (int64, error) {
	v, closer, err := db.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	defer closer.Close()
	if len(v) != 8 {
		return 0, fmt.Errorf("embedded: corrupt index key %q", key)
	}
	return int64(binary.BigEndian.Uint64(v)), nil
}

func setOffset(b *pebble.Batch, key []byte, off int64) error {
	var v [8]byte
	binary.BigEndian.PutUint64(v[:], uint64(off))
	return b.Set(key, v[:], nil)
}

// owner tells whether the record at start, n bytes long, is stream's: an
// event key names its stream by a hash that another stream may share.
type owner func(stream string, start int64, n int) (bool, error)

// owns is the owner that reads the record's stream name from the log.
func (s *Store) owns(stream string, start int64, n int) (bool, error) {
	r := newLogReader(s, start, start+int64(n))
	r.chunk = n
	rec, _, _, err := r.next()
	if err != nil {
		return false, fmt.Errorf("embedded: read the log at offset %d: %w", start, err)
	}
	return string(rec.stream) == stream, nil
}

// lastVersion returns the last version of stream in the index whose record
// ends at or before limit (limit < 0: no limit), and where that record ends.
func (s *Store) lastVersion(stream string, limit int64) (version uint64, exists bool, end int64, err error) {
	if p, ok := s.pending.get(stream); ok {
		if limit < 0 || p.end <= limit {
			return p.version, true, p.end, nil
		}
		// As for a version key: the last append is not acknowledged yet.
		// Its events may not be in the index yet either.
		pend := s.pending.eventsOf(stream)
		for i := len(pend) - 1; i >= 0; i-- {
			if e := pend[i]; e.start+int64(e.n) <= limit {
				return e.version, true, e.start + int64(e.n), nil
			}
		}
		return lastEvent(s.db, stream, s.opts.hash(stream), limit, firstPending(pend), s.owns)
	}
	return lastVersion(s.db, stream, s.opts.hash, limit, s.owns)
}

// lastVersion is Store.lastVersion: hash names stream in event keys, and
// is only called when they are read (limit before the last append).
func lastVersion(db *pebble.DB, stream string, hash func(string) uint64, limit int64, owns owner) (version uint64, exists bool, end int64, err error) {
	var kb [96]byte // a packed name of up to 95 bytes needs no allocation
	v, closer, err := db.Get(versionKey(kb[:0], stream))
	if errors.Is(err, pebble.ErrNotFound) {
		return 0, false, 0, nil
	}
	if err != nil {
		return 0, false, 0, err
	}
	version, end, err = decodeVersion(v)
	closer.Close()
	if err != nil || limit < 0 || end <= limit {
		return version, err == nil, end, err
	}
	// The last append is not acknowledged yet (SyncAlways): look for the
	// last event before limit.
	return lastEvent(db, stream, hash(stream), limit, math.MaxUint64, owns)
}

// lastEvent is lastVersion from the event keys of versions below below
// (the stream's later ones are pending: Store.lastVersion).
func lastEvent(db *pebble.DB, stream string, h uint64, limit int64, below uint64, owns owner) (version uint64, exists bool, end int64, err error) {
	lower, upper := streamBounds(h)
	it, err := db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return 0, false, 0, err
	}
	for ok := it.Last(); ok; ok = it.Prev() {
		version, start, n, err := decodeEvent(it.Key(), it.Value())
		if err != nil {
			it.Close()
			return 0, false, 0, err
		}
		end := start + int64(n)
		if version >= below || limit >= 0 && end > limit {
			continue
		}
		mine, err := owns(stream, start, n)
		if err != nil {
			it.Close()
			return 0, false, 0, err
		}
		if mine {
			return version, true, end, it.Close()
		}
	}
	return 0, false, 0, it.Close()
}

// dropIndexAfter deletes every index entry whose record ends after end: the
// log lost its tail (machine crash) while the index kept entries for it. It
// scans the whole index, which only this rare case needs.
func (s *Store) dropIndexAfter(end int64) error {
	db := s.db
	dropped := 0
	// Event keys first; then version keys, from the event keys left.
	err := rewrite(db, eventKeyTag, func(b *pebble.Batch, k, v []byte) error {
		_, start, n, err := decodeEvent(k, v)
		if err != nil || start+int64(n) <= end {
			return err
		}
		dropped++
		return b.Delete(k, nil)
	})
	if err != nil {
		return err
	}
	err = rewrite(db, versionKeyTag, func(b *pebble.Batch, k, v []byte) error {
		_, last, err := decodeVersion(v)
		if err != nil || last <= end {
			return err
		}
		stream, err := streamOfVersionKey(k)
		if err != nil {
			return err
		}
		version, ok, last, err := lastEvent(db, stream, s.opts.hash(stream), -1, math.MaxUint64, s.owns)
		switch {
		case err != nil:
			return err
		case !ok:
			return b.Delete(k, nil)
		default:
			return b.Set(k, appendVersion(nil, version, last), nil)
		}
	})
	if err != nil {
		return err
	}
	b := db.NewBatch()
	defer b.Close()
	if err := setOffset(b, keyIndexed, end); err != nil {
		return err
	}
	if err := b.Commit(pebble.Sync); err != nil {
		return err
	}
	s.log.Warn("embedded: dropped index entries of events lost from the log", "entries", dropped, "log_end", end)
	return nil
}

// rewrite calls f on every key with the tag, in batches that f fills.
func rewrite(db *pebble.DB, tag byte, f func(b *pebble.Batch, k, v []byte) error) error {
	it, err := db.NewIter(&pebble.IterOptions{LowerBound: []byte{tag}, UpperBound: []byte{tag + 1}})
	if err != nil {
		return err
	}
	defer it.Close()
	b := db.NewBatch()
	defer func() { b.Close() }()
	for ok := it.First(); ok; ok = it.Next() {
		if err := f(b, it.Key(), it.Value()); err != nil {
			return err
		}
		if b.Len() > 4<<20 {
			if err := b.Commit(pebble.NoSync); err != nil {
				return err
			}
			b.Close()
			b = db.NewBatch()
		}
	}
	if err := it.Error(); err != nil {
		return err
	}
	return b.Commit(pebble.NoSync)
}
