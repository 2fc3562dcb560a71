package eventstore

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"
)

// memRecords is a RecordStore in memory.
type memRecords struct {
	mu      sync.Mutex
	streams map[string][]Record
}

func newMemRecords() *memRecords { return &memRecords{streams: map[string][]Record{}} }

func (m *memRecords) LastRecord(_ context.Context, stream string) (Record, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	rs := m.streams[stream]
	if len(rs) == 0 {
		return Record{}, false, nil
	}
	return rs[len(rs)-1], true, nil
}

func (m *memRecords) PutRecord(_ context.Context, stream string, expected ExpectedVersion, r Record) (uint64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	rs := m.streams[stream]
	if !expected.Check(uint64(len(rs))-1, len(rs) > 0) {
		return 0, fmt.Errorf("put %q: %w", stream, ErrWrongExpectedVersion)
	}
	r.Version = uint64(len(rs))
	m.streams[stream] = append(rs, r)
	return r.Version, nil
}

var fast = SharedOptions{LeaseTTL: 600 * time.Millisecond, Retry: 20 * time.Millisecond}

// A holder whose lease another process overwrote ends its held context at
// its next renewal, and writes no release over the other's record.
func TestLeaseOverwrittenEndsHolder(t *testing.T) {
	t.Parallel()
	m := newMemRecords()
	a := NewShared(m, fast)
	held, release, err := a.AcquireLease(t.Context(), "relay")
	if err != nil {
		t.Fatal(err)
	}
	r, _, _ := m.LastRecord(t.Context(), LeaseStreamPrefix+"relay")
	if _, err := m.PutRecord(t.Context(), LeaseStreamPrefix+"relay", Exact(r.Version), Record{Type: leaseHeld, Data: []byte(`{"holder":"other","ttl_ms":60000}`)}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-held.Done():
	case <-time.After(fast.LeaseTTL):
		t.Fatal("the held context goes on after another took the lease")
	}
	release()
	last, _, _ := m.LastRecord(t.Context(), LeaseStreamPrefix+"relay")
	if last.Type != leaseHeld || string(last.Data) != `{"holder":"other","ttl_ms":60000}` {
		t.Errorf("the release wrote over the new holder's record: %s %s", last.Type, last.Data)
	}
}

// gatedRecords holds its second write (a lease holder's first renewal,
// a delayed checkpoint write) until open is closed, then makes it and answers as a store does whose answer
// comes after the caller gave up: the write is made, the caller hears its
// context's error.
type gatedRecords struct {
	*memRecords
	puts          int
	entered, open chan struct{}
}

func (g *gatedRecords) PutRecord(ctx context.Context, stream string, expected ExpectedVersion, r Record) (uint64, error) {
	g.mu.Lock()
	g.puts++
	n := g.puts
	g.mu.Unlock()
	if n != 2 {
		return g.memRecords.PutRecord(ctx, stream, expected, r)
	}
	close(g.entered)
	<-g.open
	v, err := g.memRecords.PutRecord(ctx, stream, expected, r)
	if err == nil && ctx.Err() != nil {
		return 0, ctx.Err()
	}
	return v, err
}

// A release during a renewal waits for it and frees the lease after it:
// the renewal is not cut off, to land unseen and make the release's write
// (after the version before it) fail, which left the lease taken until its
// TTL ran out (esdb's TestSharedFake/ReleaseHandsOver failed so once: its
// release came 2 s after the take, with the renewal of a 6 s TTL).
func TestLeaseReleaseDuringRenewal(t *testing.T) {
	t.Parallel()
	g := &gatedRecords{memRecords: newMemRecords(), entered: make(chan struct{}), open: make(chan struct{})}
	held, release, err := NewShared(g, fast).AcquireLease(t.Context(), "relay")
	if err != nil {
		t.Fatal(err)
	}
	<-g.entered
	released := make(chan struct{})
	go func() { release(); close(released) }()
	<-held.Done()
	close(g.open)
	<-released
	last, _, _ := g.LastRecord(t.Context(), LeaseStreamPrefix+"relay")
	if last.Type != leaseReleased {
		t.Fatalf("after a release during a renewal the last record is %s %s, want %s", last.Type, last.Data, leaseReleased)
	}
}

// The time a record says ("until", from the holder's clock) decides
// nothing: a record that says it ended long ago is waited for as long as
// one that says it ends in a year, counted on the waiter's clock from its
// first read.
func TestLeaseIgnoresTheHoldersClock(t *testing.T) {
	t.Parallel()
	for name, until := range map[string]string{"past": "2001-01-01T00:00:00Z", "future": "2999-01-01T00:00:00Z"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			m := newMemRecords()
			data := fmt.Sprintf(`{"holder":"dead","ttl_ms":%d,"until":%q}`, fast.LeaseTTL.Milliseconds(), until)
			if _, err := m.PutRecord(t.Context(), LeaseStreamPrefix+"relay", NoStream(), Record{Type: leaseHeld, Data: []byte(data)}); err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			_, release, err := NewShared(m, fast).AcquireLease(t.Context(), "relay")
			if err != nil {
				t.Fatal(err)
			}
			defer release()
			waited, want := time.Since(start), fast.LeaseTTL+fast.LeaseTTL/6
			if waited < want || waited > want+time.Second {
				t.Errorf("waited %v for a dead holder's lease, want %v", waited, want)
			}
		})
	}
}

// Two calls in one process for one lease: the second waits for the first
// to release, though the record names this process.
func TestLeaseOneHolderInAProcess(t *testing.T) {
	t.Parallel()
	s := NewShared(newMemRecords(), fast)
	_, release, err := s.AcquireLease(t.Context(), "relay")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 3*fast.Retry)
	defer cancel()
	if _, _, err := s.AcquireLease(ctx, "relay"); err == nil {
		t.Fatal("a second holder in the same process")
	}
	release()
	_, release, err = s.AcquireLease(t.Context(), "relay")
	if err != nil {
		t.Fatal(err)
	}
	release()
}

// With CheckpointEvery, saves in a burst make one write now and one when
// the time is up, of the highest position.
func TestCheckpointEvery(t *testing.T) {
	t.Parallel()
	m := newMemRecords()
	s := NewShared(m, SharedOptions{CheckpointEvery: 100 * time.Millisecond})
	for n := uint64(1); n <= 20; n++ {
		if err := s.SaveCheckpoint(t.Context(), "relay", Position{n, n}); err != nil {
			t.Fatal(err)
		}
	}
	if p, _ := s.LoadCheckpoint(t.Context(), "relay"); p != (Position{20, 20}) {
		t.Errorf("the saving process loads %v, want 20", p)
	}
	time.Sleep(300 * time.Millisecond)
	m.mu.Lock()
	rs := m.streams[CheckpointStreamPrefix+"relay"]
	m.mu.Unlock()
	if len(rs) != 2 {
		t.Fatalf("%d writes, want 2", len(rs))
	}
	if p, _ := decodeCheckpoint(rs[1]); p != (Position{20, 20}) {
		t.Errorf("the delayed write holds %v, want 20", p)
	}
}

// Flush returns only after a delayed write that had begun has ended: a
// store closes its connection right after Flush, and closing the
// EventStoreDB client under a write still running is a data race in the
// client (esdb's TestSharedFake failed so under the race detector).
func TestFlushWaitsForADelayedWrite(t *testing.T) {
	t.Parallel()
	m := &gatedRecords{memRecords: newMemRecords(), entered: make(chan struct{}), open: make(chan struct{})}
	s := NewShared(m, SharedOptions{CheckpointEvery: 10 * time.Millisecond})
	for n := uint64(1); n <= 2; n++ {
		if err := s.SaveCheckpoint(t.Context(), "relay", Position{n, n}); err != nil {
			t.Fatal(err)
		}
	}
	<-m.entered // the delayed write of 2 is under way
	flushed := make(chan error, 1)
	go func() { flushed <- s.Flush(t.Context()) }()
	select {
	case err := <-flushed:
		t.Fatalf("Flush returned (%v) while a delayed write was still running", err)
	case <-time.After(200 * time.Millisecond):
	}
	close(m.open)
	if err := <-flushed; err != nil {
		t.Fatal(err)
	}
	if p, _ := s.LoadCheckpoint(t.Context(), "relay"); p != (Position{2, 2}) {
		t.Errorf("after Flush the checkpoint is %v, want 2", p)
	}
}
