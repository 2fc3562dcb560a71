package postgres

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/linkd/linkd/eventstore"
	"github.com/linkd/linkd/eventstore/eventstoretest"
	"github.com/linkd/linkd/internal/testsupport/pgtest"
)

// TestShared runs the suite of leases and checkpoints, a store per
// process on one database: a lease whose holder stops (its session ends)
// or whose store closes passes on within a retry.
func TestShared(t *testing.T) {
	dsn := pgtest.DSN(t)
	eventstoretest.RunShared(t, eventstoretest.SharedHarness{
		Process: func(t testing.TB) eventstoretest.SharedProcess {
			s := openT(t, dsn, Options{})
			return eventstoretest.SharedProcess{Leaser: s, Checkpoints: s, Break: func() { s.Close() }}
		},
		Takeover: 5 * time.Second,
		Handover: 5 * leaseRetry,
	})
}

// Every append moves the head of its streams' categories, whichever
// process made it; other categories keep theirs.
func TestCategoryHeads(t *testing.T) {
	dsn := pgtest.DSN(t)
	a, b := openT(t, dsn, Options{}), openT(t, dsn, Options{})
	ctx := t.Context()
	r1, err := a.Append(ctx, "link-1", eventstore.Any(), ev(0))
	if err != nil {
		t.Fatal(err)
	}
	r2, err := b.Append(ctx, "clicks-1", eventstore.Any(), ev(1), ev(2))
	if err != nil {
		t.Fatal(err)
	}
	if p, err := a.CategoryHead(ctx, []string{"link", "domain"}); err != nil || p != r1.Position {
		t.Fatalf("links' head %v %v, want %v", p, err, r1.Position)
	}
	if p, err := a.CategoryHead(ctx, []string{"clicks"}); err != nil || p != r2.Position {
		t.Fatalf("clicks' head %v %v, want %v", p, err, r2.Position)
	}
	if p, err := a.CategoryHead(ctx, []string{"nothing"}); err != nil || p != eventstore.Start {
		t.Fatalf("an empty category's head %v %v", p, err)
	}
}

// A store's category heads come from its memory after the first read
// (ADR 0123): whatever other stores appended before the call, the head
// passes it at once, without a notification (polling off) and without a
// query of linkd_heads; while the reading store appends too, and from
// concurrent callers.
func TestCategoryHeadsFromMemoryFollowOthers(t *testing.T) {
	dsn := pgtest.DSN(t)
	a, c := openT(t, dsn, Options{}), openT(t, dsn, Options{})
	b := openT(t, dsn, Options{PollInterval: time.Hour})
	ctx := t.Context()
	// b appends before its first head read: memory holds its commit,
	// not the others' before it.
	if _, err := a.Append(ctx, "link-0", eventstore.Any(), ev(0)); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Append(ctx, "clicks-0", eventstore.Any(), ev(1)); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for w, s := range []*Store{a, c, b} {
		wg.Go(func() {
			for i := range 150 {
				stream := fmt.Sprintf("link-%d-%d", w, i)
				if i%3 == 0 {
					stream = fmt.Sprintf("clicks-%d", i%7)
				}
				r, err := s.Append(ctx, stream, eventstore.Any(), ev(i))
				if err != nil {
					t.Error(err)
					return
				}
				cat, _, _ := strings.Cut(stream, "-")
				p, err := b.CategoryHead(ctx, []string{cat, "domain"})
				if err != nil {
					t.Error(err)
					return
				}
				if p.Commit < r.Position.Commit {
					t.Errorf("store %d's append to %s at %d: b's head of %s is %d", w, stream, r.Position.Commit, cat, p.Commit)
					return
				}
			}
		})
	}
	wg.Wait()
	var want int64
	if err := b.pool.QueryRow(ctx, "SELECT max(position) FROM linkd_heads WHERE category = 'link'").Scan(&want); err != nil {
		t.Fatal(err)
	}
	if p, err := b.CategoryHead(ctx, []string{"link"}); err != nil || int64(p.Commit) != want {
		t.Errorf("b's head of link %v %v, linkd_heads says %d", p, err, want)
	}
	if n := b.seedReads.Load(); n != 1 {
		t.Errorf("b read linkd_heads %d times; want once, then memory", n)
	}
}

// A holder that is frozen rather than dead keeps its session, so its lock:
// another process ends that session once it has been silent for LeaseStale
// and takes the lease; the frozen one, running again, finds its lease gone.
func TestFrozenHolderLosesLease(t *testing.T) {
	dsn := pgtest.DSN(t)
	var silent atomic.Bool
	a := openT(t, dsn, Options{LeaseStale: 2 * time.Second, leaseSilent: &silent})
	b := openT(t, dsn, Options{LeaseStale: 2 * time.Second})
	held, release, err := a.AcquireLease(t.Context(), "frozen")
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	// Alive: b waits past LeaseStale without getting it.
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Second)
	if _, _, err := b.AcquireLease(ctx, "frozen"); err == nil {
		t.Fatal("b took the lease of a live holder")
	}
	cancel()
	silent.Store(true)
	frozenAt := time.Now()
	ctx, cancel = context.WithTimeout(t.Context(), 15*time.Second)
	defer cancel()
	bHeld, bRelease, err := b.AcquireLease(ctx, "frozen")
	if err != nil {
		t.Fatalf("b did not take the lease of a frozen holder: %v", err)
	}
	defer bRelease()
	t.Logf("the lease passed %v after its holder froze", time.Since(frozenAt).Round(10*time.Millisecond))
	if held.Err() != nil {
		t.Fatal("a's lease ended while it was frozen: it could not have seen it")
	}
	silent.Store(false)
	select {
	case <-held.Done():
	case <-time.After(leaseCheck + 4*time.Second):
		t.Fatal("a, running again, still holds its lease")
	}
	if bHeld.Err() != nil {
		t.Fatal("b lost the lease")
	}
}
