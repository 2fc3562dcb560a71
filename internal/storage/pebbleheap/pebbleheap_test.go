package pebbleheap

import (
	"context"
	"fmt"
	"math"
	"runtime/debug"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

func TestLimitLeavesTheRestItsTarget(t *testing.T) {
	const mb = 1 << 20
	cases := []struct {
		name       string
		live, held int64
		percent    int
		want       int64
	}{
		// The rest of the heap is live-held: GOGC 200 gives it three times.
		{"full caches", 700 * mb, 600 * mb, 200, withSlack(600*mb + 3*100*mb)},
		{"GOGC 100", 700 * mb, 600 * mb, 100, withSlack(600*mb + 2*100*mb)},
		// Caches not full yet: the rest counts as at least minRest.
		{"caches filling", 100 * mb, 600 * mb, 200, withSlack(600*mb + 3*minRest)},
		{"no Pebble", 10 * mb, 0, 200, withSlack(3 * minRest)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := Limit(c.live, c.held, c.percent)
			if got != c.want {
				t.Errorf("Limit(%d MB, %d MB, %d) = %d MB, want %d MB", c.live/mb, c.held/mb, c.percent, got/mb, c.want/mb)
			}
			if got <= c.live {
				t.Errorf("Limit %d MB is not above the live heap %d MB", got/mb, c.live/mb)
			}
		})
	}
	if got := Limit(math.MaxInt64/2, 0, 1000); got != math.MaxInt64 {
		t.Errorf("Limit of a huge heap = %d, want MaxInt64", got)
	}
}

func TestHeldCountsOpenDatabases(t *testing.T) {
	base := Held()
	a, err := Open(t.TempDir(), &pebble.Options{CacheSize: 4 << 20})
	if err != nil {
		t.Fatal(err)
	}
	// A database holds its first memtable from Open.
	withA := Held()
	if withA <= base {
		t.Fatalf("Held after Open = %d, want more than %d", withA, base)
	}
	cache := pebble.NewCache(4 << 20)
	b, err := Open(t.TempDir(), &pebble.Options{Cache: cache})
	cache.Unref()
	if err != nil {
		t.Fatal(err)
	}
	// Blocks read back land in the cache.
	batch := b.NewBatch()
	for i := range 20000 {
		_ = batch.Set(fmt.Appendf(nil, "key-%06d", i), make([]byte, 100), nil)
	}
	if err := batch.Commit(pebble.NoSync); err != nil {
		t.Fatal(err)
	}
	if err := b.Flush(); err != nil {
		t.Fatal(err)
	}
	it, err := b.NewIter(nil)
	if err != nil {
		t.Fatal(err)
	}
	for it.First(); it.Valid(); it.Next() {
	}
	_ = it.Close()
	if m := b.Metrics(); m.BlockCache.Size == 0 {
		t.Fatal("no block cached after reading the table")
	}
	if got := Held(); got <= withA {
		t.Errorf("Held with both = %d, want more than %d", got, withA)
	}
	for _, db := range []*pebble.DB{a, b} {
		if err := Close(db); err != nil {
			t.Fatal(err)
		}
	}
	if got := Held(); got != base {
		t.Errorf("Held after closing them = %d, want %d", got, base)
	}
	if _, err := Open(t.TempDir()+"/missing/\x00", &pebble.Options{}); err == nil {
		t.Fatal("Open of an impossible path succeeded")
	}
	if got := Held(); got != base {
		t.Errorf("Held after a failed open = %d, want %d", got, base)
	}
}

// setGOGC sets the collector's GOGC for the test, restoring it after.
func setGOGC(t *testing.T, percent int) {
	old := debug.SetGCPercent(percent)
	t.Cleanup(func() { debug.SetGCPercent(old) })
}

func TestGovernSetsTheLimitAndRestoresIt(t *testing.T) {
	setGOGC(t, 200)
	before := debug.SetMemoryLimit(-1)
	if before != math.MaxInt64 {
		t.Fatalf("a memory limit is set (%d): run without GOMEMLIMIT", before)
	}
	db, err := Open(t.TempDir(), &pebble.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer Close(db)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { govern(ctx, true, 10*time.Millisecond); close(done) }()
	deadline := time.Now().Add(5 * time.Second)
	for debug.SetMemoryLimit(-1) == before {
		if time.Now().After(deadline) {
			t.Fatal("govern did not set a memory limit")
		}
		time.Sleep(time.Millisecond)
	}
	got := debug.SetMemoryLimit(-1)
	if lo, hi := Limit(0, Held(), 200), Limit(1<<40, Held(), 200); got < lo || got > hi {
		t.Errorf("limit %d outside [%d, %d]", got, lo, hi)
	}
	if held := Held(); got < held {
		t.Errorf("limit %d below what Pebble holds, %d", got, held)
	}
	cancel()
	<-done
	if got := debug.SetMemoryLimit(-1); got != before {
		t.Errorf("limit after govern returned = %d, want the one before, %d", got, before)
	}
}

func TestGovernOffChangesNothing(t *testing.T) {
	before := debug.SetMemoryLimit(-1)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	govern(ctx, false, time.Millisecond) // a build with cgo: returns at once
	if got := debug.SetMemoryLimit(-1); got != before {
		t.Errorf("limit = %d, want %d", got, before)
	}
	t.Run("GOGC off", func(t *testing.T) {
		setGOGC(t, -1)
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		govern(ctx, true, time.Millisecond) // nothing to pace: no limit
		if got := debug.SetMemoryLimit(-1); got != before {
			t.Errorf("limit = %d, want %d", got, before)
		}
	})
	t.Run("limit already set", func(t *testing.T) {
		const mine = 3 << 30
		debug.SetMemoryLimit(mine)
		defer debug.SetMemoryLimit(before)
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		govern(ctx, true, time.Millisecond) // the operator's: left alone
		if got := debug.SetMemoryLimit(-1); got != mine {
			t.Errorf("limit = %d, want the one set, %d", got, int64(mine))
		}
	})
}

func TestOnGoHeapFollowsTheBuild(t *testing.T) {
	// The test binary is built as the package is: cgo.go or nocgo.go.
	if OnGoHeap() != onGoHeap {
		t.Fatal("OnGoHeap disagrees with the build's constant")
	}
}

// withSlack is n and the tenth Limit adds for the runtime's own memory.
func withSlack(n int64) int64 { return int64(float64(n) * 1.1) }

func TestHeldSurvivesADatabaseClosedWithoutClose(t *testing.T) {
	base := Held()
	db, err := Open(t.TempDir(), &pebble.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil { // not Close: still in the map
		t.Fatal(err)
	}
	// Pebble answers Metrics of a closed database with zeros: Held, once a
	// second in a server, must neither panic nor count it.
	if got := Held(); got != base {
		t.Errorf("Held = %d, want the %d before", got, base)
	}
}
