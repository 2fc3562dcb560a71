package versioncache

import (
	"maps"
	"slices"
	"testing"

	"github.com/linkd/linkd/eventstore"
)

func TestCacheKeepsTwoGenerations(t *testing.T) {
	c := New(2)
	c.Put("a", 1)
	c.Put("b", 2)
	c.Put("c", 3) // cur {c}, old {a, b}
	if v, ok := c.Get("a"); !ok || v != 1 {
		t.Fatalf("Get(a) = %d, %v from the old generation", v, ok) // copied forward: cur {c, a}
	}
	c.Put("d", 4) // cur {d}, old {c, a}: b is gone
	if _, ok := c.Get("b"); ok {
		t.Errorf("b survived two generations without a hit")
	}
	for s, want := range map[string]uint64{"d": 4} {
		if v, ok := c.Get(s); !ok || v != want {
			t.Errorf("Get(%q) = %d, %v; want %d", s, v, ok, want)
		}
	}
	c.Reset()
	if _, ok := c.Get("d"); ok {
		t.Errorf("Reset kept d")
	}
}

func TestDedupReadsVersionsOnlyAtOrBelowTheCheckpoint(t *testing.T) {
	applied := eventstore.Position{Commit: 100, Prepare: 100}
	stored := map[string]uint64{"a": 3, "b": 7}
	var looked []string
	d := NewDedup(applied, func(stream string) (uint64, bool, error) {
		looked = append(looked, stream)
		v, ok := stored[stream]
		return v, ok, nil
	})
	at := func(stream string, version, pos uint64) *eventstore.RecordedEvent {
		return &eventstore.RecordedEvent{Stream: stream, Version: version, Position: eventstore.Position{Commit: pos, Prepare: pos}}
	}
	for _, c := range []struct {
		ev   *eventstore.RecordedEvent
		want bool
	}{
		{at("a", 3, 90), false},  // redelivered: at its stream's version
		{at("a", 4, 100), true},  // at the checkpoint, newer than the stream
		{at("a", 4, 100), false}, // twice in one batch
		{at("b", 8, 101), true},  // above the checkpoint: not looked up
		{at("c", 0, 102), true},  // a new stream above it: not looked up
		{at("c", 0, 102), false}, // twice in one batch
		{at("d", 0, 50), true},   // below, never applied
	} {
		got, err := d.New(c.ev)
		if err != nil || got != c.want {
			t.Fatalf("New(%s@%d, %v) = %v, %v; want %v", c.ev.Stream, c.ev.Version, c.ev.Position, got, err, c.want)
		}
	}
	// a twice: a skipped event does not enter Next (the stores cache versions).
	if want := []string{"a", "a", "d"}; !slices.Equal(looked, want) {
		t.Errorf("looked up %v, want %v", looked, want)
	}
	if want := map[string]uint64{"a": 4, "b": 8, "c": 0, "d": 0}; !maps.Equal(d.Next, want) {
		t.Errorf("Next = %v, want %v", d.Next, want)
	}
}
