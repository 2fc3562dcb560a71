package kafka

import (
	"testing"

	"github.com/linkd/linkd/eventstore"
)

func pos(n uint64) eventstore.Position { return eventstore.Position{Commit: n, Prepare: n} }

// The acknowledged position only covers batches whose events, and every
// earlier batch's events, are all acknowledged.
func TestTrackerAdvancesOverCompletePrefix(t *testing.T) {
	t.Parallel()
	var tr tracker
	tr.reset(pos(10))
	b1 := tr.add(pos(12), 2)
	b2 := tr.add(pos(15), 3)
	b3 := tr.add(pos(16), 1)

	steps := []struct {
		name    string
		ack     *batch
		acked   eventstore.Position
		pending int
	}{
		{"later batch done first", b3, pos(10), 5},
		{"middle batch partly", b2, pos(10), 4},
		{"first batch partly", b1, pos(10), 3},
		{"first batch done", b1, pos(12), 2},
		{"middle batch partly again", b2, pos(12), 1},
		{"middle batch done releases the last too", b2, pos(16), 0},
	}
	for _, s := range steps {
		tr.ack(s.ack)
		acked, pending := tr.state()
		if acked != s.acked || pending != s.pending {
			t.Fatalf("%s: acked %s pending %d, want %s and %d", s.name, acked, pending, s.acked, s.pending)
		}
	}
	if len(tr.queue) != 0 {
		t.Errorf("%d batches left in the queue", len(tr.queue))
	}
}

func TestShardIsStableAndSpreads(t *testing.T) {
	t.Parallel()
	hits := make([]int, 8)
	for i := range 1000 {
		s := "link-" + string(rune('a'+i%26)) + string(rune('a'+i/26))
		if shard(s, 8) != shard(s, 8) {
			t.Fatal("unstable")
		}
		hits[shard(s, 8)]++
	}
	for i, h := range hits {
		if h < 60 {
			t.Errorf("worker %d got %d of 1000 streams", i, h)
		}
	}
}
