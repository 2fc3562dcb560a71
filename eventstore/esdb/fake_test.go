package esdb

import (
	"io"
	"net"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/EventStore/EventStore-Client-Go/v4/protos/shared"
	api "github.com/EventStore/EventStore-Client-Go/v4/protos/streams"
	"google.golang.org/grpc"
)

// fakeServer is a small in-memory stand-in for the streams service of
// EventStoreDB, for tests on a machine without one. It follows the server
// where the adapter depends on it, as far as we know the server:
//   - forward reads of $all and subscriptions start AT the given position
//     (inclusive), backward reads too;
//   - a system event ("$stats-fake") follows every append, as the server's
//     own events do, so that reads must skip them;
//   - positions have commit == prepare, and an append reports the position
//     of its last event;
//   - a missing stream reads as StreamNotFound; a wrong expected version is
//     an AppendResp.WrongExpectedVersion;
//   - the server-features service is absent, which the client accepts.
//
// It is no proof of how the real server behaves: the contract suite against
// a real server (ESDB_TEST_URL) is.
type fakeServer struct {
	api.UnimplementedStreamsServer

	mu      sync.Mutex
	log     []*fakeEvent
	streams map[string][]*fakeEvent
	changed chan struct{} // closed and replaced on every append
	next    uint64
}

type fakeEvent struct {
	id       *shared.UUID
	stream   string
	revision uint64
	pos      uint64
	meta     map[string]string
	custom   []byte
	data     []byte
}

// StartFakeServer serves a fakeServer on a local port until the test ends
// and returns its connection string. Exported for the contract test.
func StartFakeServer(t testing.TB) string {
	t.Helper()
	_, url := startFake(t)
	return url
}

func startFake(t testing.TB) (*fakeServer, string) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeServer{streams: map[string][]*fakeEvent{}, changed: make(chan struct{}), next: 1000}
	f.system() // a fresh server's log does not start with user events
	srv := grpc.NewServer()
	api.RegisterStreamsServer(srv, f)
	go srv.Serve(l)
	t.Cleanup(srv.Stop)
	return f, "esdb://" + l.Addr().String() + "?tls=false"
}

// add appends one event; f.mu is held.
func (f *fakeServer) add(stream string, meta map[string]string, id *shared.UUID, custom, data []byte) *fakeEvent {
	m := map[string]string{"created": strconv.FormatInt(time.Now().UnixNano()/100, 10)}
	for k, v := range meta {
		m[k] = v
	}
	e := &fakeEvent{id: id, stream: stream, revision: uint64(len(f.streams[stream])), pos: f.next, meta: m, custom: custom, data: data}
	f.next += 100 + uint64(len(data))
	f.log = append(f.log, e)
	f.streams[stream] = append(f.streams[stream], e)
	return e
}

// addSystem appends n system events, as the server does on its own.
func (f *fakeServer) addSystem(n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for range n {
		f.system()
	}
}

// system appends a system event; f.mu is held.
func (f *fakeServer) system() {
	f.add("$stats-fake", map[string]string{"type": "$statsCollected", "content-type": "application/json"}, &shared.UUID{Value: &shared.UUID_String_{String_: "00000000-0000-0000-0000-000000000001"}}, nil, []byte(`{}`))
}

func (f *fakeServer) Append(as api.Streams_AppendServer) error {
	first, err := as.Recv()
	if err != nil {
		return err
	}
	opts := first.GetOptions()
	stream := string(opts.GetStreamIdentifier().GetStreamName())
	var msgs []*api.AppendReq_ProposedMessage
	for {
		req, err := as.Recv()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		msgs = append(msgs, req.GetProposedMessage())
	}

	f.mu.Lock()
	defer f.mu.Unlock()
	cur := f.streams[stream]
	exists := len(cur) > 0
	var ok bool
	switch opts.ExpectedStreamRevision.(type) {
	case *api.AppendReq_Options_Revision:
		ok = exists && cur[len(cur)-1].revision == opts.GetRevision()
	case *api.AppendReq_Options_NoStream:
		ok = !exists
	case *api.AppendReq_Options_StreamExists:
		ok = exists
	default:
		ok = true
	}
	if !ok {
		wrong := &api.AppendResp_WrongExpectedVersion{}
		if exists {
			wrong.CurrentRevisionOption = &api.AppendResp_WrongExpectedVersion_CurrentRevision{CurrentRevision: cur[len(cur)-1].revision}
		} else {
			wrong.CurrentRevisionOption = &api.AppendResp_WrongExpectedVersion_CurrentNoStream{CurrentNoStream: &shared.Empty{}}
		}
		return as.SendAndClose(&api.AppendResp{Result: &api.AppendResp_WrongExpectedVersion_{WrongExpectedVersion: wrong}})
	}
	success := &api.AppendResp_Success{PositionOption: &api.AppendResp_Success_NoPosition{NoPosition: &shared.Empty{}}}
	var last *fakeEvent
	for _, m := range msgs {
		last = f.add(stream, m.GetMetadata(), m.GetId(), m.GetCustomMetadata(), m.GetData())
	}
	switch {
	case last != nil:
		success.CurrentRevisionOption = &api.AppendResp_Success_CurrentRevision{CurrentRevision: last.revision}
		success.PositionOption = &api.AppendResp_Success_Position{Position: &api.AppendResp_Position{CommitPosition: last.pos, PreparePosition: last.pos}}
		f.system()
		close(f.changed)
		f.changed = make(chan struct{})
	case exists:
		success.CurrentRevisionOption = &api.AppendResp_Success_CurrentRevision{CurrentRevision: cur[len(cur)-1].revision}
	default:
		success.CurrentRevisionOption = &api.AppendResp_Success_NoStream{NoStream: &shared.Empty{}}
	}
	return as.SendAndClose(&api.AppendResp{Result: &api.AppendResp_Success_{Success: success}})
}

func (f *fakeServer) Read(req *api.ReadReq, rs api.Streams_ReadServer) error {
	o := req.GetOptions()
	if o.GetSubscription() != nil {
		return f.subscribe(o, rs)
	}
	back := o.GetReadDirection() == api.ReadReq_Options_Backwards
	f.mu.Lock()
	var events []*fakeEvent
	if so := o.GetStream(); so != nil {
		name := so.GetStreamIdentifier().GetStreamName()
		s, ok := f.streams[string(name)]
		if !ok {
			f.mu.Unlock()
			return rs.Send(&api.ReadResp{Content: &api.ReadResp_StreamNotFound_{StreamNotFound: &api.ReadResp_StreamNotFound{StreamIdentifier: so.GetStreamIdentifier()}}})
		}
		from := uint64(0)
		switch {
		case so.GetEnd() != nil:
			from = ^uint64(0)
		case so.GetStart() == nil:
			from = so.GetRevision()
		}
		events = pick(s, back, func(e *fakeEvent) uint64 { return e.revision }, from)
	} else {
		events = pick(f.log, back, func(e *fakeEvent) uint64 { return e.pos }, allFrom(o.GetAll()))
	}
	f.mu.Unlock()
	for i, e := range events {
		if uint64(i) == o.GetCount() {
			break
		}
		if err := rs.Send(e.resp()); err != nil {
			return err
		}
	}
	return nil
}

func allFrom(a *api.ReadReq_Options_AllOptions) uint64 {
	switch {
	case a.GetEnd() != nil:
		return ^uint64(0)
	case a.GetStart() != nil:
		return 0
	}
	return a.GetPosition().GetCommitPosition()
}

// pick returns the events at key >= from (forwards) or key <= from
// (backwards), in read order.
func pick(events []*fakeEvent, back bool, key func(*fakeEvent) uint64, from uint64) []*fakeEvent {
	var out []*fakeEvent
	if back {
		for i := len(events) - 1; i >= 0; i-- {
			if key(events[i]) <= from {
				out = append(out, events[i])
			}
		}
		return out
	}
	for _, e := range events {
		if key(e) >= from {
			out = append(out, e)
		}
	}
	return out
}

func (f *fakeServer) subscribe(o *api.ReadReq_Options, rs api.Streams_ReadServer) error {
	keep := func(*fakeEvent) bool { return true }
	if expr := o.GetFilter().GetStreamIdentifier(); expr != nil {
		re := regexp.MustCompile(expr.GetRegex())
		keep = func(e *fakeEvent) bool {
			if len(expr.GetPrefix()) == 0 {
				return re.MatchString(e.stream)
			}
			for _, p := range expr.GetPrefix() {
				if strings.HasPrefix(e.stream, p) {
					return true
				}
			}
			return false
		}
	}
	if err := rs.Send(&api.ReadResp{Content: &api.ReadResp_Confirmation{Confirmation: &api.ReadResp_SubscriptionConfirmation{SubscriptionId: "fake"}}}); err != nil {
		return err
	}
	from, caughtUp := allFrom(o.GetAll()), false
	for {
		f.mu.Lock()
		events := pick(f.log, false, func(e *fakeEvent) uint64 { return e.pos }, from)
		changed := f.changed
		f.mu.Unlock()
		for _, e := range events {
			var err error
			if keep(e) {
				err = rs.Send(e.resp())
			} else {
				err = rs.Send(&api.ReadResp{Content: &api.ReadResp_Checkpoint_{Checkpoint: &api.ReadResp_Checkpoint{CommitPosition: e.pos, PreparePosition: e.pos}}})
			}
			if err != nil {
				return err
			}
			from = e.pos + 1
		}
		if !caughtUp {
			caughtUp = true
			if err := rs.Send(&api.ReadResp{Content: &api.ReadResp_CaughtUp_{CaughtUp: &api.ReadResp_CaughtUp{}}}); err != nil {
				return err
			}
		}
		select {
		case <-changed:
		case <-rs.Context().Done():
			return rs.Context().Err()
		}
	}
}

func (e *fakeEvent) resp() *api.ReadResp {
	return &api.ReadResp{Content: &api.ReadResp_Event{Event: &api.ReadResp_ReadEvent{
		Event: &api.ReadResp_ReadEvent_RecordedEvent{
			Id:               e.id,
			StreamIdentifier: &shared.StreamIdentifier{StreamName: []byte(e.stream)},
			StreamRevision:   e.revision,
			PreparePosition:  e.pos,
			CommitPosition:   e.pos,
			Metadata:         e.meta,
			CustomMetadata:   e.custom,
			Data:             e.data,
		},
		Position: &api.ReadResp_ReadEvent_CommitPosition{CommitPosition: e.pos},
	}}}
}
