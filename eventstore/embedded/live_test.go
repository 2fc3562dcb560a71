package embedded

import (
	"context"
	"errors"
	"testing"

	"github.com/linkd/linkd/eventstore"
)

// TestValueReachesLiveSubscribers: an event's Value rides with it to the
// subscribers that receive it live, one per event of an append, in single
// and multi-stream appends; it is never stored, so catching up from the log
// and reading streams give nil.
func TestValueReachesLiveSubscribers(t *testing.T) {
	s := openT(t, Options{Dir: t.TempDir()})
	defer closeT(t, s)
	ctx := ctxT(t)
	sub := subscribeT(ctx, t, s)
	defer sub.Close()
	type v struct{ n int }
	vals := []*v{{1}, {2}, {3}, {4}}
	evs := testEvents(4, "x")
	evs[0].Value, evs[2].Value = vals[0], vals[2] // the second has none
	mustAppend(t, s, "a-1", eventstore.NoStream(), evs[:3]...)
	one := testEvents(1, "y")
	one[0].Value = vals[3]
	if _, err := s.AppendMulti(ctx, part("b-1", eventstore.Any(), one...), part("c-1", eventstore.Any(), testEvents(1, "z")...)); err != nil {
		t.Fatal(err)
	}
	want := []any{vals[0], nil, vals[2], vals[3], nil}
	for i, w := range want {
		ev, err := sub.Recv(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if w == nil && ev.Value != nil || w != nil && ev.Value != w {
			t.Errorf("live event %d (%s@%d) has value %v, want %v", i, ev.Stream, ev.Version, ev.Value, w)
		}
	}
	for _, ev := range checkConsistent(t, s) {
		if ev.Value != nil {
			t.Errorf("%s@%d read from the log has value %v", ev.Stream, ev.Version, ev.Value)
		}
	}
	late, err := s.SubscribeAll(ctx, eventstore.Start, eventstore.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	defer late.Close()
	// A subscriber that starts after the appends may still find them in
	// the live ring; values there are the appender's, never another's.
	for i, w := range want {
		ev, err := late.Recv(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if ev.Value != nil && ev.Value != w {
			t.Errorf("late event %d has value %v, want %v or none", i, ev.Value, w)
		}
	}
}

// TestRingKeepsFewValues: only the newest valueEvents events in the live
// ring keep their values; a subscriber further behind gets the events
// without.
func TestRingKeepsFewValues(t *testing.T) {
	s := openT(t, Options{Dir: t.TempDir()})
	defer closeT(t, s)
	ctx := ctxT(t)
	sub := subscribeT(ctx, t, s)
	defer sub.Close()
	n := valueEvents + 100
	for i := range n {
		evs := testEvents(1, "x")
		evs[0].Value = i
		mustAppend(t, s, "a-1", eventstore.Any(), evs...)
	}
	for i := range n {
		ev, err := sub.Recv(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if i < n-valueEvents && ev.Value != nil || i >= n-valueEvents && ev.Value != i {
			t.Fatalf("event %d of %d has value %v", i, n, ev.Value)
		}
	}
}

// TestDrainCommitted: a Recv whose ctx is done hands out every committed
// event still in the live ring, past what the subscription had buffered
// (eventstore.Drainer), then ctx's error.
func TestDrainCommitted(t *testing.T) {
	s := openT(t, Options{Dir: t.TempDir()})
	defer closeT(t, s)
	ctx := ctxT(t)
	sub := subscribeT(ctx, t, s)
	defer sub.Close()
	if _, ok := sub.(eventstore.Drainer); !ok {
		t.Fatal("the subscription is not a Drainer")
	}
	done, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := sub.Recv(done); !errors.Is(err, context.Canceled) {
		t.Fatalf("nothing committed yet: Recv gave %v", err)
	}
	n := 3*fillEvents + 7
	for range n {
		mustAppend(t, s, "a-1", eventstore.Any(), testEvents(1, "x")...)
	}
	drainVersions(t, sub, done, n)
}

// TestDrainCommittedFromTheLog: a subscriber behind the live ring (here
// every event was appended before it subscribed, with no ring kept) also
// gets every committed event from a Recv whose ctx is done, read from the
// log: a feeder catching up never waits for new appends to get old ones.
func TestDrainCommittedFromTheLog(t *testing.T) {
	s := openT(t, Options{Dir: t.TempDir()})
	defer closeT(t, s)
	ctx := ctxT(t)
	n := 2*fillEvents + 3
	for range n {
		mustAppend(t, s, "a-1", eventstore.Any(), testEvents(1, "x")...)
	}
	sub := subscribeT(ctx, t, s)
	defer sub.Close()
	done, cancel := context.WithCancel(ctx)
	cancel()
	drainVersions(t, sub, done, n)
}

// drainVersions receives n events with done, an ended context, expecting
// versions 0 to n-1, then ctx's error.
func drainVersions(t *testing.T, sub eventstore.Subscription, done context.Context, n int) {
	t.Helper()
	for i := range n {
		ev, err := sub.Recv(done)
		if err != nil {
			t.Fatalf("event %d of %d: %v", i, n, err)
		}
		if ev.Version != uint64(i) {
			t.Fatalf("event %d has version %d", i, ev.Version)
		}
	}
	if _, err := sub.Recv(done); !errors.Is(err, context.Canceled) {
		t.Fatalf("all drained: Recv gave %v", err)
	}
}
