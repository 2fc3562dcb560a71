package postgres

import (
	"context"
	"testing"
	"time"

	"github.com/linkd/linkd/eventstore"
	"github.com/linkd/linkd/internal/testsupport/pgtest"
)

// One process at a time holds a lease; when its holder closes (as when
// it dies: the session ends), another process gets it within a retry.
func TestLeaseOneHolderAndTakeover(t *testing.T) {
	dsn := pgtest.DSN(t)
	a, b := openT(t, dsn, Options{}), openT(t, dsn, Options{})
	ctx := t.Context()
	heldA, releaseA, err := a.AcquireLease(ctx, "relay")
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan context.Context, 1)
	go func() {
		held, release, err := b.AcquireLease(ctx, "relay")
		if err != nil {
			t.Error(err)
			close(got)
			return
		}
		t.Cleanup(release)
		got <- held
	}()
	select {
	case <-got:
		t.Fatal("two holders of one lease")
	case <-time.After(3 * leaseRetry):
	}
	// Another name is another lease.
	_, releaseOther, err := b.AcquireLease(ctx, "other")
	if err != nil {
		t.Fatal(err)
	}
	releaseOther()
	releaseA()
	if heldA.Err() == nil {
		t.Error("a released lease's context goes on")
	}
	select {
	case held := <-got:
		if held == nil || held.Err() != nil {
			t.Fatal("the second process's lease is not held")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the lease was not taken over after its holder let it go")
	}
}

// A closed store's lease ends; the other process takes it over.
func TestLeaseEndsWithItsStore(t *testing.T) {
	dsn := pgtest.DSN(t)
	a, err := Open(t.Context(), dsn, Options{})
	if err != nil {
		t.Fatal(err)
	}
	held, _, err := a.AcquireLease(t.Context(), "relay")
	if err != nil {
		t.Fatal(err)
	}
	a.Close()
	select {
	case <-held.Done():
	case <-time.After(3 * time.Second):
		t.Fatal("the lease outlived its store")
	}
	b := openT(t, dsn, Options{})
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	if _, release, err := b.AcquireLease(ctx, "relay"); err != nil {
		t.Fatalf("takeover: %v", err)
	} else {
		release()
	}
}

// Checkpoints only rise, and are seen by every process.
func TestCheckpointsRise(t *testing.T) {
	dsn := pgtest.DSN(t)
	a, b := openT(t, dsn, Options{}), openT(t, dsn, Options{})
	ctx := t.Context()
	if p, err := a.LoadCheckpoint(ctx, "relay"); err != nil || p != eventstore.Start {
		t.Fatalf("new checkpoint %v %v", p, err)
	}
	for _, n := range []int64{5, 9, 7} {
		if err := a.SaveCheckpoint(ctx, "relay", position(n)); err != nil {
			t.Fatal(err)
		}
	}
	if p, err := b.LoadCheckpoint(ctx, "relay"); err != nil || p != position(9) {
		t.Fatalf("checkpoint %v %v, want 9", p, err)
	}
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
