package projections_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/linkd/linkd/eventstore"
	"github.com/linkd/linkd/eventstore/embedded"
	"github.com/linkd/linkd/projections"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// openStore opens an embedded store in a temporary directory, closed when
// the test ends.
func openStore(t *testing.T) *embedded.Store {
	t.Helper()
	store, err := embedded.Open(embedded.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	return store
}

// startRunner runs r until stop, which fails the test if Run returned an error.
func startRunner(t *testing.T, r *projections.LocalRunner) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	return func() {
		t.Helper()
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
}

// batchRecorder is a projector that records the size of every batch.
type batchRecorder struct {
	name     string
	maxBatch int // 0: not a projections.Batcher

	mu      sync.Mutex
	applied int
	largest int
	last    eventstore.Position
}

func (b *batchRecorder) Name() string         { return b.name }
func (b *batchRecorder) Categories() []string { return []string{"clicks"} }
func (b *batchRecorder) Reset(context.Context) error {
	return nil
}

func (b *batchRecorder) Checkpoint(context.Context) (eventstore.Position, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.last, nil
}

func (b *batchRecorder) Apply(_ context.Context, events []projections.Event) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.applied += len(events)
	b.largest = max(b.largest, len(events))
	b.last = events[len(events)-1].Position
	return nil
}

func (b *batchRecorder) counts() (applied, largest int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.applied, b.largest
}

// batcher is a batchRecorder that asks for larger deliveries.
type batcher struct{ *batchRecorder }

func (b batcher) MaxBatch() int { return b.maxBatch }

// A projector that implements Batcher gets deliveries larger than the
// runner's MaxBatch when events wait; the others keep the runner's bound.
func TestLocalRunnerBatcherGetsLargerBatches(t *testing.T) {
	store := openStore(t)
	ctx := context.Background()
	const total = 5000
	for i := range total / 50 {
		evs := make([]eventstore.EventData, 50)
		for j := range evs {
			evs[j] = eventstore.EventData{Type: "ClickRecorded", Data: []byte(`{}`)}
		}
		if _, err := store.Append(ctx, fmt.Sprintf("clicks-%03d", i), eventstore.NoStream(), evs...); err != nil {
			t.Fatal(err)
		}
	}
	plain := &batchRecorder{name: "plain"}
	big := batcher{&batchRecorder{name: "big", maxBatch: 4000}}
	r := projections.NewLocalRunner(store, []projections.Projector{plain, big}, projections.LocalOptions{MaxBatch: 100, Logger: quiet})
	stop := startRunner(t, r)
	deadline := time.Now().Add(30 * time.Second)
	for {
		a, _ := plain.counts()
		b, _ := big.counts()
		if a == total && b == total {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("applied %d and %d of %d events", a, b, total)
		}
		time.Sleep(5 * time.Millisecond)
	}
	stop()
	if _, l := plain.counts(); l > 100 {
		t.Errorf("plain projector got a batch of %d events, more than the runner's MaxBatch 100", l)
	}
	if _, l := big.counts(); l <= 100 || l > 4000 {
		t.Errorf("batcher's largest batch %d, want more than 100 and at most 4000 (the backlog waits)", l)
	}
}

// lingerer is a batcher that waits longer for more events under load.
type lingerer struct {
	batcher
	linger time.Duration
}

func (l lingerer) Linger() time.Duration { return l.linger }

// A projector that implements Lingerer gets the events that arrive while
// it lingers in one delivery; a lone event still goes at once.
func TestLocalRunnerLingererGetsTheLoadInOneBatch(t *testing.T) {
	store := openStore(t)
	ctx := context.Background()
	appendN := func(stream string, n int) {
		evs := make([]eventstore.EventData, n)
		for j := range evs {
			evs[j] = eventstore.EventData{Type: "ClickRecorded", Data: []byte(`{}`)}
		}
		if _, err := store.Append(ctx, stream, eventstore.Any(), evs...); err != nil {
			t.Error(err)
		}
	}
	plain := &batchRecorder{name: "plain"}
	slow := lingerer{batcher{&batchRecorder{name: "lingerer", maxBatch: 4096}}, 2 * time.Second}
	r := projections.NewLocalRunner(store, []projections.Projector{plain, slow}, projections.LocalOptions{Logger: quiet})
	stop := startRunner(t, r)
	waitFor := func(total int, within time.Duration) {
		t.Helper()
		deadline := time.Now().Add(within)
		for {
			a, _ := plain.counts()
			b, _ := slow.counts()
			if a == total && b == total {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("applied %d and %d of %d events within %s", a, b, total, within)
			}
			time.Sleep(time.Millisecond)
		}
	}
	appendN("clicks-lone", 1)
	waitFor(1, time.Second) // well before the lingerer's 2 s
	for i := range 40 {     // 1,000 events over 400 ms
		appendN(fmt.Sprintf("clicks-%02d", i), 25)
		time.Sleep(10 * time.Millisecond)
	}
	waitFor(1001, 30*time.Second)
	stop()
	if _, l := plain.counts(); l >= 500 {
		t.Errorf("plain projector's largest batch %d: it lingered as long", l)
	}
	if _, l := slow.counts(); l < 500 {
		t.Errorf("lingerer's largest batch %d, want most of the 1,000 events that came within its linger", l)
	}
}

// A reader waiting for a lingering projection cuts the linger short: the
// batch goes at once, the wait ends long before the linger would.
func TestLocalRunnerReaderCutsLinger(t *testing.T) {
	store := openStore(t)
	ctx := context.Background()
	slow := lingerer{batcher{&batchRecorder{name: "lingerer", maxBatch: 4096}}, time.Hour}
	r := projections.NewLocalRunner(store, []projections.Projector{slow}, projections.LocalOptions{Logger: quiet})
	stop := startRunner(t, r)
	defer stop()
	for round := range 3 {
		evs := make([]eventstore.EventData, 100) // more than LingerAfter: the feeder lingers
		for j := range evs {
			evs[j] = eventstore.EventData{Type: "ClickRecorded", Data: []byte(`{}`)}
		}
		res, err := store.Append(ctx, fmt.Sprintf("clicks-%d", round), eventstore.NoStream(), evs...)
		if err != nil {
			t.Fatal(err)
		}
		wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		err = r.Watermark("lingerer").Wait(wctx, res.Position)
		cancel()
		if err != nil {
			t.Fatalf("round %d: the reader waited out its timeout, not the linger's cut: %v", round, err)
		}
		if applied, _ := slow.counts(); applied != 100*(round+1) {
			t.Fatalf("round %d: applied %d events, want %d", round, applied, 100*(round+1))
		}
	}
}

// salesAndClicks lingers long for clicks only.
type salesAndClicks struct{ lingerer }

func (salesAndClicks) Categories() []string { return []string{"clicks", "sales"} }
func (salesAndClicks) LingerFor() string    { return "clicks" }

// A CategoryLingerer's long linger holds batches of its category only:
// other events go after the runner's short linger.
func TestLocalRunnerLingersForItsCategory(t *testing.T) {
	store := openStore(t)
	ctx := context.Background()
	p := salesAndClicks{lingerer{batcher{&batchRecorder{name: "mixed", maxBatch: 4096}}, time.Hour}}
	r := projections.NewLocalRunner(store, []projections.Projector{p}, projections.LocalOptions{Logger: quiet})
	stop := startRunner(t, r)
	defer stop()
	appendN := func(stream string) {
		evs := make([]eventstore.EventData, 100) // more than LingerAfter
		for j := range evs {
			evs[j] = eventstore.EventData{Type: "Something", Data: []byte(`{}`)}
		}
		if _, err := store.Append(ctx, stream, eventstore.NoStream(), evs...); err != nil {
			t.Fatal(err)
		}
	}
	appendN("sales-1")
	deadline := time.Now().Add(20 * time.Second)
	for applied, _ := p.counts(); applied < 100; applied, _ = p.counts() {
		if time.Now().After(deadline) {
			t.Fatalf("applied %d of 100 sales: they waited the clicks' linger", applied)
		}
		time.Sleep(time.Millisecond)
	}
	appendN("clicks-1")
	time.Sleep(300 * time.Millisecond)
	if applied, _ := p.counts(); applied != 100 {
		t.Fatalf("applied %d events: the clicks did not linger", applied)
	}
}

// A projector whose streams are quiet while others are busy still moves its
// checkpoint: after a long run of other categories' events the runner hands
// it the last of them, which it skips, so that a restart does not read them
// all again.
func TestLocalRunnerMovesQuietCheckpoints(t *testing.T) {
	store := openStore(t)
	ctx := context.Background()
	clicks := &batchRecorder{name: "clicks"} // consumes "clicks" only
	r := projections.NewLocalRunner(store, []projections.Projector{clicks}, projections.LocalOptions{Logger: quiet})
	stop := startRunner(t, r)
	defer stop()
	if _, err := store.Append(ctx, "clicks-1", eventstore.Any(), eventstore.EventData{Type: "ClickRecorded", Data: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	var pos []eventstore.Position
	for i := range 100 {
		evs := make([]eventstore.EventData, 200)
		for j := range evs {
			evs[j] = eventstore.EventData{Type: "SaleTracked", Data: []byte(`{}`)}
		}
		res, err := store.Append(ctx, fmt.Sprintf("customer-%d", i), eventstore.Any(), evs...)
		if err != nil {
			t.Fatal(err)
		}
		pos = append(pos, res.Position)
	}
	head := pos[len(pos)-1]
	wctx, wcancel := context.WithTimeout(ctx, 30*time.Second)
	defer wcancel()
	if err := r.Watermark("clicks").Wait(wctx, head); err != nil {
		t.Fatal(err)
	}
	// 20,000 other events: the checkpoint is within carryAfter (8,192) of
	// the head, far past the one click.
	cp, _ := clicks.Checkpoint(ctx)
	if cp.Less(pos[len(pos)-50]) {
		t.Errorf("checkpoint %v is behind the last 10,000 events (from %v)", cp, pos[len(pos)-50])
	}
	if applied, _ := clicks.counts(); applied > 1+20000/8192 {
		t.Errorf("%d events handed over, want the click and a few others", applied)
	}
}

// A lingering projector catching up on a backlog (events on disk, behind
// the live ring) gets full batches at once, with no linger per page of the
// log: a linger waits only for events not yet written.
func TestLocalRunnerCatchesUpInFullBatches(t *testing.T) {
	store := openStore(t)
	ctx := context.Background()
	const total = 20000
	for i := range total / 100 {
		evs := make([]eventstore.EventData, 100)
		for j := range evs {
			evs[j] = eventstore.EventData{Type: "ClickRecorded", Data: []byte(`{}`)}
		}
		if _, err := store.Append(ctx, fmt.Sprintf("clicks-%03d", i), eventstore.NoStream(), evs...); err != nil {
			t.Fatal(err)
		}
	}
	l := lingerer{batcher{&batchRecorder{name: "lingerer", maxBatch: 8192}}, time.Second}
	r := projections.NewLocalRunner(store, []projections.Projector{l}, projections.LocalOptions{Logger: quiet})
	start := time.Now()
	stop := startRunner(t, r)
	deadline := start.Add(30 * time.Second)
	for {
		if a, _ := l.counts(); a == total {
			break
		}
		if time.Now().After(deadline) {
			a, _ := l.counts()
			t.Fatalf("applied %d of %d events in 30 s", a, total)
		}
		time.Sleep(5 * time.Millisecond)
	}
	took := time.Since(start)
	stop()
	if _, largest := l.counts(); largest != 8192 {
		t.Errorf("largest batch %d while catching up, want 8192 (after %v)", largest, took)
	}
}

// sequenceRecorder is a projector that copies what it is given, as
// Projector.Apply asks, and notes the array each batch came in.
type sequenceRecorder struct {
	mu      sync.Mutex
	seen    []string // stream/version of every event, in order
	arrays  map[*projections.Event]int
	batches int
}

func (s *sequenceRecorder) Name() string                { return "sequence" }
func (s *sequenceRecorder) Categories() []string        { return []string{"clicks"} }
func (s *sequenceRecorder) Reset(context.Context) error { return nil }
func (s *sequenceRecorder) Checkpoint(context.Context) (eventstore.Position, error) {
	return eventstore.Start, nil
}

func (s *sequenceRecorder) Apply(_ context.Context, events []projections.Event) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range events {
		s.seen = append(s.seen, fmt.Sprintf("%s/%d", e.Stream, e.Version))
	}
	s.arrays[&events[:1][0]]++
	s.batches++
	return nil
}

// The runner fills one slice with batch after batch (a projector keeps no
// batch past Apply), and every batch holds the log's events, in order:
// none overwritten by the next before it was applied.
func TestLocalRunnerReusesItsBatch(t *testing.T) {
	store := openStore(t)
	ctx := context.Background()
	var want []string
	for i := range 60 {
		evs := make([]eventstore.EventData, 10)
		for j := range evs {
			evs[j] = eventstore.EventData{Type: "ClickRecorded", Data: []byte(`{}`)}
			want = append(want, fmt.Sprintf("clicks-%02d/%d", i, j))
		}
		if _, err := store.Append(ctx, fmt.Sprintf("clicks-%02d", i), eventstore.NoStream(), evs...); err != nil {
			t.Fatal(err)
		}
	}
	rec := &sequenceRecorder{arrays: map[*projections.Event]int{}}
	r := projections.NewLocalRunner(store, []projections.Projector{rec}, projections.LocalOptions{MaxBatch: 25, Logger: quiet})
	stop := startRunner(t, r)
	deadline := time.Now().Add(30 * time.Second)
	for {
		rec.mu.Lock()
		n := len(rec.seen)
		rec.mu.Unlock()
		if n >= len(want) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("applied %d of %d events", n, len(want))
		}
		time.Sleep(5 * time.Millisecond)
	}
	stop()
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if fmt.Sprint(rec.seen) != fmt.Sprint(want) {
		t.Fatalf("applied %v,\nwant the log's %v", rec.seen, want)
	}
	if rec.batches < 24 || len(rec.arrays) != 1 {
		t.Errorf("%d batches in %d arrays, want at least 24 in one", rec.batches, len(rec.arrays))
	}
}
