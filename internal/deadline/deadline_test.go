package deadline

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"testing"
	"time"
)

// pair returns the server side (accepted through a Listener with tick) and
// the client side of a TCP connection.
func pair(t *testing.T, tick time.Duration, opts ...Option) (*Listener, net.Conn, net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := Wrap(ln, tick, opts...)
	t.Cleanup(func() { l.Close() })
	client, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	server, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { server.Close() })
	return l, server, client
}

// readErr reads one byte and reports the error and how long it took.
func readErr(c net.Conn) (error, time.Duration) {
	start := time.Now()
	_, err := c.Read(make([]byte, 1))
	return err, time.Since(start)
}

// TestReadDeadlineFires: a deadline that passes fails the pending read,
// not before the deadline and within a tick or so after it.
func TestReadDeadlineFires(t *testing.T) {
	_, server, client := pair(t, 10*time.Millisecond)
	// Were the deadline never applied, the read ends at EOF instead.
	time.AfterFunc(5*time.Second, func() { client.Close() })
	if err := server.SetReadDeadline(time.Now().Add(100 * time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	err, took := readErr(server)
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read: %v, want a passed deadline", err)
	}
	if took < 100*time.Millisecond || took > 5*time.Second {
		t.Fatalf("the deadline fired after %v, want 100 ms and a tick", took)
	}
}

// TestPassedDeadlineAtOnce: a deadline already passed when it is set
// interrupts a pending read at once, without waiting for a tick (here an
// hour): net/http aborts its background read this way.
func TestPassedDeadlineAtOnce(t *testing.T) {
	_, server, _ := pair(t, time.Hour)
	errc := make(chan error, 1)
	go func() { err, _ := readErr(server); errc <- err }()
	time.Sleep(20 * time.Millisecond)
	if err := server.SetReadDeadline(time.Unix(1, 0)); err != nil {
		t.Fatal(err)
	}
	wantPassed(t, errc, "the read")
	// Cleared, the connection reads again.
	if err := server.SetReadDeadline(time.Time{}); err != nil {
		t.Fatal(err)
	}
	if err := server.SetWriteDeadline(time.Unix(1, 0)); err != nil {
		t.Fatal(err)
	}
	if _, err := server.Write([]byte("x")); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("write past its deadline: %v, want a passed deadline", err)
	}
}

// TestDeadlineMovedLater: a deadline replaced before it passes never
// fires, and one that fired is cleared by the next.
func TestDeadlineMovedLater(t *testing.T) {
	_, server, client := pair(t, 5*time.Millisecond)
	server.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	server.SetReadDeadline(time.Now().Add(time.Hour))
	go func() {
		time.Sleep(300 * time.Millisecond)
		client.Write([]byte("a"))
	}()
	if err, took := readErr(server); err != nil {
		t.Fatalf("read after %v: %v, want the byte written at 300 ms", took, err)
	}
	server.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
	if err, _ := readErr(server); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read: %v, want a passed deadline", err)
	}
	server.SetReadDeadline(time.Now().Add(time.Hour))
	client.Write([]byte("b"))
	if err, _ := readErr(server); err != nil {
		t.Fatalf("read after the deadline moved on: %v", err)
	}
}

// TestCloseForgets: a closed connection leaves the registry; after Close
// the listener's goroutine ends with its last connection.
func TestCloseForgets(t *testing.T) {
	l, server, _ := pair(t, time.Millisecond)
	if n := l.open(); n != 1 {
		t.Fatalf("%d connections registered, want 1", n)
	}
	server.Close()
	server.Close()
	if n := l.open(); n != 0 {
		t.Fatalf("%d connections registered after Close, want 0", n)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l.Close()
	select {
	case <-l.done:
	case <-time.After(5 * time.Second):
		t.Fatal("the listener's goroutine still runs after Close, with no connection left")
	}
}

// TestDeadlinesAfterClose: the connections accepted before Close still
// get their deadlines (a graceful shutdown's drain), until the last one is
// closed.
func TestDeadlinesAfterClose(t *testing.T) {
	l, server, client := pair(t, 10*time.Millisecond)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	time.AfterFunc(5*time.Second, func() { client.Close() })
	server.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	if err, _ := readErr(server); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read after the listener closed: %v, want a passed deadline", err)
	}
	select {
	case <-l.done:
		t.Fatal("the listener's goroutine ended with a connection open")
	default:
	}
	server.Close()
	select {
	case <-l.done:
	case <-time.After(5 * time.Second):
		t.Fatal("the listener's goroutine still runs after its last connection closed")
	}
}

// TestSlowHeaders: behind net/http, ReadHeaderTimeout still closes a
// connection that never finishes its headers (slowloris), and a normal
// request is answered.
func TestSlowHeaders(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{
		Handler:           http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }),
		ReadHeaderTimeout: 200 * time.Millisecond,
		IdleTimeout:       time.Hour,
	}
	go srv.Serve(Wrap(ln, 10*time.Millisecond))
	defer srv.Close()

	resp, err := http.Get("http://" + ln.Addr().String() + "/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "ok" {
		t.Fatalf("body %q, want ok", body)
	}

	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	start := time.Now()
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n") // never the blank line
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, err = bufio.NewReader(c).ReadString('\n')
	took := time.Since(start)
	if err == nil {
		// net/http may answer 408 before closing; then the close follows.
		_, err = io.ReadAll(c)
	}
	if took < 200*time.Millisecond || took > 5*time.Second {
		t.Fatalf("the slow connection ended after %v (%v), want 200 ms and a tick", took, err)
	}
}

// wantPassed waits for what's read to fail with a passed deadline, for 5 s
// at most.
func wantPassed(t *testing.T, errc <-chan error, what string) {
	t.Helper()
	select {
	case err := <-errc:
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("%s: %v, want a passed deadline", what, err)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("%s did not end with a passed deadline within 5 s", what)
	}
}

// heldRead starts a one-byte read of c; its result arrives on the channel.
func heldRead(c net.Conn) <-chan error {
	errc := make(chan error, 1)
	go func() {
		b := make([]byte, 1)
		n, err := c.Read(b)
		if err == nil && (n != 1 || b[0] != 'x') {
			err = fmt.Errorf("read %q, want x", b[:n])
		}
		errc <- err
	}()
	return errc
}

// TestHeldReadInterrupted: with HoldBackgroundReads, a one-byte read waits
// on the connection, not on the socket: a byte the client sent stays
// unread while it waits, and a passed deadline (net/http's interruption)
// ends it at once without taking that byte.
func TestHeldReadInterrupted(t *testing.T) {
	_, server, client := pair(t, time.Hour, HoldBackgroundReads())
	if _, err := client.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	errc := heldRead(server)
	select {
	case err := <-errc:
		t.Fatalf("the one-byte read ended (%v) while held", err)
	case <-time.After(100 * time.Millisecond):
	}
	if err := server.SetReadDeadline(time.Unix(1, 0)); err != nil {
		t.Fatal(err)
	}
	wantPassed(t, errc, "the held read")
	// Not held while the deadline stays passed: it fails at once.
	wantPassed(t, heldRead(server), "a read past its deadline")
	// Cleared, the next read is held again; the tick is an hour, so only
	// Close ends it, with the byte still unread.
	server.SetReadDeadline(time.Time{})
	errc = heldRead(server)
	time.Sleep(50 * time.Millisecond)
	server.Close()
	select {
	case err := <-errc:
		if err == nil {
			t.Fatal("the held read took the byte after Close")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not end the held read")
	}
}

// TestHeldReadReleasedByTick: a one-byte read still wanted at the next tick
// goes on to the socket.
func TestHeldReadReleasedByTick(t *testing.T) {
	_, server, client := pair(t, 20*time.Millisecond, HoldBackgroundReads())
	errc := heldRead(server)
	time.Sleep(100 * time.Millisecond)
	if _, err := client.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-errc:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the tick did not release the held read")
	}
	// Longer reads are never held.
	client.Write([]byte("yz"))
	server.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, err := io.ReadFull(server, make([]byte, 2)); n != 2 || err != nil {
		t.Fatalf("read %d bytes: %v", n, err)
	}
}

// heldServer serves, behind a Listener with tick that holds background
// reads (ConnContext set): /slow, which waits up to 10 s for its context to
// be canceled and sends how long that took on canceled; /quick, which calls
// Quick; and any other path. All but /slow answer their path after 1 ms,
// time for the background read to run. It returns a connection to it.
func heldServer(t *testing.T, tick time.Duration, canceled chan<- time.Duration) (*http.Server, net.Conn, *bufio.Reader) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{
		ConnContext: ConnContext,
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			switch r.URL.Path {
			case "/slow":
				start := time.Now()
				select {
				case <-r.Context().Done():
					canceled <- time.Since(start)
				case <-time.After(10 * time.Second):
				}
				return
			case "/quick":
				Quick(r.Context())
			}
			time.Sleep(time.Millisecond)
			io.WriteString(w, r.URL.Path)
		}),
	}
	go srv.Serve(Wrap(ln, tick, HoldBackgroundReads()))
	t.Cleanup(func() { srv.Close() })
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return srv, c, bufio.NewReader(c)
}

// wantBody reads a response from br and checks its body.
func wantBody(t *testing.T, br *bufio.Reader, want string) {
	t.Helper()
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("%s: %v", want, err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != want {
		t.Fatalf("body %q, want %q", body, want)
	}
}

// TestHeldReadsBehindHTTP: behind net/http, keep-alive requests are
// answered one after another (each background read interrupted), and a
// client that goes away during a slow handler still cancels its request's
// context, within a tick or two.
func TestHeldReadsBehindHTTP(t *testing.T) {
	canceled := make(chan time.Duration, 1)
	_, c, br := heldServer(t, 50*time.Millisecond, canceled)
	for range 20 {
		if _, err := io.WriteString(c, "GET /a HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		wantBody(t, br, "/a")
	}

	io.WriteString(c, "GET /slow HTTP/1.1\r\nHost: x\r\n\r\n")
	time.Sleep(20 * time.Millisecond)
	c.Close()
	select {
	case took := <-canceled:
		if took > 5*time.Second {
			t.Fatalf("the context was canceled %v after the client left", took)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the request's context was not canceled when the client went away")
	}
}

// TestQuickRead: after Quick on a request's context (ConnContext), the
// connection's next one-byte read ends at once with nothing read, even with
// a byte waiting; the one after is held again.
func TestQuickRead(t *testing.T) {
	_, server, client := pair(t, time.Hour, HoldBackgroundReads())
	ctx := ConnContext(context.Background(), httperrLike{server})
	client.Write([]byte("x"))
	Quick(ctx)
	quick := make(chan error, 1)
	go func() {
		n, err := server.Read(make([]byte, 1))
		if err == nil && n != 0 {
			err = fmt.Errorf("read %d bytes", n)
		}
		quick <- err
	}()
	select {
	case err := <-quick:
		if err != nil {
			t.Fatalf("quick read: %v; want nothing read, no error", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the quick read was held")
	}
	errc := heldRead(server)
	select {
	case err := <-errc:
		t.Fatalf("the read after the quick one ended (%v): not held", err)
	case <-time.After(100 * time.Millisecond):
	}
	server.SetReadDeadline(time.Unix(1, 0))
	if err := <-errc; !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("held read: %v, want a passed deadline", err)
	}
	// The byte was never taken; a longer read, never held, takes it.
	server.SetReadDeadline(time.Time{})
	b := make([]byte, 2)
	if n, err := server.Read(b); n != 1 || b[0] != 'x' || err != nil {
		t.Fatalf("read %q, %v; want x", b[:n], err)
	}
}

// httperrLike wraps a connection as internal/httperr does.
type httperrLike struct{ net.Conn }

func (c httperrLike) NetConn() net.Conn { return c.Conn }

// TestQuickBehindHTTP: behind net/http with ConnContext, requests after a
// quick one are read whole (a pipelining client sends them while it is
// handled), and Quick is forgotten with its request: a later handler's
// background read is held, and its client going away is still noticed.
func TestQuickBehindHTTP(t *testing.T) {
	canceled := make(chan time.Duration, 1)
	// A tick of an hour: only the interruption, Close or Quick ends a held
	// read.
	srv, c, br := heldServer(t, time.Hour, canceled)
	for range 3 {
		// Two requests in one write: the second waits on the socket while
		// the first is handled.
		if _, err := io.WriteString(c, "GET /quick HTTP/1.1\r\nHost: x\r\n\r\nGET /other HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		wantBody(t, br, "/quick")
		wantBody(t, br, "/other")
	}
	io.WriteString(c, "GET /quick HTTP/1.1\r\nHost: x\r\n\r\n")
	wantBody(t, br, "/quick")
	io.WriteString(c, "GET /slow HTTP/1.1\r\nHost: x\r\n\r\n")
	time.Sleep(20 * time.Millisecond)
	c.Close()
	select {
	case <-canceled:
		t.Fatal("canceled although the tick is an hour: the slow request's background read was not held")
	case <-time.After(300 * time.Millisecond):
	}
	srv.Close() // closes the connection: the held read ends, the context is canceled
	select {
	case <-canceled:
	case <-time.After(5 * time.Second):
		t.Fatal("the slow request's context was not canceled")
	}
}
