package versioncache

import (
	"maps"
	"testing"
	"time"

	"github.com/linkd/linkd/eventstore"
)

func pos(n uint64) eventstore.Position { return eventstore.Position{Commit: n, Prepare: n} }

func TestBehindWritesVersionsOnceAnInterval(t *testing.T) {
	b := Behind{On: true, Every: time.Second}
	t0 := time.Unix(1_700_000_000, 0)

	p := b.Plan(map[string]uint64{"a": 1}, pos(10), pos(11), t0, false)
	if p.Versions != nil || p.DeleteGap {
		t.Fatalf("first batch writes %v (delete gap %v); want nothing but the gap", p.Versions, p.DeleteGap)
	}
	g, err := DecodeGap(p.SetGap)
	if err != nil || !g.Open || g.From != pos(10) {
		t.Fatalf("first batch's gap = %+v, %v; want open from 10", g, err)
	}
	b.Done(p, t0)
	if v, ok := b.Pending("a"); !ok || v != 1 {
		t.Fatalf("Pending(a) = %d, %v", v, ok)
	}

	p = b.Plan(map[string]uint64{"b": 4}, pos(11), pos(12), t0.Add(500*time.Millisecond), false)
	if p.Versions != nil || p.SetGap != nil || p.DeleteGap {
		t.Fatalf("second batch writes %v, gap %v/%v; want nothing", p.Versions, p.SetGap, p.DeleteGap)
	}
	b.Done(p, t0.Add(500*time.Millisecond))

	p = b.Plan(map[string]uint64{"a": 2}, pos(12), pos(13), t0.Add(time.Second), false)
	if want := map[string]uint64{"a": 2, "b": 4}; !maps.Equal(p.Versions, want) || !p.DeleteGap {
		t.Fatalf("batch a second later writes %v (delete gap %v); want %v and the gap deleted", p.Versions, p.DeleteGap, want)
	}
	b.Done(p, t0.Add(time.Second))
	if b.Waiting() != 0 || b.Gap().Exists() {
		t.Fatalf("after the flush: %d waiting, gap %+v", b.Waiting(), b.Gap())
	}

	// Max waiting versions also flush, and force does (Close).
	b.Max = 2
	p = b.Plan(map[string]uint64{"c": 1, "d": 1}, pos(13), pos(14), t0.Add(time.Second), false)
	if len(p.Versions) != 2 {
		t.Errorf("Max reached: writes %v", p.Versions)
	}
	b.Done(p, t0.Add(time.Second))
	p = b.Plan(map[string]uint64{"e": 1}, pos(14), pos(15), t0.Add(time.Second), false)
	b.Done(p, t0.Add(time.Second))
	p = b.Plan(nil, pos(15), pos(15), t0.Add(time.Second), true)
	if want := map[string]uint64{"e": 1}; !maps.Equal(p.Versions, want) || !p.DeleteGap {
		t.Errorf("forced: writes %v (delete gap %v), want %v", p.Versions, p.DeleteGap, want)
	}
}

func TestBehindOffWritesEveryBatch(t *testing.T) {
	var b Behind
	next := map[string]uint64{"a": 1}
	p := b.Plan(next, pos(1), pos(2), time.Now(), false)
	if !maps.Equal(p.Versions, next) || p.SetGap != nil || p.DeleteGap {
		t.Fatalf("off: plan %+v", p)
	}
	b.Done(p, time.Now())
	if b.Waiting() != 0 {
		t.Errorf("off: %d waiting", b.Waiting())
	}
}

func TestBehindLoadClosesAnOpenGap(t *testing.T) {
	var b Behind
	open := Gap{From: pos(10), Open: true, set: true}.Encode()
	changed, err := b.Load(open, pos(20))
	if err != nil || !changed {
		t.Fatalf("Load(open) = %v, %v", changed, err)
	}
	g := b.Gap()
	if !g.Exists() || g.Open || g.From != pos(10) || g.To != pos(20) {
		t.Fatalf("gap = %+v; want (10, 20]", g)
	}
	for p, in := range map[uint64]bool{10: false, 11: true, 20: true, 21: false} {
		if g.Contains(pos(p)) != in {
			t.Errorf("Contains(%d) = %v", p, !in)
		}
	}
	// Off (Kafka), the checkpoint stays; on, the feeder goes back to 10.
	if r := b.Resume(pos(20)); r != pos(20) {
		t.Errorf("off: Resume = %v", r)
	}
	b.On = true
	if r := b.Resume(pos(20)); r != pos(10) {
		t.Errorf("on: Resume = %v, want 10", r)
	}
	// Repairing, every batch writes its versions; the one that passes
	// the end deletes the gap.
	p := b.Plan(map[string]uint64{"a": 3}, pos(20), pos(15), time.Now(), false)
	if p.Versions == nil || p.DeleteGap {
		t.Fatalf("repairing: plan %+v", p)
	}
	b.Done(p, time.Now())
	p = b.Plan(map[string]uint64{"a": 4}, pos(20), pos(21), time.Now(), false)
	if p.Versions["a"] != 4 || !p.DeleteGap {
		t.Fatalf("passing the gap: plan %+v", p)
	}
	b.Done(p, time.Now())
	if b.Gap().Exists() || b.Resume(pos(21)) != pos(21) {
		t.Errorf("after the repair: gap %+v", b.Gap())
	}

	// An open gap with nothing applied after it is dropped.
	changed, err = b.Load(Gap{From: pos(20), Open: true, set: true}.Encode(), pos(20))
	if err != nil || !changed || b.Gap().Exists() {
		t.Errorf("Load(open, nothing after) = %v, %v, gap %+v", changed, err, b.Gap())
	}
	// A closed one is kept as it is.
	changed, err = b.Load(Gap{From: pos(1), To: pos(5), set: true}.Encode(), pos(30))
	if err != nil || changed || b.Gap().To != pos(5) {
		t.Errorf("Load(closed) = %v, %v, gap %+v", changed, err, b.Gap())
	}
	if _, err := b.Load([]byte{1, 2}, pos(1)); err == nil {
		t.Error("Load(corrupt) succeeded")
	}
}

func TestDedupLearnsVersionsInAGap(t *testing.T) {
	stored := map[string]uint64{"a": 1, "c": 9}
	d := NewDedup(pos(20), func(stream string) (uint64, bool, error) {
		v, ok := stored[stream]
		return v, ok, nil
	})
	d.Gap = Gap{From: pos(10), To: pos(20), set: true}
	at := func(stream string, version, p uint64) *eventstore.RecordedEvent {
		return &eventstore.RecordedEvent{Stream: stream, Version: version, Position: pos(p)}
	}
	for _, c := range []struct {
		ev   *eventstore.RecordedEvent
		want bool
	}{
		{at("a", 1, 5), false},  // below the gap: its stored version says applied
		{at("a", 2, 12), false}, // in the gap: applied, version learned
		{at("b", 0, 13), false}, // in the gap, a stream never stored
		{at("c", 3, 14), false}, // in the gap, older than stored (Kafka wrote later ones)
		{at("a", 3, 21), true},  // after it
	} {
		if got, err := d.New(c.ev); err != nil || got != c.want {
			t.Fatalf("New(%s@%d, %v) = %v, %v; want %v", c.ev.Stream, c.ev.Version, c.ev.Position, got, err, c.want)
		}
	}
	if want := map[string]uint64{"a": 3, "b": 0}; !maps.Equal(d.Next, want) {
		t.Errorf("Next = %v, want %v", d.Next, want)
	}
}

// Last looks at the waiting versions first; written behind, it never
// answers from the cache, which would hold a version the flush made stale.
func TestBehindLast(t *testing.T) {
	db := map[string]uint64{"x": 5}
	read := func(stream string) (uint64, bool, error) {
		v, ok := db[stream]
		return v, ok, nil
	}
	t0 := time.Unix(1_700_000_000, 0)
	for _, on := range []bool{false, true} {
		b := Behind{On: on, Every: time.Second}
		c := New(16)
		db["x"] = 5
		if v, ok, err := b.Last(c, "x", read); err != nil || !ok || v != 5 {
			t.Fatalf("on=%v: Last(x) = %d, %v, %v; want 5 from the database", on, v, ok, err)
		}
		// write stores what a batch writes.
		write := func(p Plan) {
			if v, ok := p.Versions["x"]; ok {
				db["x"] = v
			}
		}
		p := b.Plan(map[string]uint64{"x": 7}, pos(1), pos(2), t0, false)
		write(p) // on: nothing yet
		b.Committed(p, c, t0)
		if v, ok, _ := b.Last(c, "x", read); !ok || v != 7 {
			t.Fatalf("on=%v: Last(x) = %d after applying 7", on, v)
		}
		// The flush writes 7 to the database; a later read must not find 5.
		p = b.Plan(nil, pos(2), pos(2), t0.Add(time.Second), true)
		write(p)
		b.Committed(p, c, t0.Add(time.Second))
		if db["x"] != 7 {
			t.Fatalf("on=%v: the database holds %d after the flush", on, db["x"])
		}
		if v, ok, _ := b.Last(c, "x", read); !ok || v != 7 {
			t.Fatalf("on=%v: Last(x) = %d after the flush, want 7", on, v)
		}
		if _, ok, _ := b.Last(c, "none", read); ok {
			t.Fatalf("on=%v: a stream never applied has a version", on)
		}
	}
}
