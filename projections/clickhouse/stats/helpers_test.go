package stats

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/linkd/linkd/domain"
	"github.com/linkd/linkd/domain/click"
	"github.com/linkd/linkd/domain/link"
	"github.com/linkd/linkd/eventstore"
	"github.com/linkd/linkd/internal/testsupport/chtest"
)

// TestMain runs the tests on the ClickHouse server of chtest, or on current
// ClickHouse in process when LINKD_TEST_CHDB names libchdb.so (`make test`
// does both).
func TestMain(m *testing.M) {
	chtest.UseChDB()
	chtest.Main(m)
}

func openTest(t testing.TB, ctx context.Context, dsn string) *Projection {
	t.Helper()
	p, err := Open(ctx, dsn, Options{Dial: chtest.Open})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// eventLog builds recorded events as an event store would: versions per
// stream from 0, positions increasing.
type eventLog struct {
	events   []eventstore.RecordedEvent
	versions map[string]uint64
	pos      uint64
}

func newEventLog() *eventLog { return &eventLog{versions: map[string]uint64{}} }

func (l *eventLog) add(stream string, e domain.Event) eventstore.RecordedEvent {
	typ, data, err := domain.EncodeEvent(e)
	if err != nil {
		panic(err)
	}
	v, ok := l.versions[stream]
	if ok {
		v++
	}
	l.versions[stream] = v
	l.pos += 10
	ev := eventstore.RecordedEvent{
		ID:       uuid.New(),
		Stream:   stream,
		Version:  v,
		Position: eventstore.Position{Commit: l.pos, Prepare: l.pos},
		Type:     typ,
		Data:     data,
		Time:     time.Now().UTC(),
	}
	l.events = append(l.events, ev)
	return ev
}

func (l *eventLog) click(c click.Recorded) eventstore.RecordedEvent {
	return l.add(click.Stream(c.LinkID), &c)
}

// clicksOnly returns the ClickRecorded payloads of the log, for reference
// counts.
func (l *eventLog) clicks() []click.Recorded {
	var out []click.Recorded
	for _, ev := range l.events {
		if ev.Type != click.EventRecorded {
			continue
		}
		var c click.Recorded
		if err := json.Unmarshal(ev.Data, &c); err != nil {
			panic(err)
		}
		out = append(out, c)
	}
	return out
}

// memStore is the part of eventstore.Store that Replay uses, over a slice.
type memStore struct {
	eventstore.Store // nil: the methods Replay does not call panic
	events           []eventstore.RecordedEvent
}

func (s *memStore) Head(context.Context) (eventstore.Position, error) {
	if len(s.events) == 0 {
		return eventstore.Start, nil
	}
	return s.events[len(s.events)-1].Position, nil
}

func (s *memStore) ReadAll(_ context.Context, after eventstore.Position, max int) ([]eventstore.RecordedEvent, error) {
	var out []eventstore.RecordedEvent
	for _, ev := range s.events {
		if after.Less(ev.Position) {
			out = append(out, ev)
			if len(out) == max {
				break
			}
		}
	}
	return out, nil
}

func (s *memStore) Close() error { return errors.New("not implemented") }

func linkCreated(id, ws, code, name string, at time.Time) *link.Created {
	return &link.Created{
		LinkID: id, Code: code, At: at,
		Attributes: link.Attributes{WorkspaceID: ws, Name: name, OriginalURL: "https://example.com/" + code},
	}
}
