package embedded

import (
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"

	"github.com/cockroachdb/pebble/v2"
)

// The index is a Pebble database beside the log. It can always be rebuilt
// from the log (delete the directory and reopen), so it is written without
// sync; two marks, written in the same batches as the entries they describe,
// tell recovery where to start:
//
//	'e' uvarint(len(stream)) stream be64(version) → uvarint(start) uvarint(len)
//	    where the event's record lies in the log
//	"m/indexed"  every append that ends at or before this log offset is indexed
//	"m/durable"  the log had been fsynced up to this offset when the batch was
//	    written, so recovery only needs to verify records after it
//
// There is no separate "last version" key: the last version of a stream is
// its last 'e' key (one SeekLT), which keeps one key per event and makes
// undoing a lost log tail a matter of deleting 'e' keys.
var (
	keyIndexed = []byte("m/indexed")
	keyDurable = []byte("m/durable")
)

const eventKeyTag = 'e'

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
// ends at or before limit (limit < 0: no limit).
func lastVersion(db *pebble.DB, stream string, limit int64) (uint64, bool, error) {
	lower, upper := streamBounds(stream)
	it, err := db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return 0, false, err
	}
	for ok := it.Last(); ok; ok = it.Prev() {
		if limit >= 0 {
			start, n, err := decodeLoc(it.Value())
			if err != nil {
				it.Close()
				return 0, false, err
			}
			if start+int64(n) > limit {
				continue
			}
		}
		v := versionOfKey(it.Key())
		return v, true, it.Close()
	}
	return 0, false, it.Close()
}

// dropIndexAfter deletes every index entry whose record ends after end: the
// log lost its tail (machine crash) while the index kept entries for it. It
// scans the whole index, which only this rare case needs.
func dropIndexAfter(db *pebble.DB, end int64, log *slog.Logger) error {
	it, err := db.NewIter(&pebble.IterOptions{LowerBound: []byte{eventKeyTag}, UpperBound: []byte{eventKeyTag + 1}})
	if err != nil {
		return err
	}
	b := db.NewBatch()
	dropped := 0
	for ok := it.First(); ok; ok = it.Next() {
		start, n, err := decodeLoc(it.Value())
		if err != nil {
			it.Close()
			b.Close()
			return err
		}
		if start+int64(n) <= end {
			continue
		}
		if err := b.Delete(it.Key(), nil); err != nil {
			it.Close()
			b.Close()
			return err
		}
		dropped++
		if b.Len() > 4<<20 {
			err := b.Commit(pebble.NoSync)
			b.Close()
			if err != nil {
				it.Close()
				return err
			}
			b = db.NewBatch()
		}
	}
	if err := it.Close(); err != nil {
		b.Close()
		return err
	}
	if err := setOffset(b, keyIndexed, end); err != nil {
		b.Close()
		return err
	}
	err = b.Commit(pebble.Sync)
	b.Close()
	if err != nil {
		return err
	}
	log.Warn("embedded: dropped index entries of events lost from the log", "entries", dropped, "log_end", end)
	return nil
}

// pebbleLogger routes Pebble's messages to slog.
type pebbleLogger struct{ l *slog.Logger }

func (p pebbleLogger) Infof(format string, args ...any) {
	p.l.Debug("pebble: " + fmt.Sprintf(format, args...))
}

func (p pebbleLogger) Errorf(format string, args ...any) {
	p.l.Error("pebble: " + fmt.Sprintf(format, args...))
}

func (p pebbleLogger) Fatalf(format string, args ...any) {
	msg := "pebble: " + fmt.Sprintf(format, args...)
	p.l.Error(msg)
	panic(msg)
}
