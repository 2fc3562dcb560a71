package ratelimit

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestAttempts(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	a := NewAttempts(0, 0, 0)
	// Per client and target: five wrong attempts, then refused for a
	// minute.
	for i := range DefaultPasswordPerClient {
		if !a.Try(ctx, "a", "l1", now) {
			t.Fatalf("attempt %d refused", i+1)
		}
	}
	if a.Try(ctx, "a", "l1", now) {
		t.Errorf("sixth attempt allowed")
	}
	if !a.Try(ctx, "a", "l2", now) || !a.Try(ctx, "b", "l1", now) {
		t.Errorf("another target or client refused")
	}
	if !a.Try(ctx, "a", "l1", now.Add(DefaultPasswordWindow+time.Second)) {
		t.Errorf("still refused after the window")
	}
	// Per target across clients: a guesser with many addresses gets 30.
	n := 0
	for c := range 100 {
		if a.Try(ctx, fmt.Sprintf("c%d", c), "l3", now) {
			n++
		}
	}
	if n != DefaultPasswordPerTarget {
		t.Errorf("%d wrong attempts across clients, want %d", n, DefaultPasswordPerTarget)
	}
	if a.Try(ctx, "owner", "l3", now.Add(30*time.Second)) {
		t.Errorf("the target took attempts within the window")
	}
	if !a.Try(ctx, "owner", "l3", now.Add(DefaultPasswordWindow+time.Second)) {
		t.Errorf("the owner is still locked out after the window")
	}
}

// A right password is taken back: it does not use up the client's
// attempts.
func TestAttemptsUndo(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	a := NewAttempts(2, 30, time.Minute)
	for i := range 10 {
		at := now.Add(time.Duration(i) * time.Second)
		if !a.Try(ctx, "a", "l", at) {
			t.Fatalf("right password %d refused", i+1)
		}
		a.Undo(ctx, "a", "l", at)
	}
	if !a.Try(ctx, "a", "l", now) || !a.Try(ctx, "a", "l", now) || a.Try(ctx, "a", "l", now) {
		t.Error("after right passwords, the client does not have exactly its two wrong ones")
	}
	if a.Len() != 2 {
		t.Errorf("%d keys held", a.Len())
	}
}

// Guesses sent at once are counted each: the check and the count are one
// step.
func TestAttemptsConcurrent(t *testing.T) {
	t.Parallel()
	a := NewAttempts(5, 30, time.Minute)
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	var n atomic.Int64
	var wg sync.WaitGroup
	for range 50 {
		wg.Go(func() {
			if a.Try(t.Context(), "a", "l", now) {
				n.Add(1)
			}
		})
	}
	wg.Wait()
	if n.Load() != 5 {
		t.Errorf("%d of 50 concurrent guesses made, want 5", n.Load())
	}
}
