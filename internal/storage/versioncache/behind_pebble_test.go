package versioncache

import (
	"errors"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/linkd/linkd/eventstore"
)

var testKeys = Keys{
	Format: []byte("format"), Layout: 3, Checkpoint: []byte("checkpoint"), Gap: []byte("gap"),
	Stream: func(dst []byte, stream string) []byte { return append(append(dst, "v/"...), stream...) },
}

func TestOpenWritesTheLayoutAndReadsTheCheckpointAddWrote(t *testing.T) {
	db, err := pebble.Open("", &pebble.Options{FS: vfs.NewMem()})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var b Behind
	cp, err := b.Open(db, testKeys, pebble.Sync)
	if err != nil || cp != eventstore.Start {
		t.Fatalf("a new database: %v %v", cp, err)
	}
	if v, closer, err := db.Get(testKeys.Format); err != nil || len(v) != 1 || v[0] != 3 {
		t.Fatalf("layout written: %v %v", v, err)
	} else {
		closer.Close()
	}

	top := eventstore.Position{Commit: 1 << 40, Prepare: 7}
	batch := db.NewBatch()
	if err := (Plan{Versions: map[string]uint64{"s": 2}}).Add(batch, testKeys, top); err != nil {
		t.Fatal(err)
	}
	if err := batch.Commit(pebble.Sync); err != nil {
		t.Fatal(err)
	}
	if cp, err := b.Open(db, testKeys, pebble.Sync); err != nil || cp != top {
		t.Fatalf("checkpoint %v %v, want %v", cp, err, top)
	}

	if err := db.Set(testKeys.Checkpoint, []byte{1, 2, 3}, pebble.Sync); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Open(db, testKeys, pebble.Sync); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("a checkpoint of 3 bytes: %v", err)
	}

	other := testKeys
	other.Layout = 4
	if _, err := b.Open(db, other, pebble.Sync); err == nil || !strings.Contains(err.Error(), "unknown storage layout [3]") {
		t.Fatalf("another layout: %v", err)
	}
}
