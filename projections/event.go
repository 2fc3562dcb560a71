package projections

import (
	"sync"
	"sync/atomic"

	"github.com/linkd/linkd/domain"
	"github.com/linkd/linkd/eventstore"
)

// Event is what a runner hands a projector: a recorded event and, through
// Decode, its domain event. Every runner of the process (in process, Kafka,
// replay) makes them, and a projector never decodes an event's data itself.
type Event struct {
	eventstore.RecordedEvent
	d *decoded
}

// decoded is the domain event of one recorded event, decoded at the first
// Decode and shared by every Event made for it in the process.
type decoded struct {
	once sync.Once
	pos  eventstore.Position // in a Decoder's table
	typ  string
	data []byte
	ev   domain.Event
	err  error
}

// Decode returns the domain event (domain.DecodeEvent of Type and Data:
// domain.ErrUnknownEvent for a type this binary does not know). It is
// decoded at most once however many projectors ask, and is shared: read
// it, never change it. When the store handed over the appender's value
// (RecordedEvent.Value, in process: exactly what decoding gives), that
// value is the event and nothing is decoded.
func (e *Event) Decode() (domain.Event, error) {
	if e.d == nil {
		if v, ok := e.Value.(domain.Event); ok && v.EventType() == e.Type {
			return v, nil
		}
		return domain.DecodeEvent(e.Type, e.Data)
	}
	e.d.once.Do(func() {
		e.d.ev, e.d.err = domain.DecodeEvent(e.d.typ, e.d.data)
		e.d.data = nil
	})
	return e.d.ev, e.d.err
}

// newDecoded prepares the decoding of re, done at the first Decode.
func newDecoded(re *eventstore.RecordedEvent) *decoded {
	return &decoded{typ: re.Type, data: re.Data}
}

// Envelopes wraps events for one projector's Apply (replay, tests): each
// is decoded when the projector asks, since no other projector shares it.
// Runners of several projectors share decodings instead (Decoder).
func Envelopes(events []eventstore.RecordedEvent) []Event {
	out := make([]Event, len(events))
	for i := range events {
		out[i] = Event{RecordedEvent: events[i]}
	}
	return out
}

// Decoder shares decodings between the projectors of one runner (in
// process, or Kafka's): each projector is fed by its own reader at its own
// pace, and the readers find here, by log position, the decoding another
// made of the same event, so that each event is decoded once for all of
// them. It remembers the last decoderSlots events handed out, enough for
// readers a few batches apart; a reader further behind decodes again. The
// zero value is ready; it is safe for concurrent use.
type Decoder struct {
	slots [decoderSlots]atomic.Pointer[decoded]
}

const (
	decoderBits  = 15
	decoderSlots = 1 << decoderBits
)

// Event makes the Event of re, sharing its decoding with the other readers.
// An event without a position (tests' hand-made logs) shares nothing.
func (c *Decoder) Event(re eventstore.RecordedEvent) Event {
	if re.Value != nil || c == nil || re.Position == (eventstore.Position{}) {
		// The appender's value (Decode returns it) needs no sharing; the
		// table's lookups cost a live click half a microsecond (ADR 0104).
		return Event{RecordedEvent: re}
	}
	h := (re.Position.Commit ^ re.Position.Prepare<<32) * 0x9e3779b97f4a7c15
	s := &c.slots[h>>(64-decoderBits)]
	if d := s.Load(); d != nil && d.pos == re.Position && d.typ == re.Type {
		return Event{RecordedEvent: re, d: d}
	}
	d := newDecoded(&re)
	d.pos = re.Position
	s.Store(d)
	return Event{RecordedEvent: re, d: d}
}
