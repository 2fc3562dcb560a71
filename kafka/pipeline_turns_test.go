package kafka_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/linkd/linkd/eventstore"
	"github.com/linkd/linkd/kafka"
	"github.com/linkd/linkd/kafka/kafkatest"
	"github.com/linkd/linkd/projections"
)

// leases grants named leases to one holder at a time among the instances
// of a test, as a shared store does. A lease can be taken from its holder
// (revoke), and an instance kept from taking any (deny).
type leases struct {
	mu     sync.Mutex
	cond   *sync.Cond
	holder map[string]string
	cancel map[string]context.CancelFunc
	denied map[string]bool
	turns  []string // "<lease> <instance>", in order
}

func newLeases() *leases {
	l := &leases{holder: map[string]string{}, cancel: map[string]context.CancelFunc{}, denied: map[string]bool{}}
	l.cond = sync.NewCond(&l.mu)
	return l
}

// For is the lease service as instance who sees it.
func (l *leases) For(who string) eventstore.Leaser { return instanceLeases{l, who} }

type instanceLeases struct {
	l   *leases
	who string
}

func (il instanceLeases) AcquireLease(ctx context.Context, name string) (context.Context, func(), error) {
	l := il.l
	stop := context.AfterFunc(ctx, func() {
		l.mu.Lock()
		l.cond.Broadcast()
		l.mu.Unlock()
	})
	defer stop()
	l.mu.Lock()
	defer l.mu.Unlock()
	for l.holder[name] != "" || l.denied[il.who] {
		if ctx.Err() != nil {
			return nil, nil, ctx.Err()
		}
		l.cond.Wait()
	}
	if ctx.Err() != nil {
		return nil, nil, ctx.Err()
	}
	held, cancel := context.WithCancel(ctx)
	l.holder[name], l.cancel[name] = il.who, cancel
	l.turns = append(l.turns, name+" "+il.who)
	var once sync.Once
	release := func() {
		once.Do(func() {
			cancel()
			l.mu.Lock()
			if l.holder[name] == il.who {
				delete(l.holder, name)
				l.cond.Broadcast()
			}
			l.mu.Unlock()
		})
	}
	return held, release, nil
}

// Holder names the instance that holds the lease, "" if none.
func (l *leases) Holder(name string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.holder[name]
}

// Revoke ends the holder's lease, as a lost session does; the holder
// releases it when it has stopped.
func (l *leases) Revoke(name string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if c := l.cancel[name]; c != nil {
		c()
	}
}

// Deny keeps who from taking any lease (or lets it again).
func (l *leases) Deny(who string, denied bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.denied[who] = denied
	l.cond.Broadcast()
}

// table is a shared read model without transactions, as a ClickHouse table:
// it keeps every row written, duplicates included, and counts the writers
// that overlapped.
type table struct {
	mu       sync.Mutex
	rows     map[string][]uint64 // stream -> versions written, in order
	writing  atomic.Int32
	overlaps atomic.Int32
}

func (t *table) next(stream string) uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	vs := t.rows[stream]
	if len(vs) == 0 {
		return 0
	}
	return slices.Max(vs) + 1
}

func (t *table) write(stream string, v uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.rows[stream] = append(t.rows[stream], v)
}

// problems lists the streams whose rows are not exactly versions 0..n-1.
func (t *table) problems(streams []string, n uint64) []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []string
	for _, s := range streams {
		vs := t.rows[s]
		ok := uint64(len(vs)) == n
		for i, v := range vs {
			ok = ok && v == uint64(i)
		}
		if !ok {
			out = append(out, fmt.Sprintf("%s: %v", s, vs))
		}
	}
	return out
}

func (t *table) complete(streams []string, n uint64) bool {
	for _, s := range streams {
		if t.next(s) < n {
			return false
		}
	}
	return true
}

// cachingProjector writes a table as the ClickHouse projectors do: no
// transaction, and the next version of each stream it knows kept in its
// own memory, trusted over the table until Reload.
type cachingProjector struct {
	t       *table
	mu      sync.Mutex
	next    map[string]uint64
	reloads atomic.Int32
}

func (p *cachingProjector) Name() string         { return "cached" }
func (p *cachingProjector) Categories() []string { return []string{"clicks"} }
func (p *cachingProjector) Checkpoint(context.Context) (eventstore.Position, error) {
	return eventstore.Start, nil
}
func (p *cachingProjector) Reset(context.Context) error { return nil }

func (p *cachingProjector) Apply(ctx context.Context, events []projections.Event) error {
	if p.t.writing.Add(1) > 1 {
		p.t.overlaps.Add(1)
	}
	defer p.t.writing.Add(-1)
	p.mu.Lock()
	defer p.mu.Unlock()
	time.Sleep(2 * time.Millisecond) // as long as a round trip: writers that overlap are seen
	for _, e := range events {
		if !strings.HasPrefix(e.Stream, "clicks-") {
			continue
		}
		next, ok := p.next[e.Stream]
		if !ok {
			next = p.t.next(e.Stream)
		}
		if e.Version < next {
			continue
		}
		p.t.write(e.Stream, e.Version)
		p.next[e.Stream] = e.Version + 1
	}
	return ctx.Err()
}

func (p *cachingProjector) Reload(context.Context) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.reloads.Add(1)
	p.next = map[string]uint64{}
}

// TestSharedReadModelsTakeTurns runs two instances' pipelines on one store
// and one Kafka: one instance at a time writes the shared read model, and
// each turn starts from the tables, not from what the instance remembers of
// its last turn. Between them, the other instance consumed events whose
// offsets never reached Kafka, so they come again: an instance that
// trusted its memory would write them twice.
func TestSharedReadModelsTakeTurns(t *testing.T) {
	t.Parallel()
	kafkatest.Deadline(t, 180*time.Second)
	cfg, cluster := kafkatest.StartCluster(t, 4)
	var lose atomic.Bool
	kafkatest.LoseCommits(cluster, &lose)
	store := openStore(t)
	lease, cps := newLeases(), &testCheckpoints{at: map[string]eventstore.Position{}}
	tbl := &table{rows: map[string][]uint64{}}
	projs := map[string]*cachingProjector{}
	start := func(who string) {
		p := &cachingProjector{t: tbl, next: map[string]uint64{}}
		projs[who] = p
		pl, err := kafka.NewPipeline(cfg, store, kafka.PipelineOptions{
			Shared:     []projections.Projector{p},
			Checkpoint: kafka.StoreCheckpoint(cps, kafka.RelayLease),
			Lease:      lease.For(who),
			Logger:     quiet,
		})
		if err != nil {
			t.Fatal(err)
		}
		background(t, "pipeline "+who, pl.Run)
	}
	streams := streamNames(24, "clicks")
	wait := func(n uint64, writer string) {
		t.Helper()
		kafkatest.Eventually(t, 60*time.Second, func() bool { return tbl.complete(streams, n) },
			func() string { return fmt.Sprintf("versions below %d not all written", n) })
		if h := lease.Holder(kafka.SharedLease); h != writer {
			t.Fatalf("the shared lease is held by %q, want %q", h, writer)
		}
	}
	handOver := func(from, to string) {
		t.Helper()
		lease.Deny(to, false)
		lease.Deny(from, true)
		lease.Revoke(kafka.SharedLease)
		kafkatest.Eventually(t, 30*time.Second, func() bool { return lease.Holder(kafka.SharedLease) == to },
			func() string { return "the shared lease did not pass from " + from + " to " + to })
	}

	lease.Deny("b", true)
	start("a")
	kafkatest.Eventually(t, 30*time.Second, func() bool { return lease.Holder(kafka.SharedLease) == "a" },
		func() string { return "a did not take the shared lease" })
	start("b")
	appendRounds(t, store, streams, 0, 5)
	wait(5, "a")

	handOver("a", "b")
	appendRounds(t, store, streams, 5, 10)
	wait(10, "b")

	// b's offsets from here on are lost: they come again to the next writer.
	lose.Store(true)
	appendRounds(t, store, streams, 10, 15)
	wait(15, "b")

	// a remembers versions up to 5 from its first turn.
	handOver("b", "a")
	appendRounds(t, store, streams, 15, 20)
	wait(20, "a")
	lose.Store(false)

	if p := tbl.problems(streams, 20); len(p) > 0 {
		t.Errorf("%d streams not written exactly once each, e.g. %s", len(p), p[0])
	}
	if n := tbl.overlaps.Load(); n > 0 {
		t.Errorf("two instances wrote at once %d times", n)
	}
	// Each turn reloads at its start and its end: a took two turns (the
	// second still on), b one.
	if a, b := projs["a"].reloads.Load(), projs["b"].reloads.Load(); a != 3 || b != 2 {
		t.Errorf("reloads: a %d, b %d; want 3 and 2", a, b)
	}
	lease.mu.Lock()
	var shared []string
	for _, turn := range lease.turns {
		if w, ok := strings.CutPrefix(turn, kafka.SharedLease+" "); ok {
			shared = append(shared, w)
		}
	}
	lease.mu.Unlock()
	if !slices.Equal(shared, []string{"a", "b", "a"}) {
		t.Errorf("turns at the shared lease: %v, want a, b, a", shared)
	}
}
