package analytics

import (
	"context"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/linkd/linkd/eventstore"
	"github.com/linkd/linkd/projections"
)

// TestDeltasWrittenBehind: with FlushEvery the deltas wait in memory,
// added up; queries, FlushMax, the clock and Close write them; a crash
// loses only what the feeder, resuming after Checkpoint(), gives back.
func TestDeltasWrittenBehind(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	events := testEvents()

	t.Run("queries see what waits", func(t *testing.T) {
		t.Parallel()
		s := openTest(t, t.TempDir(), Options{NoSync: true, FlushEvery: time.Hour})
		s.WriteVersionsBehind()
		applyIn(t, s, events[:200], 20)
		if !s.waiting.Load() || s.durable != eventstore.Start {
			t.Fatalf("waiting %v, durable %v: nothing waits, the test tests nothing", s.waiting.Load(), s.durable)
		}
		if cp, _ := s.Checkpoint(ctx); cp != events[199].Position {
			t.Errorf("Checkpoint = %v, want %v", cp, events[199].Position)
		}
		check(t, s, events[:200])
		if s.waiting.Load() || s.durable != events[199].Position {
			t.Errorf("after a query: waiting %v, durable %v", s.waiting.Load(), s.durable)
		}
		applyIn(t, s, events[100:], 30) // redelivered and new, some waiting
		check(t, s, events)
	})

	t.Run("a crash loses what the feeder gives back", func(t *testing.T) {
		t.Parallel()
		fs := vfs.NewCrashableMem()
		opts := Options{fs: fs, NoSync: true, FlushEvery: time.Hour, FlushMax: 45}
		s := openTest(t, "db", opts)
		s.WriteVersionsBehind()
		applyIn(t, s, events[:150], 20) // FlushMax writes some
		if s.durable == eventstore.Start || s.durable == s.checkpoint {
			t.Fatalf("durable %v, applied %v: want some written and some waiting", s.durable, s.checkpoint)
		}
		if err := s.db.Flush(); err != nil { // on disk: the crash keeps it
			t.Fatal(err)
		}
		kept := s.durable
		applyIn(t, s, events[150:300], 20)

		opts.fs = fs.CrashClone(vfs.CrashCloneCfg{})
		s = openTest(t, "db", opts)
		s.WriteVersionsBehind()
		cp, err := s.Checkpoint(ctx)
		if err != nil || kept.Less(cp) {
			t.Fatalf("Checkpoint after the crash = %v, %v; want at most %v", cp, err, kept)
		}
		if !cp.Less(events[299].Position) {
			t.Fatalf("Checkpoint after the crash = %v: nothing lost, the test tests nothing", cp)
		}
		var again []eventstore.RecordedEvent // the feeder, in log order
		for _, ev := range events[:300] {
			if cp.Less(ev.Position) {
				again = append(again, ev)
			}
		}
		applyIn(t, s, again, 25)
		check(t, s, events[:300])
	})

	t.Run("the clock writes them", func(t *testing.T) {
		t.Parallel()
		s := openTest(t, t.TempDir(), Options{NoSync: true, FlushEvery: 20 * time.Millisecond})
		applyIn(t, s, events[:100], 10)
		deadline := time.Now().Add(10 * time.Second)
		for s.waiting.Load() && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		s.applyMu.Lock()
		durable := s.durable
		s.applyMu.Unlock()
		if durable != events[99].Position {
			t.Fatalf("durable %v after waiting; want %v", durable, events[99].Position)
		}
		check(t, s, events[:100])
	})

	t.Run("Close writes them", func(t *testing.T) {
		t.Parallel()
		fs := vfs.NewCrashableMem()
		opts := Options{fs: fs, NoSync: true, FlushEvery: time.Hour}
		s := openTest(t, "db", opts)
		s.WriteVersionsBehind()
		applyIn(t, s, events[:200], 20)
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		opts.fs = fs.CrashClone(vfs.CrashCloneCfg{})
		s = openTest(t, "db", opts)
		if cp, _ := s.Checkpoint(ctx); cp != events[199].Position {
			t.Errorf("Checkpoint = %v, want %v", cp, events[199].Position)
		}
		check(t, s, events[:200])
	})

	t.Run("Flush writes them", func(t *testing.T) {
		t.Parallel()
		s := openTest(t, t.TempDir(), Options{NoSync: true, FlushEvery: time.Hour})
		s.WriteVersionsBehind()
		applyIn(t, s, events[:200], 20)
		if !s.waiting.Load() {
			t.Fatal("nothing waits: the test tests nothing")
		}
		var f projections.Flusher = s // what a replay calls at its end
		if err := f.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		if s.waiting.Load() || s.durable != events[199].Position {
			t.Errorf("after Flush: waiting %v, durable %v; want %v", s.waiting.Load(), s.durable, events[199].Position)
		}
		check(t, s, events[:200])
	})

	t.Run("Reset forgets them", func(t *testing.T) {
		t.Parallel()
		s := openTest(t, t.TempDir(), Options{NoSync: true, FlushEvery: time.Hour})
		applyIn(t, s, events[:200], 20)
		if err := s.Reset(ctx); err != nil {
			t.Fatal(err)
		}
		if s.waiting.Load() {
			t.Error("deltas wait after Reset")
		}
		check(t, s, nil)
		applyIn(t, s, events, 50)
		check(t, s, events)
	})
}

func TestFlushEveryNeedsNoSync(t *testing.T) {
	t.Parallel()
	if err := (Options{FlushEvery: time.Second}).Validate(); err == nil {
		t.Error("FlushEvery without NoSync accepted")
	}
	if err := (Options{NoSync: true, FlushEvery: -1}).Validate(); err == nil {
		t.Error("negative FlushEvery accepted")
	}
	if err := (Options{NoSync: true, FlushEvery: time.Second}).Validate(); err != nil {
		t.Error(err)
	}
}
