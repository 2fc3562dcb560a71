// Package deadline keeps the read and write deadlines of a listener's
// connections coarsely, for servers whose timeouts are seconds long.
//
// Go's HTTP server sets a connection's deadlines four or five times per
// request (ReadHeaderTimeout, ReadTimeout, WriteTimeout, IdleTimeout, and
// clearing them), and each call moves a runtime timer: 1.9-3.4% of linkd's
// CPU under the redirect load (docs/benchmarks.md, "Stop 20", step 2), for
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
package deadline

import (
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
	stop      chan struct{}
	done      chan struct{}
	closeOnce sync.Once
}

// Wrap returns a Listener over ln whose connections' deadlines are applied
// within tick of passing. Close stops its goroutine.
func Wrap(ln net.Listener, tick time.Duration) *Listener {
	l := &Listener{Listener: ln, tick: tick, stop: make(chan struct{}), done: make(chan struct{})}
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
		return apply(t)
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
}

// Close closes the connection and forgets it.
func (c *conn) Close() error {
	c.closeOnce.Do(func() {
		sh := &c.l.reg[c.shard]
		sh.mu.Lock()
		delete(sh.conns, c)
		sh.mu.Unlock()
	})
	return c.Conn.Close()
}
