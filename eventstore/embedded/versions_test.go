package embedded

import (
	"fmt"
	"hash/maphash"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/linkd/linkd/eventstore"
)

// StreamVersion, answered from its table, is never older than an append
// already acknowledged, nor newer than one not yet acknowledged, while
// appends to that stream and to others (sharing its slots) run.
func TestStreamVersionFollowsAppends(t *testing.T) {
	s := openT(t, Options{Dir: t.TempDir()})
	defer closeT(t, s)
	ctx := ctxT(t)
	const n = 300
	var acked atomic.Int64 // the last version acknowledged
	acked.Store(-1)
	var started atomic.Int64 // the version of the append in flight
	started.Store(-1)
	done := make(chan struct{})
	var wg sync.WaitGroup
	for r := range 2 {
		wg.Go(func() {
			for {
				select {
				case <-done:
					return
				default:
				}
				low := acked.Load()
				v, ok, err := s.StreamVersion(ctx, "ws-1")
				high := started.Load()
				if err != nil {
					t.Error(err)
					return
				}
				got := int64(-1)
				if ok {
					got = int64(v)
				}
				if got < low || got > high {
					t.Errorf("reader %d: version %d, acknowledged %d, in flight %d", r, got, low, high)
					return
				}
				runtime.Gosched() // let the writer's goroutines run
			}
		})
	}
	wg.Go(func() { // other streams, in every slot
		for i := 0; ; i++ {
			select {
			case <-done:
				return
			default:
			}
			if _, err := s.Append(ctx, fmt.Sprintf("other-%d", i), eventstore.Any(), testEvents(1, "o")...); err != nil {
				t.Error(err)
				return
			}
		}
	})
	for i := range n {
		started.Store(int64(i))
		res := mustAppend(t, s, "ws-1", eventstore.Any(), testEvents(1, "w")...)
		if res.NextExpectedVersion != uint64(i) {
			t.Fatalf("append %d at version %d", i, res.NextExpectedVersion)
		}
		acked.Store(int64(i))
		if v, ok, err := s.StreamVersion(ctx, "ws-1"); err != nil || !ok || v != uint64(i) {
			t.Fatalf("after append %d: StreamVersion %d %v %v", i, v, ok, err)
		}
	}
	close(done)
	wg.Wait()
}

// An entry is used only while its slot is not written: a write to a stream
// sharing the slot makes the next StreamVersion read the index.
func TestVersionTableSlots(t *testing.T) {
	var tab versionTable
	h := maphash.String(hashSeed, "ws-1")
	tab.put(nil, h, "ws-1", 7, true, 100)
	if v, ok, cached := tab.get(h, "ws-1"); !cached || !ok || v != 7 {
		t.Fatalf("get: %d %v %v", v, ok, cached)
	}
	if _, _, cached := tab.get(h, "ws-2"); cached {
		t.Error("another stream's entry was used")
	}
	tab.wrote(h+versionSlots, 101) // another stream of the same slot
	if _, _, cached := tab.get(h, "ws-1"); cached {
		t.Error("an entry older than a write to its slot was used")
	}
	tab.put(tab.slot(h), h, "ws-1", 8, true, 100) // read before that write
	if _, _, cached := tab.get(h, "ws-1"); cached {
		t.Error("an entry read before a write to its slot was put")
	}
	old := tab.slot(h)
	tab.put(nil, h, "ws-1", 8, true, 101) // the slot changed since nil
	if tab.slot(h) != old {
		t.Error("put replaced an entry it had not read")
	}
}
