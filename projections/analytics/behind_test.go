package analytics

import (
	"context"
	"github.com/linkd/linkd/projections"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/linkd/linkd/eventstore"
	"github.com/linkd/linkd/projections/projectiontest"
)

// applyIn applies events in batches of n.
func applyIn(t *testing.T, s *Store, events []eventstore.RecordedEvent, n int) {
	t.Helper()
	for i := 0; i < len(events); i += n {
		if err := s.Apply(context.Background(), projections.Envelopes(events[i:min(i+n, len(events))])); err != nil {
			t.Fatal(err)
		}
	}
}

// TestVersionsWrittenBehind: fed in log order, the store writes stream
// versions about once a second; a crash loses the waiting ones, and both
// ways of going on (the in-process feeder again, or Kafka redelivering
// anything) count every event exactly once.
func TestVersionsWrittenBehind(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	events := testEvents()

	// crashed applies the first half fed in log order, the versions
	// waiting, and returns the file system as a crash leaves it.
	crashed := func(t *testing.T) vfs.FS {
		fs := vfs.NewCrashableMem()
		s := openTest(t, "db", Options{fs: fs})
		s.WriteVersionsBehind()
		applyIn(t, s, events[:200], 20)
		projectiontest.CheckVersions(t, s, events[:200]) // from memory
		if s.behind.Waiting() == 0 {
			t.Fatal("no stream version waits: the test tests nothing")
		}
		return fs.CrashClone(vfs.CrashCloneCfg{})
	}

	t.Run("in process again", func(t *testing.T) {
		t.Parallel()
		s := openTest(t, "db", Options{fs: crashed(t)})
		s.WriteVersionsBehind()
		// The feeder goes back to where the versions were written last
		// (here, the start) and delivers everything after it.
		cp, err := s.Checkpoint(ctx)
		if err != nil || cp != eventstore.Start {
			t.Fatalf("Checkpoint = %v, %v; want the start of the gap", cp, err)
		}
		check(t, s, events[:200])
		applyIn(t, s, events, 20)
		check(t, s, events)
		projectiontest.CheckVersions(t, s, events)
		if cp, _ := s.Checkpoint(ctx); cp != events[len(events)-1].Position {
			t.Errorf("Checkpoint after the repair = %v", cp)
		}
		// The repaired gap is gone; the batches after it opened their own.
		if g := s.behind.Gap(); g.Exists() && (!g.Open || g.From != events[199].Position) {
			t.Errorf("gap %+v after the repair; want one opened at %v", g, events[199].Position)
		}
	})

	t.Run("then Kafka", func(t *testing.T) {
		t.Parallel()
		s := openTest(t, "db", Options{fs: crashed(t)})
		if cp, _ := s.Checkpoint(ctx); cp != events[199].Position {
			t.Fatalf("Checkpoint = %v, want %v", cp, events[199].Position)
		}
		// Kafka redelivers anything, in any order across streams.
		shuffled := append([]eventstore.RecordedEvent(nil), events...)
		rand.New(rand.NewPCG(1, 2)).Shuffle(len(shuffled), func(i, j int) {
			shuffled[i], shuffled[j] = shuffled[j], shuffled[i]
		})
		// Per stream in order, as one partition delivers it.
		byStream := map[string][]eventstore.RecordedEvent{}
		for _, e := range events {
			byStream[e.Stream] = append(byStream[e.Stream], e)
		}
		var interleaved []eventstore.RecordedEvent
		for len(byStream) > 0 {
			for _, e := range shuffled {
				if q := byStream[e.Stream]; len(q) > 0 {
					interleaved = append(interleaved, q[0])
					if len(q) == 1 {
						delete(byStream, e.Stream)
					} else {
						byStream[e.Stream] = q[1:]
					}
					break
				}
			}
		}
		applyIn(t, s, interleaved, 30)
		check(t, s, events)
		applyIn(t, s, events, 50) // and again
		check(t, s, events)
	})

	t.Run("Close writes them", func(t *testing.T) {
		t.Parallel()
		fs := vfs.NewCrashableMem()
		s := openTest(t, "db", Options{fs: fs})
		s.WriteVersionsBehind()
		applyIn(t, s, events[:200], 20)
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		s = openTest(t, "db", Options{fs: fs.CrashClone(vfs.CrashCloneCfg{})})
		if s.behind.Gap().Exists() {
			t.Errorf("gap %+v after Close", s.behind.Gap())
		}
		if cp, _ := s.Checkpoint(ctx); cp != events[199].Position {
			t.Errorf("Checkpoint = %v", cp)
		}
		projectiontest.CheckVersions(t, s, events[:200]) // from the database
		applyIn(t, s, events, 40)                        // Kafka-like redelivery
		check(t, s, events)
	})

	t.Run("written once an interval", func(t *testing.T) {
		t.Parallel()
		fs := vfs.NewCrashableMem()
		s := openTest(t, "db", Options{fs: fs})
		s.WriteVersionsBehind()
		s.behind.Every = time.Nanosecond // every batch
		applyIn(t, s, events[:200], 20)
		s = openTest(t, "db", Options{fs: fs.CrashClone(vfs.CrashCloneCfg{})})
		if s.behind.Gap().Exists() {
			t.Errorf("gap %+v though every batch wrote its versions", s.behind.Gap())
		}
		projectiontest.CheckVersions(t, s, events[:200])
	})
}
