package postgres

import (
	"context"
	"testing"
	"time"

	"github.com/linkd/linkd/eventstore"
	"github.com/linkd/linkd/internal/testsupport/pgtest"
)

// recvN receives n events from sub within d, and returns their positions.
func recvN(t *testing.T, sub eventstore.Subscription, n int, d time.Duration) []uint64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), d)
	defer cancel()
	var out []uint64
	for range n {
		e, err := sub.Recv(ctx)
		if err != nil {
			t.Fatalf("after %d of %d events: %v", len(out), n, err)
		}
		out = append(out, e.Position.Commit)
	}
	return out
}

// subscribeT subscribes to the whole log of s, closed when t ends.
func subscribeT(t *testing.T, s *Store) eventstore.Subscription {
	t.Helper()
	sub, err := s.SubscribeAll(t.Context(), eventstore.Start, eventstore.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sub.Close() })
	return sub
}

// A store alone, whose subscription follows its own commits, takes them
// from memory: it reads the table for none of them (it read it after
// every one, a query per commit group for nothing).
func TestOwnCommitsReadNoTable(t *testing.T) {
	s := openT(t, pgtest.DSN(t), Options{PollInterval: time.Hour})
	sub := subscribeT(t, s)
	const n = 100
	for i := range n {
		if _, err := s.Append(t.Context(), "own-1", eventstore.Any(), ev(i)); err != nil {
			t.Fatal(err)
		}
		recvN(t, sub, 1, 5*time.Second)
	}
	// The first fill, and one after the LISTEN's start.
	reads := s.fillReads.Load()
	if reads > 2 {
		t.Errorf("%d reads of the table for %d of the store's own commits", reads, n)
	}
	t.Logf("%d reads of the table for %d of the store's own commits", reads, n)
}

// Two stores append in turn, with polling off: each store's subscription
// sees every commit of both, in order and at once, driven by the other's
// notifications and by the gaps the other's commits leave in its memory.
func TestOtherProcessCommitsSeenWithoutPolling(t *testing.T) {
	dsn := pgtest.DSN(t)
	a := openT(t, dsn, Options{PollInterval: time.Hour})
	b := openT(t, dsn, Options{PollInterval: time.Hour})
	subA, subB := subscribeT(t, a), subscribeT(t, b)
	for i := range 60 {
		s := a
		if i%3 != 0 { // runs of two on b: its own commits after a's
			s = b
		}
		res, err := s.Append(t.Context(), "turn-1", eventstore.Any(), ev(i))
		if err != nil {
			t.Fatal(err)
		}
		for name, sub := range map[string]eventstore.Subscription{"a": subA, "b": subB} {
			got := recvN(t, sub, 1, 3*time.Second)
			if got[0] != res.Position.Commit {
				t.Fatalf("store %s's subscription got position %d, want %d (append %d)", name, got[0], res.Position.Commit, i)
			}
		}
	}
}
