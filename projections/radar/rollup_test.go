package radar

import (
	"context"
	"fmt"
	"github.com/linkd/linkd/projections"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/linkd/linkd/domain/radar"
	"github.com/linkd/linkd/eventstore"
	"github.com/linkd/linkd/projections/projectiontest"
	"github.com/linkd/linkd/queries"
)

// visits are three days of a site: 600 visitors (counted exactly: fewer
// than hll.MaxExact a day, than hll.MaxUnion in all), visits that cross
// midnight, events, identifies.
func visits(t *testing.T) []eventstore.RecordedEvent {
	t.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	day0 := time.Date(2026, 3, 14, 0, 0, 0, 0, time.UTC)
	type hit struct {
		at      time.Time
		visitor int
		kind    int
	}
	var hits []hit
	for v := range 600 {
		at := day0.Add(time.Duration(rng.IntN(3*24*60)) * time.Minute)
		if v%50 == 0 {
			at = day0.Add(24*time.Hour - 5*time.Minute) // across midnight
		}
		for range 1 + rng.IntN(5) {
			hits = append(hits, hit{at, v, rng.IntN(4) / 3})
			at = at.Add(time.Duration(1+rng.IntN(40)) * time.Minute) // sometimes a new visit
		}
	}
	// The log is in time order, as collect stamps hits.
	for i := range hits {
		for j := i; j > 0 && hits[j].at.Before(hits[j-1].at); j-- {
			hits[j], hits[j-1] = hits[j-1], hits[j]
		}
	}
	var l projectiontest.Log
	pages := []string{"/", "/pricing", "/docs", "/blog/a", "/blog/b"}
	for i, h := range hits {
		visitor := fmt.Sprint("v", h.visitor)
		x := radar.Hit{ProjectID: "p1", VisitorID: visitor, URL: "https://shop.example" + pages[i%5], Hostname: []string{"shop.example", "www.shop.example"}[h.visitor%2],
			Pathname: pages[(h.visitor+i)%5], Source: []string{"", "google.com", "news.example"}[h.visitor%3],
			Country: []string{"FR", "DE", "US", ""}[h.visitor%4], Browser: []string{"Chrome", "Firefox"}[h.visitor%2], OS: "Linux", Device: "Desktop", At: h.at}
		if h.kind == 1 {
			l.Add(t, radar.Stream("p1", visitor), &radar.EventRecorded{Hit: x, Name: []string{"Signup", "Download"}[i%2]})
		} else {
			l.Add(t, radar.Stream("p1", visitor), &radar.PageviewRecorded{Hit: x})
		}
		if h.visitor%97 == 0 {
			l.Add(t, radar.Stream("p1", visitor), &radar.VisitorIdentified{Hit: x, Email: visitor + "@example.com"})
		}
	}
	return l.Events
}

type reports struct {
	O queries.RadarOverview
	B queries.RadarBreakdowns
	E []queries.RadarEventStat
}

func readAll(t *testing.T, s *Store, r queries.RadarRange) reports {
	t.Helper()
	ctx := context.Background()
	var out reports
	var err error
	if out.O, err = s.RadarOverview(ctx, r); err != nil {
		t.Fatal(err)
	}
	if out.B, err = s.RadarBreakdowns(ctx, r, 50); err != nil {
		t.Fatal(err)
	}
	if out.E, err = s.RadarEvents(ctx, r, 50); err != nil {
		t.Fatal(err)
	}
	return out
}

// fromHits is what the reports say when every day is computed from the
// hits and sessions (as the partial days of a range are).
func fromHits(t *testing.T, s *Store, r queries.RadarRange) reports {
	t.Helper()
	s.noRollups = true
	defer func() { s.noRollups = false }()
	return readAll(t, s, r)
}

func openAt(t *testing.T, path string) *Store {
	t.Helper()
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

var ranges = []queries.RadarRange{
	{ProjectID: "p1"}, // everything
	{ProjectID: "p1", Start: time.Date(2026, 3, 14, 0, 0, 0, 0, time.UTC), End: time.Date(2026, 3, 16, 23, 59, 59, 999e6, time.UTC)}, // whole days
	{ProjectID: "p1", Start: time.Date(2026, 3, 14, 9, 30, 0, 0, time.UTC), End: time.Date(2026, 3, 16, 17, 0, 0, 0, time.UTC)},      // partial ends
	{ProjectID: "p1", Start: time.Date(2026, 3, 15, 3, 0, 0, 0, time.UTC), End: time.Date(2026, 3, 15, 4, 0, 0, 0, time.UTC)},        // within a day
	{ProjectID: "p1", Start: time.Date(2026, 3, 15, 0, 0, 0, 0, time.UTC), End: time.Date(2026, 3, 16, 0, 0, 0, 0, time.UTC)},        // a day and a millisecond
}

// The rollups give what the hits give, for whole days, partial days and
// open ranges, whether the days were written or are in memory, after a
// crash that left days unwritten, and after a replay in other batches.
func TestRollupsAgreeWithHits(t *testing.T) {
	events := visits(t)
	ctx := context.Background()
	dir := t.TempDir()

	// Live: small batches, the days written only now and then.
	clock := time.Date(2026, 3, 14, 0, 0, 0, 0, time.UTC)
	live := openAt(t, filepath.Join(dir, "live.db"))
	defer live.Close()
	live.roll.now = func() time.Time { return clock }
	for i := 0; i < len(events); i += 7 {
		if i%70 == 0 {
			clock = clock.Add(flushEvery)
		}
		if err := live.Apply(ctx, projections.Envelopes(events[i:min(i+7, len(events))])); err != nil {
			t.Fatal(err)
		}
	}
	var want []reports
	for _, r := range ranges {
		want = append(want, readAll(t, live, r))
	}
	if o := want[0].O; o.People != 600 || o.Pageviews+o.Events == 0 || o.Visits < 700 || o.BounceRate == 0 {
		t.Fatalf("overview %+v", o)
	}

	// A crash: the last days changed were never written; reopened, the
	// store recomputes them.
	crashed := openAt(t, filepath.Join(dir, "crashed.db"))
	crashed.roll.now = func() time.Time { return clock }
	if err := crashed.Apply(ctx, projections.Envelopes(events[:len(events)/2])); err != nil {
		t.Fatal(err)
	}
	crashed.roll.now = func() time.Time { return clock.Add(-time.Hour) } // never due again
	for i := len(events) / 2; i < len(events); i += 100 {
		if err := crashed.Apply(ctx, projections.Envelopes(events[i:min(i+100, len(events))])); err != nil {
			t.Fatal(err)
		}
	}
	var dirty int
	if err := crashed.w.QueryRow(`SELECT count(*) FROM rollup_dirty`).Scan(&dirty); err != nil || dirty == 0 {
		t.Fatalf("%d days marked dirty before the crash (%v)", dirty, err)
	}
	clear(crashed.roll.dirty) // what SIGKILL leaves: Close writes nothing
	crashed.Close()
	crashed = openAt(t, filepath.Join(dir, "crashed.db"))
	defer crashed.Close()

	// A replay: one batch, then everything again (all already applied).
	replay := openAt(t, filepath.Join(dir, "replay.db"))
	defer replay.Close()
	for range 2 {
		if err := replay.Apply(ctx, projections.Envelopes(events)); err != nil {
			t.Fatal(err)
		}
	}

	for i, r := range ranges {
		for name, s := range map[string]*Store{"crashed": crashed, "replay": replay} {
			if got := readAll(t, s, r); !reflect.DeepEqual(got, want[i]) {
				t.Errorf("range %d, %s:\n%+v\nlive:\n%+v", i, name, got, want[i])
			}
		}
	}
	for i, r := range ranges {
		if got := fromHits(t, replay, r); !reflect.DeepEqual(got, want[i]) {
			t.Errorf("range %d from the hits:\n%+v\nrollups:\n%+v", i, got, want[i])
		}
	}
}

// Close writes the days changed since they were last written, so that the
// next Open has nothing to recompute.
func TestCloseWritesRollups(t *testing.T) {
	events := visits(t)
	path := filepath.Join(t.TempDir(), "radar.db")
	s := openAt(t, path)
	clock := time.Now()
	s.roll.now = func() time.Time { return clock }
	s.roll.last = clock // nothing due before Close
	if err := s.Apply(context.Background(), projections.Envelopes(events)); err != nil {
		t.Fatal(err)
	}
	want := readAll(t, s, ranges[0])
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openAt(t, path)
	defer s.Close()
	var dirty, days int
	if err := s.w.QueryRow(`SELECT (SELECT count(*) FROM rollup_dirty), (SELECT count(*) FROM rollup_days)`).Scan(&dirty, &days); err != nil {
		t.Fatal(err)
	}
	if dirty != 0 || days < 3 {
		t.Errorf("after Close: %d days marked dirty, %d written; want none, and every day of the visits", dirty, days)
	}
	if got := readAll(t, s, ranges[0]); !reflect.DeepEqual(got, want) {
		t.Errorf("after reopening:\n%+v\nwant\n%+v", got, want)
	}
}

// A batch that fails halfway (an event it cannot decode) leaves neither
// its rollups nor its visitors' state behind: applying the log again gives
// what a clean run gives.
func TestFailedBatchLeavesNothing(t *testing.T) {
	events := visits(t)
	ctx := context.Background()
	clean := openAt(t, filepath.Join(t.TempDir(), "clean.db"))
	defer clean.Close()
	if err := clean.Apply(ctx, projections.Envelopes(events)); err != nil {
		t.Fatal(err)
	}
	s := openAt(t, filepath.Join(t.TempDir(), "failed.db"))
	defer s.Close()
	half := len(events) / 2
	if err := s.Apply(ctx, projections.Envelopes(events[:half/2])); err != nil {
		t.Fatal(err)
	}
	bad := append([]eventstore.RecordedEvent(nil), events[half/2:half]...)
	broken := bad[len(bad)-1]
	broken.Data = []byte(`{"hit":`)
	bad[len(bad)-1] = broken
	if err := s.Apply(ctx, projections.Envelopes(bad)); err == nil {
		t.Fatal("a batch with an undecodable event was applied")
	}
	for i := half / 2; i < len(events); i += 97 {
		if err := s.Apply(ctx, projections.Envelopes(events[i:min(i+97, len(events))])); err != nil {
			t.Fatal(err)
		}
	}
	for i, r := range ranges {
		if got, want := readAll(t, s, r), readAll(t, clean, r); !reflect.DeepEqual(got, want) {
			t.Errorf("range %d after a failed batch:\n%+v\nclean:\n%+v", i, got, want)
		}
	}
}

// The days readers keep decoded stay within maxLoadedBytes (or one day).
func TestLoadedDaysAreBounded(t *testing.T) {
	events := visits(t)
	path := filepath.Join(t.TempDir(), "radar.db")
	s := openAt(t, path)
	if err := s.Apply(context.Background(), projections.Envelopes(events)); err != nil {
		t.Fatal(err)
	}
	s.Close() // writes the days
	s = openAt(t, path)
	defer s.Close()
	defer func(old int64) { maxLoadedBytes = old }(maxLoadedBytes)
	maxLoadedBytes = 1 // one day at a time
	want := fromHits(t, s, ranges[1])
	if got := readAll(t, s, ranges[1]); !reflect.DeepEqual(got, want) {
		t.Fatalf("with one day kept:\n%+v\nwant\n%+v", got, want)
	}
	var sum int64
	for _, a := range s.roll.loaded {
		sum += a.size()
	}
	if len(s.roll.loaded) != 1 || s.roll.bytes != sum {
		t.Errorf("%d days kept, %d bytes counted, %d held", len(s.roll.loaded), s.roll.bytes, sum)
	}
}

// A crash between the commit of a batch's hits (Pebble) and of its
// transaction (SQLite) leaves hits that no visitor's row has applied: the
// days recomputed on reopening leave them out, and the batch delivered
// again counts them once.
func TestCrashAfterHitsBeforeCommit(t *testing.T) {
	events := visits(t)
	ctx := context.Background()
	dir := t.TempDir()
	clean := openAt(t, filepath.Join(dir, "clean.db"))
	defer clean.Close()
	if err := clean.Apply(ctx, projections.Envelopes(events)); err != nil {
		t.Fatal(err)
	}
	want := readAll(t, clean, ranges[0])

	half := len(events) / 2
	s := openAt(t, filepath.Join(dir, "crashed.db"))
	clock := time.Now()
	s.roll.now = func() time.Time { return clock }
	s.roll.last = clock // the days stay dirty
	if err := s.Apply(ctx, projections.Envelopes(events[:half])); err != nil {
		t.Fatal(err)
	}
	// The lost transaction's hits, in Pebble alone: those of the clean
	// store that s has not applied.
	it, err := clean.hits.NewIter(nil)
	if err != nil {
		t.Fatal(err)
	}
	orphans := 0
	for ok := it.First(); ok; ok = it.Next() {
		if _, closer, err := s.hits.Get(it.Key()); err == nil {
			closer.Close()
			continue
		}
		if err := s.hits.Set(it.Key(), it.Value(), nil); err != nil {
			t.Fatal(err)
		}
		orphans++
	}
	it.Close()
	if orphans == 0 {
		t.Fatal("no hit of the second half")
	}
	clear(s.roll.dirty) // what SIGKILL leaves: Close writes nothing
	s.Close()
	s = openAt(t, filepath.Join(dir, "crashed.db"))
	defer s.Close()
	if got, full := readAll(t, s, ranges[0]), want; got.O.Pageviews+got.O.Events >= full.O.Pageviews+full.O.Events {
		t.Fatalf("recomputed with the %d hits of the lost transaction: %+v", orphans, got.O)
	}
	if err := s.Apply(ctx, projections.Envelopes(events)); err != nil { // delivered again
		t.Fatal(err)
	}
	if got := readAll(t, s, ranges[0]); !reflect.DeepEqual(got, want) {
		t.Fatalf("after the redelivery:\n%+v\nwant\n%+v", got, want)
	}
}
