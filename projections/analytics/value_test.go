package analytics

import (
	"github.com/linkd/linkd/projections"
	"maps"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/linkd/linkd/eventstore"
	"github.com/linkd/linkd/projections/projectiontest"
)

// TestValueGivesTheSameStatistics: clicks handed over with their value
// (the embedded store's live subscribers, eventstore.RecordedEvent.Value)
// give the store, byte for byte, that their JSON alone gives, including
// clicks whose value does not round-trip (invalid UTF-8, a time zone RFC
// 3339 cannot write), which are decoded, in batches big enough to decode
// on every core.
func TestValueGivesTheSameStatistics(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(13, 13))
	clicks := genClicks(rng, 6000, 30, 3, 3, time.Date(2026, 3, 30, 0, 0, 0, 0, time.UTC))
	lmt := time.FixedZone("LMT", 561)
	for i := range clicks {
		c := &clicks[i]
		switch rng.IntN(8) {
		case 0:
			c.City = "M\xfcnchen"
		case 1:
			c.Browser = "Chrome\xff"
		case 2:
			c.Timestamp = c.Timestamp.In(lmt)
		case 3:
			c.Language = "<&>\u2028"
		}
	}
	f := newFeed()
	for i := range clicks {
		f.add(clicks[i])
	}
	plain := f.events
	valued := projectiontest.WithClickValues(t, plain, clicks)
	apply := func(events []eventstore.RecordedEvent) map[string]string {
		s := openTest(t, t.TempDir(), Options{})
		for lo := 0; lo < len(events); lo += 2000 {
			if err := s.Apply(t.Context(), projections.Envelopes(events[lo:min(lo+2000, len(events))])); err != nil {
				t.Fatal(err)
			}
		}
		s.applyMu.Lock()
		s.mu.RLock()
		defer s.applyMu.Unlock()
		defer s.mu.RUnlock()
		if err := s.writeVersions(); err != nil {
			t.Fatal(err)
		}
		it, err := s.db.NewIter(nil)
		if err != nil {
			t.Fatal(err)
		}
		defer it.Close()
		m := map[string]string{}
		for it.First(); it.Valid(); it.Next() {
			v, err := it.ValueAndErr()
			if err != nil {
				t.Fatal(err)
			}
			m[string(it.Key())] = string(v)
		}
		return m
	}
	want, got := apply(plain), apply(valued)
	if len(want) < 30 {
		t.Fatalf("the store holds %d keys for %d clicks", len(want), len(clicks))
	}
	if !maps.Equal(got, want) {
		n := 0
		for k, v := range want {
			if got[k] != v && n < 5 {
				n++
				t.Errorf("key %q: from values %q, from JSON %q", k, got[k], v)
			}
		}
		t.Fatalf("the statistics from values differ (%d keys against %d)", len(got), len(want))
	}
}
