package postgres

import (
	"context"
	"testing"
	"time"

	"github.com/linkd/linkd/eventstore"
	"github.com/linkd/linkd/internal/testsupport/pgtest"
)

// A store alone on its database knows it; a second process opening the
// store is noticed by the first before the second can append anything,
// and once it closes the first is alone again.
func TestPresence(t *testing.T) {
	dsn := pgtest.DSN(t)
	a := openT(t, dsn, Options{})
	ctx := context.Background()
	if !a.Alone() {
		t.Fatal("the only store is not alone")
	}
	opened := time.Now()
	b, err := Open(ctx, dsn, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if b.Alone() {
		t.Error("the second store thinks it is alone")
	}
	if _, err := b.Append(ctx, "x-1", eventstore.Any(), ev(0)); err != nil {
		t.Fatal(err)
	}
	if a.Alone() {
		t.Errorf("the first store still thinks it is alone when the second's first append is answered (%v after its Open)", time.Since(opened))
	}
	if el := time.Since(opened); el < presenceJoin {
		t.Errorf("the second store appended %v after its Open, before the others could notice it", el)
	}
	b.Close()
	deadline := time.Now().Add(3 * presenceEvery)
	for !a.Alone() {
		if time.Now().After(deadline) {
			t.Fatal("the first store is not alone again after the second closed")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// A follower on a store that is alone reads no head.
func TestFollowerOfAStoreAlone(t *testing.T) {
	s := openT(t, pgtest.DSN(t), Options{})
	wm := eventstore.NewWatermark(eventstore.Start)
	f := eventstore.NewFollower(s, []string{"link"}, wm, time.Second)
	if _, err := s.Append(context.Background(), "link-1", eventstore.Any(), ev(0)); err != nil {
		t.Fatal(err)
	}
	// The watermark never moves: a follower that read the head would
	// wait for it and fail.
	if err := f.Follow(context.Background()); err != nil {
		t.Fatalf("Follow on a store alone: %v", err)
	}
}
