package eventstore

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// heads is a CategoryHeads whose reads block until released, counting
// them.
type heads struct {
	reads   atomic.Int64
	at      atomic.Uint64
	release chan struct{}
	err     error
}

func (h *heads) CategoryHead(ctx context.Context, _ []string) (Position, error) {
	h.reads.Add(1)
	at := h.at.Load()
	select {
	case <-h.release:
	case <-ctx.Done():
		return Start, ctx.Err()
	}
	return Position{Commit: at, Prepare: at}, h.err
}

func pos(n uint64) Position { return Position{Commit: n, Prepare: n} }

// Callers that arrive while a read is in flight share the next one: many
// callers, few reads. Each gets a head read after it called.
func TestFollowerSharesReads(t *testing.T) {
	h := &heads{release: make(chan struct{})}
	h.at.Store(5)
	wm := NewWatermark(pos(10))
	f := NewFollower(h, []string{"link"}, wm, time.Second)
	var wg sync.WaitGroup
	for range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := f.Follow(context.Background()); err != nil {
				t.Error(err)
			}
		}()
	}
	time.Sleep(50 * time.Millisecond)
	close(h.release)
	wg.Wait()
	if n := h.reads.Load(); n < 1 || n > 2 {
		t.Errorf("%d reads for 50 callers, want 1 or 2", n)
	}
}

// A change newer than the watermark holds the caller until the watermark
// passes it; in time or not.
func TestFollowerWaitsForTheWatermark(t *testing.T) {
	h := &heads{release: make(chan struct{})}
	close(h.release)
	h.at.Store(20)
	wm := NewWatermark(pos(10))
	f := NewFollower(h, []string{"link"}, wm, 200*time.Millisecond)
	done := make(chan error, 1)
	go func() { done <- f.Follow(context.Background()) }()
	select {
	case err := <-done:
		t.Fatalf("returned %v before the watermark passed the head", err)
	case <-time.After(50 * time.Millisecond):
	}
	wm.Advance(pos(20))
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	h.at.Store(30)
	if err := f.Follow(context.Background()); !errors.Is(err, ErrBehind) {
		t.Fatalf("behind: %v, want ErrBehind", err)
	}
	h.err = errors.New("down")
	if err := f.Follow(context.Background()); err == nil || errors.Is(err, ErrBehind) {
		t.Fatalf("a failed read: %v", err)
	}
}
