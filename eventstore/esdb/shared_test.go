package esdb

import (
	"testing"
	"time"

	"github.com/linkd/linkd/eventstore"
)

// Leases and checkpoints are kept in metadata streams: none of their
// records is in the log that the relay and the projections read.
func TestFakeSharedRecordsInMetadata(t *testing.T) {
	t.Parallel()
	f, url := startFake(t)
	a, err := Open(t.Context(), url, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	ctx := t.Context()

	_, release, err := a.AcquireLease(ctx, "relay")
	if err != nil {
		t.Fatal(err)
	}
	release()
	want := eventstore.Position{Commit: 1 << 60, Prepare: 1<<60 - 1} // past float64's precision
	if err := a.SaveCheckpoint(ctx, "relay", want); err != nil {
		t.Fatal(err)
	}
	b := openFakeAt(t, url)
	if p, err := b.LoadCheckpoint(ctx, "relay"); err != nil || p != want {
		t.Errorf("another process loads %v, %v; want %v", p, err, want)
	}
	if got, err := b.ReadAll(ctx, eventstore.Start, 10); err != nil || len(got) != 0 {
		t.Errorf("ReadAll = %d events, %v; want none", len(got), err)
	}
	if h, err := b.Head(ctx); err != nil || !h.IsZero() {
		t.Errorf("Head = %v, %v; want Start", h, err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, stream := range []string{"$$linkd_lease-relay", "$$linkd_checkpoint-relay"} {
		if len(f.streams[stream]) == 0 {
			t.Errorf("nothing in %s", stream)
		}
		if len(f.streams[stream[2:]]) != 0 {
			t.Errorf("events in %s", stream[2:])
		}
	}
	if n := len(f.streams["$$linkd_lease-relay"]); n != 2 {
		t.Errorf("%d lease records, want 2 (held, released)", n)
	}
}

func openFakeAt(t *testing.T, url string) *Store {
	t.Helper()
	s, err := Open(t.Context(), url, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// CategoryHead answers a position at or after the categories' last event
// and at or before the log's: that event's when it is among the last
// events of the log, else the oldest of those.
func TestFakeCategoryHead(t *testing.T) {
	t.Parallel()
	f, url := startFake(t)
	s := openFakeAt(t, url)
	ctx := t.Context()
	head := func(cats ...string) eventstore.Position {
		t.Helper()
		p, err := s.CategoryHead(ctx, cats)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	if p := head("link"); !p.IsZero() {
		t.Errorf("an empty log's head of links: %v", p)
	}
	link, err := s.Append(ctx, "link-1", eventstore.Any(), ev("LinkCreated"))
	if err != nil {
		t.Fatal(err)
	}
	var click eventstore.AppendResult
	for range 5 {
		if click, err = s.Append(ctx, "clicks-1", eventstore.Any(), ev("ClickRecorded")); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		name string
		cats []string
		want eventstore.Position
	}{
		{"links, a few clicks later", []string{"link", "domain"}, link.Position},
		{"named with a dash", []string{"link-"}, link.Position},
		{"clicks", []string{"clicks"}, click.Position},
		{"a category with no events", []string{"nothing"}, eventstore.Start},
	}
	for _, tc := range cases {
		if p := head(tc.cats...); p != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, p, tc.want)
		}
	}

	// Many clicks later the links' last event is out of reach: the head
	// is past it, not past the log's.
	for range 3 * headPage {
		if click, err = s.Append(ctx, "clicks-1", eventstore.Any(), ev("ClickRecorded")); err != nil {
			t.Fatal(err)
		}
	}
	if p := head("link"); !link.Position.Less(p) || click.Position.Less(p) {
		t.Errorf("links' head far behind: %v, want in (%v, %v]", p, link.Position, click.Position)
	}
	if p := head("nothing"); p.IsZero() || click.Position.Less(p) {
		t.Errorf("an empty category's head in a long log: %v, want in (0, %v]", p, click.Position)
	}
	// Pages of system events alone at the end are read past.
	f.addSystem(3 * headPage)
	if p := head("clicks"); p != click.Position {
		t.Errorf("clicks' head behind system events: %v, want %v", p, click.Position)
	}
}

// Close writes the checkpoint saved within the last second, which waited.
func TestFakeCloseWritesCheckpoints(t *testing.T) {
	t.Parallel()
	_, url := startFake(t)
	a, b := openFakeAt(t, url), openFakeAt(t, url)
	ctx := t.Context()
	start := time.Now()
	for n := uint64(1); n <= 3; n++ {
		if err := a.SaveCheckpoint(ctx, "relay", eventstore.Position{Commit: n, Prepare: n}); err != nil {
			t.Fatal(err)
		}
	}
	p, err := b.LoadCheckpoint(ctx, "relay")
	if err != nil || p.Commit != 1 && time.Since(start) < checkpointWrites*9/10 {
		t.Fatalf("before Close another process loads %v, %v; want 1 (one write a second)", p, err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if p, err := b.LoadCheckpoint(ctx, "relay"); err != nil || p.Commit != 3 {
		t.Errorf("after Close another process loads %v, %v; want 3", p, err)
	}
}
