package embedded

import (
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

// The flusher writes a due map with its mark while the indexer goes on in
// a new one; readers see the newest value of a stream throughout, and the
// index's once the flush is done.
func TestPendingVersionsFlush(t *testing.T) {
	s := openT(t, Options{Dir: t.TempDir()})
	defer closeT(t, s)
	var p pendingVersions
	p.start(s.db, func(err error) { t.Error(err) })
	p.add([]versionUpdate{{"a-1", 3, 100}, {"b-1", 7, 200}})
	p.maybeFlush(200)
	if p.flushing != nil {
		t.Fatal("flushed a map neither full nor a second old")
	}
	p.mu.Lock()
	p.since = time.Now().Add(-pendingEvery)
	p.mu.Unlock()
	p.maybeFlush(200)
	p.add([]versionUpdate{{"a-1", 4, 300}}) // after the hand-over: the new map
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
	// Stop writes the rest: a-1 at 4.
	if err := p.stop(s.db, 300, true); err != nil {
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
	p.start(db, func(err error) { failed = err })
	p.add([]versionUpdate{{"a-1", 3, 100}})
	p.mu.Lock()
	p.since = time.Now().Add(-pendingEvery)
	p.mu.Unlock()
	p.maybeFlush(100)
	err = p.stop(db, 100, true)
	if err == nil || failed == nil || !errors.Is(err, failed) {
		t.Fatalf("stop = %v, reported %v; want the flush's failure", err, failed)
	}
	if v, ok := p.get("a-1"); !ok || v.version != 3 {
		t.Fatalf("a-1 = %+v, %v after a failed flush; want it still readable", v, ok)
	}
}
