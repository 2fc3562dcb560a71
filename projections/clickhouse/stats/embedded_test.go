package stats

import (
	"context"
	"log/slog"
	"reflect"
	"testing"
	"time"

	"github.com/linkd/linkd/domain/link"
	"github.com/linkd/linkd/eventstore"
	"github.com/linkd/linkd/eventstore/embedded"
	"github.com/linkd/linkd/internal/testsupport/chtest"
	"github.com/linkd/linkd/projections"
	"github.com/linkd/linkd/queries"
)

// TestLiveThenReplayFromEmbeddedStore: the events of a real (embedded)
// event store, delivered live by the in-process runner, then replayed,
// give the exact counts both times.
func TestLiveThenReplayFromEmbeddedStore(t *testing.T) {
	t.Parallel()
	ctx := chtest.Context(t, 2*time.Minute)
	store, err := embedded.Open(embedded.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	p := openTest(t, ctx, chtest.DSN(t))

	l := newEventLog()
	start := time.Date(2026, 4, 29, 0, 0, 0, 0, time.UTC)
	for _, ln := range testLinks {
		l.add(link.Stream(ln.id), linkCreated(ln.id, ln.ws, "code-"+ln.id, "name "+ln.id, start))
	}
	genClicks(l, 2000, 7, start, 4)
	for _, ev := range l.events {
		expected := eventstore.NoStream()
		if ev.Version > 0 {
			expected = eventstore.Exact(ev.Version - 1)
		}
		if _, err := store.Append(ctx, ev.Stream, expected, eventstore.EventData{Type: ev.Type, Data: ev.Data}); err != nil {
			t.Fatal(err)
		}
	}
	head, err := store.Head(ctx)
	if err != nil {
		t.Fatal(err)
	}

	runCtx, stop := context.WithCancel(ctx)
	runner := projections.NewLocalRunner(store, []projections.Projector{p}, projections.LocalOptions{
		MaxBatch: 700, Logger: slog.New(slog.DiscardHandler),
	})
	ran := make(chan error, 1)
	go func() { ran <- runner.Run(runCtx) }()
	for {
		cp, err := p.Checkpoint(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if cp == head {
			break
		}
		select {
		case err := <-ran:
			t.Fatalf("runner stopped: %v", err)
		case <-time.After(50 * time.Millisecond):
		}
	}
	stop()
	if err := <-ran; err != nil {
		t.Fatal(err)
	}
	end := start.AddDate(0, 0, 4)
	checkAll(t, ctx, p, l.events, start, end)
	snapshot := func() []queries.DailyStats {
		var out []queries.DailyStats
		for _, ln := range testLinks {
			d, err := p.LinkDaily(ctx, ln.id, start, end)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, d...)
		}
		return out
	}
	live := snapshot()

	if _, err := projections.Replay(ctx, store, p, projections.ReplayOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := snapshot(); !reflect.DeepEqual(got, live) {
		t.Errorf("replay differs from live")
	}
	checkAll(t, ctx, p, l.events, start, end)
	if cp, err := p.Checkpoint(ctx); err != nil || cp != head {
		t.Errorf("checkpoint after replay = %v, %v; want %v", cp, err, head)
	}
}
