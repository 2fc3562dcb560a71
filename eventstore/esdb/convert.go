package esdb

import (
	"strings"

	"github.com/EventStore/EventStore-Client-Go/v4/esdb"
	"github.com/google/uuid"

	"github.com/linkd/linkd/eventstore"
)

// expectedRevision maps the port's expectation to the client's.
func expectedRevision(e eventstore.ExpectedVersion) esdb.ExpectedRevision {
	switch {
	case e.IsNoStream():
		return esdb.NoStream{}
	case e.IsStreamExists():
		return esdb.StreamExists{}
	}
	if v, ok := e.Exact(); ok {
		return esdb.Revision(v)
	}
	return esdb.Any{}
}

// allPosition is where a forward read or subscription of $all starts for
// events after p. EventStoreDB starts at p itself, so callers skip the event
// at p (see after).
func allPosition(p eventstore.Position) esdb.AllPosition {
	if p.IsZero() {
		return esdb.Start{}
	}
	return esdb.Position{Commit: p.Commit, Prepare: p.Prepare}
}

func position(p esdb.Position) eventstore.Position {
	return eventstore.Position{Commit: p.Commit, Prepare: p.Prepare}
}

// after reports whether pos comes strictly after p, Start being before
// every event.
func after(p, pos eventstore.Position) bool {
	return p.IsZero() || p.Less(pos)
}

func isSystemStream(stream string) bool { return strings.HasPrefix(stream, "$") }

// recorded converts an event as read. Links are not resolved, so the
// original event is the event itself.
func recorded(r *esdb.ResolvedEvent) (eventstore.RecordedEvent, bool) {
	if r == nil || r.OriginalEvent() == nil {
		return eventstore.RecordedEvent{}, false
	}
	e := r.OriginalEvent()
	return eventstore.RecordedEvent{
		ID:       e.EventID,
		Stream:   e.StreamID,
		Version:  e.EventNumber,
		Position: position(e.Position),
		Type:     e.EventType,
		Data:     e.Data,
		Metadata: e.UserMetadata,
		Time:     e.CreatedDate.UTC(),
	}, true
}

// eventData converts an event to append, giving it an id when it has none.
func eventData(e eventstore.EventData) esdb.EventData {
	id := e.ID
	if id == uuid.Nil {
		id = uuid.New()
	}
	return esdb.EventData{
		EventID:     id,
		EventType:   e.Type,
		ContentType: esdb.ContentTypeJson,
		Data:        e.Data,
		Metadata:    e.Metadata,
	}
}

// subscriptionFilter is the server-side filter of a subscription. The
// client sends either prefixes or a regular expression, not both: with
// prefixes the prefixes go to the server and system streams are dropped on
// our side (Filter.Match); without, a stream-name expression drops system
// streams on the server. Stream names, not event types: the port defines
// system events by their stream ("$..."), and esdb.ExcludeSystemEventsFilter
// filters by event type.
func subscriptionFilter(f eventstore.Filter) *esdb.SubscriptionFilter {
	if len(f.StreamPrefixes) > 0 {
		return &esdb.SubscriptionFilter{Type: esdb.StreamFilterType, Prefixes: f.StreamPrefixes}
	}
	return &esdb.SubscriptionFilter{Type: esdb.StreamFilterType, Regex: `^[^$]`}
}
