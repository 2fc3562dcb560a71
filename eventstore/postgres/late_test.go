package postgres

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/linkd/linkd/eventstore"
	"github.com/linkd/linkd/internal/testsupport/pgtest"
)

// TestLateSubscriptionsCatchUp: while several stores append, subscriptions
// start at random moments from random positions, the head included, on the
// appending stores (whose memory holds their recent commits) and on
// stores opened meanwhile (a fresh instance, memory empty), some with a
// stream filter, and at the default poll interval; then fresh stores on
// the quiet log, with subscriptions at the head and behind it. Each must hand out
// every event after its start, once, in order, promptly once the appends
// end: a subscription behind the others on an empty memory was starved by
// their fills (TestSubscriptionBehindOnAnEmptyMemory).
func TestLateSubscriptionsCatchUp(t *testing.T) {
	dsn := pgtest.DSN(t)
	const stores, writers, appends = 3, 16, 60
	var ss []*Store
	for range stores {
		ss = append(ss, openT(t, dsn, Options{}))
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()

	type late struct {
		from   eventstore.Position
		prefix string
		got    []eventstore.RecordedEvent
		err    error
	}
	var (
		lmu   sync.Mutex
		lates []*late
		subs  sync.WaitGroup
		stop  = make(chan struct{})
	)
	follow := func(s *Store, l *late) {
		f := eventstore.Filter{}
		if l.prefix != "" {
			f.StreamPrefixes = []string{l.prefix}
		}
		sub, err := s.SubscribeAll(ctx, l.from, f)
		if err != nil {
			l.err = err
			return
		}
		subs.Go(func() {
			defer sub.Close()
			for {
				rctx, rcancel := context.WithTimeout(ctx, 200*time.Millisecond)
				e, err := sub.Recv(rctx)
				rcancel()
				if err == nil {
					lmu.Lock()
					l.got = append(l.got, e)
					lmu.Unlock()
					continue
				}
				select {
				case <-stop:
					return
				default:
				}
				if ctx.Err() != nil {
					return
				}
			}
		})
	}

	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range appends {
				stream := fmt.Sprintf("late%d-%d", w%2, (w*7+i)%25)
				if _, err := ss[(w+i)%stores].Append(ctx, stream, eventstore.Any(), ev(w*1000+i), ev(w*1000+i)); err != nil {
					t.Errorf("Append: %v", err)
					return
				}
			}
		})
	}
	// Late subscribers while the writers write.
	starters := make(chan struct{})
	go func() {
		defer close(starters)
		rng := rand.New(rand.NewPCG(1, 2))
		for k := range 24 {
			time.Sleep(time.Duration(10+rng.IntN(40)) * time.Millisecond)
			var s *Store
			if k%3 == 2 {
				s = openT(t, dsn, Options{}) // a fresh instance
			} else {
				s = ss[rng.IntN(stores)]
			}
			head, err := s.Head(ctx)
			if err != nil {
				t.Errorf("Head: %v", err)
				return
			}
			l := &late{}
			switch rng.IntN(3) {
			case 0:
				l.from = head
			case 1:
				l.from = position(rng.Int64N(int64(head.Commit) + 1))
			}
			if k%4 == 3 {
				l.prefix = fmt.Sprintf("late%d-", rng.IntN(2))
			}
			follow(s, l)
			lmu.Lock()
			lates = append(lates, l)
			lmu.Unlock()
		}
	}()
	wg.Wait()
	<-starters
	// Fresh instances on the quiet log, whose feeders start at the head
	// and behind it (a projection replayed with nothing to apply).
	for range 2 {
		s := openT(t, dsn, Options{})
		head, err := s.Head(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, from := range []eventstore.Position{head, eventstore.Start, position(int64(head.Commit) / 2)} {
			l := &late{from: from}
			follow(s, l)
			lmu.Lock()
			lates = append(lates, l)
			lmu.Unlock()
			time.Sleep(20 * time.Millisecond)
		}
	}
	all, err := ss[0].ReadAll(ctx, eventstore.Start, 1<<20)
	if err != nil || len(all) != writers*appends*2 {
		t.Fatalf("the log holds %d events, %v; want %d", len(all), err, writers*appends*2)
	}
	want := func(l *late) []eventstore.RecordedEvent {
		var out []eventstore.RecordedEvent
		for _, e := range all[l.from.Commit:] {
			if l.prefix == "" || strings.HasPrefix(e.Stream, l.prefix) {
				out = append(out, e)
			}
		}
		return out
	}
	// Every subscription has everything within a few seconds: a poll
	// interval is one second.
	deadline := time.Now().Add(5 * time.Second)
	for {
		behind := 0
		lmu.Lock()
		for _, l := range lates {
			if l.err == nil && len(l.got) < len(want(l)) {
				behind++
			}
		}
		lmu.Unlock()
		if behind == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	close(stop)
	subs.Wait()
	for i, l := range lates {
		if l.err != nil {
			t.Fatalf("subscription %d: %v", i, l.err)
		}
		w := want(l)
		if len(l.got) != len(w) {
			t.Fatalf("subscription %d (from %v, prefix %q) has %d events 5 s after the appends, want %d", i, l.from, l.prefix, len(l.got), len(w))
		}
		for j := range w {
			if l.got[j].ID != w[j].ID || l.got[j].Position != w[j].Position {
				t.Fatalf("subscription %d (from %v, prefix %q): event %d is %v at %v, want %v at %v",
					i, l.from, l.prefix, j, l.got[j].ID, l.got[j].Position, w[j].ID, w[j].Position)
			}
		}
	}
}
