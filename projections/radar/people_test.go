package radar

import (
	"cmp"
	"context"
	"fmt"
	"github.com/linkd/linkd/projections"
	"math"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/linkd/linkd/domain"
	"github.com/linkd/linkd/domain/radar"
	"github.com/linkd/linkd/eventstore"
)

// people (the hits read from the newest back) lists what grouping every
// hit of the range lists, page after page: with many visitors active at
// the same millisecond, in ranges that cut visits, and with every limit.
func TestPeopleEqualsGroupingTheRange(t *testing.T) {
	s, err := Open(filepath.Join(t.TempDir(), "radar.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rng := rand.New(rand.NewPCG(1, 2))
	day0 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	versions := map[string]uint64{}
	var events []eventstore.RecordedEvent
	for i := range 3000 {
		v := fmt.Sprint("v", rng.IntN(400))
		// Seconds apart, a tenth of the hits sharing their second.
		at := day0.Add(time.Duration(i/10*10+rng.IntN(2)) * time.Second)
		project := "p1"
		if rng.IntN(10) == 0 {
			project = "p2"
		}
		h := radar.Hit{ProjectID: project, VisitorID: v, URL: "https://shop.example/", Hostname: "shop.example", Pathname: "/", At: at}
		name, data, err := domain.EncodeEvent(&radar.PageviewRecorded{Hit: h})
		if err != nil {
			t.Fatal(err)
		}
		stream := radar.Stream(project, v)
		events = append(events, eventstore.RecordedEvent{Stream: stream, Version: versions[stream], Type: name, Data: data,
			Position: eventstore.Position{Commit: uint64(i + 1), Prepare: uint64(i + 1)}, Time: at})
		versions[stream]++
	}
	ctx := context.Background()
	if err := s.Apply(ctx, projections.Envelopes(events)); err != nil {
		t.Fatal(err)
	}
	grouped := func(lo, hi, afterMS int64, afterID string, n int) []personRef {
		return groupHits(t, s, "p1", lo, hi, afterMS, afterID, n)
	}
	end := day0.Add(3000 * time.Second).UnixMilli()
	for _, rg := range [][2]int64{{0, math.MaxInt64}, {day0.Add(500 * time.Second).UnixMilli(), day0.Add(2000 * time.Second).UnixMilli()}, {end, end + 1}} {
		for _, limit := range []int{1, 7, 50, 1000} {
			afterMS, afterID, pages := int64(math.MaxInt64), "", 0
			for {
				got, err := s.people(ctx, "p1", rg[0], rg[1], afterMS, afterID, limit+1)
				if err != nil {
					t.Fatal(err)
				}
				want := grouped(rg[0], rg[1], afterMS, afterID, limit+1)
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("range %v, limit %d, page %d: got %v, want %v", rg, limit, pages, got, want)
				}
				if len(got) <= limit {
					break
				}
				last := got[limit-1]
				afterMS, afterID = last.last, last.id
				pages++
			}
			if rg[1] == math.MaxInt64 && pages < 400/limit-1 {
				t.Errorf("limit %d: %d pages", limit, pages)
			}
		}
	}
}

// The visitor cache keeps the visitors used lately: one used again after
// half the cache's capacity of others is still there, one left alone for
// its capacity is gone, and it never holds more than its capacity.
func TestVisitorCacheKeepsTheRecentlyUsed(t *testing.T) {
	c := newVisitorCache()
	key := func(i int) visitorKey { return visitorKey{"p1", fmt.Sprint("v", i)} }
	kept, dropped := &visitorState{version: 1}, &visitorState{version: 2}
	c.put(key(-1), kept)
	c.put(key(-2), dropped)
	for i := range maxVisitors {
		c.put(key(i), &visitorState{})
		if i%(maxVisitors/4) == 0 {
			if st, ok := c.get(key(-1)); !ok || st != kept {
				t.Fatalf("after %d others: the visitor used again is gone", i)
			}
		}
	}
	if _, ok := c.get(key(-2)); ok {
		t.Error("a visitor left alone for the cache's capacity is still there")
	}
	if n := len(c.cur) + len(c.old); n > maxVisitors {
		t.Errorf("%d visitors held, at most %d", n, maxVisitors)
	}
}

// groupHits is the people list the first version's query gave: every hit
// of the range grouped by visitor, the visitors after the cursor by last
// activity (newest first) and id, at most n.
func groupHits(t testing.TB, s *Store, project string, lo, hi, afterMS int64, afterID string, n int) []personRef {
	last := map[string]int64{}
	err := scanHits(s.hits, project, lo, hi, false, func(h *hit) (bool, error) {
		last[h.visitor] = max(last[h.visitor], h.ts)
		return true, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var out []personRef
	for id, ms := range last {
		if ms < afterMS || ms == afterMS && id > afterID {
			out = append(out, personRef{id, ms})
		}
	}
	slices.SortFunc(out, func(a, b personRef) int {
		if a.last != b.last {
			return cmp.Compare(b.last, a.last)
		}
		return strings.Compare(a.id, b.id)
	})
	return out[:min(n, len(out))]
}

// scanHits reads a project's hits in a range, inclusive, in either order,
// and nothing of another project or of an empty range.
func TestScanHitsRange(t *testing.T) {
	s, err := Open(filepath.Join(t.TempDir(), "radar.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	b := s.hits.NewBatch()
	for _, project := range []string{"p1", "p2", "p10"} {
		for ts := int64(-2); ts <= 2; ts++ {
			h := hit{ts: ts, visitor: fmt.Sprint("v", ts+2), seq: ts + 2, pathname: "/" + project}
			if err := b.Set(hitKey(nil, project, &h), encodeHit(nil, &h), nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := b.Commit(nil); err != nil {
		t.Fatal(err)
	}
	scan := func(lo, hi int64, reverse bool) []int64 {
		var out []int64
		err := scanHits(s.hits, "p1", lo, hi, reverse, func(h *hit) (bool, error) {
			if h.pathname != "/p1" || h.visitor != fmt.Sprint("v", h.ts+2) || h.seq != h.ts+2 {
				t.Fatalf("hit %+v", *h)
			}
			out = append(out, h.ts)
			return true, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	for _, c := range []struct {
		lo, hi  int64
		reverse bool
		want    string
	}{
		{math.MinInt64, math.MaxInt64, false, "[-2 -1 0 1 2]"},
		{math.MinInt64, math.MaxInt64, true, "[2 1 0 -1 -2]"},
		{-1, 1, false, "[-1 0 1]"},
		{0, 0, true, "[0]"},
		{1, -1, false, "[]"},
		{3, math.MaxInt64, false, "[]"},
	} {
		if got := fmt.Sprint(scan(c.lo, c.hi, c.reverse)); got != c.want {
			t.Errorf("[%d, %d] reverse %v: %s, want %s", c.lo, c.hi, c.reverse, got, c.want)
		}
	}
}
