package embedded

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/linkd/linkd/eventstore"
)

// The flusher writes a due map with its mark while the indexer goes on in
// a new one; readers see the newest value of a stream throughout, and the
// index's once the flush is done.
func TestPendingVersionsFlush(t *testing.T) {
	s := openT(t, Options{Dir: t.TempDir()})
	defer closeT(t, s)
	var p pendingVersions
	p.start(s.db, nameHash, func(err error) { t.Error(err) })
	// a-1's events 0-3 end at 100, b-1's 0-7 at 200.
	var evs []eventLoc
	for v := range uint64(4) {
		evs = append(evs, eventLoc{v, int64(v) * 25, 25})
	}
	for v := range uint64(8) {
		evs = append(evs, eventLoc{v, 100 + int64(v)*10, 10})
	}
	p.add([]versionUpdate{{"a-1", 3, 100, 0, 4}, {"b-1", 7, 200, 4, 8}}, evs)
	p.maybeFlush(200, 150)
	if p.flushing != nil {
		t.Fatal("flushed a map neither full nor a second old")
	}
	p.mu.Lock()
	p.since = time.Now().Add(-pendingEvery)
	p.mu.Unlock()
	p.maybeFlush(200, 150)
	p.add([]versionUpdate{{"a-1", 4, 300, 0, 1}}, []eventLoc{{4, 200, 100}}) // after the hand-over: the new map
	if got := p.eventsOf("a-1"); len(got) != 5 || got[4] != (eventLoc{4, 200, 100}) {
		t.Fatalf("a-1's pending events during the flush = %v; want versions 0-4", got)
	}
	if v, ok := p.get("a-1"); !ok || v.version != 4 {
		t.Fatalf("a-1 = %+v, %v during the flush; want the newer version 4", v, ok)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		p.mu.RLock()
		busy := p.flushing != nil
		p.mu.RUnlock()
		if !busy {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the flush did not end")
		}
		time.Sleep(time.Millisecond)
	}
	if _, ok := p.get("b-1"); ok {
		t.Fatal("b-1 is still pending after its flush")
	}
	anyOwner := func(string, int64, int) (bool, error) { return true, nil }
	if v, ok, end, err := lastVersion(s.db, "b-1", nameHash, -1, anyOwner); err != nil || !ok || v != 7 || end != 200 {
		t.Fatalf("index: b-1 = %d, %v, %d, %v; want 7 ending at 200", v, ok, end, err)
	}
	if m, err := getOffset(s.db, keyVersioned); err != nil || m != 200 {
		t.Fatalf("m/versioned = %d, %v; want 200", m, err)
	}
	// and its event keys, with the marks.
	if got := p.eventsOf("b-1"); got != nil {
		t.Fatalf("b-1's events still pending after the flush: %v", got)
	}
	for _, c := range []struct {
		key  []byte
		want int64
	}{{keyIndexed, 200}, {keyDurable, 150}} {
		if m, err := getOffset(s.db, c.key); err != nil || m != c.want {
			t.Fatalf("%s = %d, %v; want %d", c.key, m, err, c.want)
		}
	}
	if v, ok, end, err := lastEvent(s.db, "b-1", nameHash("b-1"), 185, math.MaxUint64, anyOwner); err != nil || !ok || v != 7 || end != 180 {
		t.Fatalf("index: b-1's last event ending by 185 = %d, %v, %d, %v; want 7 ending at 180", v, ok, end, err)
	}
	// Stop writes the rest: a-1 at 4.
	if err := p.stop(s.db, 300, 0, true); err != nil {
		t.Fatal(err)
	}
	if v, ok, _, err := lastVersion(s.db, "a-1", nameHash, -1, anyOwner); err != nil || !ok || v != 4 {
		t.Fatalf("index after stop: a-1 = %d, %v, %v; want 4", v, ok, err)
	}
	if m, _ := getOffset(s.db, keyVersioned); m != 300 {
		t.Fatalf("m/versioned = %d after stop, want 300", m)
	}
}

// A failed flush is reported, keeps its map readable and stops flushing.
func TestPendingVersionsFlushFails(t *testing.T) {
	dir := t.TempDir()
	closeT(t, openT(t, Options{Dir: dir}))
	db, err := pebble.Open(filepath.Join(dir, indexSub), &pebble.Options{ReadOnly: true}) // writes fail
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var p pendingVersions
	var failed error
	p.start(db, nameHash, func(err error) { failed = err })
	p.add([]versionUpdate{{"a-1", 3, 100, 0, 1}}, []eventLoc{{3, 50, 50}})
	p.mu.Lock()
	p.since = time.Now().Add(-pendingEvery)
	p.mu.Unlock()
	p.maybeFlush(100, 0)
	err = p.stop(db, 100, 0, true)
	if err == nil || failed == nil || !errors.Is(err, failed) {
		t.Fatalf("stop = %v, reported %v; want the flush's failure", err, failed)
	}
	if v, ok := p.get("a-1"); !ok || v.version != 3 {
		t.Fatalf("a-1 = %+v, %v after a failed flush; want it still readable", v, ok)
	}
}

// TestReadStreamDuringFlushes: with the pending keys flushed every
// millisecond, readers of streams being appended to see every acknowledged
// event exactly once and in order, whether it is pending, being flushed or
// in the index; and so does a reopened store.
func TestReadStreamDuringFlushes(t *testing.T) {
	dir := t.TempDir()
	s := openT(t, Options{Dir: dir})
	s.pending.mu.Lock()
	s.pending.every = time.Millisecond
	s.pending.mu.Unlock()
	ctx := ctxT(t)
	const streams, writers, readers = 20, 6, 4
	name := func(i int) string { return fmt.Sprintf("flush-%d", i) }
	var acked [streams]atomic.Int64 // events acknowledged per stream
	var wg sync.WaitGroup
	stop := make(chan struct{})
	// loop calls body in a goroutine, with a random source of its own,
	// until stop is closed or body fails.
	loop := func(seed uint64, body func(rng *rand.Rand) bool) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, 7))
			for {
				select {
				case <-stop:
					return
				default:
				}
				if !body(rng) {
					return
				}
			}
		}()
	}
	for w := range writers {
		loop(uint64(w), func(rng *rand.Rand) bool {
			i := rng.IntN(streams)
			n := 1 + rng.IntN(3)
			evs := make([]eventstore.EventData, n)
			for k := range evs {
				evs[k] = eventstore.EventData{Type: "Flushed", Data: []byte(`{"k":1}`)}
			}
			if _, err := s.Append(ctx, name(i), eventstore.Any(), evs...); err != nil {
				t.Error(err)
				return false
			}
			acked[i].Add(int64(n))
			return true
		})
	}
	var reads atomic.Int64
	for r := range readers {
		loop(100+uint64(r), func(rng *rand.Rand) bool {
			i := rng.IntN(streams)
			done := acked[i].Load()
			if done == 0 {
				return true
			}
			from := uint64(rng.Int64N(done))
			evs, err := s.ReadStream(ctx, name(i), from, 1<<20)
			if err != nil {
				t.Error(err)
				return false
			}
			if int64(len(evs)) < done-int64(from) {
				t.Errorf("%s from %d: %d events, but %d were acknowledged before the read", name(i), from, len(evs), done)
				return false
			}
			for k, e := range evs {
				if e.Version != from+uint64(k) {
					t.Errorf("%s from %d: event %d has version %d", name(i), from, k, e.Version)
					return false
				}
			}
			reads.Add(1)
			return true
		})
	}
	time.Sleep(time.Second)
	close(stop)
	wg.Wait()
	if reads.Load() < 100 {
		t.Errorf("only %d reads: the test tests little", reads.Load())
	}
	check := func(s *Store) {
		for i := range streams {
			if acked[i].Load() == 0 {
				// No writer picked it (a slow machine's second): it does
				// not exist.
				if _, err := s.ReadStream(ctx, name(i), 0, 1<<20); !errors.Is(err, eventstore.ErrStreamNotFound) {
					t.Fatalf("%s, never appended to: %v, want ErrStreamNotFound", name(i), err)
				}
				continue
			}
			evs, err := s.ReadStream(ctx, name(i), 0, 1<<20)
			if err != nil || int64(len(evs)) != acked[i].Load() {
				t.Fatalf("%s: %d events, %v; want %d", name(i), len(evs), err, acked[i].Load())
			}
			if v, ok, err := s.StreamVersion(ctx, name(i)); err != nil || !ok || int64(v)+1 != acked[i].Load() {
				t.Fatalf("%s: version %d, %v, %v; want %d", name(i), v, ok, err, acked[i].Load()-1)
			}
		}
	}
	check(s)
	closeT(t, s)
	s = openT(t, Options{Dir: dir})
	defer closeT(t, s)
	check(s)
}
