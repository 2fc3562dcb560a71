package eventstoretest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/linkd/linkd/eventstore"
)

// testAppendKeepsNoBuffer: once Append returns, the caller may reuse the
// events' Data and Metadata (linkd encodes clicks into pooled buffers):
// what was appended, read and subscribed is what they held at the call.
func testAppendKeepsNoBuffer(t *testing.T, e *env) {
	stream := e.stream("reuse")
	data, md := []byte(`{"n":1}`), []byte(`{"user":"u1"}`)
	e.append(stream, eventstore.NoStream(), eventstore.EventData{Type: "Tested", Data: data, Metadata: md})
	copy(data, `{"n":2}`)
	copy(md, `{"user":"u2"}`)
	e.append(stream, eventstore.Exact(0), eventstore.EventData{Type: "Tested", Data: data, Metadata: md})
	clear(data)
	clear(md)
	got := e.readStream(stream, 0, 10)
	if len(got) != 2 {
		t.Fatalf("ReadStream: %d events, want 2", len(got))
	}
	for i, ev := range got {
		wantData, wantMD := fmt.Sprintf(`{"n":%d}`, i+1), fmt.Sprintf(`{"user":"u%d"}`, i+1)
		if string(ev.Data) != wantData || string(ev.Metadata) != wantMD {
			t.Errorf("event %d: data %q metadata %q, want %s and %s", i, ev.Data, ev.Metadata, wantData, wantMD)
		}
	}
	sub := e.subscribe(e.head, e.filter())
	for i, ev := range recvN(t, sub, 2, e.head) {
		if want := fmt.Sprintf(`{"n":%d}`, i+1); string(ev.Data) != want {
			t.Errorf("subscribed event %d: data %q, want %s", i, ev.Data, want)
		}
	}
}

func testAppendAndRead(t *testing.T, e *env) {
	stream := e.stream("link1")
	in := []eventstore.EventData{
		{ID: uuid.New(), Type: "LinkCreated", Data: []byte(`{"code":"abc"}`), Metadata: []byte(`{"user":"u1"}`)},
		{Type: "LinkUpdated", Data: []byte(`{"code":"abd"}`)}, // no ID, no metadata
		{ID: uuid.New(), Type: "LinkArchived", Data: []byte(`{}`), Metadata: []byte(`{"user":"u2"}`)},
	}
	before := time.Now()
	res := e.append(stream, eventstore.NoStream(), in...)
	after := time.Now()
	if res.NextExpectedVersion != 2 {
		t.Errorf("NextExpectedVersion = %d, want 2", res.NextExpectedVersion)
	}
	got := e.readStream(stream, 0, 100)
	if len(got) != len(in) {
		t.Fatalf("ReadStream: %d events, want %d", len(got), len(in))
	}
	// Clocks may differ between the test and a server: allow some slack.
	const slack = 2 * time.Minute
	seen := map[uuid.UUID]bool{}
	for i, ev := range got {
		want := in[i]
		if ev.Stream != stream {
			t.Errorf("event %d: stream %q, want %q", i, ev.Stream, stream)
		}
		if ev.Version != uint64(i) {
			t.Errorf("event %d: version %d", i, ev.Version)
		}
		if ev.Type != want.Type {
			t.Errorf("event %d: type %q, want %q", i, ev.Type, want.Type)
		}
		if !bytes.Equal(ev.Data, want.Data) {
			t.Errorf("event %d: data %q, want %q", i, ev.Data, want.Data)
		}
		if !bytes.Equal(ev.Metadata, want.Metadata) {
			t.Errorf("event %d: metadata %q, want %q", i, ev.Metadata, want.Metadata)
		}
		switch {
		case want.ID != uuid.Nil && ev.ID != want.ID:
			t.Errorf("event %d: id %s, want %s", i, ev.ID, want.ID)
		case ev.ID == uuid.Nil:
			t.Errorf("event %d: no id was generated", i)
		}
		if seen[ev.ID] {
			t.Errorf("event %d: id %s appears twice", i, ev.ID)
		}
		seen[ev.ID] = true
		if ev.Time.Location() != time.UTC {
			t.Errorf("event %d: time %v is not in UTC", i, ev.Time)
		}
		if ev.Time.Before(before.Add(-slack)) || ev.Time.After(after.Add(slack)) {
			t.Errorf("event %d: time %v, want about %v", i, ev.Time, before)
		}
		if !e.head.Less(ev.Position) {
			t.Errorf("event %d: position %v is not after the head %v before the append", i, ev.Position, e.head)
		}
		if i > 0 && !got[i-1].Position.Less(ev.Position) {
			t.Errorf("event %d: position %v does not come after %v", i, ev.Position, got[i-1].Position)
		}
	}
	if last := got[len(got)-1].Position; res.Position != last {
		t.Errorf("AppendResult.Position = %v, want the last event's %v", res.Position, last)
	}
	all := e.readAllOwn(e.head, 100)
	checkSame(t, "ReadAll", all, got)
}

type expectCase struct {
	name     string
	existing bool // the stream holds versions 0..2 before the append
	expected eventstore.ExpectedVersion
	ok       bool
}

var expectCases = []expectCase{
	{"any/new stream", false, eventstore.Any(), true},
	{"any/existing stream", true, eventstore.Any(), true},
	{"no-stream/new stream", false, eventstore.NoStream(), true},
	{"no-stream/existing stream", true, eventstore.NoStream(), false},
	{"stream-exists/new stream", false, eventstore.StreamExists(), false},
	{"stream-exists/existing stream", true, eventstore.StreamExists(), true},
	{"exact/current version", true, eventstore.Exact(2), true},
	{"exact/older version", true, eventstore.Exact(1), false},
	{"exact/newer version", true, eventstore.Exact(3), false},
	{"exact/new stream", false, eventstore.Exact(0), false},
}

func testExpectedVersion(t *testing.T, e *env) {
	for i, tc := range expectCases {
		t.Run(tc.name, func(t *testing.T) {
			e := *e
			e.t = t
			stream := e.stream(fmt.Sprintf("expect%d", i))
			var before []eventstore.RecordedEvent
			if tc.existing {
				e.append(stream, eventstore.NoStream(), events(stream, 0, 3)...)
				before = e.readStream(stream, 0, 100)
			}
			res, err := e.s.Append(e.ctx, stream, tc.expected, events(stream, 100, 2)...)
			if !tc.ok {
				if !errors.Is(err, eventstore.ErrWrongExpectedVersion) {
					t.Fatalf("Append(%s) = %v, want ErrWrongExpectedVersion", tc.expected, err)
				}
				checkUnchanged(t, &e, stream, before)
				return
			}
			if err != nil {
				t.Fatalf("Append(%s): %v", tc.expected, err)
			}
			want := uint64(1)
			if tc.existing {
				want = 4
			}
			if res.NextExpectedVersion != want {
				t.Errorf("NextExpectedVersion = %d, want %d", res.NextExpectedVersion, want)
			}
			if got := e.readStream(stream, 0, 100); len(got) != int(want)+1 {
				t.Errorf("stream holds %d events, want %d", len(got), want+1)
			}
		})
	}
}

// testExpectedVersionNoEvents: an append of no events checks expected and
// writes nothing.
func testExpectedVersionNoEvents(t *testing.T, e *env) {
	for i, tc := range expectCases {
		t.Run(tc.name, func(t *testing.T) {
			e := *e
			e.t = t
			stream := e.stream(fmt.Sprintf("empty%d", i))
			var before []eventstore.RecordedEvent
			if tc.existing {
				e.append(stream, eventstore.NoStream(), events(stream, 0, 3)...)
				before = e.readStream(stream, 0, 100)
			}
			res, err := e.s.Append(e.ctx, stream, tc.expected)
			switch {
			case !tc.ok && !errors.Is(err, eventstore.ErrWrongExpectedVersion):
				t.Fatalf("Append(%s, no events) = %v, want ErrWrongExpectedVersion", tc.expected, err)
			case tc.ok && err != nil:
				t.Fatalf("Append(%s, no events): %v", tc.expected, err)
			case tc.ok && tc.existing && res.NextExpectedVersion != 2:
				t.Errorf("NextExpectedVersion = %d, want 2", res.NextExpectedVersion)
			}
			checkUnchanged(t, &e, stream, before)
		})
	}
}

// checkUnchanged fails unless stream holds exactly before (nil: no stream).
func checkUnchanged(t *testing.T, e *env, stream string, before []eventstore.RecordedEvent) {
	t.Helper()
	v, ok := e.version(stream)
	if len(before) == 0 {
		if ok {
			t.Fatalf("stream %s exists (version %d) after a refused append", stream, v)
		}
		if _, err := e.s.ReadStream(e.ctx, stream, 0, 100); !errors.Is(err, eventstore.ErrStreamNotFound) {
			t.Fatalf("ReadStream after a refused append: %v, want ErrStreamNotFound", err)
		}
		return
	}
	if !ok || v != before[len(before)-1].Version {
		t.Fatalf("StreamVersion = %d, %v after a refused append, want %d", v, ok, before[len(before)-1].Version)
	}
	checkSame(t, "ReadStream after a refused append", e.readStream(stream, 0, 100), before)
}

func testAtomicMultiEvent(t *testing.T, e *env) {
	// One append of ten events: consecutive versions, adjacent in the log.
	stream := e.stream("multi")
	in := events(stream, 0, 10)
	res := e.append(stream, eventstore.NoStream(), in...)
	if res.NextExpectedVersion != 9 {
		t.Fatalf("NextExpectedVersion = %d, want 9", res.NextExpectedVersion)
	}
	got := e.readStream(stream, 0, 100)
	checkIDs(t, "ReadStream", got, ids(in))
	all := e.readAllOwn(e.head, 4)
	checkSame(t, "ReadAll", all, got)
	if all[9].Position != res.Position {
		t.Errorf("AppendResult.Position = %v, want %v", res.Position, all[9].Position)
	}

	// Concurrent multi-event appends never interleave.
	head := all[len(all)-1].Position
	const writers, batches, size = 8, 5, 10
	var wg sync.WaitGroup
	errs := make(chan error, writers*batches)
	for g := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			stream := e.stream(fmt.Sprintf("batch%d", g))
			for b := range batches {
				evs := make([]eventstore.EventData, size)
				for i := range evs {
					evs[i] = event("Batched", body{Stream: stream, N: b*size + i, Batch: b + 1, Index: i})
				}
				if _, err := e.s.Append(e.ctx, stream, eventstore.Any(), evs...); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wait(t, &wg, "concurrent appends")
	close(errs)
	for err := range errs {
		t.Fatalf("Append: %v", err)
	}
	all = e.readAllOwn(head, 33)
	if len(all) != writers*batches*size {
		t.Fatalf("ReadAll: %d events, want %d", len(all), writers*batches*size)
	}
	for k := 0; k < len(all); k += size {
		first := decode(t, all[k])
		for i := range size {
			ev := all[k+i]
			b := decode(t, ev)
			if ev.Stream != all[k].Stream || b.Batch != first.Batch || b.Index != i {
				t.Fatalf("ReadAll: event %d (%s batch %d index %d) breaks the run of %s batch %d", k+i, ev.Stream, b.Batch, b.Index, all[k].Stream, first.Batch)
			}
			if ev.Version != uint64((first.Batch-1)*size+i) {
				t.Fatalf("ReadAll: %s batch %d index %d has version %d", ev.Stream, b.Batch, i, ev.Version)
			}
		}
	}
}

func testReadStreamFromAndMax(t *testing.T, e *env) {
	stream := e.stream("paged")
	in := events(stream, 0, 10)
	e.append(stream, eventstore.NoStream(), in[:4]...)
	e.append(stream, eventstore.Exact(3), in[4:7]...)
	e.append(stream, eventstore.Exact(6), in[7:]...)
	for _, tc := range []struct {
		from      uint64
		max       int
		first, n  int
		wantEmpty bool
	}{
		{from: 0, max: 100, first: 0, n: 10},
		{from: 0, max: 1, first: 0, n: 1},
		{from: 3, max: 4, first: 3, n: 4},
		{from: 8, max: 10, first: 8, n: 2},
		{from: 9, max: 1, first: 9, n: 1},
		{from: 10, max: 5, n: 0},
		{from: 1000, max: 5, n: 0},
	} {
		t.Run(fmt.Sprintf("from %d max %d", tc.from, tc.max), func(t *testing.T) {
			got, err := e.s.ReadStream(e.ctx, stream, tc.from, tc.max)
			if err != nil {
				t.Fatalf("ReadStream: %v", err)
			}
			checkIDs(t, "ReadStream", got, ids(in[tc.first:tc.first+tc.n]))
			for i, ev := range got {
				if ev.Version != tc.from+uint64(i) {
					t.Fatalf("event %d has version %d, want %d", i, ev.Version, tc.from+uint64(i))
				}
			}
		})
	}
}

func testStreamNotFound(t *testing.T, e *env) {
	stream := e.stream("nothing")
	if _, err := e.s.ReadStream(e.ctx, stream, 0, 10); !errors.Is(err, eventstore.ErrStreamNotFound) {
		t.Errorf("ReadStream of a stream without events: %v, want ErrStreamNotFound", err)
	}
	if v, ok := e.version(stream); ok {
		t.Errorf("StreamVersion of a stream without events = %d, true", v)
	}
	// A refused append does not create the stream.
	if _, err := e.s.Append(e.ctx, stream, eventstore.Exact(0), events(stream, 0, 1)...); !errors.Is(err, eventstore.ErrWrongExpectedVersion) {
		t.Fatalf("Append(exact 0) to a stream without events: %v, want ErrWrongExpectedVersion", err)
	}
	if _, err := e.s.ReadStream(e.ctx, stream, 0, 10); !errors.Is(err, eventstore.ErrStreamNotFound) {
		t.Errorf("ReadStream after a refused append: %v, want ErrStreamNotFound", err)
	}
}

func testStreamVersion(t *testing.T, e *env) {
	stream := e.stream("versioned")
	res := e.append(stream, eventstore.NoStream(), events(stream, 0, 1)...)
	if v, ok := e.version(stream); !ok || v != 0 || res.NextExpectedVersion != 0 {
		t.Fatalf("after one event: StreamVersion = %d, %v; NextExpectedVersion = %d; want 0", v, ok, res.NextExpectedVersion)
	}
	res = e.append(stream, eventstore.Exact(0), events(stream, 1, 5)...)
	if v, ok := e.version(stream); !ok || v != 5 || res.NextExpectedVersion != 5 {
		t.Fatalf("after six events: StreamVersion = %d, %v; NextExpectedVersion = %d; want 5", v, ok, res.NextExpectedVersion)
	}
	// Other streams do not count.
	other := e.stream("versioned2")
	e.append(other, eventstore.NoStream(), events(other, 0, 3)...)
	if v, ok := e.version(stream); !ok || v != 5 {
		t.Fatalf("StreamVersion = %d, %v after appending to another stream, want 5", v, ok)
	}
}

func testReadAllOrder(t *testing.T, e *env) {
	streams := []string{e.stream("a"), e.stream("b"), e.stream("c")}
	var want []uuid.UUID
	var positions []eventstore.Position
	next := map[string]int{}
	for i := range 30 {
		stream := streams[(i*7)%len(streams)]
		n := 1
		if i%10 == 9 {
			n = 3
		}
		evs := events(stream, next[stream], n)
		next[stream] += n
		res := e.append(stream, eventstore.Any(), evs...)
		want = append(want, ids(evs)...)
		for range n {
			positions = append(positions, eventstore.Position{})
		}
		positions[len(positions)-1] = res.Position
	}
	for _, page := range []int{1, 7, 1000} {
		all := e.readAllOwn(e.head, page)
		checkIDs(t, fmt.Sprintf("ReadAll in pages of %d", page), all, want)
		for i, ev := range all {
			if !positions[i].IsZero() && ev.Position != positions[i] {
				t.Fatalf("event %d: position %v, but its append returned %v", i, ev.Position, positions[i])
			}
		}
	}
	all := e.readAllOwn(e.head, 10)
	// Versions in the global log match the streams.
	for _, stream := range streams {
		var got []eventstore.RecordedEvent
		for _, ev := range all {
			if ev.Stream == stream {
				got = append(got, ev)
			}
		}
		checkSame(t, "ReadAll of "+stream, got, e.readStream(stream, 0, 1000))
	}
	// after excludes the event at that position.
	for _, k := range []int{0, 1, 9, 17, len(all) - 2, len(all) - 1} {
		got := e.readAllOwn(all[k].Position, 5)
		checkIDs(t, fmt.Sprintf("ReadAll after event %d", k), got, want[k+1:])
	}
}

func testHead(t *testing.T, e *env) {
	if evs, err := e.s.ReadAll(e.ctx, eventstore.Start, 1); err != nil {
		t.Fatalf("ReadAll: %v", err)
	} else if len(evs) == 0 && !e.head.IsZero() {
		t.Fatalf("Head of an empty store = %v, want Start", e.head)
	}
	stream := e.stream("head")
	for i := range 3 {
		res := e.append(stream, eventstore.Any(), events(stream, i, 2)...)
		head, err := e.s.Head(e.ctx)
		if err != nil {
			t.Fatalf("Head: %v", err)
		}
		// Others may append to a shared store meanwhile: head is at least
		// the append's position.
		if head.Less(res.Position) {
			t.Fatalf("Head = %v before the position %v of an acknowledged append", head, res.Position)
		}
		if !e.head.Less(head) {
			t.Fatalf("Head = %v does not come after %v", head, e.head)
		}
	}
	all := e.readAllOwn(e.head, 100)
	if len(all) != 6 {
		t.Fatalf("ReadAll: %d events, want 6", len(all))
	}
	if evs, err := e.s.ReadAll(e.ctx, eventstore.Start, 1); err != nil || len(evs) != 1 {
		t.Fatalf("ReadAll(Start, 1) of a store with events = %d events, %v", len(evs), err)
	}
}

func testOptimisticConcurrency(t *testing.T, e *env) {
	stream := e.stream("contended")
	e.append(stream, eventstore.NoStream(), events(stream, 0, 1)...)
	const writers = 20
	start := make(chan struct{})
	errs := make([]error, writers)
	in := make([]eventstore.EventData, writers)
	var wg sync.WaitGroup
	for g := range writers {
		in[g] = event("Contended", body{Stream: stream, N: g})
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			_, errs[g] = e.s.Append(e.ctx, stream, eventstore.Exact(0), in[g])
		}()
	}
	close(start)
	wait(t, &wg, "contending appends")
	winner := -1
	for g, err := range errs {
		switch {
		case err == nil && winner >= 0:
			t.Fatalf("writers %d and %d both appended with expected version 0", winner, g)
		case err == nil:
			winner = g
		case !errors.Is(err, eventstore.ErrWrongExpectedVersion):
			t.Fatalf("writer %d: %v, want ErrWrongExpectedVersion", g, err)
		}
	}
	if winner < 0 {
		t.Fatal("no writer succeeded")
	}
	got := e.readStream(stream, 0, 100)
	if len(got) != 2 || got[1].ID != in[winner].ID {
		t.Fatalf("stream holds %d events, want 2 ending with the winner's", len(got))
	}
	if v, ok := e.version(stream); !ok || v != 1 {
		t.Fatalf("StreamVersion = %d, %v, want 1", v, ok)
	}
}

func testConcurrentManyStreams(t *testing.T, e *env) {
	const writers, appends, streams = 16, 40, 20
	var mu sync.Mutex
	written := map[uuid.UUID]string{}
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for g := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range appends {
				stream := e.stream(fmt.Sprintf("s%d", (g*31+i*7)%streams))
				evs := events(stream, g*1000+i*10, 1+(g+i)%3)
				if _, err := e.s.Append(e.ctx, stream, eventstore.Any(), evs...); err != nil {
					errs <- err
					return
				}
				mu.Lock()
				for _, ev := range evs {
					written[ev.ID] = stream
				}
				mu.Unlock()
			}
		}()
	}
	wait(t, &wg, "concurrent appends")
	close(errs)
	for err := range errs {
		t.Fatalf("Append: %v", err)
	}
	all := e.readAllOwn(e.head, 97)
	if len(all) != len(written) {
		t.Fatalf("ReadAll: %d events, want %d", len(all), len(written))
	}
	seen := map[uuid.UUID]bool{}
	perStream := map[string][]eventstore.RecordedEvent{}
	for _, ev := range all {
		if seen[ev.ID] {
			t.Fatalf("event %s appears twice", ev.ID)
		}
		seen[ev.ID] = true
		if written[ev.ID] != ev.Stream {
			t.Fatalf("event %s in %q, written to %q", ev.ID, ev.Stream, written[ev.ID])
		}
		if want := uint64(len(perStream[ev.Stream])); ev.Version != want {
			t.Fatalf("%s: version %d follows %d events: a gap or a reordering", ev.Stream, ev.Version, want)
		}
		perStream[ev.Stream] = append(perStream[ev.Stream], ev)
	}
	for stream, evs := range perStream {
		checkSame(t, "ReadStream "+stream, e.readStream(stream, 0, 10000), evs)
		if v, ok := e.version(stream); !ok || v != uint64(len(evs)-1) {
			t.Fatalf("StreamVersion(%s) = %d, %v, want %d", stream, v, ok, len(evs)-1)
		}
	}
}

func testSubscribeCatchUpThenLive(t *testing.T, e *env) {
	streams := []string{e.stream("h1"), e.stream("h2"), e.stream("h3"), e.stream("h4"), e.stream("h5")}
	total := 0
	for i := range 100 {
		stream := streams[i%len(streams)]
		n := 1 + (i*13)%40
		e.append(stream, eventstore.Any(), events(stream, total, n)...)
		total += n
	}
	const live = 600
	sub := e.subscribe(eventstore.Start, e.filter())

	// Append while the subscription catches up.
	var wg sync.WaitGroup
	var werr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; i < live; {
			stream := streams[(i*3)%len(streams)]
			n := min(1+i%4, live-i)
			if _, err := e.s.Append(e.ctx, stream, eventstore.Any(), events(stream, 10000+i, n)...); err != nil {
				werr = err
				return
			}
			i += n
		}
	}()
	got := recvN(t, sub, total+live, eventstore.Start)
	wait(t, &wg, "live appends")
	if werr != nil {
		t.Fatalf("Append: %v", werr)
	}
	recvNothing(t, sub)
	checkSame(t, "subscription", got, e.readAllOwn(e.head, 500))
	for _, ev := range got {
		if !e.own(ev.Stream) {
			t.Fatalf("filtered subscription delivered %s", ev.Stream)
		}
	}
}

func testSubscribeFromMiddle(t *testing.T, e *env) {
	stream := e.stream("middle")
	in := events(stream, 0, 25)
	for i := range 20 {
		e.append(stream, eventstore.Any(), in[i])
	}
	all := e.readAllOwn(e.head, 100)
	sub := e.subscribe(all[9].Position, e.filter())
	got := recvN(t, sub, 10, all[9].Position)
	checkSame(t, "catch-up from the middle", got, all[10:])
	e.append(stream, eventstore.Exact(19), in[20:]...)
	got = append(got, recvN(t, sub, 5, got[len(got)-1].Position)...)
	checkIDs(t, "subscription from the middle", got, ids(in[10:]))
	recvNothing(t, sub)
}

func testSubscribeFilter(t *testing.T, e *env) {
	px, py, pz := e.prefix+"x", e.prefix+"y", e.prefix+"z"
	var wantX, wantXZ []uuid.UUID
	for i := range 30 {
		var stream string
		switch i % 3 {
		case 0:
			stream = px + "-1"
		case 1:
			stream = py + "-1"
		default:
			stream = pz + "-1"
		}
		evs := events(stream, i, 1)
		e.append(stream, eventstore.Any(), evs...)
		if i%3 == 0 {
			wantX = append(wantX, evs[0].ID)
		}
		if i%3 != 1 {
			wantXZ = append(wantXZ, evs[0].ID)
		}
	}
	subX := e.subscribe(e.head, eventstore.Filter{StreamPrefixes: []string{px}})
	checkIDs(t, "filter x", recvN(t, subX, len(wantX), e.head), wantX)
	recvNothing(t, subX)
	subXZ := e.subscribe(e.head, eventstore.Filter{StreamPrefixes: []string{px, pz}})
	checkIDs(t, "filter x or z", recvN(t, subXZ, len(wantXZ), e.head), wantXZ)
	recvNothing(t, subXZ)

	// Live events go through the same filter.
	y := e.append(py+"-1", eventstore.Any(), events(py+"-1", 100, 1)...)
	xs := events(px+"-1", 101, 1)
	e.append(px+"-1", eventstore.Any(), xs...)
	got := recvN(t, subX, 1, y.Position)
	checkIDs(t, "live filter x", got, ids(xs))
}

func testRecvAfterClose(t *testing.T, e *env) {
	sub := e.subscribe(e.head, e.filter())
	if err := sub.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	ctx, cancel := context.WithTimeout(e.ctx, waitTimeout)
	defer cancel()
	if _, err := sub.Recv(ctx); !errors.Is(err, eventstore.ErrClosed) {
		t.Fatalf("Recv after Close: %v, want ErrClosed", err)
	}

	// Close wakes a Recv that waits.
	sub = e.subscribe(e.head, e.filter())
	errc := make(chan error, 1)
	go func() {
		_, err := sub.Recv(ctx)
		errc <- err
	}()
	time.Sleep(50 * time.Millisecond)
	if err := sub.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	select {
	case err := <-errc:
		if !errors.Is(err, eventstore.ErrClosed) {
			t.Fatalf("Recv interrupted by Close: %v, want ErrClosed", err)
		}
	case <-time.After(waitTimeout):
		t.Fatal("Close did not wake a waiting Recv")
	}
}

func testContextCancellation(t *testing.T, e *env) {
	stream := e.stream("ctx")
	sub := e.subscribe(e.head, e.filter())

	t.Run("Recv deadline", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(e.ctx, 100*time.Millisecond)
		defer cancel()
		start := time.Now()
		if _, err := sub.Recv(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Recv: %v, want DeadlineExceeded", err)
		}
		if d := time.Since(start); d > waitTimeout/2 {
			t.Fatalf("Recv returned %v after its deadline", d)
		}
	})
	t.Run("Recv canceled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(e.ctx)
		cancel()
		if _, err := sub.Recv(ctx); !errors.Is(err, context.Canceled) {
			t.Fatalf("Recv: %v, want Canceled", err)
		}
	})
	t.Run("subscription still works", func(t *testing.T) {
		in := events(stream, 0, 1)
		res := e.append(stream, eventstore.NoStream(), in...)
		checkIDs(t, "Recv", recvN(t, sub, 1, e.head), ids(in))
		_ = res
	})
	t.Run("SubscribeAll context", func(t *testing.T) {
		ctx, cancel := context.WithCancel(e.ctx)
		sub, err := e.s.SubscribeAll(ctx, e.head, e.filter())
		if err != nil {
			t.Fatalf("SubscribeAll: %v", err)
		}
		defer sub.Close()
		// Drain the event written above, then cancel while Recv waits.
		if _, err := sub.Recv(e.ctx); err != nil {
			t.Fatalf("Recv: %v", err)
		}
		time.AfterFunc(50*time.Millisecond, cancel)
		rctx, rcancel := context.WithTimeout(e.ctx, waitTimeout)
		defer rcancel()
		_, err = sub.Recv(rctx)
		if !errors.Is(err, context.Canceled) && !errors.Is(err, eventstore.ErrClosed) {
			t.Fatalf("Recv after the subscription's context ended: %v, want Canceled or ErrClosed", err)
		}
	})
	t.Run("Append canceled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(e.ctx)
		cancel()
		other := e.stream("ctx-append")
		if _, err := e.s.Append(ctx, other, eventstore.Any(), events(other, 0, 1)...); !errors.Is(err, context.Canceled) {
			t.Fatalf("Append with a canceled context: %v, want Canceled", err)
		}
		if v, ok := e.version(other); ok {
			t.Fatalf("the canceled append was written (version %d)", v)
		}
	})
	t.Run("reads canceled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(e.ctx)
		cancel()
		if _, err := e.s.ReadStream(ctx, stream, 0, 10); !errors.Is(err, context.Canceled) {
			t.Errorf("ReadStream: %v, want Canceled", err)
		}
		if _, err := e.s.ReadAll(ctx, e.head, 10); !errors.Is(err, context.Canceled) {
			t.Errorf("ReadAll: %v, want Canceled", err)
		}
	})
}

func testLargeAppend(t *testing.T, e *env) {
	stream := e.stream("large")
	in := events(stream, 0, 5000)
	res := e.append(stream, eventstore.NoStream(), in...)
	if res.NextExpectedVersion != 4999 {
		t.Fatalf("NextExpectedVersion = %d, want 4999", res.NextExpectedVersion)
	}
	got := e.readStream(stream, 0, 5000)
	checkIDs(t, "ReadStream", got, ids(in))
	for i, ev := range got {
		if ev.Version != uint64(i) {
			t.Fatalf("event %d has version %d", i, ev.Version)
		}
	}
	checkSame(t, "ReadAll", e.readAllOwn(e.head, 1000), got)
	checkSame(t, "ReadStream from 4990", e.readStream(stream, 4990, 100), got[4990:])
}

func testLargeEvents(t *testing.T, e *env) {
	stream := e.stream("big")
	const size = 1 << 20
	var in []eventstore.EventData
	for i := range 3 {
		ev := event("Big", body{Stream: stream, N: i})
		pad := strings.Repeat(string(rune('a'+i)), size-len(ev.Data)-len(`,"pad":""`))
		ev = event("Big", body{Stream: stream, N: i, Pad: pad})
		if len(ev.Data) != size {
			t.Fatalf("test bug: data is %d bytes", len(ev.Data))
		}
		in = append(in, ev)
		e.append(stream, eventstore.Any(), ev)
	}
	check := func(what string, got []eventstore.RecordedEvent) {
		t.Helper()
		if len(got) != len(in) {
			t.Fatalf("%s: %d events, want %d", what, len(got), len(in))
		}
		for i, ev := range got {
			if ev.ID != in[i].ID || !bytes.Equal(ev.Data, in[i].Data) {
				t.Fatalf("%s: event %d differs from what was written", what, i)
			}
		}
	}
	check("ReadStream", e.readStream(stream, 0, 10))
	check("ReadAll", e.readAllOwn(e.head, 2))
	sub := e.subscribe(e.head, e.filter())
	check("SubscribeAll", recvN(t, sub, len(in), e.head))
}

func testInvalidEvent(t *testing.T, e *env) {
	good := eventstore.EventData{Type: "Tested", Data: []byte(`{}`)}
	notype := eventstore.EventData{Data: []byte(`{}`)}
	for _, tc := range []struct {
		name   string
		stream string
		events []eventstore.EventData
	}{
		{"empty type", e.stream("invalid1"), []eventstore.EventData{notype}},
		{"empty type after a good event", e.stream("invalid2"), []eventstore.EventData{good, notype}},
		{"empty stream name", "", []eventstore.EventData{good}},
		{"system stream", "$" + e.stream("invalid3"), []eventstore.EventData{good}},
		{"system stream without events", "$" + e.stream("invalid4"), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := e.s.Append(e.ctx, tc.stream, eventstore.Any(), tc.events...)
			if !errors.Is(err, eventstore.ErrInvalidEvent) {
				t.Fatalf("Append: %v, want ErrInvalidEvent", err)
			}
			if strings.HasPrefix(tc.stream, e.prefix) {
				if v, ok := e.version(tc.stream); ok {
					t.Fatalf("the refused append was written (version %d)", v)
				}
			}
		})
	}
	if all := e.readAllOwn(e.head, 100); len(all) != 0 {
		t.Fatalf("refused appends wrote %d events", len(all))
	}
}

func testReopen(t *testing.T, e *env, h Harness) {
	if h.Reopen == nil {
		t.Skip("the adapter cannot reopen a store")
	}
	a, b := e.stream("a"), e.stream("b")
	e.append(a, eventstore.NoStream(), events(a, 0, 3)...)
	e.append(b, eventstore.NoStream(), events(b, 0, 1)...)
	e.append(a, eventstore.Exact(2), events(a, 3, 2)...)
	before := e.readAllOwn(e.head, 100)
	head, err := e.s.Head(e.ctx)
	if err != nil {
		t.Fatalf("Head: %v", err)
	}
	beforeA := e.readStream(a, 0, 100)

	e.s = h.Reopen(t, e.s)
	after := e.readAllOwn(e.head, 100)
	checkSame(t, "ReadAll after reopen", after, before)
	for i := range after {
		if !after[i].Time.Equal(before[i].Time) {
			t.Fatalf("event %d: time %v after reopen, %v before", i, after[i].Time, before[i].Time)
		}
	}
	checkSame(t, "ReadStream after reopen", e.readStream(a, 0, 100), beforeA)
	if h2, err := e.s.Head(e.ctx); err != nil || h2.Less(head) {
		t.Fatalf("Head after reopen = %v, %v; was %v", h2, err, head)
	}
	if v, ok := e.version(a); !ok || v != 4 {
		t.Fatalf("StreamVersion after reopen = %d, %v, want 4", v, ok)
	}
	if _, err := e.s.Append(e.ctx, b, eventstore.NoStream(), events(b, 1, 1)...); !errors.Is(err, eventstore.ErrWrongExpectedVersion) {
		t.Fatalf("Append(no stream) to an existing stream after reopen: %v, want ErrWrongExpectedVersion", err)
	}
	res := e.append(a, eventstore.Exact(4), events(a, 5, 2)...)
	if res.NextExpectedVersion != 6 {
		t.Fatalf("NextExpectedVersion = %d, want 6", res.NextExpectedVersion)
	}
	if !head.Less(res.Position) {
		t.Fatalf("position %v of an append after reopen does not come after the old head %v", res.Position, head)
	}
	sub := e.subscribe(e.head, e.filter())
	got := recvN(t, sub, len(before)+2, e.head)
	checkSame(t, "subscription after reopen", got[:len(before)], before)

	// And once more: what was appended after the first reopen stays too.
	all := e.readAllOwn(e.head, 100)
	e.s = h.Reopen(t, e.s)
	checkSame(t, "ReadAll after the second reopen", e.readAllOwn(e.head, 100), all)
}

func testClosedStore(t *testing.T, e *env) {
	stream := e.stream("closed")
	e.append(stream, eventstore.NoStream(), events(stream, 0, 1)...)
	sub := e.subscribe(e.head, e.filter())
	if err := e.s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := e.s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	ctx := e.ctx
	check := func(op string, err error) {
		t.Helper()
		if !errors.Is(err, eventstore.ErrClosed) {
			t.Errorf("%s after Close: %v, want ErrClosed", op, err)
		}
	}
	_, err := e.s.Append(ctx, stream, eventstore.Any(), events(stream, 1, 1)...)
	check("Append", err)
	_, err = e.s.ReadStream(ctx, stream, 0, 10)
	check("ReadStream", err)
	_, _, err = e.s.StreamVersion(ctx, stream)
	check("StreamVersion", err)
	_, err = e.s.ReadAll(ctx, e.head, 10)
	check("ReadAll", err)
	_, err = e.s.Head(ctx)
	check("Head", err)
	_, err = e.s.SubscribeAll(ctx, e.head, e.filter())
	check("SubscribeAll", err)
	rctx, cancel := context.WithTimeout(ctx, waitTimeout)
	defer cancel()
	// The subscription may still deliver what it had read; then it ends.
	for range 2 {
		if _, err = sub.Recv(rctx); err != nil {
			break
		}
	}
	check("Recv", err)
}
