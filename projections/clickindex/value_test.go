package clickindex

import (
	"github.com/linkd/linkd/projections"
	"maps"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/linkd/linkd/eventstore"
	"github.com/linkd/linkd/projections/projectiontest"
)

// TestValueGivesTheSameIndex: clicks handed over with their value (the
// embedded store's live subscribers, eventstore.RecordedEvent.Value) give
// the index, byte for byte, that their JSON alone gives, including clicks
// whose value does not round-trip (invalid UTF-8, a time zone RFC 3339
// cannot write), which are decoded.
func TestValueGivesTheSameIndex(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(11, 11))
	clicks := genClicks(rng, 3000, 40, t0, 30*time.Minute)
	lmt := time.FixedZone("LMT", 561)
	for i := range clicks {
		c := &clicks[i]
		switch rng.IntN(15) {
		case 0:
			c.Browser = "Chr\xffme"
		case 1:
			c.Referrer = "caf\xe9.example"
		case 2:
			if c.TrackingExpiresAt != nil {
				exp := c.TrackingExpiresAt.Add(-time.Hour).In(lmt)
				c.TrackingExpiresAt = &exp
			}
		case 3:
			c.Country = "<&>\u2028"
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
		for lo := 0; lo < len(events); lo += 700 {
			if err := s.Apply(t.Context(), projections.Envelopes(events[lo:min(lo+700, len(events))])); err != nil {
				t.Fatal(err)
			}
		}
		s.applyMu.Lock()
		s.mu.RLock()
		err := s.writeVersions()
		s.mu.RUnlock()
		s.applyMu.Unlock()
		if err != nil {
			t.Fatal(err)
		}
		return dump(t, s)
	}
	want, got := apply(plain), apply(valued)
	if len(want) < len(clicks)/2 {
		t.Fatalf("the index holds %d keys for %d clicks", len(want), len(clicks))
	}
	if !maps.Equal(got, want) {
		n := 0
		for k, v := range want {
			if got[k] != v && n < 5 {
				n++
				t.Errorf("key %q: from values %q, from JSON %q", k, got[k], v)
			}
		}
		t.Fatalf("the index from values differs (%d keys against %d)", len(got), len(want))
	}
}
