package esdb

import (
	"reflect"
	"testing"
	"time"

	"github.com/EventStore/EventStore-Client-Go/v4/esdb"
	"github.com/google/uuid"

	"github.com/linkd/linkd/eventstore"
)

func TestExpectedRevision(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   eventstore.ExpectedVersion
		want esdb.ExpectedRevision
	}{
		{"any", eventstore.Any(), esdb.Any{}},
		{"no stream", eventstore.NoStream(), esdb.NoStream{}},
		{"stream exists", eventstore.StreamExists(), esdb.StreamExists{}},
		{"exact 0", eventstore.Exact(0), esdb.Revision(0)},
		{"exact 41", eventstore.Exact(41), esdb.Revision(41)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := expectedRevision(tt.in); got != tt.want {
				t.Errorf("expectedRevision(%v) = %#v, want %#v", tt.in, got, tt.want)
			}
		})
	}
}

func TestPositions(t *testing.T) {
	t.Parallel()
	if got := allPosition(eventstore.Start); got != (esdb.Start{}) {
		t.Errorf("allPosition(Start) = %#v, want esdb.Start{}", got)
	}
	p := eventstore.Position{Commit: 20, Prepare: 10}
	if got := allPosition(p); got != (esdb.Position{Commit: 20, Prepare: 10}) {
		t.Errorf("allPosition(%v) = %#v", p, got)
	}
	if got := position(esdb.Position{Commit: 20, Prepare: 10}); got != p {
		t.Errorf("position = %v, want %v", got, p)
	}

	tests := []struct {
		name     string
		from, at eventstore.Position
		want     bool
	}{
		{"start keeps everything", eventstore.Start, eventstore.Position{}, true},
		{"the event at from is skipped", p, p, false},
		{"an earlier event is skipped", p, eventstore.Position{Commit: 19, Prepare: 19}, false},
		{"a later commit is kept", p, eventstore.Position{Commit: 21, Prepare: 5}, true},
		{"same commit, later prepare is kept", p, eventstore.Position{Commit: 20, Prepare: 11}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := after(tt.from, tt.at); got != tt.want {
				t.Errorf("after(%v, %v) = %v, want %v", tt.from, tt.at, got, tt.want)
			}
		})
	}
}

func TestClientConnString(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in, want string
		discover bool
	}{
		{in: "esdb://localhost:2113?tls=false", want: "esdb://localhost:2113?tls=false"},
		{in: "esdb+discover://cluster.local:2113", want: "esdb+discover://cluster.local:2113", discover: true},
		{in: "kurrentdb://admin:changeit@localhost:2113?tls=false", want: "esdb://admin:changeit@localhost:2113?tls=false"},
		{in: "kurrentdb+discover://cluster.local:2113", want: "esdb+discover://cluster.local:2113", discover: true},
		{in: "KurrentDB://localhost:2113", want: "esdb://localhost:2113"},
		{in: "kurrent://localhost:2113", want: "esdb://localhost:2113"},
		{in: "esdb://host1:2113,host2:2113,host3:2113?tls=false", want: "esdb://host1:2113,host2:2113,host3:2113?tls=false"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := clientConnString(tt.in)
			if err != nil || got != tt.want {
				t.Fatalf("clientConnString(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
			}
			conf, err := esdb.ParseConnectionString(got)
			if err != nil {
				t.Fatalf("the client rejects %q: %v", got, err)
			}
			if conf.DnsDiscover != tt.discover {
				t.Errorf("DnsDiscover = %v, want %v", conf.DnsDiscover, tt.discover)
			}
		})
	}
	for _, bad := range []string{"", "localhost:2113", "http://localhost:2113", "tcp://localhost:1113"} {
		if got, err := clientConnString(bad); err == nil {
			t.Errorf("clientConnString(%q) = %q, want an error", bad, got)
		}
	}
}

func TestEventData(t *testing.T) {
	t.Parallel()
	id := uuid.New()
	in := eventstore.EventData{ID: id, Type: "LinkCreated", Data: []byte(`{"a":1}`), Metadata: []byte(`{"m":2}`)}
	want := esdb.EventData{EventID: id, EventType: "LinkCreated", ContentType: esdb.ContentTypeJson, Data: in.Data, Metadata: in.Metadata}
	if got := eventData(in); !reflect.DeepEqual(got, want) {
		t.Errorf("eventData = %+v, want %+v", got, want)
	}
	a, b := eventData(eventstore.EventData{Type: "T"}), eventData(eventstore.EventData{Type: "T"})
	if a.EventID == uuid.Nil || a.EventID == b.EventID {
		t.Errorf("generated ids %v and %v, want two new ones", a.EventID, b.EventID)
	}
}

func TestRecorded(t *testing.T) {
	t.Parallel()
	id := uuid.New()
	at := time.Date(2025, 1, 2, 3, 4, 5, 600, time.UTC)
	in := &esdb.ResolvedEvent{Event: &esdb.RecordedEvent{
		EventID: id, EventType: "LinkCreated", StreamID: "link-1", EventNumber: 3,
		Position: esdb.Position{Commit: 200, Prepare: 100}, CreatedDate: at,
		Data: []byte(`{}`), UserMetadata: []byte(`{"m":1}`),
	}}
	want := eventstore.RecordedEvent{
		ID: id, Stream: "link-1", Version: 3, Position: eventstore.Position{Commit: 200, Prepare: 100},
		Type: "LinkCreated", Data: []byte(`{}`), Metadata: []byte(`{"m":1}`), Time: at,
	}
	got, ok := recorded(in)
	if !ok || !reflect.DeepEqual(got, want) {
		t.Errorf("recorded = %+v, %v; want %+v", got, ok, want)
	}
	if _, ok := recorded(nil); ok {
		t.Error("recorded(nil) is ok")
	}
	if _, ok := recorded(&esdb.ResolvedEvent{}); ok {
		t.Error("recorded of an empty event is ok")
	}
}

func TestSubscriptionFilter(t *testing.T) {
	t.Parallel()
	all := subscriptionFilter(eventstore.Filter{})
	if all.Type != esdb.StreamFilterType || all.Regex != `^[^$]` || len(all.Prefixes) != 0 {
		t.Errorf("filter of everything = %+v", all)
	}
	some := subscriptionFilter(eventstore.Filter{StreamPrefixes: []string{"link-", "click-"}})
	if some.Type != esdb.StreamFilterType || some.Regex != "" || !reflect.DeepEqual(some.Prefixes, []string{"link-", "click-"}) {
		t.Errorf("filter of prefixes = %+v", some)
	}
}
