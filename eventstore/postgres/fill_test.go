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

// Subscriptions that are up to date share the store's reads of the table:
// a wake with nothing new in memory and no sign of another process's commit
// (the sign consumed by a fill of another subscription) waits for the next
// sign. They read the table themselves only when behind what memory holds.
// Each of them read it after such a wake, finding nothing most times: with
// three instances, half of the log's reads.
func TestSubscriptionsShareTheirReads(t *testing.T) {
	dsn := pgtest.DSN(t)
	a := openT(t, dsn, Options{PollInterval: time.Hour})
	b := openT(t, dsn, Options{PollInterval: time.Hour})
	const subs, rounds = 8, 40
	var bs []eventstore.Subscription
	for range subs {
		bs = append(bs, subscribeT(t, b))
	}
	for i := range rounds {
		// a's commit, then b's own: b's commit leaves a gap in its
		// memory, a fill reads both, and a's notification comes after.
		ra, err := a.Append(t.Context(), "share-1", eventstore.Any(), ev(2*i))
		if err != nil {
			t.Fatal(err)
		}
		rb, err := b.Append(t.Context(), "share-1", eventstore.Any(), ev(2*i+1))
		if err != nil {
			t.Fatal(err)
		}
		for k, sub := range bs {
			got := recvN(t, sub, 2, 3*time.Second)
			if got[0] != ra.Position.Commit || got[1] != rb.Position.Commit {
				t.Fatalf("round %d, subscription %d: positions %v, want [%d %d]", i, k, got, ra.Position.Commit, rb.Position.Commit)
			}
		}
		if i == 0 {
			// The subscriptions read in Recv: their first began behind
			// memory (b's commit after a's, neither read yet), which the
			// table serves. Counted from here, when they are up to date.
			b.fillReads.Store(0)
			b.subReads.Store(0)
		}
	}
	fills, own := b.fillReads.Load(), b.subReads.Load()
	t.Logf("%d subscriptions, %d rounds: %d fills, %d reads by the subscriptions themselves", subs, rounds, fills, own)
	if own != 0 {
		t.Errorf("the subscriptions, up to date, read the table %d times themselves; want none (the fills serve them)", own)
	}
	if fills > 3*rounds+2 {
		t.Errorf("%d fills for %d rounds of one commit of each store", fills, rounds)
	}
}

// A subscription that read the table itself past what memory holds (it
// started behind a short memory) gets the rest through fills, page after
// page, though no sign comes any more: each full page of a fill asks for
// the next.
func TestSubscriptionAheadOfMemoryCatchesUp(t *testing.T) {
	dsn := pgtest.DSN(t)
	a := openT(t, dsn, Options{PollInterval: time.Hour})
	b := openT(t, dsn, Options{PollInterval: time.Hour})
	batch := func(s *Store, n, from int) {
		t.Helper()
		evs := make([]eventstore.EventData, n)
		for i := range evs {
			evs[i] = ev(from + i)
		}
		if _, err := s.Append(t.Context(), "ahead-1", eventstore.Any(), evs...); err != nil {
			t.Fatal(err)
		}
	}
	batch(a, 5, 0)
	batch(b, 1, 5) // b's memory: this one event
	const total = 5 + 1 + 2*subPage + subPage/2
	batch(a, total-6, 6)
	time.Sleep(200 * time.Millisecond) // a's notification reaches b first
	got := recvN(t, subscribeT(t, b), total, 10*time.Second)
	for i, p := range got {
		if p != uint64(i+1) {
			t.Fatalf("event %d at position %d, want %d", i, p, i+1)
		}
	}
}

// A notification asks for a read only when it announces another process's
// commit past what the store's memory holds: its own commits, and commits
// a fill read before their notification came, wake nothing. A payload of
// an older linkd (a position alone) is the store's up to its last commit.
func TestKnownCommit(t *testing.T) {
	s := &Store{instance: "me"}
	s.ownHead.Store(12)
	var evs []eventstore.RecordedEvent
	for p := uint64(10); p <= 14; p++ {
		evs = append(evs, eventstore.RecordedEvent{Position: eventstore.Position{Commit: p, Prepare: p}})
	}
	if !s.recent.add(evs) {
		t.Fatal("the first events left a gap")
	}
	for payload, want := range map[string]bool{
		"me 20":     true,  // its own
		"other 14":  true,  // in memory: read by a fill first
		"other 9":   true,  // before memory: read long ago
		"other 15":  false, // past memory: read it
		"other x":   false, // unreadable: read
		"12":        true,  // an older linkd's payload, up to ownHead
		"13":        false,
		"":          false,
		"other 14 ": false,
	} {
		if got := s.knownCommit(payload); got != want {
			t.Errorf("knownCommit(%q) = %v, want %v", payload, got, want)
		}
	}
}

// A subscription drains (eventstore.Drainer): with a done ctx, Recv hands
// out every event in the store's memory after it, its own commits and
// what a fill read, and reads no table: another store's commit waits for
// a Recv that may wait. A Recv whose ctx ends does not end the
// subscription.
func TestSubscriptionDrainsMemory(t *testing.T) {
	dsn := pgtest.DSN(t)
	a := openT(t, dsn, Options{PollInterval: time.Hour})
	b := openT(t, dsn, Options{PollInterval: time.Hour})
	sub := subscribeT(t, a)
	if _, ok := sub.(eventstore.Drainer); !ok {
		t.Fatal("not a Drainer")
	}
	done, cancel := context.WithCancel(t.Context())
	cancel()
	var want []uint64
	for i := range 3 {
		r, err := a.Append(t.Context(), "drain-a", eventstore.Any(), ev(i))
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, r.Position.Commit)
	}
	for _, p := range want {
		e, err := sub.Recv(done)
		if err != nil || e.Position.Commit != p {
			t.Fatalf("drained %v %v, want position %d", e.Position, err, p)
		}
	}
	rb, err := b.Append(t.Context(), "drain-b", eventstore.Any(), ev(3))
	if err != nil {
		t.Fatal(err)
	}
	reads := a.fillReads.Load() + a.subReads.Load()
	if e, err := sub.Recv(done); err == nil {
		t.Fatalf("a done ctx read %v, another store's commit, from the table", e.Position)
	}
	if n := a.fillReads.Load() + a.subReads.Load(); n != reads {
		t.Errorf("a Recv with a done ctx read the table %d times", n-reads)
	}
	if got := recvN(t, sub, 1, 5*time.Second); got[0] != rb.Position.Commit {
		t.Fatalf("got %d, want b's commit at %d", got[0], rb.Position.Commit)
	}
}

// A subscription behind another, on a store whose memory holds nothing
// yet (a quiet log written by another process), reads the events it is
// behind: a fill by the one at the head read nothing, and the next was
// skipped as if every subscription were at the head, until a fill came
// PollInterval after the last (with five feeders polling, it could
// starve: linkd serve after a replay waited for its Radar projection).
func TestSubscriptionBehindOnAnEmptyMemory(t *testing.T) {
	dsn := pgtest.DSN(t)
	w := openT(t, dsn, Options{})
	for i := range 5 {
		if _, err := w.Append(t.Context(), "behind-1", eventstore.Any(), ev(i)); err != nil {
			t.Fatal(err)
		}
	}
	w.Close()
	s := openT(t, dsn, Options{PollInterval: time.Hour})
	head, err := s.SubscribeAll(t.Context(), position(5), eventstore.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	defer head.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	if e, err := head.Recv(ctx); err == nil {
		t.Fatalf("an event after the head: %+v", e)
	}
	cancel()
	if got := recvN(t, subscribeT(t, s), 5, 5*time.Second); got[4] != 5 {
		t.Fatalf("positions %v", got)
	}
}
