package postgres

import (
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
