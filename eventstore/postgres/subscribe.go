package postgres

import (
	"context"
	"errors"
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

// subscription reads the log after its position in a goroutine of its
// own, into a buffered channel that Recv takes from.
type subscription struct {
	ch     chan eventstore.RecordedEvent
	end    error         // why the goroutine stopped; set before ch is closed
	stop   chan struct{} // closed by Close
	once   sync.Once
	closed atomic.Bool
	cancel context.CancelFunc
}

// SubscribeAll implements eventstore.Store.
func (s *Store) SubscribeAll(ctx context.Context, after eventstore.Position, filter eventstore.Filter) (eventstore.Subscription, error) {
	if err := s.enter(ctx); err != nil {
		return nil, err
	}
	defer s.exit()
	sub := &subscription{ch: make(chan eventstore.RecordedEvent, subPage), stop: make(chan struct{})}
	sctx, cancel := context.WithCancel(ctx)
	sub.cancel = cancel
	s.bg.Add(1)
	go func() {
		defer s.bg.Done()
		defer cancel()
		sub.end = s.follow(sctx, sub, pos(after), filter)
		close(sub.ch)
	}()
	return sub, nil
}

// follow delivers the events after position last that filter keeps until
// ctx ends, the subscription or the store closes. Failed reads (a server
// restarting) are retried from the last position delivered, so nothing is
// lost or repeated.
func (s *Store) follow(ctx context.Context, sub *subscription, last int64, filter eventstore.Filter) error {
	var prefixes []string
	if len(filter.StreamPrefixes) > 0 {
		prefixes = filter.StreamPrefixes
	}
	backoff := 50 * time.Millisecond
	poll := time.NewTimer(s.opts.PollInterval)
	defer poll.Stop()
	for {
		woken := s.wake.wait() // before the read: a commit after it wakes us
		evs, mem := s.recent.after(last, subPage)
		var err error
		more := false
		switch {
		case mem:
		case s.recent.caughtUp(last):
			// Up to date with memory: the commits of other processes
			// are read once for every subscription of the store (fill),
			// when there is a sign of one. Without a sign the
			// subscription waits for one rather than read the table
			// itself: with many instances, every subscription reading
			// after every wake was half of the log's reads, most of them
			// finding nothing.
			if more, err = s.fill(ctx, last); err == nil {
				evs, _ = s.recent.after(last, subPage)
			}
		default: // behind what memory holds
			s.subReads.Add(1)
			evs, err = s.readAll(ctx, last, subPage, prefixes)
		}
		switch {
		case ctx.Err() != nil || s.ctx.Err() != nil:
			return s.ended(ctx, sub)
		case err != nil:
			s.log.Warn("postgres: subscription read failed; retrying", "err", err, "after", last, "retry_in", backoff)
			select {
			case <-time.After(backoff):
			case <-ctx.Done():
			case <-s.ctx.Done():
			case <-sub.stop:
			}
			backoff = min(2*backoff, 2*time.Second)
			continue
		}
		backoff = 50 * time.Millisecond
		// Read after the events: a relaxed commit they hold was counted
		// before it could be seen (relaxed.go).
		bound := s.readBound()
		full := len(evs) == subPage
		for i := range evs {
			if int64(evs[i].Position.Commit) > bound {
				// Not known flushed: the flusher wakes us once it is.
				evs, full = evs[:i], false
				break
			}
		}
		for _, ev := range evs {
			if !filter.Match(ev.Stream) {
				last = int64(ev.Position.Commit)
				continue
			}
			select {
			case sub.ch <- ev:
				last = int64(ev.Position.Commit)
			case <-ctx.Done():
				return s.ended(ctx, sub)
			case <-s.ctx.Done():
				return s.ended(ctx, sub)
			case <-sub.stop:
				return eventstore.ErrClosed
			}
		}
		if full || more {
			continue
		}
		// Caught up: with the store's last commit (from memory), or with
		// the table. The next commit wakes the subscription.
		poll.Reset(s.opts.PollInterval)
		select {
		case <-woken:
		case <-poll.C:
		case <-ctx.Done():
			return s.ended(ctx, sub)
		case <-s.ctx.Done():
			return eventstore.ErrClosed
		case <-sub.stop:
			return eventstore.ErrClosed
		}
	}
}

// ended says why a subscription stopped: closed (itself or the store), or
// its context's error.
func (s *Store) ended(ctx context.Context, sub *subscription) error {
	if sub.closed.Load() || s.ctx.Err() != nil {
		return eventstore.ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return eventstore.ErrClosed
}

// Recv implements eventstore.Subscription.
func (sub *subscription) Recv(ctx context.Context) (eventstore.RecordedEvent, error) {
	if sub.closed.Load() {
		return eventstore.RecordedEvent{}, eventstore.ErrClosed
	}
	select {
	case ev, ok := <-sub.ch:
		return sub.got(ev, ok)
	default:
	}
	if err := ctx.Err(); err != nil {
		return eventstore.RecordedEvent{}, err
	}
	select {
	case ev, ok := <-sub.ch:
		return sub.got(ev, ok)
	case <-ctx.Done():
		return eventstore.RecordedEvent{}, ctx.Err()
	case <-sub.stop:
		return eventstore.RecordedEvent{}, eventstore.ErrClosed
	}
}

func (sub *subscription) got(ev eventstore.RecordedEvent, ok bool) (eventstore.RecordedEvent, error) {
	if ok {
		return ev, nil
	}
	err := sub.end
	if err == nil || errors.Is(err, eventstore.ErrClosed) {
		err = eventstore.ErrClosed
	}
	return eventstore.RecordedEvent{}, err
}

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
type recentLog struct {
	mu     sync.Mutex
	events []eventstore.RecordedEvent // consecutive positions
}

// recentKeep is how many events recentLog keeps, at least.
const recentKeep = 4096

// add appends evs where they follow the log's last event; false when
// they leave a gap after it (another process committed between, which a
// fill reads with them).
func (l *recentLog) add(evs []eventstore.RecordedEvent) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if n := len(l.events); n > 0 {
		end := l.events[n-1].Position.Commit
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
	return true
}

// caughtUp reports whether a subscription at last has every event the log
// holds in memory (or the log holds none): what follows is in the table
// only.
func (l *recentLog) caughtUp(last int64) bool {
	end, ok := l.end()
	return !ok || last >= end
}

// end is the position of the last event the log holds, false when it
// holds none.
func (l *recentLog) end() (int64, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.events) == 0 {
		return 0, false
	}
	return int64(l.events[len(l.events)-1].Position.Commit), true
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
// sign lost all the same): a store alone on the database, appending, no
// longer reads the table after each of its commits (a quarter of the
// redirect path's PostgreSQL queries).
func (s *Store) fill(ctx context.Context, last int64) (more bool, err error) {
	s.fillMu.Lock()
	defer s.fillMu.Unlock()
	if !s.recent.caughtUp(last) {
		return false, nil // another fill brought it
	}
	f := s.foreign.Load()
	if f == s.filled && time.Since(s.lastFill) < s.opts.PollInterval {
		return false, nil
	}
	from := last
	if end, ok := s.recent.end(); ok {
		from = end
	}
	began := time.Now()
	s.fillReads.Add(1)
	evs, err := s.readAll(ctx, from, subPage, nil)
	if err != nil {
		return false, err
	}
	more = len(evs) == subPage
	if more {
		s.lastFill = time.Time{} // the next fill reads on, sign or not
	} else {
		s.filled, s.lastFill = f, began
	}
	s.recent.add(evs) // follows the log's end: no gap
	if len(evs) > 0 {
		// Every subscription up to date takes them from memory: their
		// notifications, should they come after, announce nothing.
		s.wake.broadcast()
	}
	return more, nil
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
