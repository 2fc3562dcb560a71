package ratelimit

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeBackend answers from a Limiter and Attempts of its own (the
// deployment's), or fails, or hangs until the context ends.
type fakeBackend struct {
	mu    sync.Mutex
	fail  error
	hang  bool
	calls int
	lim   *Limiter
	att   *Attempts
}

func newFakeBackend() *fakeBackend {
	return &fakeBackend{lim: New(), att: NewAttempts(5, 30, time.Minute)}
}

func (f *fakeBackend) set(fail error, hang bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fail, f.hang = fail, hang
}

func (f *fakeBackend) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls
}

func (f *fakeBackend) enter(ctx context.Context) error {
	f.mu.Lock()
	f.calls++
	fail, hang := f.fail, f.hang
	f.mu.Unlock()
	if hang {
		<-ctx.Done()
		return ctx.Err()
	}
	return fail
}

func (f *fakeBackend) Allow(ctx context.Context, key string, limit int, per time.Duration, now time.Time) (Decision, error) {
	if err := f.enter(ctx); err != nil {
		return Decision{}, err
	}
	return f.lim.Allow(key, limit, per, now), nil
}

func (f *fakeBackend) TryAttempt(ctx context.Context, target, client string, now time.Time, _, _ int, _ time.Duration) (bool, error) {
	if err := f.enter(ctx); err != nil {
		return false, err
	}
	return f.att.Try(ctx, client, target, now), nil
}

func (f *fakeBackend) UndoAttempt(ctx context.Context, target, client string, now time.Time) error {
	if err := f.enter(ctx); err != nil {
		return err
	}
	f.att.Undo(ctx, client, target, now)
	return nil
}

// Three instances share one backend: together they get one limit. When
// the backend fails or hangs, each answers from its own count at once
// (after at most one timeout), logs it once, and leaves the backend
// alone for the rest period; then asks it again.
func TestSharedFailsOpen(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	b := newFakeBackend()
	var logs bytes.Buffer
	clock := t0
	var clockMu sync.Mutex
	guards := make([]*Guard, 3)
	ls := make([]*Shared, 3)
	for i := range ls {
		guards[i] = NewGuard("rate limits", 50*time.Millisecond, 5*time.Second, slog.New(slog.NewTextHandler(&logs, nil)))
		guards[i].now = func() time.Time { clockMu.Lock(); defer clockMu.Unlock(); return clock }
		ls[i] = NewShared(b, New(), guards[i])
	}
	allowed := 0
	for i := range 30 {
		if ls[i%3].Allow(ctx, "k", 10, time.Hour, t0).Allowed {
			allowed++
		}
	}
	if allowed != 10 {
		t.Fatalf("three instances allowed %d, want 10", allowed)
	}
	for _, c := range []struct {
		name string
		fail error
		hang bool
	}{
		{"error", errors.New("connection refused"), false},
		{"hang", nil, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			b.set(c.fail, c.hang)
			logs.Reset()
			start := time.Now()
			// The instance's own count of a new key.
			key := "other-" + c.name
			d := ls[0].Allow(ctx, key, 2, time.Hour, t0)
			if el := time.Since(start); el > time.Second {
				t.Errorf("first request took %v", el)
			}
			if !d.Allowed || d.Remaining != 1 {
				t.Errorf("local answer: %+v", d)
			}
			calls := b.count()
			for range 5 {
				ls[0].Allow(ctx, key, 2, time.Hour, t0)
			}
			if b.count() != calls {
				t.Errorf("the resting backend was asked %d times", b.count()-calls)
			}
			if n := strings.Count(logs.String(), "shared backend failed"); n != 1 {
				t.Errorf("%d warnings logged, want 1:\n%s", n, logs.String())
			}
			// The rest ends; the backend answers again.
			b.set(nil, false)
			clockMu.Lock()
			clock = clock.Add(6 * time.Second)
			clockMu.Unlock()
			if d := ls[0].Allow(ctx, "k", 10, time.Hour, t0); d.Allowed {
				t.Errorf("back on the backend, its spent key was allowed: %+v", d)
			}
			if !strings.Contains(logs.String(), "answers again") {
				t.Errorf("no recovery logged:\n%s", logs.String())
			}
		})
	}
	// A caller that gives up does not rest the backend.
	b.set(nil, true)
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	ls[1].Allow(cctx, "k", 10, time.Hour, t0)
	b.set(nil, false)
	calls := b.count()
	ls[1].Allow(ctx, "k", 10, time.Hour, t0)
	if b.count() != calls+1 {
		t.Error("a cancelled request rested the backend")
	}
}

// Password attempts through the shared backend: one client over three
// instances gets five; a right password is taken back on the backend and
// locally; with the backend down, the instance's own count holds.
func TestSharedAttempts(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	b := newFakeBackend()
	var as []*SharedAttempts
	for range 3 {
		as = append(as, NewSharedAttempts(b, NewAttempts(5, 30, time.Minute), NewGuard("passwords", 50*time.Millisecond, time.Hour, nil), "link|"))
	}
	n := 0
	for i := range 30 {
		if as[i%3].Try(ctx, "a", "l", t0) {
			n++
		}
	}
	if n != 5 {
		t.Errorf("one client over three instances made %d guesses, want 5", n)
	}
	if as[0].Window() != time.Minute {
		t.Errorf("window %v", as[0].Window())
	}
	// Refused attempts are not kept locally either: instance 0 counted
	// its own two (requests 0 and 3).
	if got := len(as[0].local.recent("a|l", t0)); got != 2 {
		t.Errorf("instance 0 holds %d attempts, want 2", got)
	}
	at := t0.Add(time.Second)
	if !as[1].Try(ctx, "b", "l", at) {
		t.Fatal("another client refused")
	}
	as[1].Undo(ctx, "b", "l", at)
	if got := len(b.att.recent("b|l", at)); got != 0 {
		t.Errorf("the backend still holds %d attempts of b", got)
	}
	// The backend fails: instance 2 answers from its own count (1 of 5).
	b.set(errors.New("down"), false)
	n = 0
	for range 10 {
		if as[2].Try(ctx, "a", "l", t0) {
			n++
		}
	}
	if n != 4 {
		t.Errorf("with the backend down, instance 2 allowed %d more, want 4", n)
	}
}
