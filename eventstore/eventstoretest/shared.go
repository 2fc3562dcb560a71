package eventstoretest

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/linkd/linkd/eventstore"
)

// SharedHarness gives RunShared processes that share one store: what a
// store shared by many linkd instances offers them (eventstore.Leaser,
// eventstore.Checkpoints).
type SharedHarness struct {
	// Process returns one more process on the shared store. The suite
	// names its leases and checkpoints after a random prefix of its own.
	Process func(t testing.TB) SharedProcess
	// Takeover bounds how long a lease stays with a holder that stopped
	// without releasing it (its ctx ended, as when it is killed) or whose
	// store broke: from then until another process holds it.
	Takeover time.Duration
	// Handover bounds the time from a release to a waiting process
	// holding the lease.
	Handover time.Duration
	// CheckpointDelay bounds how long a saved checkpoint may take to be
	// seen by other processes. Zero: at once.
	CheckpointDelay time.Duration
}

// SharedProcess is one process on a shared store.
type SharedProcess struct {
	Leaser      eventstore.Leaser
	Checkpoints eventstore.Checkpoints
	// Break makes the process's later calls on the store fail, as when its
	// connection is gone for good.
	Break func()
}

// RunShared runs the suite of leases and checkpoints.
func RunShared(t *testing.T, h SharedHarness) {
	if h.Process == nil || h.Takeover <= 0 || h.Handover <= 0 {
		t.Fatal("eventstoretest: SharedHarness needs Process, Takeover and Handover")
	}
	tests := []struct {
		name string
		run  func(*testing.T, SharedHarness, string)
	}{
		{"OneHolderAtATime", testOneHolder},
		{"TakeoverAfterDeath", testTakeover},
		{"ReleaseHandsOver", testReleaseHandsOver},
		{"BrokenHolderLosesLease", testBrokenHolder},
		{"CheckpointsRise", testCheckpointsRise},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.run(t, h, "ct"+strings.ReplaceAll(uuid.NewString(), "-", "")[:16])
		})
	}
}

// acquire takes lease name in the background: the channel receives the
// held context (nil on error) and the release.
type acquired struct {
	held    context.Context
	release func()
}

func acquireAsync(t *testing.T, ctx context.Context, l eventstore.Leaser, name string) <-chan acquired {
	got := make(chan acquired, 1)
	go func() {
		held, release, err := l.AcquireLease(ctx, name)
		if err != nil {
			if ctx.Err() == nil {
				t.Errorf("AcquireLease(%q): %v", name, err)
			}
			got <- acquired{}
			return
		}
		got <- acquired{held, release}
	}()
	return got
}

func mustAcquire(t *testing.T, ctx context.Context, l eventstore.Leaser, name string) (context.Context, func()) {
	t.Helper()
	a := gets(t, acquireAsync(t, ctx, l, name), waitTimeout, "a free lease")
	return a.held, a.release
}

func ended(t *testing.T, held context.Context, within time.Duration, what string) {
	t.Helper()
	select {
	case <-held.Done():
	case <-time.After(within):
		t.Fatalf("%s: the held context goes on after %v", what, within)
	}
}

// gets waits for a process waiting for a lease to hold it.
func gets(t *testing.T, got <-chan acquired, within time.Duration, what string) acquired {
	t.Helper()
	select {
	case a := <-got:
		if a.held == nil {
			t.Fatalf("%s: not acquired", what)
		}
		if a.held.Err() != nil {
			t.Fatalf("%s: acquired, but its held context has ended", what)
		}
		t.Cleanup(a.release)
		return a
	case <-time.After(within):
		t.Fatalf("%s: the lease is not taken after %v", what, within)
	}
	return acquired{}
}

// Of several processes that want one lease over and over, one at a time
// holds it; another name is another lease.
func testOneHolder(t *testing.T, h SharedHarness, prefix string) {
	const procs, rounds = 3, 3
	ctx := t.Context()
	name := prefix + "-relay"
	var holding, taken atomic.Int32
	var wg sync.WaitGroup
	for i := range procs {
		p := h.Process(t)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range rounds {
				held, release, err := p.Leaser.AcquireLease(ctx, name)
				if err != nil {
					t.Errorf("process %d: AcquireLease: %v", i, err)
					return
				}
				if n := holding.Add(1); n != 1 {
					t.Errorf("process %d: %d holders of one lease", i, n)
				}
				taken.Add(1)
				time.Sleep(50 * time.Millisecond)
				if held.Err() != nil {
					t.Errorf("process %d: the lease ended while held: %v", i, context.Cause(held))
				}
				holding.Add(-1)
				release()
			}
		}()
	}
	other := h.Process(t)
	_, release := mustAcquire(t, ctx, other.Leaser, prefix+"-other")
	release()
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(procs*rounds*h.Handover + waitTimeout):
		t.Fatalf("%d of %d turns taken", taken.Load(), procs*rounds)
	}
}

// A holder that stops without a release (a killed process) loses the
// lease within Takeover; until then nobody else holds it.
func testTakeover(t *testing.T, h SharedHarness, prefix string) {
	a, b := h.Process(t), h.Process(t)
	name := prefix + "-relay"
	actx, kill := context.WithCancel(t.Context())
	defer kill()
	heldA, _ := mustAcquire(t, actx, a.Leaser, name)
	got := acquireAsync(t, t.Context(), b.Leaser, name)
	select {
	case <-got:
		t.Fatal("two holders of one lease")
	case <-time.After(h.Handover):
	}
	if heldA.Err() != nil {
		t.Fatalf("the holder lost its lease: %v", context.Cause(heldA))
	}
	kill()
	died := time.Now()
	ended(t, heldA, time.Second, "a holder whose ctx ended")
	gets(t, got, h.Takeover, "takeover")
	t.Logf("taken over %v after the holder stopped", time.Since(died).Round(time.Millisecond))
}

// A release gives the lease to a waiting process at once.
func testReleaseHandsOver(t *testing.T, h SharedHarness, prefix string) {
	a, b := h.Process(t), h.Process(t)
	name := prefix + "-relay"
	heldA, releaseA := mustAcquire(t, t.Context(), a.Leaser, name)
	got := acquireAsync(t, t.Context(), b.Leaser, name)
	select {
	case <-got:
		t.Fatal("two holders of one lease")
	case <-time.After(h.Handover):
	}
	releaseA()
	if heldA.Err() == nil {
		t.Error("a released lease's context goes on")
	}
	released := time.Now()
	gets(t, got, h.Handover, "after a release")
	t.Logf("handed over %v after the release", time.Since(released).Round(time.Millisecond))
	releaseA() // a second release does nothing
}

// A holder whose store fails loses the lease (its held context ends), and
// another process takes it.
func testBrokenHolder(t *testing.T, h SharedHarness, prefix string) {
	a, b := h.Process(t), h.Process(t)
	if a.Break == nil {
		t.Skip("the harness cannot break a process's store")
	}
	name := prefix + "-relay"
	heldA, releaseA := mustAcquire(t, t.Context(), a.Leaser, name)
	defer releaseA()
	a.Break()
	ended(t, heldA, h.Takeover, "a holder whose store fails")
	got := acquireAsync(t, t.Context(), b.Leaser, name)
	gets(t, got, h.Takeover, "takeover from a broken holder")
}

// Checkpoints start at Start, only rise, and every process sees the last.
func testCheckpointsRise(t *testing.T, h SharedHarness, prefix string) {
	a, b := h.Process(t), h.Process(t)
	ctx := t.Context()
	name := prefix + "-relay"
	at := func(n uint64) eventstore.Position { return eventstore.Position{Commit: n, Prepare: n} }
	if p, err := b.Checkpoints.LoadCheckpoint(ctx, name); err != nil || p != eventstore.Start {
		t.Fatalf("a new checkpoint: %v %v, want Start", p, err)
	}
	for _, n := range []uint64{5, 9, 7} {
		if err := a.Checkpoints.SaveCheckpoint(ctx, name, at(n)); err != nil {
			t.Fatal(err)
		}
	}
	if p, err := a.Checkpoints.LoadCheckpoint(ctx, name); err != nil || p != at(9) {
		t.Fatalf("the saving process loads %v %v, want 9", p, err)
	}
	eventually(t, h.CheckpointDelay, func() (eventstore.Position, error) { return b.Checkpoints.LoadCheckpoint(ctx, name) }, at(9))

	// Two processes saving at once: the highest wins.
	var wg sync.WaitGroup
	for i, p := range []SharedProcess{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := uint64(10 + i); n <= 40; n += 2 {
				if err := p.Checkpoints.SaveCheckpoint(ctx, name, at(n)); err != nil {
					t.Errorf("process %d: save %d: %v", i, n, err)
					return
				}
			}
		}()
	}
	wait(t, &wg, "concurrent saves")
	eventually(t, h.CheckpointDelay, func() (eventstore.Position, error) { return h.Process(t).Checkpoints.LoadCheckpoint(ctx, name) }, at(40))
}

// eventually loads until it gets want, for up to delay (and at least
// once), then checks that it stays so.
func eventually(t *testing.T, delay time.Duration, load func() (eventstore.Position, error), want eventstore.Position) {
	t.Helper()
	deadline := time.Now().Add(delay + time.Second)
	for {
		p, err := load()
		if err != nil {
			t.Fatal(err)
		}
		if p == want {
			return
		}
		if time.Now().After(deadline) || want.Less(p) {
			t.Fatalf("checkpoint %v, want %v", p, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// SharedOnStore is a SharedHarness.Process for eventstore.Shared on the
// events of s (eventstore.StoreRecords): each process has a Shared of its
// own, with options o, on a view of s that Break makes fail.
func SharedOnStore(s eventstore.Store, o eventstore.SharedOptions) func(testing.TB) SharedProcess {
	return func(testing.TB) SharedProcess {
		b := &breakable{Store: s}
		sh := eventstore.NewShared(eventstore.StoreRecords(b), o)
		return SharedProcess{Leaser: sh, Checkpoints: sh, Break: func() { b.broken.Store(true) }}
	}
}

// breakable is a view of a store whose calls fail once it is broken.
type breakable struct {
	eventstore.Store
	broken atomic.Bool
}

func (b *breakable) Append(ctx context.Context, stream string, expected eventstore.ExpectedVersion, events ...eventstore.EventData) (eventstore.AppendResult, error) {
	if b.broken.Load() {
		return eventstore.AppendResult{}, eventstore.ErrClosed
	}
	return b.Store.Append(ctx, stream, expected, events...)
}

func (b *breakable) ReadStream(ctx context.Context, stream string, from uint64, max int) ([]eventstore.RecordedEvent, error) {
	if b.broken.Load() {
		return nil, eventstore.ErrClosed
	}
	return b.Store.ReadStream(ctx, stream, from, max)
}

func (b *breakable) StreamVersion(ctx context.Context, stream string) (uint64, bool, error) {
	if b.broken.Load() {
		return 0, false, eventstore.ErrClosed
	}
	return b.Store.StreamVersion(ctx, stream)
}

// RunSharedOnStore runs the suite on eventstore.Shared over s, processes
// being Shared of their own on it, with a short TTL (1 s) so that the
// suite is quick: the generic leases and checkpoints of ADR 0109 on any
// store.
func RunSharedOnStore(t *testing.T, s eventstore.Store) {
	o := eventstore.SharedOptions{LeaseTTL: time.Second, Retry: 100 * time.Millisecond, CheckpointEvery: 200 * time.Millisecond}
	RunShared(t, SharedHarness{
		Process:         SharedOnStore(s, o),
		Takeover:        2500 * time.Millisecond,
		Handover:        time.Second,
		CheckpointDelay: 500 * time.Millisecond,
	})
}
