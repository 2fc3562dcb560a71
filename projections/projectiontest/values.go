package projectiontest

import (
	"testing"

	"github.com/linkd/linkd/domain/click"
	"github.com/linkd/linkd/eventstore"
)

// WithClickValues copies events, the ClickRecorded events of clicks in
// order, and gives each click whose JSON decodes back to it exactly its
// value (eventstore.RecordedEvent.Value), as RecordClick and the embedded
// store do; the others keep none. It fails t unless some clicks get one
// and some do not, so that a test of both paths covers both.
func WithClickValues(t testing.TB, events []eventstore.RecordedEvent, clicks []click.Recorded) []eventstore.RecordedEvent {
	t.Helper()
	valued := make([]eventstore.RecordedEvent, len(events))
	copy(valued, events)
	with := 0
	for i := range valued {
		c := clicks[i]
		if _, exact := c.AppendJSONExact(nil); exact {
			valued[i].Value = &c
			with++
		}
	}
	if with == 0 || with == len(clicks) {
		t.Fatalf("%d of %d clicks have a value: the test misses one path", with, len(clicks))
	}
	return valued
}
