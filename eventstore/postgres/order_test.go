package postgres

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/linkd/linkd/eventstore"
	"github.com/linkd/linkd/internal/testsupport/pgtest"
)

func ev(n int) eventstore.EventData {
	return eventstore.EventData{ID: uuid.New(), Type: "Tested", Data: fmt.Appendf(nil, `{"n":%d}`, n)}
}

// TestNoSkipUnderOutOfOrderCommits: many stores on one database (as many
// linkd instances) append concurrently, each transaction sleeping a random
// while before its commit, so that commits would come out of the order of
// positions if anything let them. A subscriber, and a reader that pages
// through ReadAll as fast as it can, must each see every acknowledged event
// exactly once, in position order, with no event appearing behind a
// position they have already passed.
func TestNoSkipUnderOutOfOrderCommits(t *testing.T) {
	dsn := pgtest.DSN(t)
	const stores, writers, appends = 6, 48, 60
	var ss []*Store
	for i := range stores {
		seed := uint64(i)
		var mu sync.Mutex
		rng := rand.New(rand.NewPCG(seed, 7))
		// Odd stores run two writers: groups of one store overlap too.
		// Store 0 lingers for bigger groups.
		linger := time.Duration(0)
		if i == 0 {
			linger = time.Millisecond
		}
		ss = append(ss, openT(t, dsn, Options{Writers: 1 + i%2, Linger: linger, beforeCommit: func() {
			mu.Lock()
			d := time.Duration(rng.IntN(3000)) * time.Microsecond
			mu.Unlock()
			time.Sleep(d)
		}}))
	}
	reader := openT(t, dsn, Options{PollInterval: 20 * time.Millisecond})
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	// Subscriptions on the reader, and on two of the writing stores (two
	// on one), whose memory of recent events mixes their own commits with
	// the others' read from the table.
	var subs []eventstore.Subscription
	for _, s := range []*Store{reader, ss[0], ss[1], ss[1]} {
		sub, err := s.SubscribeAll(ctx, eventstore.Start, eventstore.Filter{})
		if err != nil {
			t.Fatal(err)
		}
		defer sub.Close()
		subs = append(subs, sub)
	}

	var (
		mu    sync.Mutex
		acked = map[uuid.UUID]bool{}
		wg    sync.WaitGroup
		done  atomic.Bool
	)
	for w := range writers {
		wg.Go(func() {
			for i := range appends {
				s := ss[(w+i)%stores]
				n := 1 + (w+i)%3
				evs := make([]eventstore.EventData, n)
				for k := range evs {
					evs[k] = ev(w*10000 + i*10 + k)
				}
				stream := fmt.Sprintf("order-%d", (w*7+i)%40)
				if _, err := s.Append(ctx, stream, eventstore.Any(), evs...); err != nil {
					t.Errorf("Append: %v", err)
					return
				}
				mu.Lock()
				for _, e := range evs {
					acked[e.ID] = true
				}
				mu.Unlock()
			}
		})
	}

	// The pager reads behind the writers the whole time.
	paged := make(chan []eventstore.RecordedEvent, 1)
	go func() {
		var got []eventstore.RecordedEvent
		after := eventstore.Start
		for {
			finished := done.Load()
			evs, err := reader.ReadAll(ctx, after, 97)
			if err != nil {
				t.Errorf("ReadAll: %v", err)
				break
			}
			got = append(got, evs...)
			if len(evs) > 0 {
				after = evs[len(evs)-1].Position
			} else if finished {
				break
			}
		}
		paged <- got
	}()

	wg.Wait()
	done.Store(true)
	total := len(acked)
	if total == 0 {
		t.Fatal("nothing was appended")
	}
	check := func(what string, got []eventstore.RecordedEvent) {
		t.Helper()
		seen := map[uuid.UUID]bool{}
		versions := map[string]uint64{}
		for i, e := range got {
			if i > 0 && !got[i-1].Position.Less(e.Position) {
				t.Fatalf("%s: event %d at %v after %v", what, i, e.Position, got[i-1].Position)
			}
			if i > 0 && e.Position.Commit != got[i-1].Position.Commit+1 {
				t.Fatalf("%s: event %d at %v after %v: a hole in the log", what, i, e.Position, got[i-1].Position)
			}
			if seen[e.ID] {
				t.Fatalf("%s: event %s twice", what, e.ID)
			}
			seen[e.ID] = true
			if !acked[e.ID] {
				t.Fatalf("%s: event %s was never acknowledged", what, e.ID)
			}
			if v, ok := versions[e.Stream]; ok && e.Version != v+1 || !ok && e.Version != 0 {
				t.Fatalf("%s: %s@%d follows version %d", what, e.Stream, e.Version, v)
			}
			versions[e.Stream] = e.Version
		}
		if len(seen) != total {
			t.Fatalf("%s: %d events, %d acknowledged", what, len(seen), total)
		}
	}
	for i, sub := range subs {
		var subbed []eventstore.RecordedEvent
		for len(subbed) < total {
			e, err := sub.Recv(ctx)
			if err != nil {
				t.Fatalf("subscription %d: Recv after %d of %d: %v", i, len(subbed), total, err)
			}
			subbed = append(subbed, e)
		}
		check(fmt.Sprintf("subscription %d", i), subbed)
	}
	check("ReadAll pager", <-paged)
	t.Logf("%d events from %d writers through %d stores", total, writers, stores)
}

// TestSubscriptionSurvivesRestart restarts the server while a subscriber
// follows the log and a writer appends: the subscriber gets every
// acknowledged event once, in order, and nothing twice.
func TestSubscriptionSurvivesRestart(t *testing.T) {
	c := pgtest.Start(t, pgtest.Options{TestSettings: true})
	dsn := c.NewDatabase(t)
	s := openT(t, dsn, Options{PollInterval: 50 * time.Millisecond})
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	sub, err := s.SubscribeAll(ctx, eventstore.Start, eventstore.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()

	var (
		mu        sync.Mutex
		acked     = map[uuid.UUID]bool{}
		attempted = map[uuid.UUID]bool{}
		failed    atomic.Int64
		stop      atomic.Bool
		wg        sync.WaitGroup
	)
	for w := range 4 {
		wg.Go(func() {
			for i := 0; !stop.Load(); i++ {
				e := ev(w*1000000 + i)
				mu.Lock()
				attempted[e.ID] = true
				mu.Unlock()
				actx, acancel := context.WithTimeout(ctx, 5*time.Second)
				_, err := s.Append(actx, fmt.Sprintf("restart-%d", w), eventstore.Any(), e)
				acancel()
				if err != nil {
					failed.Add(1)
					time.Sleep(10 * time.Millisecond)
					continue
				}
				mu.Lock()
				acked[e.ID] = true
				mu.Unlock()
				time.Sleep(time.Millisecond)
			}
		})
	}
	var got []eventstore.RecordedEvent
	recv := func(d time.Duration) {
		t.Helper()
		rctx, rcancel := context.WithTimeout(ctx, d)
		defer rcancel()
		for {
			e, err := sub.Recv(rctx)
			if err != nil {
				if errors.Is(err, context.DeadlineExceeded) {
					return
				}
				t.Fatalf("Recv: %v", err)
			}
			got = append(got, e)
		}
	}
	recv(500 * time.Millisecond)
	before := len(got)
	if err := c.Restart(); err != nil {
		t.Fatalf("restart: %v", err)
	}
	recv(1500 * time.Millisecond)
	stop.Store(true)
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	// Wait for everything acknowledged.
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		n := 0
		for _, e := range got {
			if acked[e.ID] {
				n++
			}
		}
		if n == len(acked) {
			break
		}
		recv(200 * time.Millisecond)
	}
	seen := map[uuid.UUID]bool{}
	for i, e := range got {
		if i > 0 && !got[i-1].Position.Less(e.Position) {
			t.Fatalf("event %d at %v after %v", i, e.Position, got[i-1].Position)
		}
		if seen[e.ID] {
			t.Fatalf("event %s delivered twice", e.ID)
		}
		seen[e.ID] = true
		if !attempted[e.ID] {
			t.Fatalf("event %s was never appended", e.ID)
		}
	}
	for id := range acked {
		if !seen[id] {
			t.Fatalf("acknowledged event %s never delivered (%d delivered, %d acknowledged)", id, len(got), len(acked))
		}
	}
	if before == 0 || len(got) <= before {
		t.Fatalf("%d events before the restart, %d in all: the test did not cover a restart mid-subscription", before, len(got))
	}
	t.Logf("%d delivered (%d before the restart), %d acknowledged, %d appends failed during the restart", len(got), before, len(acked), failed.Load())
}
