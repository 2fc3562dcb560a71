// Package deadline keeps the read and write deadlines of a listener's
// connections coarsely, for servers whose timeouts are seconds long.
//
// Go's HTTP server sets a connection's deadlines four or five times per
// request (ReadHeaderTimeout, ReadTimeout, WriteTimeout, IdleTimeout, and
// clearing them), and each call moves a runtime timer: 1.9-3.4% of linkd's
// CPU under the redirect load (ADR 0014), for
// timeouts of 10 to 120 seconds that almost never fire. Listener's
// connections only note the deadline they are given (a mutex and two
// words); one goroutine per listener visits every connection each tick and
// applies the deadlines that have passed, which fails the connection's
// pending and later I/O as a passed deadline does. A deadline that had
// passed by the last tick when it is set (net/http's way to interrupt a
// read) is applied at once.
//
// So a timeout fires up to one tick late, never early, and a connection
// costs one map entry while it is open.
//
// # Background reads
//
// While a handler runs, net/http reads one byte in a goroutine of its own,
// to notice a client that goes away, and interrupts that read with a
// passed deadline when the handler is done. A handler that waits for
// anything (linkd's redirect waits for its click's write) lets that
// goroutine run: a read system call that finds nothing, the poller armed,
// then woken by the interruption, for every request (holding it, and
// ending it at once for quick requests, saved 5-11% of the CPU of a
// redirect: ADR 0014). With
// HoldBackgroundReads a one-byte read first waits on the connection, and
// reaches the socket only if it is still wanted at the next tick: the
// interruption (a passed read deadline), Close, or the tick releases it.
// A client that goes away during a handler of a few milliseconds is then
// noticed when its answer is written, as with any handler that does not
// wait; during a longer one, within a tick.
//
// A handler that always answers promptly (a redirect) can say so with
// Quick: its background read then ends at once, found nothing, and is
// neither held nor interrupted. That needs the server's ConnContext set to
// this package's ConnContext.
package deadline

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// shards spreads the connections' registry over this many locks.
const shards = 16

// Listener wraps a net.Listener; see the package comment.
type Listener struct {
	net.Listener
	tick time.Duration
	reg  [shards]struct {
		mu    sync.Mutex
		conns map[*conn]struct{}
	}
	next atomic.Uint32 // shard of the next connection
	// now is the time of the last tick (Unix nanoseconds): a deadline at
	// or before it has passed, without a clock read per call (a clock
	// read was half of a call's cost here).
	now       atomic.Int64
	hold      bool // HoldBackgroundReads
	stop      chan struct{}
	done      chan struct{}
	closeOnce sync.Once
}

// Option changes a Listener.
type Option func(*Listener)

// HoldBackgroundReads makes one-byte reads wait on their connection (see
// the package comment): for a listener of net/http servers, whose only
// one-byte reads are their background reads.
func HoldBackgroundReads() Option { return func(l *Listener) { l.hold = true } }

// Wrap returns a Listener over ln whose connections' deadlines are applied
// within tick of passing. Close stops its goroutine.
func Wrap(ln net.Listener, tick time.Duration, opts ...Option) *Listener {
	l := &Listener{Listener: ln, tick: tick, stop: make(chan struct{}), done: make(chan struct{})}
	for _, o := range opts {
		o(l)
	}
	l.now.Store(time.Now().UnixNano())
	for i := range l.reg {
		l.reg[i].conns = make(map[*conn]struct{})
	}
	go l.run()
	return l
}

// Accept registers the connection it returns.
func (l *Listener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	wc := &conn{Conn: c, l: l, shard: l.next.Add(1) % shards}
	sh := &l.reg[wc.shard]
	sh.mu.Lock()
	sh.conns[wc] = struct{}{}
	sh.mu.Unlock()
	return wc, nil
}

// Close closes the listener. Deadlines are still applied to the
// connections already accepted until the last one is closed (a server's
// graceful shutdown lets them finish), then its goroutine ends.
func (l *Listener) Close() error {
	err := l.Listener.Close()
	l.closeOnce.Do(func() { close(l.stop) })
	return err
}

func (l *Listener) run() {
	defer close(l.done)
	t := time.NewTicker(l.tick)
	defer t.Stop()
	stop, closed := l.stop, false
	for {
		select {
		case <-stop:
			stop, closed = nil, true
		case now := <-t.C:
			l.now.Store(now.UnixNano())
			l.expire(now)
		}
		if closed && l.open() == 0 {
			return
		}
	}
}

// open counts the registered connections.
func (l *Listener) open() int {
	n := 0
	for i := range l.reg {
		sh := &l.reg[i]
		sh.mu.Lock()
		n += len(sh.conns)
		sh.mu.Unlock()
	}
	return n
}

// expire applies every deadline that has passed at now.
func (l *Listener) expire(now time.Time) {
	n := now.UnixNano()
	var due []*conn
	for i := range l.reg {
		sh := &l.reg[i]
		// The shard's connections are copied out, so that applying a
		// deadline (a system call) holds no shard lock against Accept
		// and Close.
		sh.mu.Lock()
		for c := range sh.conns {
			due = append(due, c)
		}
		sh.mu.Unlock()
		for _, c := range due {
			c.expire(n)
		}
		due = due[:0]
	}
}

// conn notes its deadlines; the listener's goroutine applies them.
type conn struct {
	net.Conn
	l     *Listener
	shard uint32

	mu sync.Mutex
	// read and write are the deadlines asked for, in Unix nanoseconds (0:
	// none); applied* report that the underlying connection carries one
	// (a passed deadline), to be cleared when another is asked for.
	read, write               int64
	appliedRead, appliedWrite bool
	closeOnce                 sync.Once

	// A held one-byte read: held while it waits, since the tick of heldAt
	// (Listener.now); released wakes it (cond is on mu, made by the first
	// hold); closed once Close began.
	held     bool
	heldAt   int64
	released bool
	closed   bool
	cond     *sync.Cond

	// quick: the request being handled is answered promptly (Quick); its
	// background read ends at once.
	quick atomic.Bool
}

type connKey struct{}

// ConnContext is for http.Server's ConnContext: it lets Quick find the
// connection of a request's context. c is a connection of a Listener, or
// one that wraps it and has a NetConn method returning what it wraps, as
// tls.Conn does.
func ConnContext(ctx context.Context, c net.Conn) context.Context {
	for {
		if dc, ok := c.(*conn); ok {
			return context.WithValue(ctx, connKey{}, dc)
		}
		w, ok := c.(interface{ NetConn() net.Conn })
		if !ok {
			return ctx
		}
		c = w.NetConn()
	}
}

// Quick tells the connection of a request's context (ConnContext) that the
// request will be answered promptly: net/http's background read, there to
// notice a client that goes away while its handler runs, is not needed for
// it and ends at once. Without HoldBackgroundReads, or with a context of
// no such connection, it does nothing.
func Quick(ctx context.Context) {
	if c, ok := ctx.Value(connKey{}).(*conn); ok && c.l.hold {
		c.quick.Store(true)
	}
}

// Read reads from the connection; a one-byte read on a listener that holds
// background reads waits first (the package comment).
func (c *conn) Read(p []byte) (int, error) {
	if len(p) == 1 && c.l.hold {
		if c.quick.Swap(false) {
			// A quick request's background read: nothing read, no error;
			// net/http ends it without waiting for the interruption.
			return 0, nil
		}
		c.waitHeld()
	} else if c.quick.Load() {
		c.quick.Store(false) // a request with a body: read before its background read
	}
	return c.Conn.Read(p)
}

// waitHeld waits until the read is released: a passed read deadline,
// Close, or the next tick. A read whose deadline has passed already is not
// held: it fails at once.
func (c *conn) waitHeld() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed || c.held || c.appliedRead || (c.read != 0 && c.read <= c.l.now.Load()) {
		return
	}
	if c.cond == nil {
		c.cond = sync.NewCond(&c.mu)
	}
	c.held, c.released, c.heldAt = true, false, c.l.now.Load()
	for !c.released {
		c.cond.Wait()
	}
	c.held = false
}

// release wakes the held read, if any. Callers hold mu.
func (c *conn) release() {
	if c.held && !c.released {
		c.released = true
		c.cond.Signal()
	}
}

func (c *conn) SetDeadline(t time.Time) error {
	if err := c.SetReadDeadline(t); err != nil {
		return err
	}
	return c.SetWriteDeadline(t)
}

func (c *conn) SetReadDeadline(t time.Time) error {
	return c.set(t, &c.read, &c.appliedRead, c.Conn.SetReadDeadline)
}

func (c *conn) SetWriteDeadline(t time.Time) error {
	return c.set(t, &c.write, &c.appliedWrite, c.Conn.SetWriteDeadline)
}

func (c *conn) set(t time.Time, want *int64, applied *bool, apply func(time.Time) error) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !t.IsZero() && t.UnixNano() <= c.l.now.Load() {
		// Passed already (net/http's way to interrupt a read, with a
		// time long ago): applied at once, not at the next tick. One
		// that passed since the last tick waits for the next.
		*want, *applied = t.UnixNano(), true
		err := apply(t)
		if want == &c.read {
			c.quick.Store(false) // the request is over
			c.release()          // after apply: the read fails at once
		}
		return err
	}
	*want = 0
	if !t.IsZero() {
		*want = t.UnixNano()
	}
	if *applied {
		*applied = false
		return apply(time.Time{})
	}
	return nil
}

// expire applies the connection's deadlines that have passed at now.
func (c *conn) expire(now int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.read != 0 && c.read <= now && !c.appliedRead {
		c.appliedRead = true
		c.Conn.SetReadDeadline(time.Unix(0, c.read))
	}
	if c.write != 0 && c.write <= now && !c.appliedWrite {
		c.appliedWrite = true
		c.Conn.SetWriteDeadline(time.Unix(0, c.write))
	}
	if c.held && c.heldAt < c.l.now.Load() {
		// Still wanted at a tick after it began: a handler that takes
		// time, whose client may go away. The read goes on to the socket,
		// under the read deadline applied above if it passed.
		c.release()
	}
}

// Close closes the connection and forgets it.
func (c *conn) Close() error {
	c.closeOnce.Do(func() {
		sh := &c.l.reg[c.shard]
		sh.mu.Lock()
		delete(sh.conns, c)
		sh.mu.Unlock()
	})
	err := c.Conn.Close()
	// Only now wake a held read: it goes on to a closed socket, and takes
	// nothing that was waiting there.
	c.mu.Lock()
	c.closed = true
	c.release()
	c.mu.Unlock()
	return err
}
