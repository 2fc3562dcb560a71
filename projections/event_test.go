package projections

import (
	"testing"
	"time"

	"github.com/linkd/linkd/domain/click"
	"github.com/linkd/linkd/eventstore"
)

func clickEvent(t *testing.T, pos uint64, c *click.Recorded) eventstore.RecordedEvent {
	t.Helper()
	return eventstore.RecordedEvent{
		Stream: click.Stream(c.LinkID), Position: eventstore.Position{Commit: pos, Prepare: pos},
		Type: click.EventRecorded, Data: c.AppendJSON(nil), Time: c.Timestamp,
	}
}

// The feeders of one runner share an event's decoding: the second reader
// of a position gets the first one's domain event, not a decoding of its
// own; a different position decodes apart.
func TestDecoderDecodesOncePerPosition(t *testing.T) {
	t.Parallel()
	var dec Decoder
	c := &click.Recorded{LinkID: "L1", ClickID: "c1", Timestamp: time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC)}
	re := clickEvent(t, 100, c)
	a, b := dec.Event(re), dec.Event(re)
	ea, err := a.Decode()
	if err != nil {
		t.Fatal(err)
	}
	eb, err := b.Decode()
	if err != nil {
		t.Fatal(err)
	}
	if ea != eb {
		t.Fatal("two readers of one position decoded it twice")
	}
	if got := ea.(*click.Recorded); got.ClickID != "c1" || got.LinkID != "L1" {
		t.Fatalf("decoded %+v", got)
	}
	o := new(Decoder).Event(re)
	other, err := o.Decode()
	if err != nil {
		t.Fatal(err)
	}
	if other == ea {
		t.Fatal("another runner shared this runner's decoding")
	}
	next := clickEvent(t, 200, &click.Recorded{LinkID: "L2", ClickID: "c2"})
	n := dec.Event(next)
	en, err := n.Decode()
	if err != nil {
		t.Fatal(err)
	}
	if en.(*click.Recorded).ClickID != "c2" {
		t.Fatalf("position 200 decoded as %+v", en)
	}
}

// An event handed over with the appender's value is that value, never
// decoded; a value of another type is ignored.
func TestDecoderTakesTheAppendersValue(t *testing.T) {
	t.Parallel()
	var dec Decoder
	c := &click.Recorded{LinkID: "L1", ClickID: "c1"}
	re := clickEvent(t, 7, c)
	re.Value = c
	v := dec.Event(re)
	e, err := v.Decode()
	if err != nil || e != c {
		t.Fatalf("got %p (%v), want the appender's value %p", e, err, c)
	}
	re.Value = "not an event"
	re.Position.Commit, re.Position.Prepare = 8, 8
	v = dec.Event(re)
	e, err = v.Decode()
	if err != nil || e == c || e.(*click.Recorded).ClickID != "c1" {
		t.Fatalf("got %+v (%v)", e, err)
	}
	env := Envelopes([]eventstore.RecordedEvent{clickEvent(t, 9, c)})
	env[0].Value = c
	if e, _ := env[0].Decode(); e != c {
		t.Fatal("Envelopes ignored the appender's value")
	}
}
