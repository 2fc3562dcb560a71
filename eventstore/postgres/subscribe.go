package postgres

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/linkd/linkd/eventstore"
)

// notifier wakes every waiting subscription: wait returns a channel that
// broadcast closes.
type notifier struct {
	mu sync.Mutex
	ch chan struct{}
}

func (n *notifier) init() { n.ch = make(chan struct{}) }

func (n *notifier) wait() <-chan struct{} {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.ch
}

func (n *notifier) broadcast() {
	n.mu.Lock()
	close(n.ch)
	n.ch = make(chan struct{})
	n.mu.Unlock()
}

// listen holds a connection of its own that LISTENs for the commits of
// other processes (the store's own wake its subscriptions directly), and
// reconnects when it breaks. Every (re)connection wakes the subscriptions:
// notifications may have been missed meanwhile.
func (s *Store) listen() {
	defer s.bg.Done()
	backoff := 100 * time.Millisecond
	for s.ctx.Err() == nil {
		err := s.listenOnce()
		if s.ctx.Err() != nil {
			return
		}
		s.log.Warn("postgres: LISTEN connection lost; subscriptions poll until it is back", "err", err, "retry_in", backoff)
		select {
		case <-time.After(backoff):
		case <-s.ctx.Done():
			return
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}

func (s *Store) listenOnce() error {
	cfg := s.pool.Config().ConnConfig.Copy()
	ctx, cancel := context.WithTimeout(s.ctx, s.opts.ConnectTimeout)
	conn, err := pgx.ConnectConfig(ctx, cfg)
	cancel()
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(s.ctx, "LISTEN "+notifyChannel); err != nil {
		return err
	}
	// Commits made while no LISTEN was on went unannounced.
	s.foreign.Add(1)
	s.wake.broadcast()
	for {
		n, err := conn.WaitForNotification(s.ctx)
		if err != nil {
			return err
		}
		if s.knownCommit(n.Payload) {
			continue
		}
		s.foreign.Add(1)
		s.wake.broadcast()
	}
}

// knownCommit reports whether a notification's payload ("instance
// position", sent by every appending transaction) announces a commit the
// store's subscriptions need no read for: one of its own (they were woken
// already), or one whose last position its memory holds (a fill read it
// before the notification came: with many instances, most of them). A
// payload of a linkd before the instance was in it (a position alone) is
// this store's when its position is not past ownHead; a commit of another
// process followed by one of this store's is then taken for its own, and
// recentLog.add finds the gap it leaves.
func (s *Store) knownCommit(payload string) bool {
	id, at, ok := strings.Cut(payload, " ")
	if !ok {
		p, err := strconv.ParseInt(payload, 10, 64)
		return err == nil && p <= s.ownHead.Load()
	}
	if id == s.instance {
		return true
	}
	p, err := strconv.ParseInt(at, 10, 64)
	if err != nil {
		return false
	}
	end, held := s.recent.end()
	return held && p <= end
}

// subPage is how many events a subscription reads at once.
const subPage = 1000

// subscription reads the log after its position in Recv itself, in the
// caller's goroutine: from the store's memory of recent commits when it
// holds the next event, through the store's shared fill when the
// subscription is up to date with memory, from the table when it is
// behind. It hands out the events of one read one by one. There is no
// goroutine and no channel between the read and Recv: with one goroutine
// and one channel send per event and subscription, the handing over of
// every event to each of an instance's five feeders took a sixth of its
// CPU with three instances (ADR 0123).
type subscription struct {
	s       *Store
	ctx     context.Context // SubscribeAll's, ended by the store's closing too
	cancel  context.CancelFunc
	filter  eventstore.Filter
	last    int64                      // the position of the last event handed out or passed
	buf     []eventstore.RecordedEvent // read, not yet handed out (a view of memory: not to be changed)
	poll    *time.Timer
	backoff time.Duration
	stop    chan struct{} // closed by Close
	once    sync.Once
	closed  atomic.Bool
}

// SubscribeAll implements eventstore.Store.
func (s *Store) SubscribeAll(ctx context.Context, after eventstore.Position, filter eventstore.Filter) (eventstore.Subscription, error) {
	if err := s.enter(ctx); err != nil {
		return nil, err
	}
	defer s.exit()
	sctx, cancel := context.WithCancel(ctx)
	unhook := context.AfterFunc(s.ctx, cancel)
	sub := &subscription{s: s, ctx: sctx, filter: filter, last: pos(after), stop: make(chan struct{}),
		backoff: 50 * time.Millisecond, cancel: func() { unhook(); cancel() }}
	return sub, nil
}

// Recv implements eventstore.Subscription. Reads of the table are bounded
// by the subscription's context, not ctx, which bounds only the waits: a
// feeder's short linger ending does not cancel a query under way (pgx
// would close its connection). With a ctx already done, Recv hands out
// what it read or what the store's memory holds, and reads no table.
// Failed reads (a server restarting) are retried from the last position
// handed out, so nothing is lost or repeated.
func (sub *subscription) Recv(ctx context.Context) (eventstore.RecordedEvent, error) {
	s := sub.s
	for {
		if sub.closed.Load() {
			return eventstore.RecordedEvent{}, eventstore.ErrClosed
		}
		for len(sub.buf) > 0 {
			ev := sub.buf[0]
			sub.buf = sub.buf[1:]
			sub.last = int64(ev.Position.Commit)
			if sub.filter.Match(ev.Stream) {
				return ev, nil
			}
		}
		if err := sub.ended(); err != nil {
			return eventstore.RecordedEvent{}, err
		}
		woken := s.wake.wait() // before the read: a commit after it wakes us
		evs, full, err := sub.read(ctx)
		switch {
		case err != nil && ctx.Err() != nil && sub.ctx.Err() == nil:
			return eventstore.RecordedEvent{}, ctx.Err() // a done ctx: no table read
		case err != nil:
			if err := sub.ended(); err != nil {
				return eventstore.RecordedEvent{}, err
			}
			s.log.Warn("postgres: subscription read failed; retrying", "err", err, "after", sub.last, "retry_in", sub.backoff)
			if err := sub.sleep(ctx, time.After(sub.backoff), nil); err != nil {
				return eventstore.RecordedEvent{}, err
			}
			sub.backoff = min(2*sub.backoff, 2*time.Second)
			continue
		}
		sub.backoff = 50 * time.Millisecond
		// Read after the events: a relaxed commit they hold was counted
		// before it could be seen (relaxed.go).
		bound := s.readBound()
		for i := range evs {
			if int64(evs[i].Position.Commit) > bound {
				// Not known flushed: the flusher wakes us once it is.
				evs, full = evs[:i], false
				break
			}
		}
		sub.buf = evs
		if len(evs) > 0 || full {
			continue
		}
		// Caught up: with the store's last commit (from memory), or with
		// the table. The next commit wakes the subscription.
		if err := ctx.Err(); err != nil {
			return eventstore.RecordedEvent{}, err
		}
		if sub.poll == nil {
			sub.poll = time.NewTimer(s.opts.PollInterval)
		} else {
			sub.poll.Reset(s.opts.PollInterval)
		}
		if err := sub.sleep(ctx, sub.poll.C, woken); err != nil {
			return eventstore.RecordedEvent{}, err
		}
	}
}

// read returns the next events after sub.last: from memory, through the
// store's fill, or from the table; full when more may follow at once.
func (sub *subscription) read(ctx context.Context) ([]eventstore.RecordedEvent, bool, error) {
	s := sub.s
	if evs, mem := s.recent.after(sub.last, subPage); mem {
		return evs, len(evs) == subPage, nil
	}
	if ctx.Err() != nil {
		return nil, false, ctx.Err()
	}
	if s.recent.caughtUp(sub.last) {
		// Up to date with memory: the commits of other processes are
		// read once for every subscription of the store (fill), when
		// there is a sign of one. Without a sign the subscription waits
		// for one rather than read the table itself: with many
		// instances, every subscription reading after every wake was
		// half of the log's reads, most of them finding nothing.
		more, err := s.fill(sub.ctx, sub.last)
		if err != nil {
			return nil, false, err
		}
		evs, _ := s.recent.after(sub.last, subPage)
		return evs, more || len(evs) == subPage, nil
	}
	// Behind what memory holds.
	s.subReads.Add(1)
	evs, err := s.readAll(sub.ctx, sub.last, subPage, sub.filter.StreamPrefixes)
	return evs, len(evs) == subPage, err
}

// sleep waits for tick or woken, or until ctx, the subscription or the
// store ends.
func (sub *subscription) sleep(ctx context.Context, tick <-chan time.Time, woken <-chan struct{}) error {
	select {
	case <-tick:
	case <-woken:
	case <-ctx.Done():
		if err := sub.ended(); err != nil {
			return err
		}
		return ctx.Err()
	case <-sub.ctx.Done():
		return sub.ended()
	case <-sub.stop:
		return eventstore.ErrClosed
	}
	return nil
}

// ended is why the subscription can deliver no more (Close, the store
// closed, SubscribeAll's context ended), or nil.
func (sub *subscription) ended() error {
	switch {
	case sub.closed.Load() || sub.s.ctx.Err() != nil:
		return eventstore.ErrClosed
	case sub.ctx.Err() != nil:
		return sub.ctx.Err()
	}
	return nil
}

// DrainsCommitted implements eventstore.Drainer: with a done ctx, Recv
// hands out every event the store holds in memory after the
// subscription's position: every commit of this process, and those of
// other processes that a fill has read (the next Recv that may wait reads
// the rest).
func (sub *subscription) DrainsCommitted() {}

// Close implements eventstore.Subscription.
func (sub *subscription) Close() error {
	sub.once.Do(func() {
		sub.closed.Store(true)
		close(sub.stop)
		sub.cancel()
	})
	return nil
}

// recentLog keeps the events of the store's last commits, in log order,
// so that a subscription that is up to date takes them from memory rather
// than reading them back. Positions are given with no holes, so whether
// the events kept follow a subscription's position with nothing between is
// plain arithmetic; anything else (another process's commit between, a
// subscription far behind) is read from the database.
//
// It also keeps the last position of each category among the events it
// took in, seeded by CategoryHead with linkd_heads: once seeded, it has
// taken in, or will, every event after the seed's snapshot, each once and
// in order (add refuses a gap), so its heads are the log's as far as it
// has read.
type recentLog struct {
	mu     sync.Mutex
	events []eventstore.RecordedEvent // consecutive positions, ending at last
	// last is the position of the last event taken in (or the seed's
	// end, before any), held whether there is one.
	last  int64
	held  bool
	heads map[string]int64 // category: its last position; nil until seeded
}

// recentKeep is how many events recentLog keeps, at least.
const recentKeep = 4096

// add appends evs where they follow the log's last event; false when
// they leave a gap after it (another process committed between, which a
// fill reads with them).
func (l *recentLog) add(evs []eventstore.RecordedEvent) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.held {
		end := uint64(l.last)
		for len(evs) > 0 && evs[0].Position.Commit <= end {
			evs = evs[1:] // read from the table already (fill)
		}
		if len(evs) > 0 && evs[0].Position.Commit != end+1 {
			return false
		}
	}
	if len(evs) == 0 {
		return true
	}
	if len(l.events)+len(evs) > 2*recentKeep {
		drop := len(l.events) + len(evs) - recentKeep
		if drop >= len(l.events) {
			l.events = nil
		} else {
			l.events = append([]eventstore.RecordedEvent(nil), l.events[drop:]...)
		}
	}
	l.events = append(l.events, evs...)
	l.last, l.held = int64(evs[len(evs)-1].Position.Commit), true
	if l.heads != nil {
		for i := range evs {
			l.heads[eventstore.Category(evs[i].Stream)] = int64(evs[i].Position.Commit) // in order: the last is the greatest
		}
	}
	return true
}

// seed takes in the categories' heads and the log's end as read in one
// snapshot. It succeeds (true) when every event after end has been
// taken in or will be, with its category known: memory holds nothing
// after end (end becomes its last when it holds nothing), or it still
// keeps every event after end. Otherwise (events after the snapshot were
// never taken in, or are no longer kept) the caller reads again: a later
// snapshot's end is past memory's last.
func (l *recentLog) seed(end int64, cats []string, heads []int64) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.held && l.last > end && (len(l.events) == 0 || int64(l.events[0].Position.Commit) > end+1) {
		return false
	}
	if !l.held {
		l.last, l.held = end, true
	}
	l.heads = make(map[string]int64, len(cats))
	for i, c := range cats {
		l.heads[c] = heads[i]
	}
	// The events taken in after the snapshot, before the seed: their
	// heads are the greater.
	for i := range l.events {
		if p := int64(l.events[i].Position.Commit); p > end {
			c := eventstore.Category(l.events[i].Stream)
			l.heads[c] = max(l.heads[c], p)
		}
	}
	return true
}

// seeded reports whether the log keeps the categories' heads.
func (l *recentLog) seeded() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.heads != nil
}

// head is the greatest last position of cats (0: none).
func (l *recentLog) head(cats []string) int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	var h int64
	for _, c := range cats {
		h = max(h, l.heads[c])
	}
	return h
}

// caughtUp reports whether a subscription at last has every event the log
// holds in memory (or the log holds none): what follows is in the table
// only.
func (l *recentLog) caughtUp(last int64) bool {
	end, ok := l.end()
	return !ok || last >= end
}

// end is the position of the last event the log took in (or of the
// seed's end), false when there is none.
func (l *recentLog) end() (int64, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.last, l.held
}

// fill reads the events after the log's last (after last when it holds
// none) from the table into it: one read for every subscription of the
// store that is up to date, however many there are (with many instances,
// the other processes' commits). Concurrent calls wait for the one under
// way and read again only if it did not reach last. more: the read was a
// full page, more may follow.
//
// It reads only when another process may have committed since the last
// fill began (s.foreign moved), or PollInterval after the last read (a
// sign lost all the same), or when memory holds nothing yet: a store
// alone on the database, appending, no longer reads the table after each
// of its commits (a quarter of the redirect path's PostgreSQL queries).
func (s *Store) fill(ctx context.Context, last int64) (more bool, err error) {
	s.fillMu.Lock()
	defer s.fillMu.Unlock()
	if !s.recent.caughtUp(last) {
		return false, nil // another fill brought it
	}
	f := s.foreign.Load()
	// A fill that finds memory empty reads after its caller's position,
	// which says nothing of a subscription further behind: only once
	// memory holds the log's end are all callers at the same place.
	if _, held := s.recent.end(); held && f == s.filled && time.Since(s.lastFill) < s.opts.PollInterval {
		return false, nil
	}
	return s.fillOnce(ctx, last, f)
}

// fillOnce reads the events after memory's last (after last when it has
// none) into memory, under fillMu; foreign is s.foreign when it began.
func (s *Store) fillOnce(ctx context.Context, last int64, foreign uint64) (more bool, err error) {
	from := last
	if end, ok := s.recent.end(); ok {
		from = end
	}
	began := time.Now()
	n := s.fillsBegun.Add(1)
	s.fillReads.Add(1)
	evs, err := s.readAll(ctx, from, subPage, nil)
	if err != nil {
		return false, err
	}
	more = len(evs) == subPage
	if more {
		s.lastFill = time.Time{} // the next fill reads on, sign or not
	} else {
		s.filled, s.lastFill, s.freshFill = foreign, began, n
	}
	s.recent.add(evs) // follows the log's end: no gap
	if len(evs) > 0 {
		// Every subscription up to date takes them from memory: their
		// notifications, should they come after, announce nothing.
		s.wake.broadcast()
	}
	return more, nil
}

// freshen returns once a fill that began after the call has read the log
// to its end: memory has taken in every commit answered before the call.
// Callers that come while a fill is under way share the next one.
//
// The first call seeds memory with the categories' heads (seedHeads),
// which is such a read too.
func (s *Store) freshen(ctx context.Context) error {
	called := s.fillsBegun.Load()
	s.fillMu.Lock()
	defer s.fillMu.Unlock()
	for s.freshFill <= called || !s.recent.seeded() {
		var err error
		if s.recent.seeded() {
			_, err = s.fillOnce(ctx, 0, s.foreign.Load())
		} else {
			_, err = s.seedHeads(ctx)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// after returns up to max events that follow position last, and true, when
// it holds the event right after last; false when the database must be
// read.
func (l *recentLog) after(last int64, max int) ([]eventstore.RecordedEvent, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.events) == 0 {
		return nil, false
	}
	first := int64(l.events[0].Position.Commit)
	end := int64(l.events[len(l.events)-1].Position.Commit)
	if last < first-1 || last >= end {
		return nil, false
	}
	i := int(last - first + 1)
	j := min(len(l.events), i+max)
	return l.events[i:j:j], true
}
