package eventstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/linkd/linkd/eventstore"
)

type fixedHead eventstore.Position

func (h fixedHead) Head(context.Context) (eventstore.Position, error) {
	return eventstore.Position(h), nil
}

// CatchUp waits for every watermark to reach the head of the log as it was
// when called, gives up with ErrBehind after its timeout, and returns at
// once when they are there already.
func TestCatchUp(t *testing.T) {
	t.Parallel()
	head := fixedHead(eventstore.Position{Commit: 10, Prepare: 10})
	a, b := eventstore.NewWatermark(eventstore.Start), eventstore.NewWatermark(eventstore.Start)
	go func() {
		time.Sleep(20 * time.Millisecond)
		a.Advance(eventstore.Position(head))
		time.Sleep(20 * time.Millisecond)
		b.Advance(eventstore.Position(head))
	}()
	if err := eventstore.CatchUp(context.Background(), head, 5*time.Second, a, nil, b); err != nil {
		t.Fatalf("CatchUp: %v", err)
	}
	if !a.Reached(eventstore.Position(head)) || !b.Reached(eventstore.Position(head)) {
		t.Fatal("CatchUp returned before both watermarks reached the head")
	}
	behind := eventstore.NewWatermark(eventstore.Start)
	start := time.Now()
	if err := eventstore.CatchUp(context.Background(), head, 30*time.Millisecond, behind); !errors.Is(err, eventstore.ErrBehind) {
		t.Fatalf("a watermark that never moves: %v, want ErrBehind", err)
	}
	if time.Since(start) > 5*time.Second {
		t.Fatal("CatchUp did not keep to its timeout")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := eventstore.CatchUp(ctx, head, time.Second, behind); !errors.Is(err, context.Canceled) {
		t.Fatalf("an ended context: %v", err)
	}
	if err := eventstore.CatchUp(ctx, head, time.Second, a, b); err != nil {
		t.Fatalf("watermarks already there: %v", err)
	}
}
