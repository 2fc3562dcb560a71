package embedded

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/google/uuid"

	"github.com/linkd/linkd/eventstore"
)

func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func openT(t testing.TB, opts Options) *Store {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = discardLogger()
	}
	s, err := Open(opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return s
}

func closeT(t testing.TB, s *Store) {
	t.Helper()
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

// subscribeT subscribes to every event from the start; the caller closes
// the subscription.
func subscribeT(ctx context.Context, t testing.TB, s *Store) eventstore.Subscription {
	t.Helper()
	sub, err := s.SubscribeAll(ctx, eventstore.Start, eventstore.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	return sub
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func testEvents(n int, tag string) []eventstore.EventData {
	out := make([]eventstore.EventData, n)
	for i := range out {
		out[i] = eventstore.EventData{
			ID:   uuid.New(),
			Type: "Tested",
			Data: []byte(fmt.Sprintf(`{"tag":%q,"i":%d,"pad":"%s"}`, tag, i, strings.Repeat("x", 150))),
		}
	}
	return out
}

func mustAppend(t testing.TB, s *Store, stream string, exp eventstore.ExpectedVersion, evs ...eventstore.EventData) eventstore.AppendResult {
	t.Helper()
	res, err := s.Append(ctxT(t), stream, exp, evs...)
	if err != nil {
		t.Fatalf("Append(%s): %v", stream, err)
	}
	return res
}

func readAll(t testing.TB, s *Store) []eventstore.RecordedEvent {
	t.Helper()
	var out []eventstore.RecordedEvent
	after := eventstore.Start
	for {
		evs, err := s.ReadAll(ctxT(t), after, 333)
		if err != nil {
			t.Fatalf("ReadAll: %v", err)
		}
		for _, ev := range evs {
			if !after.Less(ev.Position) {
				t.Fatalf("ReadAll: %v after %v", ev.Position, after)
			}
			after = ev.Position
		}
		out = append(out, evs...)
		if len(evs) < 333 {
			return out
		}
	}
}

func sameEvents(t testing.TB, what string, got, want []eventstore.RecordedEvent) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d events, want %d", what, len(got), len(want))
	}
	for i := range got {
		g, w := got[i], want[i]
		if g.ID != w.ID || g.Stream != w.Stream || g.Version != w.Version || g.Position != w.Position ||
			g.Type != w.Type || !g.Time.Equal(w.Time) || !bytes.Equal(g.Data, w.Data) || !bytes.Equal(g.Metadata, w.Metadata) {
			t.Fatalf("%s: event %d is %s@%d %v, want %s@%d %v", what, i, g.Stream, g.Version, g.Position, w.Stream, w.Version, w.Position)
		}
	}
}

// checkConsistent verifies that every stream in the log reads back the same
// through the index, with gapless versions.
func checkConsistent(t testing.TB, s *Store) []eventstore.RecordedEvent {
	t.Helper()
	all := readAll(t, s)
	per := map[string][]eventstore.RecordedEvent{}
	for _, ev := range all {
		if ev.Version != uint64(len(per[ev.Stream])) {
			t.Fatalf("%s: version %d after %d events", ev.Stream, ev.Version, len(per[ev.Stream]))
		}
		per[ev.Stream] = append(per[ev.Stream], ev)
	}
	for stream, evs := range per {
		got, err := s.ReadStream(ctxT(t), stream, 0, 1<<30)
		if err != nil {
			t.Fatalf("ReadStream(%s): %v", stream, err)
		}
		sameEvents(t, "ReadStream "+stream, got, evs)
		v, ok, err := s.StreamVersion(ctxT(t), stream)
		if err != nil || !ok || v != uint64(len(evs)-1) {
			t.Fatalf("StreamVersion(%s) = %d, %v, %v; want %d", stream, v, ok, err, len(evs)-1)
		}
	}
	if len(all) > 0 {
		if h, _ := s.Head(ctxT(t)); h != all[len(all)-1].Position {
			t.Fatalf("Head = %v, last event at %v", h, all[len(all)-1].Position)
		}
	}
	return all
}

func lastSegment(t testing.TB, dir string) string {
	t.Helper()
	segs, err := listSegments(filepath.Join(dir, logSub))
	if err != nil || len(segs) == 0 {
		t.Fatalf("list segments: %v (%d)", err, len(segs))
	}
	return segs[len(segs)-1].path
}

func appendFile(t testing.TB, path string, b []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func fileSize(t testing.TB, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

func TestOptionsValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts Options
		want []string
	}{
		{"minimal", Options{Dir: "x"}, nil},
		{"always", Options{Dir: "x", Durability: SyncAlways, FlushInterval: time.Second}, nil},
		{"no dir", Options{}, []string{"Dir is required"}},
		{"everything wrong", Options{Durability: 7, FlushInterval: -1}, []string{"Dir is required", "Durability 7", "FlushInterval -1ns is negative"}},
		{"interval too long", Options{Dir: "x", FlushInterval: time.Hour}, []string{"longer than"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.opts.Validate()
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("Validate: nil error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Validate: %q does not mention %q", err, w)
				}
			}
		})
	}
	if _, err := Open(Options{}); err == nil {
		t.Fatal("Open without Dir succeeded")
	}
}

func TestLockedDir(t *testing.T) {
	dir := t.TempDir()
	s := openT(t, Options{Dir: dir})
	if s2, err := Open(Options{Dir: dir, Logger: discardLogger()}); err == nil {
		s2.Close()
		t.Fatal("a second Open of the same directory succeeded")
	} else if !strings.Contains(err.Error(), "locked") {
		t.Fatalf("second Open: %v, want a lock error", err)
	}
	closeT(t, s)
	closeT(t, openT(t, Options{Dir: dir}))
}

func TestRecordRoundTrip(t *testing.T) {
	id := uuid.New()
	ev := eventstore.EventData{Type: "T", Data: []byte("data"), Metadata: []byte("meta")}
	buf := appendRecord(nil, "stream-1", &ev, id, true)
	if len(buf) != recordSize("stream-1", &ev) {
		t.Fatalf("record is %d bytes, recordSize says %d", len(buf), recordSize("stream-1", &ev))
	}
	sealRecord(buf, 42, 1234)
	rec, n, err := parseRecord(buf)
	if err != nil || n != len(buf) {
		t.Fatalf("parseRecord: %d, %v", n, err)
	}
	if rec.version != 42 || rec.nanos != 1234 || rec.id != id || !rec.last() || string(rec.stream) != "stream-1" ||
		string(rec.typ) != "T" || string(rec.data) != "data" || string(rec.meta) != "meta" {
		t.Fatalf("parseRecord: %+v", rec)
	}
	for i := range buf {
		for _, bit := range []byte{0x01, 0x40} {
			bad := append([]byte(nil), buf...)
			bad[i] ^= bit
			if _, _, err := parseRecord(bad); err == nil {
				t.Fatalf("flipping bit %#x of byte %d went unnoticed", bit, i)
			}
		}
	}
	if _, need, err := parseRecord(buf[:len(buf)-1]); !errors.Is(err, errShort) || need != len(buf) {
		t.Fatalf("short record: %d, %v", need, err)
	}
	if _, _, err := parseRecord(make([]byte, 64)); !errors.Is(err, errCorrupt) {
		t.Fatalf("zeros: %v", err)
	}
}

// TestTornTail: whatever follows the last complete append in the last
// segment is cut off at Open, and the store goes on.
func TestTornTail(t *testing.T) {
	for _, tc := range []struct {
		name string
		tail func(t *testing.T, seg []byte, lastAppend []byte) []byte
	}{
		{"garbage", func(*testing.T, []byte, []byte) []byte { return []byte("this is not a record at all, not at all") }},
		{"half a record", func(_ *testing.T, seg, _ []byte) []byte {
			n := recordLen(seg)
			return seg[:n/2]
		}},
		{"header only", func(_ *testing.T, seg, _ []byte) []byte { return seg[:recHeaderSize] }},
		{"zeros", func(*testing.T, []byte, []byte) []byte { return make([]byte, 8192) }},
		{"append without its last record", func(t *testing.T, _, last []byte) []byte {
			// The first two records of a three-event append: each is a
			// valid record, but the append never ended.
			n1 := recordLen(last)
			n2 := recordLen(last[n1:])
			if n1+n2 >= len(last) {
				t.Fatal("test bug: the last append has fewer than three records")
			}
			return last[:n1+n2]
		}},
		{"complete record then garbage", func(_ *testing.T, seg, _ []byte) []byte {
			return append(append([]byte(nil), seg[:recordLen(seg)]...), 0xde, 0xad)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			s := openT(t, Options{Dir: dir})
			mustAppend(t, s, "a-1", eventstore.NoStream(), testEvents(2, "one")...)
			mustAppend(t, s, "b-1", eventstore.NoStream(), testEvents(1, "two")...)
			before := mustAppend(t, s, "a-1", eventstore.Exact(1), testEvents(3, "three")...)
			want := checkConsistent(t, s)
			closeT(t, s)

			path := lastSegment(t, dir)
			size := fileSize(t, path)
			seg, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			lastStart := int(want[len(want)-4].Position.Commit) // the three-event append starts here
			appendFile(t, path, tc.tail(t, seg, seg[lastStart:]))

			s = openT(t, Options{Dir: dir})
			defer closeT(t, s)
			if got := fileSize(t, path); got != size {
				t.Errorf("last segment is %d bytes after Open, want %d", got, size)
			}
			sameEvents(t, "after reopen", checkConsistent(t, s), want)
			res := mustAppend(t, s, "a-1", eventstore.Exact(4), testEvents(1, "four")...)
			if res.NextExpectedVersion != 5 || !before.Position.Less(res.Position) {
				t.Fatalf("append after recovery: %+v", res)
			}
			closeT(t, s)
			s = openT(t, Options{Dir: dir})
			if all := checkConsistent(t, s); len(all) != len(want)+1 {
				t.Fatalf("%d events after the second reopen, want %d", len(all), len(want)+1)
			}
		})
	}
}

// setIndexMarks rewrites the index's marks, as a crash can leave them.
func withIndex(t *testing.T, dir string, f func(db *pebble.DB)) {
	t.Helper()
	db, err := pebble.Open(filepath.Join(dir, indexSub), pebbleOptions(discardLogger()))
	if err != nil {
		t.Fatal(err)
	}
	f(db)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}

func setMark(t *testing.T, db *pebble.DB, key []byte, off int64) {
	t.Helper()
	b := db.NewBatch()
	defer b.Close()
	if err := setOffset(b, key, off); err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(pebble.Sync); err != nil {
		t.Fatal(err)
	}
}

// TestIndexAheadOfLog: a machine crash can keep index entries (Pebble
// flushed them) of events whose log tail was lost (not yet fsynced). Open
// must drop those entries so versions and reads follow the log.
func TestIndexAheadOfLog(t *testing.T) {
	for _, tc := range []struct {
		name string
		lose func(t *testing.T, path string, durable, end int64)
	}{
		{"tail missing", func(t *testing.T, path string, durable, _ int64) {
			if err := os.Truncate(path, durable); err != nil {
				t.Fatal(err)
			}
		}},
		{"tail partly zeroed", func(t *testing.T, path string, durable, end int64) {
			f, err := os.OpenFile(path, os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			// A page in the middle of the lost appends never reached the disk.
			if _, err := f.WriteAt(make([]byte, 100), durable+(end-durable)/2); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			s := openT(t, Options{Dir: dir})
			mustAppend(t, s, "a-1", eventstore.NoStream(), testEvents(3, "kept")...)
			mustAppend(t, s, "b-1", eventstore.NoStream(), testEvents(1, "kept")...)
			kept := checkConsistent(t, s)
			durable := int64(kept[len(kept)-1].Position.Commit)
			for i := range 20 {
				mustAppend(t, s, "a-1", eventstore.Any(), testEvents(2, fmt.Sprint("lost", i))...)
			}
			mustAppend(t, s, "c-1", eventstore.NoStream(), testEvents(2, "lost")...)
			end := s.committed.Load()
			closeT(t, s)

			// The log was fsynced up to durable only; the index kept it all.
			withIndex(t, dir, func(db *pebble.DB) { setMark(t, db, keyDurable, durable) })
			tc.lose(t, lastSegment(t, dir), durable, end)

			s = openT(t, Options{Dir: dir})
			defer closeT(t, s)
			all := checkConsistent(t, s)
			if len(all) < len(kept) {
				t.Fatalf("%d events after recovery, want at least the %d durable ones", len(all), len(kept))
			}
			sameEvents(t, "durable events", all[:len(kept)], kept)
			if _, ok, _ := s.StreamVersion(ctxT(t), "c-1"); ok && len(all) == len(kept) {
				t.Fatal("stream c-1 exists though its events are lost")
			}
			if _, err := s.ReadStream(ctxT(t), "c-1", 0, 10); len(all) == len(kept) && !errors.Is(err, eventstore.ErrStreamNotFound) {
				t.Fatalf("ReadStream of a lost stream: %v", err)
			}
			v, _, _ := s.StreamVersion(ctxT(t), "a-1")
			res := mustAppend(t, s, "a-1", eventstore.Exact(v), testEvents(1, "after")...)
			if res.NextExpectedVersion != v+1 {
				t.Fatalf("NextExpectedVersion = %d, want %d", res.NextExpectedVersion, v+1)
			}
			checkConsistent(t, s)
		})
	}
}

// TestIndexRebuilt: the index is disposable; a lost or lagging index is
// rebuilt from the log.
func TestIndexRebuilt(t *testing.T) {
	for _, tc := range []struct {
		name   string
		damage func(t *testing.T, dir string, mid int64)
	}{
		{"index deleted", func(t *testing.T, dir string, _ int64) {
			if err := os.RemoveAll(filepath.Join(dir, indexSub)); err != nil {
				t.Fatal(err)
			}
		}},
		{"index lost its tail", func(t *testing.T, dir string, mid int64) {
			withIndex(t, dir, func(db *pebble.DB) {
				// Drop every entry after mid, as if Pebble's unsynced WAL
				// tail died with the process.
				it, err := db.NewIter(&pebble.IterOptions{LowerBound: []byte{eventKeyTag}, UpperBound: []byte{eventKeyTag + 1}})
				if err != nil {
					t.Fatal(err)
				}
				b := db.NewBatch()
				for ok := it.First(); ok; ok = it.Next() {
					_, start, n, _ := decodeEvent(it.Key(), it.Value())
					if start+int64(n) > mid {
						b.Delete(it.Key(), nil)
					}
				}
				it.Close()
				b.Commit(pebble.Sync)
				b.Close()
				setMark(t, db, keyIndexed, mid)
				setMark(t, db, keyDurable, mid)
			})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			s := openT(t, Options{Dir: dir, segmentSize: 16 << 10})
			for i := range 300 {
				mustAppend(t, s, fmt.Sprintf("s-%d", i%17), eventstore.Any(), testEvents(1+i%3, "x")...)
			}
			want := checkConsistent(t, s)
			closeT(t, s)
			tc.damage(t, dir, int64(want[len(want)/2].Position.Commit))
			s = openT(t, Options{Dir: dir, segmentSize: 16 << 10})
			defer closeT(t, s)
			sameEvents(t, "after rebuild", checkConsistent(t, s), want)
			mustAppend(t, s, "s-0", eventstore.StreamExists(), testEvents(1, "y")...)
			checkConsistent(t, s)
		})
	}
}

// TestCollidingHashes: streams whose names share a hash in the index keep
// their own events, versions and reads, through reads from the middle, the
// acknowledged limit, a rebuilt index and an index that lost its tail.
func TestCollidingHashes(t *testing.T) {
	dir := t.TempDir()
	// Plain segments: the test cuts them as a machine crash would.
	opts := Options{Dir: dir, segmentSize: 16 << 10, noCompress: true, hash: func(string) uint64 { return 42 }}
	s := openT(t, opts)
	for i := range 300 {
		mustAppend(t, s, fmt.Sprintf("s-%d", i%13), eventstore.Any(), testEvents(1+i%3, "x")...)
	}
	want := checkConsistent(t, s)
	// From the middle, a few at a time: every stream's run interleaves
	// with the others' under the one hash.
	for i := range 13 {
		stream := fmt.Sprintf("s-%d", i)
		all, err := s.ReadStream(ctxT(t), stream, 0, 1<<30)
		if err != nil {
			t.Fatal(err)
		}
		for from := 0; from <= len(all); from += 7 {
			got, err := s.ReadStream(ctxT(t), stream, uint64(from), 5)
			if err != nil {
				t.Fatalf("ReadStream(%s, %d): %v", stream, from, err)
			}
			sameEvents(t, fmt.Sprintf("ReadStream(%s, %d, 5)", stream, from), got, all[from:min(from+5, len(all))])
		}
		// The last acknowledged event, from the event keys.
		v, ok, end, err := s.lastVersion(stream, int64(all[len(all)-1].Position.Commit)-1)
		if err != nil || !ok || v != uint64(len(all)-2) || end != int64(all[len(all)-2].Position.Commit) {
			t.Fatalf("lastVersion(%s) before its last event = %d, %v, %d, %v; want %d ending at %d",
				stream, v, ok, end, err, len(all)-2, all[len(all)-2].Position.Commit)
		}
	}
	if _, err := s.ReadStream(ctxT(t), "s-99", 0, 10); !errors.Is(err, eventstore.ErrStreamNotFound) {
		t.Fatalf("ReadStream of a stream never written = %v, want ErrStreamNotFound", err)
	}
	closeT(t, s)

	// Rebuilt from the log.
	if err := os.RemoveAll(filepath.Join(dir, indexSub)); err != nil {
		t.Fatal(err)
	}
	s = openT(t, opts)
	sameEvents(t, "after rebuild", checkConsistent(t, s), want)
	closeT(t, s)

	// The log lost its tail, the index did not: the version keys go back
	// to each stream's last event left, found among the others'.
	mid := int64(want[len(want)/2].Position.Commit)
	segs, _ := listSegments(filepath.Join(dir, logSub))
	for i, seg := range segs {
		switch {
		case seg.base > mid && i > 0:
			os.Remove(seg.path)
		case seg.base+seg.size > mid:
			if err := os.Truncate(seg.path, mid-seg.base); err != nil {
				t.Fatal(err)
			}
		}
	}
	withIndex(t, dir, func(db *pebble.DB) { setMark(t, db, keyDurable, 0) })
	s = openT(t, opts)
	defer closeT(t, s)
	var kept []eventstore.RecordedEvent
	for _, ev := range want {
		if int64(ev.Position.Commit) <= mid {
			kept = append(kept, ev)
		}
	}
	sameEvents(t, "after the lost tail", checkConsistent(t, s), kept)
	mustAppend(t, s, "s-0", eventstore.StreamExists(), testEvents(1, "y")...)
	checkConsistent(t, s)
}

// TestIndexFormatUpgrade: an index of an older format (no "m/format") is
// rebuilt from the log at Open, keeping the position the writer resumes
// at after a crash.
func TestIndexFormatUpgrade(t *testing.T) {
	for _, format := range []int64{0, 2} {
		t.Run(fmt.Sprintf("format %d", format), func(t *testing.T) { testIndexFormatUpgrade(t, format) })
	}
}

// testIndexFormatUpgrade upgrades an index of format (0: no mark).
func testIndexFormatUpgrade(t *testing.T, format int64) {
	dir := t.TempDir()
	opts := Options{Dir: dir, segmentSize: 16 << 10}
	s := openT(t, opts)
	for i := range 100 {
		mustAppend(t, s, fmt.Sprintf("s-%d", i%7), eventstore.Any(), testEvents(1+i%2, "x")...)
	}
	want := checkConsistent(t, s)
	closeT(t, s)
	// An old index: its format mark (none for the first), a version key
	// of the old layout (tag, uvarint length, name), and a crash (m/open
	// still 1) with positions handed out up to reserved.
	reserved := int64(1 << 20)
	withIndex(t, dir, func(db *pebble.DB) {
		old := append([]byte{versionKeyTag, 3}, "s-1"...)
		if err := db.Set(old, appendVersion(nil, 0, 10), pebble.Sync); err != nil {
			t.Fatal(err)
		}
		if err := db.Delete(keyFormat, pebble.Sync); err != nil {
			t.Fatal(err)
		}
		if format != 0 {
			setMark(t, db, keyFormat, format)
		}
		setMark(t, db, keyOpen, 1)
		setMark(t, db, keyReserved, reserved)
	})
	s = openT(t, opts)
	defer closeT(t, s)
	sameEvents(t, "after the upgrade", checkConsistent(t, s), want)
	res := mustAppend(t, s, "s-1", eventstore.StreamExists(), testEvents(1, "y")...)
	if int64(res.Position.Commit) <= reserved {
		t.Fatalf("first append after the crash at %d, want past the reserved %d", res.Position.Commit, reserved)
	}
	if f, err := getOffset(s.db, keyFormat); err != nil || f != indexFormat {
		t.Fatalf("index format %d (%v), want %d", f, err, indexFormat)
	}
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: []byte{eventKeyTag}, UpperBound: []byte{versionKeyTag + 1}})
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	for ok := it.First(); ok; ok = it.Next() {
		k := it.Key()
		if k[0] == eventKeyTag {
			if _, _, _, err := decodeEvent(k, it.Value()); err != nil {
				t.Fatalf("event key %x after the upgrade: %v", k, err)
			}
		} else if k[0] == versionKeyTag {
			if name, err := streamOfVersionKey(k); err != nil || !strings.HasPrefix(name, "s-") || len(name) > 3 {
				t.Fatalf("version key %x after the upgrade: %q, %v", k, name, err)
			}
		}
	}
}

// TestIndexFormat3: an index of format 3 (every version key written with
// its events, no "m/versioned") becomes format 4 in place: its keys are
// kept, not rebuilt, and its versions are those of the log.
func TestIndexFormat3(t *testing.T) {
	dir := t.TempDir()
	opts := Options{Dir: dir}
	s := openT(t, opts)
	for i := range 100 {
		mustAppend(t, s, fmt.Sprintf("s-%d", i%7), eventstore.Any(), testEvents(1, "x")...)
	}
	want := checkConsistent(t, s)
	closeT(t, s)
	// A key no rebuild would keep tells an upgrade in place.
	marker := []byte("x/kept")
	withIndex(t, dir, func(db *pebble.DB) {
		if err := db.Delete(keyVersioned, pebble.Sync); err != nil {
			t.Fatal(err)
		}
		setMark(t, db, keyFormat, 3)
		if err := db.Set(marker, nil, pebble.Sync); err != nil {
			t.Fatal(err)
		}
	})
	s = openT(t, opts)
	defer closeT(t, s)
	sameEvents(t, "after the upgrade", checkConsistent(t, s), want)
	if _, closer, err := s.db.Get(marker); err != nil {
		t.Fatalf("the index was rebuilt: %v", err)
	} else {
		closer.Close()
	}
	if f, err := getOffset(s.db, keyFormat); err != nil || f != indexFormat {
		t.Fatalf("index format %d (%v), want %d", f, err, indexFormat)
	}
	if v, err := getOffset(s.db, keyVersioned); err != nil || v != int64(want[len(want)-1].Position.Commit) {
		t.Fatalf("m/versioned = %d (%v), want the log's end %d", v, err, want[len(want)-1].Position.Commit)
	}
}

// TestPendingVersionsAfterCrash: versions still pending when the process
// dies (no Close, nothing flushed) are rewritten from the log at Open.
func TestPendingVersionsAfterCrash(t *testing.T) {
	dir := t.TempDir()
	s := openT(t, Options{Dir: dir})
	for i := range 50 {
		mustAppend(t, s, fmt.Sprintf("s-%d", i%5), eventstore.Any(), testEvents(1, "x")...)
	}
	if _, ok := s.pending.get("s-0"); !ok {
		t.Fatal("no pending version: the test no longer covers a crash with pending versions")
	}
	want := checkConsistent(t, s)
	// The files as a killed process leaves them, copied while open, once
	// the index has its event keys on disk (Pebble writes its log
	// asynchronously): "m/indexed" at the end, "m/versioned" at the start.
	if err := s.db.Flush(); err != nil {
		t.Fatal(err)
	}
	crashed := t.TempDir()
	if err := os.CopyFS(crashed, os.DirFS(dir)); err != nil {
		t.Fatal(err)
	}
	closeT(t, s)
	s = openT(t, Options{Dir: crashed})
	defer closeT(t, s)
	sameEvents(t, "after the crash", checkConsistent(t, s), want)
	mustAppend(t, s, "s-0", eventstore.Exact(9), testEvents(1, "y")...)
}

// TestIndexFormatNewer: an index of a newer format is not read.
func TestIndexFormatNewer(t *testing.T) {
	dir := t.TempDir()
	closeT(t, openT(t, Options{Dir: dir}))
	withIndex(t, dir, func(db *pebble.DB) { setMark(t, db, keyFormat, indexFormat+1) })
	if s, err := Open(Options{Dir: dir, Logger: discardLogger()}); err == nil {
		s.Close()
		t.Fatal("Open read an index of a newer format")
	}
}

// TestSegments: the log rolls over to new files; reads, subscriptions and
// recovery cross segment boundaries.
func TestSegments(t *testing.T) {
	dir := t.TempDir()
	opts := Options{Dir: dir, segmentSize: 8 << 10}
	s := openT(t, opts)
	sub, err := s.SubscribeAll(ctxT(t), eventstore.Start, eventstore.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	for i := range 200 {
		mustAppend(t, s, fmt.Sprintf("s-%d", i%7), eventstore.Any(), testEvents(1+i%4, "x")...)
	}
	// An append bigger than a segment gets one of its own.
	big := eventstore.EventData{Type: "Big", Data: bytes.Repeat([]byte("b"), 20<<10)}
	mustAppend(t, s, "big-1", eventstore.NoStream(), big, big)
	mustAppend(t, s, "s-0", eventstore.Any(), testEvents(2, "after big")...)
	want := checkConsistent(t, s)
	for i := range want {
		ev, err := sub.Recv(ctxT(t))
		if err != nil {
			t.Fatal(err)
		}
		sameEvents(t, "subscription", []eventstore.RecordedEvent{ev}, want[i:i+1])
	}
	segs, _ := listSegments(filepath.Join(dir, logSub))
	if len(segs) < 10 {
		t.Fatalf("%d segments, want many", len(segs))
	}
	for i, seg := range segs[:len(segs)-1] {
		if seg.size > opts.segmentSize && seg.size < 40<<10 {
			t.Errorf("segment %d holds %d bytes", i, seg.size)
		}
	}
	closeT(t, s)
	s = openT(t, opts)
	defer closeT(t, s)
	sameEvents(t, "after reopen", checkConsistent(t, s), want)
	// Reading from every position gives the rest of the log.
	for i := 0; i < len(want); i += 37 {
		got, err := s.ReadAll(ctxT(t), want[i].Position, 5)
		if err != nil {
			t.Fatal(err)
		}
		sameEvents(t, fmt.Sprintf("ReadAll after %d", i), got, want[i+1:min(i+6, len(want))])
	}
}

func TestBadPosition(t *testing.T) {
	s := openT(t, Options{Dir: t.TempDir()})
	defer closeT(t, s)
	res := mustAppend(t, s, "a-1", eventstore.NoStream(), testEvents(3, "x")...)
	if _, err := s.ReadAll(ctxT(t), eventstore.Position{Commit: 5, Prepare: 5}, 10); err == nil {
		t.Error("ReadAll from the middle of a record succeeded")
	}
	if _, err := s.ReadAll(ctxT(t), eventstore.Position{Commit: 5, Prepare: 4}, 10); err == nil {
		t.Error("ReadAll from a foreign position succeeded")
	}
	if evs, err := s.ReadAll(ctxT(t), eventstore.Position{Commit: res.Position.Commit + 100, Prepare: res.Position.Commit + 100}, 10); err != nil || len(evs) != 0 {
		t.Errorf("ReadAll after the head: %d events, %v", len(evs), err)
	}
}

// TestSlowSubscriber: subscribers that fall behind the live ring read the
// log again; fast, slow and filtered subscribers all get every event once,
// in order, while writers never wait for them.
func TestSlowSubscriber(t *testing.T) {
	for _, d := range []Durability{SyncInterval, SyncAlways} {
		t.Run(d.String(), func(t *testing.T) {
			s := openT(t, Options{Dir: t.TempDir(), Durability: d})
			defer closeT(t, s)
			s.live.mu.Lock()
			s.live.maxEvents, s.live.maxBytes = 64, 16<<10
			s.live.mu.Unlock()
			mustAppend(t, s, "pre-1", eventstore.NoStream(), testEvents(50, "history")...)

			const writers, appends = 4, 150
			type result struct {
				got []eventstore.RecordedEvent
				err error
			}
			filters := []eventstore.Filter{{}, {}, {StreamPrefixes: []string{"w1-", "w3-"}}}
			results := make([]result, len(filters))
			var subs sync.WaitGroup
			var writing atomic.Bool
			writing.Store(true)
			total := 50 + writers*appends*2
			want := []int{total, total, 2 * appends * 2}
			for i, f := range filters {
				sub, err := s.SubscribeAll(ctxT(t), eventstore.Start, f)
				if err != nil {
					t.Fatal(err)
				}
				defer sub.Close()
				subs.Add(1)
				go func() {
					defer subs.Done()
					for len(results[i].got) < want[i] {
						ev, err := sub.Recv(ctxT(t))
						if err != nil {
							results[i].err = err
							return
						}
						results[i].got = append(results[i].got, ev)
						if i == 1 && len(results[i].got)%50 == 0 && writing.Load() {
							time.Sleep(20 * time.Millisecond) // the slow one
						}
					}
				}()
			}
			var wg sync.WaitGroup
			for g := range writers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range appends {
						mustAppend(t, s, fmt.Sprintf("w%d-%d", g, i%5), eventstore.Any(), testEvents(2, "live")...)
					}
				}()
			}
			wg.Wait()
			writing.Store(false)
			done := make(chan struct{})
			go func() { subs.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(time.Minute):
				t.Fatal("subscribers did not finish")
			}
			all := checkConsistent(t, s)
			for i, r := range results {
				if r.err != nil {
					t.Fatalf("subscriber %d: %v", i, r.err)
				}
				var expect []eventstore.RecordedEvent
				for _, ev := range all {
					if filters[i].Match(ev.Stream) {
						expect = append(expect, ev)
					}
				}
				sameEvents(t, fmt.Sprintf("subscriber %d", i), r.got, expect)
			}
		})
	}
}

// TestReadsDuringAppends: readers never see part of an append, and what
// they see never goes backwards.
func TestReadsDuringAppends(t *testing.T) {
	for _, d := range []Durability{SyncInterval, SyncAlways} {
		t.Run(d.String(), func(t *testing.T) {
			s := openT(t, Options{Dir: t.TempDir(), Durability: d, segmentSize: 64 << 10})
			defer closeT(t, s)
			ctx := ctxT(t)
			stop := make(chan struct{})
			var wg sync.WaitGroup
			for g := range 4 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := 0; ; i++ {
						select {
						case <-stop:
							return
						default:
						}
						res, err := s.Append(ctx, fmt.Sprintf("s-%d", (g+i)%6), eventstore.Any(), testEvents(3, "x")...)
						if err != nil {
							t.Error(err)
							return
						}
						if d == SyncAlways && s.syncedEnd.Load() < int64(res.Position.Commit) {
							t.Errorf("SyncAlways: Append returned before its fsync (synced %d, event at %d)", s.syncedEnd.Load(), res.Position.Commit)
							return
						}
					}
				}()
			}
			var errs []string
			var mu sync.Mutex
			report := func(format string, args ...any) {
				mu.Lock()
				errs = append(errs, fmt.Sprintf(format, args...))
				mu.Unlock()
			}
			var readers sync.WaitGroup
			for r := range 3 {
				readers.Add(1)
				go func() {
					defer readers.Done()
					var lastHead eventstore.Position
					lastVersion := map[string]uint64{}
					deadline := time.Now().Add(500 * time.Millisecond)
					for time.Now().Before(deadline) {
						head, err := s.Head(ctx)
						if err != nil || head.Less(lastHead) {
							report("Head went from %v to %v (%v)", lastHead, head, err)
							return
						}
						lastHead = head
						stream := fmt.Sprintf("s-%d", r)
						if v, ok, err := s.StreamVersion(ctx, stream); err != nil {
							report("StreamVersion: %v", err)
							return
						} else if ok {
							if v < lastVersion[stream] || v%3 != 2 {
								report("StreamVersion(%s) = %d after %d", stream, v, lastVersion[stream])
								return
							}
							lastVersion[stream] = v
							evs, err := s.ReadStream(ctx, stream, 0, 1<<20)
							if err != nil || len(evs) < int(v)+1 || len(evs)%3 != 0 {
								report("ReadStream(%s): %d events (version %d), %v", stream, len(evs), v, err)
								return
							}
						}
						evs, err := s.ReadAll(ctx, eventstore.Start, 1<<20)
						if err != nil {
							report("ReadAll: %v", err)
							return
						}
						if len(evs)%3 != 0 || (len(evs) > 0 && evs[len(evs)-1].Position.Less(head)) {
							report("ReadAll saw %d events ending at %v, head was %v", len(evs), evs[len(evs)-1].Position, head)
							return
						}
					}
				}()
			}
			readers.Wait()
			close(stop)
			wg.Wait()
			for _, e := range errs {
				t.Error(e)
			}
			checkConsistent(t, s)
		})
	}
}

// TestSyncInterval: the flusher fsyncs what was written within its interval.
func TestSyncInterval(t *testing.T) {
	s := openT(t, Options{Dir: t.TempDir(), FlushInterval: 10 * time.Millisecond})
	defer closeT(t, s)
	res := mustAppend(t, s, "a-1", eventstore.NoStream(), testEvents(1, "x")...)
	deadline := time.Now().Add(5 * time.Second)
	for s.syncedEnd.Load() < int64(res.Position.Commit) {
		if time.Now().After(deadline) {
			t.Fatal("the flusher did not fsync the log")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestCloseWithAppendsInFlight: Close lets queued appends finish or fail,
// and every acknowledged one is there after reopening.
func TestCloseWithAppendsInFlight(t *testing.T) {
	for _, d := range []Durability{SyncInterval, SyncAlways} {
		t.Run(d.String(), func(t *testing.T) {
			dir := t.TempDir()
			s := openT(t, Options{Dir: dir, Durability: d})
			var wg sync.WaitGroup
			var mu sync.Mutex
			acked := map[string]uint64{}
			for g := range 8 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					stream := fmt.Sprintf("s-%d", g)
					for {
						res, err := s.Append(context.Background(), stream, eventstore.Any(), testEvents(2, "x")...)
						if errors.Is(err, eventstore.ErrClosed) {
							return
						}
						if err != nil {
							t.Error(err)
							return
						}
						mu.Lock()
						acked[stream] = res.NextExpectedVersion
						mu.Unlock()
					}
				}()
			}
			time.Sleep(100 * time.Millisecond)
			closeT(t, s)
			wg.Wait()
			s = openT(t, Options{Dir: dir, Durability: d})
			defer closeT(t, s)
			checkConsistent(t, s)
			for stream, v := range acked {
				got, ok, err := s.StreamVersion(ctxT(t), stream)
				if err != nil || !ok || got < v {
					t.Fatalf("%s: version %d, %v, %v after reopen; %d was acknowledged", stream, got, ok, err, v)
				}
			}
		})
	}
}

func TestVersionCache(t *testing.T) {
	c := newVersionCache(3)
	c.put("a", 1, 10)
	c.put("b", 2, 20)
	c.put("c", 3, 30)
	c.getNode("a") // b is now the least recently used
	c.put("d", 4, 40)
	if _, _, ok := c.getNode("b"); ok {
		t.Fatal("b was not evicted")
	}
	if c.horizon != 20 {
		t.Fatalf("horizon = %d after evicting b, want 20", c.horizon)
	}
	for k, v := range map[string]uint64{"a": 1, "c": 3, "d": 4} {
		if _, got, ok := c.getNode(k); !ok || got != v {
			t.Fatalf("get(%s) = %d, %v", k, got, ok)
		}
	}
	c.put("c", 9, 50)
	if _, got, _ := c.getNode("c"); got != 9 || c.len() != 3 {
		t.Fatalf("update: %d, len %d", got, c.len())
	}
	c.reset(60)
	if _, _, ok := c.getNode("a"); ok || c.len() != 0 || c.horizon != 60 {
		t.Fatal("reset kept entries")
	}
}

// TestVersionCacheUpdate: update changes the node getNode found, and
// nothing once the node holds another stream or the cache was reset.
func TestVersionCacheUpdate(t *testing.T) {
	c := newVersionCache(2)
	c.put("a", 1, 10)
	c.put("b", 2, 20)
	node, v, ok := c.getNode("a")
	if !ok || v != 1 {
		t.Fatalf("getNode(a) = %d, %d, %v", node, v, ok)
	}
	if !c.update(node, "a", 5, 50) {
		t.Fatal("update of a found node refused")
	}
	if _, got, _ := c.getNode("a"); got != 5 || c.nodes[node].end != 50 {
		t.Fatalf("after update: version %d, end %d", got, c.nodes[node].end)
	}
	bNode, _, _ := c.getNode("b")
	c.getNode("a")    // b is the least recently used
	c.put("c", 3, 30) // takes b's node
	if c.update(bNode, "b", 9, 90) {
		t.Fatal("update of an evicted stream's node accepted")
	}
	if _, got, _ := c.getNode("c"); got != 3 {
		t.Fatalf("c = %d after a refused update of its node", got)
	}
	if _, _, ok := c.getNode("b"); ok {
		t.Fatal("b came back")
	}
	if _, _, ok := c.getNode("missing"); ok {
		t.Fatal("getNode found a stream never put")
	}
	c.reset(100)
	if c.update(node, "a", 7, 70) || c.len() != 0 {
		t.Fatal("update after reset accepted")
	}
}

// TestManyStreamsSmallCache: with more streams than the cache holds,
// versions fall back to the index and stay exact.
func TestManyStreamsSmallCache(t *testing.T) {
	dir := t.TempDir()
	s := openT(t, Options{Dir: dir, cacheSize: 1}) // raised to the minimum
	defer closeT(t, s)
	const streams = 2*minCacheSize + 100
	ctx := ctxT(t)
	for round := range 2 {
		var wg sync.WaitGroup
		for g := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := g; i < streams; i += 8 {
					exp := eventstore.NoStream()
					if round == 1 {
						exp = eventstore.Exact(0)
					}
					if _, err := s.Append(ctx, fmt.Sprintf("s-%d", i), exp, testEvents(1, "x")...); err != nil {
						t.Error(err)
						return
					}
				}
			}()
		}
		wg.Wait()
		if s.w.cache.len() > minCacheSize {
			t.Fatalf("cache holds %d streams, capacity %d", s.w.cache.len(), minCacheSize)
		}
		// The hot table names cached streams only: evictions cleared
		// their slots (the appends are done, so nothing races here).
		hot := 0
		for i := range streams {
			stream := fmt.Sprintf("s-%d", i)
			h := maphash.String(hashSeed, stream)
			if s.hot[h%hotSlots].Load() != h {
				continue
			}
			hot++
			if _, ok := s.w.cache.index[stream]; !ok {
				t.Fatalf("round %d: %s is in the hot table but not in the cache", round, stream)
			}
		}
		if hot == 0 {
			t.Fatalf("round %d: no stream is in the hot table", round)
		}
	}
	if _, err := s.Append(ctxT(t), "s-0", eventstore.NoStream(), testEvents(1, "x")...); !errors.Is(err, eventstore.ErrWrongExpectedVersion) {
		t.Fatalf("NoStream on an evicted stream: %v", err)
	}
}

func TestTooLarge(t *testing.T) {
	s := openT(t, Options{Dir: t.TempDir()})
	defer closeT(t, s)
	big := eventstore.EventData{Type: "Big", Data: make([]byte, MaxEventSize)}
	if _, err := s.Append(ctxT(t), "a-1", eventstore.Any(), big); !errors.Is(err, eventstore.ErrInvalidEvent) {
		t.Fatalf("event over MaxEventSize: %v", err)
	}
	half := eventstore.EventData{Type: "Half", Data: make([]byte, MaxEventSize/2)}
	evs := make([]eventstore.EventData, MaxAppendSize/len(half.Data)+1)
	for i := range evs {
		evs[i] = half
	}
	if _, err := s.Append(ctxT(t), "a-1", eventstore.Any(), evs...); !errors.Is(err, eventstore.ErrInvalidEvent) {
		t.Fatalf("append over MaxAppendSize: %v", err)
	}
	if _, ok, _ := s.StreamVersion(ctxT(t), "a-1"); ok {
		t.Fatal("a refused append was written")
	}
	mustAppend(t, s, "a-1", eventstore.NoStream(), eventstore.EventData{Type: "Almost", Data: make([]byte, MaxEventSize-100)})
}

// TestCrashedOpenSkipsPositions: after a crash that may have lost
// acknowledged appends (SyncInterval, machine crash), new events never get
// positions that were handed out before the crash.
func TestCrashedOpenSkipsPositions(t *testing.T) {
	dir := t.TempDir()
	// Plain segments: the test cuts them as a machine crash would.
	opts := Options{Dir: dir, segmentSize: 64 << 10, noCompress: true}
	s := openT(t, opts)
	for i := range 100 {
		mustAppend(t, s, fmt.Sprintf("s-%d", i%5), eventstore.Any(), testEvents(2, "before")...)
	}
	kept := checkConsistent(t, s)
	durable := int64(kept[len(kept)/2].Position.Commit)
	handedOut := kept[len(kept)-1].Position
	closeT(t, s)

	// A machine crash: the store was open, the log lost its tail after the
	// last fsync, and the index lost its unsynced part.
	withIndex(t, dir, func(db *pebble.DB) {
		setMark(t, db, keyOpen, 1)
		setMark(t, db, keyDurable, durable)
	})
	segs, _ := listSegments(filepath.Join(dir, logSub))
	for _, seg := range segs {
		if seg.base+seg.size > durable {
			if err := os.Truncate(seg.path, max(durable-seg.base, 0)); err != nil {
				t.Fatal(err)
			}
		}
	}
	for i, seg := range segs {
		if seg.base > durable && i > 0 {
			os.Remove(seg.path)
		}
	}

	s = openT(t, opts)
	all := checkConsistent(t, s)
	if len(all) >= len(kept) {
		t.Fatalf("%d events after the simulated loss, want fewer than %d", len(all), len(kept))
	}
	// Appends that write nothing leave Head at the last event, not at the
	// start of the new segment.
	if _, err := s.Append(ctxT(t), "s-0", eventstore.NoStream(), testEvents(1, "refused")...); !errors.Is(err, eventstore.ErrWrongExpectedVersion) {
		t.Fatalf("NoStream on an existing stream: %v", err)
	}
	mustAppend(t, s, "s-0", eventstore.StreamExists())
	checkConsistent(t, s)
	res := mustAppend(t, s, "s-0", eventstore.Any(), testEvents(3, "after")...)
	if !handedOut.Less(res.Position) {
		t.Fatalf("position %v after the crash is not past %v, handed out before", res.Position, handedOut)
	}
	sub, err := s.SubscribeAll(ctxT(t), eventstore.Start, eventstore.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	all = checkConsistent(t, s)
	for i := range all {
		ev, err := sub.Recv(ctxT(t))
		if err != nil {
			t.Fatal(err)
		}
		sameEvents(t, "subscription across the gap", []eventstore.RecordedEvent{ev}, all[i:i+1])
	}
	// Reading after the position at the gap's start continues after it.
	got, err := s.ReadAll(ctxT(t), all[len(all)-4].Position, 10)
	if err != nil {
		t.Fatal(err)
	}
	sameEvents(t, "ReadAll across the gap", got, all[len(all)-3:])
	for range 50 {
		mustAppend(t, s, "s-1", eventstore.Any(), testEvents(3, "more")...)
	}
	closeT(t, s)
	s = openT(t, opts)
	defer closeT(t, s)
	if n := len(checkConsistent(t, s)); n != len(all)+150 {
		t.Fatalf("%d events after reopening, want %d", n, len(all)+150)
	}
}

// TestIndexBatchKeepsLastVersion: several appends to one stream in one
// chunk leave its version at the last one, with all its events, pending
// and once flushed to the index, though event keys are sorted.
func TestIndexBatchKeepsLastVersion(t *testing.T) {
	s := openT(t, Options{Dir: t.TempDir()})
	defer closeT(t, s)
	ib := &indexBatch{}
	for v := range uint64(5) {
		ib.addEvent(v, int64(v)*300, 100)
		ib.addVersion("a-1", v, int64(v)*300+100)
		ib.addEvent(2*v, int64(v)*300+100, 100) // b-1: two events an append
		ib.addEvent(2*v+1, int64(v)*300+200, 100)
		ib.addVersion("b-1", 2*v+1, int64(v+1)*300)
	}
	var p pendingVersions
	p.add(ib.versions, ib.events)
	for stream, want := range map[string]uint64{"a-1": 4, "b-1": 9} {
		if v, ok := p.get(stream); !ok || v.version != want {
			t.Fatalf("pending version of %s = %+v, %v; want %d", stream, v, ok, want)
		}
		ev := p.eventsOf(stream)
		if len(ev) != int(want)+1 {
			t.Fatalf("%d pending events of %s, want %d", len(ev), stream, want+1)
		}
		for i, e := range ev {
			if e.version != uint64(i) {
				t.Fatalf("pending events of %s: %v", stream, ev)
			}
		}
	}
	if err := writeVersions(s.db, p.active, 1500, 0, nameHash); err != nil {
		t.Fatal(err)
	}
	for stream, want := range map[string]uint64{"a-1": 4, "b-1": 9} {
		// No log behind these entries: every record is taken as the
		// stream's.
		anyOwner := func(string, int64, int) (bool, error) { return true, nil }
		v, ok, end, err := lastVersion(s.db, stream, nameHash, -1, anyOwner)
		if err != nil || !ok || v != want {
			t.Fatalf("lastVersion(%s) = %d, %v, %d, %v", stream, v, ok, end, err)
		}
		if v2, ok2, end2, _ := lastEvent(s.db, stream, nameHash(stream), -1, math.MaxUint64, anyOwner); v2 != v || !ok2 || end2 != end {
			t.Fatalf("version key (%d, %d) and event keys (%d, %d) disagree", v, end, v2, end2)
		}
	}
}

// TestAppendAnswerIsTheTruth: appends whose contexts end while they wait,
// many at once, are answered with what happened: every append that
// returned success is in its stream, and none that returned an error is
// (an append the writer took is waited for whatever its context does).
func TestAppendAnswerIsTheTruth(t *testing.T) {
	s := openT(t, Options{Dir: t.TempDir()})
	defer closeT(t, s)
	const writers, each = 16, 50
	var ok atomic.Int64
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				ctx, cancel := context.WithCancel(context.Background())
				// Ended at once, a little later, or not at all.
				switch i % 3 {
				case 0:
					go cancel()
				case 1:
					time.AfterFunc(time.Duration(i%7)*10*time.Microsecond, cancel)
				}
				_, err := s.Append(ctx, fmt.Sprintf("truth-%d", w), eventstore.Any(), testEvents(1, "t")...)
				cancel()
				if err == nil {
					ok.Add(1)
				} else if !errors.Is(err, context.Canceled) {
					t.Errorf("append: %v", err)
				}
			}
		}()
	}
	wg.Wait()
	var stored int64
	for w := range writers {
		evs, err := s.ReadStream(ctxT(t), fmt.Sprintf("truth-%d", w), 0, 10*each)
		if err != nil {
			t.Fatal(err)
		}
		stored += int64(len(evs))
	}
	if stored != ok.Load() {
		t.Fatalf("%d events stored, %d appends answered success", stored, ok.Load())
	}
	// Those never canceled (i%3 == 2) must all have succeeded.
	if never := int64(writers * (each / 3)); ok.Load() < never {
		t.Fatalf("only %d of %d appends succeeded, want at least the %d never canceled", ok.Load(), writers*each, never)
	}
}

// doneCounter is a context that counts the calls of its Done.
type doneCounter struct {
	context.Context
	calls atomic.Int64
}

func (c *doneCounter) Done() <-chan struct{} {
	c.calls.Add(1)
	return c.Context.Done()
}

// An append the queue has room for never asks its context for a Done
// channel (which a request's context makes when first asked: an
// allocation per click); one the queue cannot take yet still ends with its
// context.
func TestAppendWaitsOnContextOnlyForTheQueue(t *testing.T) {
	s := openT(t, Options{Dir: t.TempDir()})
	defer closeT(t, s)
	ctx := &doneCounter{Context: context.Background()}
	for range 20 {
		if _, err := s.Append(ctx, "room", eventstore.Any(), testEvents(1, "t")...); err != nil {
			t.Fatal(err)
		}
	}
	if n := ctx.calls.Load(); n != 0 {
		t.Errorf("appends with room in the queue asked for Done %d times, want 0", n)
	}
	// The writer ranges over the queue it started with (and has taken the
	// appends above since): a queue of its own that nobody takes from
	// is a full one.
	orig := s.queue
	s.queue = make(chan *appendReq)
	defer func() { s.queue = orig }()
	tctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	full := &doneCounter{Context: tctx}
	if _, err := s.Append(full, "full", eventstore.Any(), testEvents(1, "t")...); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("append to a full queue: %v, want the context's deadline", err)
	}
	if full.calls.Load() == 0 {
		t.Error("an append waiting for the queue did not watch its context")
	}
}
