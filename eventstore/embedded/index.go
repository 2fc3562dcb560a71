package embedded

import (
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"

	"github.com/linkd/linkd/internal/pebblelog"
)

// The index is a Pebble database beside the log. It can always be rebuilt
// from the log (delete the directory and reopen), so it is written without
// sync; marks written in the same batches as the entries they describe tell
// recovery where to start:
//
//	'e' uvarint(len(stream)) stream be64(version) → uvarint(start) uvarint(len)
//	    where the event's record lies in the log
//	'v' uvarint(len(stream)) stream → be64(last version) uvarint(end)
//	    the stream's last version and where its record ends: a point key, so
//	    that finding a stream's version (or that it has none, the common
//	    case of a new stream) is one Get that bloom filters answer, instead
//	    of a reverse seek through every level
//	"m/indexed"  every append that ends at or before this log offset is indexed
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
)

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

// streamPrefix appends the key prefix shared by every event of stream.
// The length prefix keeps one stream's keys from interleaving with those of
// a stream whose name extends it.
func streamPrefix(dst []byte, stream string) []byte {
	dst = append(dst, eventKeyTag)
	dst = binary.AppendUvarint(dst, uint64(len(stream)))
	return append(dst, stream...)
}

// eventKey appends the key of stream's event version.
func eventKey(dst []byte, stream string, version uint64) []byte {
	dst = streamPrefix(dst, stream)
	return binary.BigEndian.AppendUint64(dst, version)
}

// versionKey appends the key of stream's last version.
func versionKey(dst []byte, stream string) []byte {
	dst = append(dst, versionKeyTag)
	dst = binary.AppendUvarint(dst, uint64(len(stream)))
	return append(dst, stream...)
}

func streamOfVersionKey(k []byte) (string, error) {
	b, err := streamBytesOfVersionKey(k)
	return string(b), err
}

// streamBytesOfVersionKey is streamOfVersionKey without a copy: the
// stream's name within k.
func streamBytesOfVersionKey(k []byte) ([]byte, error) {
	l, n := binary.Uvarint(k[1:])
	if n <= 0 || uint64(len(k)-1-n) != l {
		return nil, errors.New("embedded: corrupt index key")
	}
	return k[1+n:], nil
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

// streamBounds returns iterator bounds covering exactly stream's events.
func streamBounds(stream string) (lower, upper []byte) {
	lower = streamPrefix(make([]byte, 0, len(stream)+20), stream)
	upper = append(append([]byte(nil), lower...), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff)
	return lower, upper
}

// versionOfKey returns the version of an event key.
func versionOfKey(k []byte) uint64 { return binary.BigEndian.Uint64(k[len(k)-8:]) }

func appendLoc(dst []byte, start int64, n int) []byte {
	dst = binary.AppendUvarint(dst, uint64(start))
	return binary.AppendUvarint(dst, uint64(n))
}

func decodeLoc(v []byte) (start int64, n int, err error) {
	s, k := binary.Uvarint(v)
	if k <= 0 {
		return 0, 0, errors.New("embedded: corrupt index entry")
	}
	l, k2 := binary.Uvarint(v[k:])
	if k2 <= 0 || k+k2 != len(v) {
		return 0, 0, errors.New("embedded: corrupt index entry")
	}
	return int64(s), int(l), nil
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

// lastVersion returns the last version of stream in the index whose record
// ends at or before limit (limit < 0: no limit), and where that record ends.
func lastVersion(db *pebble.DB, stream string, limit int64) (version uint64, exists bool, end int64, err error) {
	var kb [64]byte
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
	return lastEvent(db, stream, limit)
}

// lastEvent is lastVersion from the event keys.
func lastEvent(db *pebble.DB, stream string, limit int64) (version uint64, exists bool, end int64, err error) {
	lower, upper := streamBounds(stream)
	it, err := db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return 0, false, 0, err
	}
	for ok := it.Last(); ok; ok = it.Prev() {
		start, n, err := decodeLoc(it.Value())
		if err != nil {
			it.Close()
			return 0, false, 0, err
		}
		end := start + int64(n)
		if limit >= 0 && end > limit {
			continue
		}
		return versionOfKey(it.Key()), true, end, it.Close()
	}
	return 0, false, 0, it.Close()
}

// dropIndexAfter deletes every index entry whose record ends after end: the
// log lost its tail (machine crash) while the index kept entries for it. It
// scans the whole index, which only this rare case needs.
func dropIndexAfter(db *pebble.DB, end int64, log *slog.Logger) error {
	dropped := 0
	// Event keys first; then version keys, from the event keys left.
	err := rewrite(db, eventKeyTag, func(b *pebble.Batch, k, v []byte) error {
		start, n, err := decodeLoc(v)
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
		version, ok, last, err := lastEvent(db, stream, -1)
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
	log.Warn("embedded: dropped index entries of events lost from the log", "entries", dropped, "log_end", end)
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
