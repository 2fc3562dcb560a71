package esdb

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/EventStore/EventStore-Client-Go/v4/esdb"

	"github.com/linkd/linkd/eventstore"
)

// These tests run the adapter against fakeServer: they check the adapter's
// own logic (mapping, skipping, paging, the subscription's goroutine) over
// the real client and wire format, not the server's behaviour.

func openFake(t *testing.T) *Store {
	t.Helper()
	s, err := Open(t.Context(), StartFakeServer(t), Options{ConnectTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func ev(typ string) eventstore.EventData {
	return eventstore.EventData{Type: typ, Data: []byte(`{"n":1}`)}
}

func TestFakeAppendAndRead(t *testing.T) {
	t.Parallel()
	s, ctx := openFake(t), t.Context()

	res, err := s.Append(ctx, "link-1", eventstore.NoStream(), ev("A"), ev("B"))
	if err != nil {
		t.Fatal(err)
	}
	if res.NextExpectedVersion != 1 || res.Position.IsZero() {
		t.Errorf("append result %+v", res)
	}

	wrong := []struct {
		name     string
		expected eventstore.ExpectedVersion
		stream   string
	}{
		{"no stream on an existing stream", eventstore.NoStream(), "link-1"},
		{"exact, behind", eventstore.Exact(0), "link-1"},
		{"exact on a missing stream", eventstore.Exact(0), "link-2"},
		{"stream exists on a missing stream", eventstore.StreamExists(), "link-2"},
	}
	for _, tt := range wrong {
		_, err := s.Append(ctx, tt.stream, tt.expected, ev("C"))
		if !errors.Is(err, eventstore.ErrWrongExpectedVersion) {
			t.Errorf("%s: %v, want ErrWrongExpectedVersion", tt.name, err)
		}
		var leaked *esdb.Error
		if errors.As(err, &leaked) {
			t.Errorf("%s: driver error leaks: %v", tt.name, err)
		}
	}

	if _, err := s.Append(ctx, "link-1", eventstore.Exact(1), ev("C")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Append(ctx, "link-1", eventstore.Any(), ev("D")); err != nil {
		t.Fatal(err)
	}
	got, err := s.ReadStream(ctx, "link-1", 1, 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Type != "B" || got[0].Version != 1 || got[1].Type != "C" {
		t.Errorf("ReadStream(1, 2) = %+v", got)
	}
	if got[0].Stream != "link-1" || string(got[0].Data) != `{"n":1}` || got[0].ID.String() == "" || got[0].Time.Location() != time.UTC {
		t.Errorf("event %+v", got[0])
	}
	if _, err := s.ReadStream(ctx, "link-2", 0, 10); !errors.Is(err, eventstore.ErrStreamNotFound) {
		t.Errorf("ReadStream of a missing stream: %v", err)
	}
	if v, ok, err := s.StreamVersion(ctx, "link-1"); v != 3 || !ok || err != nil {
		t.Errorf("StreamVersion = %d, %v, %v", v, ok, err)
	}
	if v, ok, err := s.StreamVersion(ctx, "link-2"); v != 0 || ok || err != nil {
		t.Errorf("StreamVersion of a missing stream = %d, %v, %v", v, ok, err)
	}

	// Appending nothing only checks.
	if r, err := s.Append(ctx, "link-1", eventstore.Exact(3)); err != nil || r.NextExpectedVersion != 3 {
		t.Errorf("empty append, right version: %+v, %v", r, err)
	}
	if _, err := s.Append(ctx, "link-1", eventstore.Exact(2)); !errors.Is(err, eventstore.ErrWrongExpectedVersion) {
		t.Errorf("empty append, wrong version: %v", err)
	}
	if _, err := s.Append(ctx, "link-2", eventstore.NoStream()); err != nil {
		t.Errorf("empty append, no stream: %v", err)
	}
	if _, err := s.Append(ctx, "$link-3", eventstore.Any(), ev("A")); !errors.Is(err, eventstore.ErrInvalidEvent) {
		t.Errorf("append to a system stream: %v", err)
	}
}

func TestFakeReadAllAndHead(t *testing.T) {
	t.Parallel()
	s, ctx := openFake(t), t.Context()

	if h, err := s.Head(ctx); err != nil || !h.IsZero() {
		t.Errorf("Head of an empty log = %v, %v", h, err)
	}
	var last eventstore.AppendResult
	for i := range 30 {
		var err error
		last, err = s.Append(ctx, fmt.Sprintf("link-%d", i%4), eventstore.Any(), ev(fmt.Sprint(i)))
		if err != nil {
			t.Fatal(err)
		}
	}
	all, err := s.ReadAll(ctx, eventstore.Start, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 30 || all[29].Position != last.Position {
		t.Fatalf("ReadAll: %d events, last at %v; want 30, last at %v", len(all), all[len(all)-1].Position, last.Position)
	}
	for i, e := range all {
		if e.Type != fmt.Sprint(i) {
			t.Fatalf("event %d is %q", i, e.Type)
		}
	}

	// Small pages: each event exactly once, in order, none at `after`.
	var paged []eventstore.RecordedEvent
	for pos, i := eventstore.Start, 0; ; i++ {
		if i > 10 {
			t.Fatal("paging does not end")
		}
		page, err := s.ReadAll(ctx, pos, 7)
		if err != nil {
			t.Fatal(err)
		}
		if len(page) == 0 {
			break
		}
		if len(page) > 7 {
			t.Fatalf("page of %d events", len(page))
		}
		paged = append(paged, page...)
		pos = page[len(page)-1].Position
	}
	if len(paged) != 30 || paged[0].Type != "0" || paged[29].Type != "29" {
		t.Errorf("paged read got %d events", len(paged))
	}
	if h, err := s.Head(ctx); err != nil || h != last.Position {
		t.Errorf("Head = %v, %v; want %v", h, err, last.Position)
	}
	if rest, err := s.ReadAll(ctx, last.Position, 10); err != nil || len(rest) != 0 {
		t.Errorf("ReadAll after the head = %d events, %v", len(rest), err)
	}
}

// Many system events at the end of the log: Head and ReadAll page past them.
func TestFakeSystemEventsAtTheEnd(t *testing.T) {
	t.Parallel()
	f, url := startFake(t)
	s, err := Open(t.Context(), url, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	ctx := t.Context()

	f.addSystem(3 * readPage)
	if h, err := s.Head(ctx); err != nil || !h.IsZero() {
		t.Errorf("Head with only system events = %v, %v", h, err)
	}
	if got, err := s.ReadAll(ctx, eventstore.Start, 5); err != nil || len(got) != 0 {
		t.Errorf("ReadAll with only system events = %d events, %v", len(got), err)
	}
	res, err := s.Append(ctx, "link-1", eventstore.Any(), ev("A"))
	if err != nil {
		t.Fatal(err)
	}
	f.addSystem(2*readPage + 7)
	if h, err := s.Head(ctx); err != nil || h != res.Position {
		t.Errorf("Head = %v, %v; want %v", h, err, res.Position)
	}
	if got, err := s.ReadAll(ctx, eventstore.Start, 5); err != nil || len(got) != 1 || got[0].Position != res.Position {
		t.Errorf("ReadAll = %+v, %v", got, err)
	}
}

func TestFakeSubscribeAll(t *testing.T) {
	t.Parallel()
	s, ctx := openFake(t), t.Context()

	first, err := s.Append(ctx, "link-1", eventstore.Any(), ev("1"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Append(ctx, "click-1", eventstore.Any(), ev("2")); err != nil {
		t.Fatal(err)
	}

	all, err := s.SubscribeAll(ctx, eventstore.Start, eventstore.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	links, err := s.SubscribeAll(ctx, first.Position, eventstore.Filter{StreamPrefixes: []string{"link-", "$"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Append(ctx, "link-1", eventstore.Any(), ev("3")); err != nil {
		t.Fatal(err)
	}

	recv := func(sub eventstore.Subscription) string {
		t.Helper()
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		e, err := sub.Recv(rctx)
		if err != nil {
			t.Fatal(err)
		}
		return e.Type
	}
	for _, want := range []string{"1", "2", "3"} {
		if got := recv(all); got != want {
			t.Errorf("all: got %q, want %q", got, want)
		}
	}
	if got := recv(links); got != "3" {
		t.Errorf("links after the first: got %q, want 3", got)
	}

	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if _, err := links.Recv(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Recv with nothing to get: %v", err)
	}
	if err := links.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := links.Recv(ctx); !errors.Is(err, eventstore.ErrClosed) {
		t.Errorf("Recv after Close: %v", err)
	}

	s.Close()
	if _, err := all.Recv(ctx); !errors.Is(err, eventstore.ErrClosed) {
		t.Errorf("Recv after the store's Close: %v", err)
	}
	all.Close()
}

func TestOpenUnreachable(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now

	start := time.Now()
	_, err = Open(t.Context(), "kurrentdb://"+addr+"?tls=false", Options{ConnectTimeout: 2 * time.Second})
	if err == nil {
		t.Fatal("Open of an address where nothing listens succeeded")
	}
	if d := time.Since(start); d > 4*time.Second {
		t.Errorf("Open took %s with a 2s timeout", d)
	}
	var leaked *esdb.Error
	if errors.As(err, &leaked) {
		t.Errorf("driver error leaks: %v", err)
	}
	t.Log(err)
}
