// Package projectiontest helps projector tests: Log builds recorded events
// as an event store numbers them.
package projectiontest

import (
	"testing"
	"time"

	"github.com/linkd/linkd/domain"
	"github.com/linkd/linkd/eventstore"
)

// Log builds recorded events: versions per stream from 0, global positions
// from 1, event n at Start + n ms. The zero value is ready to use.
type Log struct {
	Start  time.Time
	Pos    uint64
	Events []eventstore.RecordedEvent

	versions map[string]uint64
}

// Add appends e to stream.
func (l *Log) Add(t testing.TB, stream string, e domain.Event) {
	t.Helper()
	if l.versions == nil {
		l.versions = map[string]uint64{}
	}
	name, data, err := domain.EncodeEvent(e)
	if err != nil {
		t.Fatal(err)
	}
	v, seen := l.versions[stream]
	if seen {
		v++
	}
	l.versions[stream] = v
	l.Pos++
	l.Events = append(l.Events, eventstore.RecordedEvent{Stream: stream, Version: v, Position: eventstore.Position{Commit: l.Pos, Prepare: l.Pos},
		Type: name, Data: data, Time: l.Start.Add(time.Duration(l.Pos) * time.Millisecond)})
}
