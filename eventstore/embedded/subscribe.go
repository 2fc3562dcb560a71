package embedded

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/linkd/linkd/eventstore"
)

const (
	// The live ring keeps the most recent acknowledged events, up to both
	// limits, while at least one subscription is open. 16 MiB is most of a
	// second of clicks at 20,000 a second, several times what the
	// projectors lag behind under that load (none read from disk with
	// 10,000 links clicked); the 32 MiB and 65,536 events it was
	// kept about 45 MB alive, which the garbage collector's target
	// multiplies: a freshly started linkd touched that much more new memory,
	// the first seconds of a load 10-15% slower per redirect.
	ringEvents = 1 << 15
	ringBytes  = 16 << 20
	// fillEvents bounds what a subscription takes at once (from the ring or
	// from disk).
	fillEvents = 1024
	// valueEvents is how many of the newest events in the ring keep their
	// Value (eventstore.RecordedEvent.Value); older ones drop it, and a
	// subscriber that far behind decodes. Values kept for the whole ring
	// held 15 MB more alive at 25,000 clicks a second (their CPU saved on
	// decoding went to the garbage collector and fresh memory); 8,192 is
	// a third of a second of clicks, more than the projectors lag.
	valueEvents = 8192
)

// liveRing holds recent events for subscriptions. Every event with a
// position in (base, committed] is in the ring: a subscription whose last
// position is at least base reads the ring, others read the log.
type liveRing struct {
	maxEvents int // ringEvents; smaller in tests
	maxBytes  int // ringBytes

	mu     sync.Mutex
	subs   int
	base   int64
	buf    []liveEvent // circular, len == cap once allocated
	head   int
	n      int
	bytes  int
	notify chan struct{} // closed when events are published
}

type liveEvent struct {
	ev   eventstore.RecordedEvent // Data and Metadata alias the append's buffer, never modified
	size int
}

func (l *liveRing) init(committed int64) {
	l.maxEvents, l.maxBytes = ringEvents, ringBytes
	l.base = committed
	l.notify = make(chan struct{})
}

func (l *liveRing) at(k int) *liveEvent { return &l.buf[(l.head+k)%len(l.buf)] }

func (l *liveRing) push(ev eventstore.RecordedEvent, size int) {
	if l.buf == nil {
		l.buf = make([]liveEvent, l.maxEvents)
	}
	for l.n > 0 && (l.n == len(l.buf) || l.bytes+size > l.maxBytes) {
		old := l.at(0)
		l.base = int64(old.ev.Position.Commit)
		l.bytes -= old.size
		*old = liveEvent{}
		l.head = (l.head + 1) % len(l.buf)
		l.n--
	}
	*l.at(l.n) = liveEvent{ev: ev, size: size}
	l.n++
	l.bytes += size
	if l.n > valueEvents {
		l.at(l.n - 1 - valueEvents).ev.Value = nil
	}
}

// pushReq pushes the events of a written append (or part of one).
func (l *liveRing) pushReq(r *appendReq) {
	pos := r.start
	for i, off := 0, 0; off < len(r.buf); i++ {
		rec, n, err := parseRecord(r.buf[off:])
		if err != nil {
			panic(fmt.Sprintf("embedded: record sealed by the writer does not parse: %v", err))
		}
		pos += int64(n)
		ev := eventstore.RecordedEvent{
			ID:       rec.id,
			Stream:   r.stream,
			Version:  rec.version,
			Position: position(pos),
			Type:     string(rec.typ),
			Time:     timeOf(rec.nanos),
			Value:    r.value(i),
		}
		if len(rec.data) > 0 {
			ev.Data = rec.data
		}
		if len(rec.meta) > 0 {
			ev.Metadata = rec.meta
		}
		l.push(ev, n)
		off += n
	}
}

// reset empties the ring: nothing before end is in it.
func (l *liveRing) reset(end int64) {
	for k := 0; k < l.n; k++ {
		*l.at(k) = liveEvent{}
	}
	l.head, l.n, l.bytes = 0, 0, 0
	l.base = end
}

// publish makes the requests' events visible: they enter the ring,
// committed moves to end, waiting subscriptions wake up, and the appends
// are answered.
func (s *Store) publish(reqs []*appendReq, end int64) {
	if end == 0 { // nothing written: failed checks, appends of no events
		for _, r := range reqs {
			close(r.done)
		}
		return
	}
	// StreamVersion's entries of these streams are stale from now on.
	for _, r := range reqs {
		if r.err != nil || r.n == 0 {
			continue
		}
		for p := range r.parts {
			s.versions.wrote(p.hash, end)
		}
	}
	l := &s.live
	l.mu.Lock()
	if l.subs == 0 {
		l.reset(end)
		s.committed.Store(end)
	} else {
		for _, r := range reqs {
			if r.err != nil || r.n == 0 {
				continue
			}
			for p := range r.parts {
				l.pushReq(p)
			}
		}
		s.committed.Store(end)
		close(l.notify)
		l.notify = make(chan struct{})
	}
	l.mu.Unlock()
	for _, r := range reqs {
		close(r.done)
	}
}

// SubscribeAll implements eventstore.Store. The subscription ends when ctx
// ends, when it is closed, or when the store is closed.
func (s *Store) SubscribeAll(ctx context.Context, after eventstore.Position, filter eventstore.Filter) (eventstore.Subscription, error) {
	off, err := offsetOf(after)
	if err != nil {
		return nil, err
	}
	if err := s.enter(ctx); err != nil {
		return nil, err
	}
	defer s.exit()
	sub := &subscription{
		s:      s,
		ctx:    ctx,
		filter: eventstore.Filter{StreamPrefixes: append([]string(nil), filter.StreamPrefixes...)},
		last:   off,
		done:   make(chan struct{}),
	}
	s.live.mu.Lock()
	s.live.subs++
	s.live.mu.Unlock()
	return sub, nil
}

type subscription struct {
	s      *Store
	ctx    context.Context
	filter eventstore.Filter

	mu      sync.Mutex                 // serializes Recv
	last    int64                      // position of the last event looked at
	pending []eventstore.RecordedEvent // events to hand out from next on
	next    int

	closed atomic.Bool
	done   chan struct{}
}

// Recv implements eventstore.Subscription.
func (sub *subscription) Recv(ctx context.Context) (eventstore.RecordedEvent, error) {
	sub.mu.Lock()
	defer sub.mu.Unlock()
	for {
		if sub.closed.Load() {
			return eventstore.RecordedEvent{}, eventstore.ErrClosed
		}
		select {
		case <-sub.s.closing:
			return eventstore.RecordedEvent{}, eventstore.ErrClosed
		default:
		}
		if sub.next < len(sub.pending) {
			ev := sub.pending[sub.next]
			sub.pending[sub.next] = eventstore.RecordedEvent{}
			sub.next++
			return ev, nil
		}
		// Drained: fill reuses the buffer from its start.
		sub.pending, sub.next = sub.pending[:0], 0
		if err := sub.ctx.Err(); err != nil {
			return eventstore.RecordedEvent{}, err
		}
		// A done ctx still gets every event committed: from the ring, or
		// from the log for a subscriber behind it (a feeder catching up
		// must not wait for its linger at every page); only waiting for
		// the next append is what it ends.
		fillCtx := ctx
		if ctx.Err() != nil {
			fillCtx = context.WithoutCancel(ctx)
		}
		wait, err := sub.fill(fillCtx)
		if err != nil {
			return eventstore.RecordedEvent{}, err
		}
		if wait == nil {
			continue
		}
		if err := ctx.Err(); err != nil {
			return eventstore.RecordedEvent{}, err
		}
		select {
		case <-wait:
		case <-ctx.Done():
		case <-sub.ctx.Done():
		case <-sub.done:
		case <-sub.s.closing:
			return eventstore.RecordedEvent{}, eventstore.ErrClosed
		}
	}
}

// fill moves the next events into pending, from the ring when it still
// holds them, from the log otherwise. When there is nothing new it returns
// a channel closed at the next publish.
func (sub *subscription) fill(ctx context.Context) (<-chan struct{}, error) {
	s := sub.s
	l := &s.live
	l.mu.Lock()
	committed := s.committed.Load()
	if sub.last >= committed {
		wait := l.notify
		l.mu.Unlock()
		return wait, nil
	}
	if sub.last >= l.base {
		sub.takeRing(l)
		l.mu.Unlock()
		return nil, nil
	}
	l.mu.Unlock()

	if err := s.enter(ctx); err != nil {
		return nil, err
	}
	defer s.exit()
	// Copied out of the read buffers: a subscriber may keep an event (a
	// runner's table of decodings), which would keep the whole buffer.
	events, last, err := s.scan(ctx, sub.last, committed, fillEvents, sub.filter, true)
	if err != nil {
		return nil, err
	}
	sub.pending = append(sub.pending, events...)
	sub.last = last
	return nil, nil
}

// DrainsCommitted implements eventstore.Drainer: with a done ctx, Recv
// still hands out every committed event, from the ring or the log.
func (sub *subscription) DrainsCommitted() {}

// takeRing moves the ring's events after the subscription's last into
// pending, up to fillEvents. Callers hold l.mu and know the ring holds
// them (sub.last >= l.base).
func (sub *subscription) takeRing(l *liveRing) {
	k := sort.Search(l.n, func(k int) bool { return int64(l.at(k).ev.Position.Commit) > sub.last })
	for ; k < l.n && len(sub.pending) < fillEvents; k++ {
		ev := l.at(k).ev
		sub.last = int64(ev.Position.Commit)
		if sub.filter.Match(ev.Stream) {
			sub.pending = append(sub.pending, ev)
		}
	}
	// Data and Metadata alias the appends' buffers, which nothing changes:
	// subscribers share them (eventstore.Subscription).
}

// Close implements eventstore.Subscription.
func (sub *subscription) Close() error {
	if sub.closed.Swap(true) {
		return nil
	}
	close(sub.done)
	l := &sub.s.live
	l.mu.Lock()
	l.subs--
	l.mu.Unlock()
	return nil
}
