package embedded

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/linkd/linkd/eventstore"
)

func part(stream string, exp eventstore.ExpectedVersion, evs ...eventstore.EventData) eventstore.StreamAppend {
	return eventstore.StreamAppend{Stream: stream, Expected: exp, Events: evs}
}

// A multi-stream append writes every part, in order, each stream with its
// own versions, and a subscriber sees them like any appends.
func TestAppendMulti(t *testing.T) {
	s := openT(t, Options{Dir: t.TempDir()})
	defer closeT(t, s)
	ctx := ctxT(t)
	sub := subscribeT(ctx, t, s)
	defer sub.Close()
	mustAppend(t, s, "a-1", eventstore.NoStream(), testEvents(1, "zero")...)
	res, err := s.AppendMulti(ctx, part("a-1", eventstore.Exact(0), testEvents(2, "one")...), part("b-1", eventstore.NoStream(), testEvents(1, "two")...))
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 2 || res[0].NextExpectedVersion != 2 || res[1].NextExpectedVersion != 0 || !res[0].Position.Less(res[1].Position) {
		t.Fatalf("results %+v", res)
	}
	all := checkConsistent(t, s)
	want := []string{"a-1@0", "a-1@1", "a-1@2", "b-1@0"}
	if len(all) != len(want) {
		t.Fatalf("%d events, want %d", len(all), len(want))
	}
	for i, ev := range all {
		got, err := sub.Recv(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if got.ID != ev.ID || got.Position != ev.Position {
			t.Errorf("subscriber's event %d is %s@%d, the log's %s@%d", i, got.Stream, got.Version, ev.Stream, ev.Version)
		}
		if s := ev.Stream + "@" + string(rune('0'+ev.Version)); s != want[i] {
			t.Errorf("event %d is %s, want %s", i, s, want[i])
		}
	}
	if res[1].Position != all[3].Position {
		t.Errorf("b-1's result at %v, its event at %v", res[1].Position, all[3].Position)
	}
}

// A part that fails its expected version fails the whole append: nothing is
// written, and the error names the stream.
func TestAppendMultiAllOrNothing(t *testing.T) {
	s := openT(t, Options{Dir: t.TempDir()})
	defer closeT(t, s)
	ctx := ctxT(t)
	mustAppend(t, s, "a-1", eventstore.NoStream(), testEvents(1, "zero")...)
	_, err := s.AppendMulti(ctx, part("c-1", eventstore.NoStream(), testEvents(1, "c")...), part("a-1", eventstore.NoStream(), testEvents(1, "a")...))
	if !errors.Is(err, eventstore.ErrWrongExpectedVersion) || !strings.Contains(err.Error(), `"a-1"`) {
		t.Fatalf("err %v, want a wrong version of a-1", err)
	}
	if _, ok, _ := s.StreamVersion(ctx, "c-1"); ok {
		t.Fatal("c-1 was written by a failed append")
	}
	if all := checkConsistent(t, s); len(all) != 1 {
		t.Fatalf("%d events, want 1", len(all))
	}
	mustAppend(t, s, "c-1", eventstore.NoStream(), testEvents(1, "c")...)

	for _, bad := range [][]eventstore.StreamAppend{
		{part("d-1", eventstore.Any(), testEvents(1, "d")...), part("d-1", eventstore.Any(), testEvents(1, "d")...)},
		{part("d-1", eventstore.Any(), testEvents(1, "d")...), part("e-1", eventstore.Any())},
		{part("$d-1", eventstore.Any(), testEvents(1, "d")...)},
	} {
		if _, err := s.AppendMulti(ctx, bad...); !errors.Is(err, eventstore.ErrInvalidEvent) {
			t.Errorf("%d parts: err %v, want ErrInvalidEvent", len(bad), err)
		}
	}
}

// Concurrent multi-stream appends to overlapping streams: each writes whole
// or fails whole on a version, and the streams stay gapless.
func TestAppendMultiConcurrent(t *testing.T) {
	s := openT(t, Options{Dir: t.TempDir()})
	defer closeT(t, s)
	ctx := ctxT(t)
	var wg sync.WaitGroup
	var mu sync.Mutex
	won := map[string]int{}
	for i := range 40 {
		wg.Go(func() {
			own := "own-" + string(rune('a'+i%26)) + string(rune('a'+i/26))
			_, err := s.AppendMulti(ctx, part(own, eventstore.NoStream(), testEvents(1, "o")...), part("shared-1", eventstore.Any(), testEvents(2, "s")...))
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			won[own]++
			mu.Unlock()
		})
	}
	wg.Wait()
	all := checkConsistent(t, s)
	if len(all) != 40*3 || len(won) != 40 {
		t.Fatalf("%d events, %d appends; want 120 and 40", len(all), len(won))
	}
	// A part's events are adjacent in the log, and its other part follows.
	for i := 0; i < len(all); i += 3 {
		if !strings.HasPrefix(all[i].Stream, "own-") || all[i+1].Stream != "shared-1" || all[i+2].Stream != "shared-1" || all[i+2].Version != all[i+1].Version+1 {
			t.Fatalf("events %d-%d: %s@%d %s@%d %s@%d", i, i+2, all[i].Stream, all[i].Version, all[i+1].Stream, all[i+1].Version, all[i+2].Stream, all[i+2].Version)
		}
	}
}

// A multi-stream append torn by a crash is dropped whole at Open, and one
// that is complete is indexed whole when the index is rebuilt from the log.
func TestAppendMultiTorn(t *testing.T) {
	dir := t.TempDir()
	s := openT(t, Options{Dir: dir})
	ctx := ctxT(t)
	mustAppend(t, s, "a-1", eventstore.NoStream(), testEvents(1, "zero")...)
	if _, err := s.AppendMulti(ctx, part("a-1", eventstore.Exact(0), testEvents(2, "one")...), part("b-1", eventstore.NoStream(), testEvents(1, "two")...)); err != nil {
		t.Fatal(err)
	}
	want := checkConsistent(t, s)
	if _, err := s.AppendMulti(ctx, part("c-1", eventstore.NoStream(), testEvents(1, "three")...), part("b-1", eventstore.Exact(0), testEvents(1, "four")...),
		part("d-1", eventstore.NoStream(), testEvents(1, "five")...)); err != nil {
		t.Fatal(err)
	}
	torn := checkConsistent(t, s)
	closeT(t, s)

	// Cut the second append after its first two parts, and drop the index
	// so that Open rebuilds it from the log.
	path := lastSegment(t, dir)
	cut := int64(torn[len(torn)-2].Position.Commit) - lastSegmentBase(t, dir)
	if err := os.Truncate(path, cut); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(dir, indexSub)); err != nil {
		t.Fatal(err)
	}
	s = openT(t, Options{Dir: dir})
	defer closeT(t, s)
	sameEvents(t, "after the torn append", checkConsistent(t, s), want)
	for _, stream := range []string{"c-1", "d-1"} {
		if _, ok, _ := s.StreamVersion(ctx, stream); ok {
			t.Errorf("%s holds events of the torn append", stream)
		}
	}
	if res := mustAppend(t, s, "b-1", eventstore.Exact(0), testEvents(1, "again")...); res.NextExpectedVersion != 1 {
		t.Fatalf("b-1 after recovery: %+v", res)
	}
	checkConsistent(t, s)
}

func lastSegmentBase(t *testing.T, dir string) int64 {
	t.Helper()
	segs, err := listSegments(filepath.Join(dir, logSub))
	if err != nil || len(segs) == 0 {
		t.Fatalf("list segments: %v (%d)", err, len(segs))
	}
	return segs[len(segs)-1].base
}

// A multi-stream append names at most MaxAppendStreams streams, so that a
// group of appends stays within what the version cache holds.
func TestAppendMultiStreamsBounded(t *testing.T) {
	if maxGroupReqs+MaxAppendStreams > minCacheSize {
		t.Fatalf("a group may write %d streams, the cache holds %d at least", maxGroupReqs+MaxAppendStreams, minCacheSize)
	}
	s := openT(t, Options{Dir: t.TempDir()})
	defer closeT(t, s)
	parts := make([]eventstore.StreamAppend, MaxAppendStreams+1)
	for i := range parts {
		parts[i] = part(fmt.Sprintf("s-%d", i), eventstore.NoStream(), testEvents(1, "x")...)
	}
	if _, err := s.AppendMulti(ctxT(t), parts...); !errors.Is(err, eventstore.ErrInvalidEvent) {
		t.Fatalf("%d streams: err %v, want ErrInvalidEvent", len(parts), err)
	}
	if _, err := s.AppendMulti(ctxT(t), parts[:MaxAppendStreams]...); err != nil {
		t.Fatal(err)
	}
	checkConsistent(t, s)
}
