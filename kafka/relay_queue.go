package kafka

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/linkd/linkd/eventstore"
)

// How the relay hands events to its workers and counts them back: each
// event goes, as a job, to the queue of its stream's worker (shard), and
// belongs to the batch it was read in; the tracker moves the acknowledged
// position, which the checkpoint saves, over the batches whose events are
// all acknowledged, in log order, and bounds the events in flight.

// job is an event handed to a worker, with the batch it was read in.
type job struct {
	ev    eventstore.RecordedEvent
	b     *batch
	topic string // TopicOf(ev.Stream), computed once by dispatch
	// part is the event's partition when the publisher is Partitioned,
	// else -1.
	part int32
}

// shard picks the worker of a stream (FNV-1a).
func shard(stream string, n int) int { return int(fnv1a(stream) % uint32(n)) }

// fnv1a is the 32-bit FNV-1a hash of s: the relay's shards, and the
// partitions of sarama's hash partitioner (hashPartition).
func fnv1a(s string) uint32 {
	h := uint32(2166136261)
	for i := 0; i < len(s); i++ {
		h ^= uint32(s[i])
		h *= 16777619
	}
	return h
}

// queue is a worker's queue: unbounded, since the relay bounds the events
// in flight as a whole, so that a busy stream's worker does not hold up the
// others.
type queue struct {
	mu   sync.Mutex
	jobs []job
	wake chan struct{}
}

func newQueue() *queue { return &queue{wake: make(chan struct{}, 1)} }

func (q *queue) push(jobs []job) {
	q.mu.Lock()
	q.jobs = append(q.jobs, jobs...)
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// len is how many jobs wait.
func (q *queue) len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.jobs)
}

// take moves up to max jobs into buf, waiting for one; false when ctx ends.
func (q *queue) take(ctx context.Context, max int, buf []job) ([]job, bool) {
	for {
		if ctx.Err() != nil {
			return buf[:0], false
		}
		q.mu.Lock()
		if n := min(max, len(q.jobs)); n > 0 {
			buf = append(buf[:0], q.jobs[:n]...)
			clear(q.jobs[:n])
			q.jobs = q.jobs[n:]
			if len(q.jobs) == 0 {
				q.jobs = nil
			}
			q.mu.Unlock()
			return buf, true
		}
		q.mu.Unlock()
		select {
		case <-q.wake:
		case <-ctx.Done():
			return buf[:0], false
		}
	}
}

// batch is a run of consecutive events of the log handed out together.
type batch struct {
	last    eventstore.Position
	pending atomic.Int64
	done    bool // guarded by tracker.mu
}

// tracker advances the acknowledged position over batches whose events are
// all acknowledged, in log order.
type tracker struct {
	mu      sync.Mutex
	queue   []*batch
	acked   eventstore.Position
	pending atomic.Int64  // events handed out, not yet acknowledged
	freed   chan struct{} // signalled when pending drops
}

func (t *tracker) reset(p eventstore.Position) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.queue, t.acked = nil, p
	t.pending.Store(0)
	t.freed = make(chan struct{}, 1)
}

// waitRoom waits until n more events fit under max in flight (or nothing is
// in flight); false when ctx ends.
func (t *tracker) waitRoom(ctx context.Context, n, max int) bool {
	for {
		p := int(t.pending.Load())
		if p == 0 || p+n <= max {
			return true
		}
		select {
		case <-t.freed:
		case <-ctx.Done():
			return false
		}
	}
}

func (t *tracker) add(last eventstore.Position, n int) *batch {
	b := &batch{last: last}
	b.pending.Store(int64(n))
	t.pending.Add(int64(n))
	t.mu.Lock()
	t.queue = append(t.queue, b)
	t.mu.Unlock()
	return b
}

func (t *tracker) ack(b *batch) {
	t.pending.Add(-1)
	select {
	case t.freed <- struct{}{}:
	default:
	}
	if b.pending.Add(-1) != 0 {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	b.done = true
	n := 0
	for n < len(t.queue) && t.queue[n].done {
		t.acked = t.queue[n].last
		n++
	}
	if n > 0 {
		clear(t.queue[:n])
		t.queue = t.queue[n:]
	}
}

func (t *tracker) state() (eventstore.Position, int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.acked, int(t.pending.Load())
}
