package clickindex

import (
	"context"
	"github.com/linkd/linkd/projections"
	"testing"

	"github.com/linkd/linkd/eventstore"
	"github.com/linkd/linkd/projections/projectiontest"
)

// crash closes the database as a crash of the process leaves it: every
// committed batch is in its write-ahead log, nothing else is written.
func crash(t *testing.T, s *Store) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.db.Close(); err != nil {
		t.Fatal(err)
	}
	s.db = nil
}

// TestVersionsWrittenBehind: fed in log order, the index keeps stream
// versions in memory until about a second has passed (or Close); after a
// crash the feeder goes back to where they were written last, and they are
// learned again without applying anything twice.
func TestVersionsWrittenBehind(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	events := fixtureEvents()
	s := openTest(t, dir, Options{})
	s.WriteVersionsBehind()
	for i := range events {
		if err := s.Apply(ctx, projections.Envelopes(events[i:i+1])); err != nil {
			t.Fatal(err)
		}
	}
	checkFixture(t, s)
	projectiontest.CheckVersions(t, s, events) // from memory
	if n := countKeys(t, s, tagStream); n != 0 {
		t.Fatalf("%d stream versions written within a second", n)
	}
	crash(t, s)

	s = openTest(t, dir, Options{})
	s.WriteVersionsBehind()
	if cp, err := s.Checkpoint(ctx); err != nil || cp != eventstore.Start {
		t.Fatalf("Checkpoint after the crash = %v, %v; want the start of the gap", cp, err)
	}
	for i := range events {
		if err := s.Apply(ctx, projections.Envelopes(events[i:i+1])); err != nil {
			t.Fatal(err)
		}
	}
	checkFixture(t, s)
	projectiontest.CheckVersions(t, s, events)
	if n := countKeys(t, s, tagStream); n == 0 {
		t.Error("the repair wrote no stream version")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s = openTest(t, dir, Options{}) // Kafka: not fed in log order
	if cp, _ := s.Checkpoint(ctx); cp != events[len(events)-1].Position {
		t.Errorf("Checkpoint = %v", cp)
	}
	if g := s.behind.Gap(); g.Exists() {
		t.Errorf("gap %+v after Close", g)
	}
	projectiontest.CheckVersions(t, s, events) // from the database
	if err := s.Apply(ctx, projections.Envelopes(events)); err != nil {
		t.Fatal(err)
	}
	checkFixture(t, s)
}
