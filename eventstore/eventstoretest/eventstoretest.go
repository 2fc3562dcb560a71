// Package eventstoretest is the contract suite of the eventstore port. Every
// adapter's tests run it:
//
//	eventstoretest.Run(t, eventstoretest.Harness{New: ..., Reopen: ...})
//
// The suite works on a store that holds other data (a shared EventStoreDB
// server): every test writes only streams named after a random prefix of its
// own ("ct<32 hex digits>-<name>"), notes Head before it starts, and only
// considers its own streams when it reads the global log (filtering by
// prefix on the client side in ReadAll, with Filter.StreamPrefixes in
// SubscribeAll).
//
// Every wait has a deadline, so a bug fails a test instead of hanging it.
package eventstoretest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/linkd/linkd/eventstore"
)

// Harness gives the suite the adapter under test.
type Harness struct {
	// New returns a store for one test; the suite closes it (via t.Cleanup
	// or explicitly).
	New func(t testing.TB) eventstore.Store
	// Reopen closes s and opens the same data again. Nil when the adapter
	// cannot (the suite then skips reopen tests).
	Reopen func(t testing.TB, s eventstore.Store) eventstore.Store
}

// Deadlines. opTimeout bounds every test's operations together; waitTimeout
// bounds one wait for an event or a goroutine.
const (
	opTimeout   = 2 * time.Minute
	waitTimeout = 30 * time.Second
	// quiet is how long a subscription must stay silent to show that it
	// delivers nothing more.
	quiet = 300 * time.Millisecond
)

// Run runs the contract suite.
func Run(t *testing.T, h Harness) {
	if h.New == nil {
		t.Fatal("eventstoretest: Harness.New is nil")
	}
	tests := []struct {
		name string
		run  func(*testing.T, *env)
	}{
		{"AppendAndRead", testAppendAndRead},
		{"AppendKeepsNoBuffer", testAppendKeepsNoBuffer},
		{"ExpectedVersion", testExpectedVersion},
		{"ExpectedVersionNoEvents", testExpectedVersionNoEvents},
		{"AtomicMultiEventAppend", testAtomicMultiEvent},
		{"ReadStreamFromAndMax", testReadStreamFromAndMax},
		{"StreamNotFound", testStreamNotFound},
		{"StreamVersion", testStreamVersion},
		{"ReadAllOrder", testReadAllOrder},
		{"Head", testHead},
		{"OptimisticConcurrency", testOptimisticConcurrency},
		{"ConcurrentAppendsManyStreams", testConcurrentManyStreams},
		{"SubscribeCatchUpThenLive", testSubscribeCatchUpThenLive},
		{"SubscribeFromMiddle", testSubscribeFromMiddle},
		{"SubscribeFilter", testSubscribeFilter},
		{"RecvAfterClose", testRecvAfterClose},
		{"ContextCancellation", testContextCancellation},
		{"LargeAppend", testLargeAppend},
		{"LargeEvents", testLargeEvents},
		{"InvalidEvent", testInvalidEvent},
		{"Reopen", func(t *testing.T, e *env) { testReopen(t, e, h) }},
		{"ClosedStore", testClosedStore},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.run(t, setup(t, h))
		})
	}
}

// env is one test's store, stream prefix and starting point.
type env struct {
	t      *testing.T
	s      eventstore.Store
	ctx    context.Context
	prefix string
	head   eventstore.Position // Head before the test wrote anything
}

func setup(t *testing.T, h Harness) *env {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), opTimeout)
	t.Cleanup(cancel)
	e := &env{t: t, ctx: ctx, prefix: "ct" + strings.ReplaceAll(uuid.NewString(), "-", "")}
	e.s = h.New(t)
	t.Cleanup(func() {
		if err := e.s.Close(); err != nil {
			t.Errorf("close store: %v", err)
		}
	})
	head, err := e.s.Head(ctx)
	if err != nil {
		t.Fatalf("Head: %v", err)
	}
	e.head = head
	return e
}

// stream names one of the test's own streams.
func (e *env) stream(name string) string { return e.prefix + "-" + name }

// own reports whether a stream is the test's.
func (e *env) own(stream string) bool { return strings.HasPrefix(stream, e.prefix) }

func (e *env) filter() eventstore.Filter {
	return eventstore.Filter{StreamPrefixes: []string{e.prefix}}
}

// body is the JSON data of the events the suite writes.
type body struct {
	Stream string `json:"stream"`
	N      int    `json:"n"`
	Batch  int    `json:"batch,omitempty"`
	Index  int    `json:"index,omitempty"`
	Pad    string `json:"pad,omitempty"`
}

func event(typ string, b body) eventstore.EventData {
	data, err := json.Marshal(b)
	if err != nil {
		panic(err)
	}
	return eventstore.EventData{
		ID:       uuid.New(),
		Type:     typ,
		Data:     data,
		Metadata: []byte(fmt.Sprintf(`{"correlation":"c-%d"}`, b.N)),
	}
}

func events(stream string, first, n int) []eventstore.EventData {
	out := make([]eventstore.EventData, n)
	for i := range out {
		out[i] = event("Tested", body{Stream: stream, N: first + i, Index: i})
	}
	return out
}

func decode(t testing.TB, ev eventstore.RecordedEvent) body {
	t.Helper()
	var b body
	if err := json.Unmarshal(ev.Data, &b); err != nil {
		t.Fatalf("event %s of %s: data %q: %v", ev.ID, ev.Stream, ev.Data, err)
	}
	return b
}

func (e *env) append(stream string, expected eventstore.ExpectedVersion, evs ...eventstore.EventData) eventstore.AppendResult {
	e.t.Helper()
	res, err := e.s.Append(e.ctx, stream, expected, evs...)
	if err != nil {
		e.t.Fatalf("Append(%s, %s, %d events): %v", stream, expected, len(evs), err)
	}
	return res
}

func (e *env) readStream(stream string, from uint64, max int) []eventstore.RecordedEvent {
	e.t.Helper()
	evs, err := e.s.ReadStream(e.ctx, stream, from, max)
	if err != nil {
		e.t.Fatalf("ReadStream(%s, %d, %d): %v", stream, from, max, err)
	}
	return evs
}

func (e *env) version(stream string) (uint64, bool) {
	e.t.Helper()
	v, ok, err := e.s.StreamVersion(e.ctx, stream)
	if err != nil {
		e.t.Fatalf("StreamVersion(%s): %v", stream, err)
	}
	return v, ok
}

// readAllOwn pages through the global log after after, page events at a
// time, checking pages and positions, and returns the test's own events.
func (e *env) readAllOwn(after eventstore.Position, page int) []eventstore.RecordedEvent {
	e.t.Helper()
	var out []eventstore.RecordedEvent
	for {
		evs, err := e.s.ReadAll(e.ctx, after, page)
		if err != nil {
			e.t.Fatalf("ReadAll(%v, %d): %v", after, page, err)
		}
		if len(evs) > page {
			e.t.Fatalf("ReadAll(%v, %d) returned %d events", after, page, len(evs))
		}
		for _, ev := range evs {
			if !after.Less(ev.Position) {
				e.t.Fatalf("ReadAll: position %v of %s@%d does not come after %v", ev.Position, ev.Stream, ev.Version, after)
			}
			if strings.HasPrefix(ev.Stream, "$") {
				e.t.Fatalf("ReadAll returned an event of system stream %s", ev.Stream)
			}
			after = ev.Position
			if e.own(ev.Stream) {
				out = append(out, ev)
			}
		}
		if len(evs) < page {
			return out
		}
	}
}

// checkSame fails unless got and want are the same events (by ID, stream,
// version, type and data), in the same order.
func checkSame(t testing.TB, what string, got, want []eventstore.RecordedEvent) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d events, want %d", what, len(got), len(want))
	}
	for i := range got {
		g, w := got[i], want[i]
		if g.ID != w.ID || g.Stream != w.Stream || g.Version != w.Version || g.Type != w.Type ||
			g.Position != w.Position || !bytes.Equal(g.Data, w.Data) || !bytes.Equal(g.Metadata, w.Metadata) {
			t.Fatalf("%s: event %d is %s %s@%d %v, want %s %s@%d %v", what, i, g.ID, g.Stream, g.Version, g.Position, w.ID, w.Stream, w.Version, w.Position)
		}
	}
}

// checkIDs fails unless got holds the events of want, in order.
func checkIDs(t testing.TB, what string, got []eventstore.RecordedEvent, want []uuid.UUID) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d events, want %d", what, len(got), len(want))
	}
	for i := range got {
		if got[i].ID != want[i] {
			t.Fatalf("%s: event %d is %s (%s@%d), want %s", what, i, got[i].ID, got[i].Stream, got[i].Version, want[i])
		}
	}
}

func ids(evs []eventstore.EventData) []uuid.UUID {
	out := make([]uuid.UUID, len(evs))
	for i, ev := range evs {
		out[i] = ev.ID
	}
	return out
}

// recvN receives n events from sub, checking that positions increase.
func recvN(t testing.TB, sub eventstore.Subscription, n int, after eventstore.Position) []eventstore.RecordedEvent {
	t.Helper()
	out := make([]eventstore.RecordedEvent, 0, n)
	for len(out) < n {
		ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
		ev, err := sub.Recv(ctx)
		cancel()
		if err != nil {
			t.Fatalf("Recv after %d of %d events: %v", len(out), n, err)
		}
		if !after.Less(ev.Position) {
			t.Fatalf("Recv: position %v of %s@%d does not come after %v (event %d)", ev.Position, ev.Stream, ev.Version, after, len(out))
		}
		after = ev.Position
		out = append(out, ev)
	}
	return out
}

// recvNothing fails if sub delivers an event within quiet.
func recvNothing(t testing.TB, sub eventstore.Subscription) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), quiet)
	defer cancel()
	ev, err := sub.Recv(ctx)
	if err == nil {
		t.Fatalf("Recv delivered %s@%d (%v), want nothing", ev.Stream, ev.Version, ev.Position)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Recv: %v, want a deadline error", err)
	}
}

func (e *env) subscribe(after eventstore.Position, filter eventstore.Filter) eventstore.Subscription {
	e.t.Helper()
	sub, err := e.s.SubscribeAll(e.ctx, after, filter)
	if err != nil {
		e.t.Fatalf("SubscribeAll(%v): %v", after, err)
	}
	e.t.Cleanup(func() { sub.Close() })
	return sub
}

// wait waits for wg, failing after waitTimeout.
func wait(t testing.TB, wg *sync.WaitGroup, what string) {
	t.Helper()
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(waitTimeout):
		t.Fatalf("%s: still running after %v", what, waitTimeout)
	}
}
