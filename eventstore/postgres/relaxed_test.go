package postgres

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/linkd/linkd/eventstore"
	"github.com/linkd/linkd/internal/testsupport/pgtest"
)

// A store alone on its database commits the appends of relaxed categories
// without waiting for the WAL flush, and its subscriptions deliver them
// only once a flush covers them: the flusher's, or a commit that waited
// for its own. Many writers, two writer goroutines: every event once, in
// order, without a hole.
func TestRelaxedCommitsReachSubscriptionsOnceFlushed(t *testing.T) {
	dsn := pgtest.DSN(t)
	const flushEvery = 3 * time.Second
	s := openT(t, dsn, Options{Relaxed: []string{"clicks"}, FlushInterval: flushEvery, Writers: 2})
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	sub, err := s.SubscribeAll(ctx, eventstore.Start, eventstore.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()

	// A relaxed commit alone waits for the flusher.
	start := time.Now()
	if _, err := s.Append(ctx, "clicks-a", eventstore.Any(), ev(1)); err != nil {
		t.Fatal(err)
	}
	if s.relaxedHead.Load() == 0 {
		t.Fatal("a click append alone on the database was not relaxed")
	}
	if _, err := sub.Recv(ctx); err != nil {
		t.Fatal(err)
	}
	if waited := time.Since(start); waited < flushEvery*2/3 {
		t.Fatalf("a relaxed commit reached the subscription after %v, before the flush (%v)", waited, flushEvery)
	}

	// A commit that waits for its flush lets the relaxed ones before it
	// through at once.
	start = time.Now()
	if _, err := s.Append(ctx, "clicks-a", eventstore.Any(), ev(2)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Append(ctx, "link-a", eventstore.Any(), ev(3)); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := sub.Recv(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if waited := time.Since(start); waited >= flushEvery*2/3 {
		t.Errorf("a synchronous commit did not let the relaxed one before it through: %v", waited)
	}

	// Under load, mixed: every event once, in order.
	var wg sync.WaitGroup
	const writers, appends = 32, 40
	for w := range writers {
		wg.Go(func() {
			for i := range appends {
				stream := fmt.Sprintf("clicks-%d", (w+i)%20)
				if (w+i)%10 == 0 {
					stream = fmt.Sprintf("link-%d", w)
				}
				if _, err := s.Append(ctx, stream, eventstore.Any(), ev(1000+w*100+i)); err != nil {
					t.Errorf("Append: %v", err)
					return
				}
			}
		})
	}
	wg.Wait()
	var last uint64 = 3
	for n := range writers * appends {
		e, err := sub.Recv(ctx)
		if err != nil {
			t.Fatalf("Recv %d of %d: %v", n, writers*appends, err)
		}
		if e.Position.Commit != last+1 {
			t.Fatalf("event at %d after %d", e.Position.Commit, last)
		}
		last = e.Position.Commit
	}
}

// With another process on the database the appends of relaxed categories
// wait for the flush too: that process reads them from the table, where
// the bound of this one's subscriptions does not hold.
func TestRelaxedOnlyWhenAlone(t *testing.T) {
	dsn := pgtest.DSN(t)
	s := openT(t, dsn, Options{Relaxed: []string{"clicks"}})
	other := openT(t, dsn, Options{})
	deadline := time.Now().Add(10 * time.Second)
	for s.Alone() {
		if time.Now().After(deadline) {
			t.Fatal("the store does not see the other process")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if _, err := s.Append(context.Background(), "clicks-a", eventstore.Any(), ev(1)); err != nil {
		t.Fatal(err)
	}
	if s.relaxedHead.Load() != 0 {
		t.Fatal("a click append was relaxed with another process on the database")
	}
	_ = other
}
