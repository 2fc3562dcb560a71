package analytics

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/linkd/linkd/domain/click"
	"github.com/linkd/linkd/eventstore"
	"github.com/linkd/linkd/eventstore/embedded"
	"github.com/linkd/linkd/projections"
	"github.com/linkd/linkd/projections/statstest"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func openTest(t testing.TB, dir string, opts Options) *Store {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = quiet
	}
	s, err := Open(dir, opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// feed numbers clicks as an event store would: stream "clicks-<link>" from
// version 0, global positions from 1.
type feed struct {
	pos      uint64
	versions map[string]uint64
	events   []eventstore.RecordedEvent
}

func newFeed() *feed { return &feed{versions: map[string]uint64{}} }

func (f *feed) add(c click.Recorded) eventstore.RecordedEvent {
	data, err := json.Marshal(c)
	if err != nil {
		panic(err)
	}
	return f.addRaw(click.Stream(c.LinkID), click.EventRecorded, data)
}

func (f *feed) addRaw(stream, typ string, data []byte) eventstore.RecordedEvent {
	v, ok := f.versions[stream]
	if ok {
		v++
	}
	f.versions[stream] = v
	f.pos++
	ev := eventstore.RecordedEvent{
		Stream: stream, Version: v, Type: typ, Data: data,
		Position: eventstore.Position{Commit: f.pos, Prepare: f.pos},
		Time:     time.Unix(1_700_000_000, 0).UTC(),
	}
	f.events = append(f.events, ev)
	return ev
}

// testEvents are 400 clicks over 6 links of 2 workspaces and 3 days, as the
// store-specific tests below apply them (the statistics contract,
// contract_test.go, checks the records themselves).
func testEvents() []eventstore.RecordedEvent {
	f := newFeed()
	for _, c := range genClicks(rand.New(rand.NewPCG(5, 5)), 400, 6, 2, 3, time.Date(2026, 3, 30, 0, 0, 0, 0, time.UTC)) {
		f.add(c)
	}
	return f.events
}

// check fails unless s holds the records of events: those of a
// statstest.Model fed the same events.
func check(t *testing.T, s *Store, events []eventstore.RecordedEvent) {
	t.Helper()
	m := statstest.NewModel()
	if err := m.Apply(t.Context(), projections.Envelopes(events)); err != nil {
		t.Fatal(err)
	}
	m.Check(t, t.Context(), s, allFrom, allTo)
}

var (
	allFrom = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	allTo   = time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC)
)

func TestRestart(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	events := testEvents()

	s, err := Open(dir, Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	if cp, _ := s.Checkpoint(ctx); cp != eventstore.Start {
		t.Fatalf("fresh Checkpoint = %v", cp)
	}
	if err := s.Apply(ctx, projections.Envelopes(events[:50])); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.LinkDaily(ctx, "link-00000", allFrom, allTo); err != ErrClosed {
		t.Errorf("query after Close: %v, want ErrClosed", err)
	}
	if err := s.Apply(ctx, projections.Envelopes(events)); err != ErrClosed {
		t.Errorf("Apply after Close: %v, want ErrClosed", err)
	}

	s = openTest(t, dir, Options{})
	cp, err := s.Checkpoint(ctx)
	if err != nil || cp != events[49].Position {
		t.Fatalf("Checkpoint after reopen = %v, %v; want %v", cp, err, events[49].Position)
	}
	if v, ok, err := s.AppliedVersion(ctx, events[49].Stream); err != nil || !ok || v != events[49].Version {
		t.Errorf("AppliedVersion(%s) = %v, %v, %v; want %d", events[49].Stream, v, ok, err, events[49].Version)
	}
	check(t, s, events[:50])
	// The feeder resumes after the checkpoint, Kafka may redeliver more:
	// both must give the same result.
	if err := s.Apply(ctx, projections.Envelopes(events)); err != nil {
		t.Fatal(err)
	}
	check(t, s, events)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openTest(t, dir, Options{})
	check(t, s, events)
	if err := s.Apply(ctx, projections.Envelopes(events)); err != nil {
		t.Fatal(err)
	}
	check(t, s, events)
	if cp, _ := s.Checkpoint(ctx); cp != events[len(events)-1].Position {
		t.Errorf("Checkpoint = %v", cp)
	}
}

// TestCrash simulates a crash of the machine with Pebble's crashable
// in-memory file system: the clone keeps only what was synced.
func TestCrash(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("sync: every applied batch survives", func(t *testing.T) {
		t.Parallel()
		events := testEvents()[:60]
		fs := vfs.NewCrashableMem()
		s := openTest(t, "db", Options{fs: fs})
		for i := range events {
			if err := s.Apply(ctx, projections.Envelopes(events[i:i+1])); err != nil {
				t.Fatal(err)
			}
		}
		crashed := fs.CrashClone(vfs.CrashCloneCfg{})
		s2 := openTest(t, "db", Options{fs: crashed})
		check(t, s2, events)
		if cp, _ := s2.Checkpoint(ctx); cp != events[len(events)-1].Position {
			t.Errorf("Checkpoint = %v", cp)
		}
	})

	t.Run("nosync: Close makes every applied batch durable", func(t *testing.T) {
		t.Parallel()
		events := testEvents()[:60]
		fs := vfs.NewCrashableMem()
		s := openTest(t, "db", Options{fs: fs, NoSync: true})
		for i := range events {
			if err := s.Apply(ctx, projections.Envelopes(events[i:i+1])); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		crashed := fs.CrashClone(vfs.CrashCloneCfg{})
		s2 := openTest(t, "db", Options{fs: crashed, NoSync: true})
		check(t, s2, events)
		if cp, _ := s2.Checkpoint(ctx); cp != events[len(events)-1].Position {
			t.Errorf("Checkpoint = %v", cp)
		}
	})

	t.Run("nosync: checkpoint never ahead of the data; redelivery completes", func(t *testing.T) {
		t.Parallel()
		rng := rand.New(rand.NewPCG(3, 4))
		f := newFeed()
		for _, c := range genClicks(rng, 3000, 30, 3, 3, time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)) {
			f.add(c)
		}
		events := f.events
		const batch = 50
		lost := 0
		const crashes = 10
		for seed := range uint64(crashes) {
			fs := vfs.NewCrashableMem()
			// The first third is synced, the rest is not.
			s, err := Open("db", Options{fs: fs, Logger: quiet})
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Apply(ctx, projections.Envelopes(events[:1000])); err != nil {
				t.Fatal(err)
			}
			s.Close()
			s = openTest(t, "db", Options{fs: fs, NoSync: true})
			for i := 1000; i < len(events); i += batch {
				if err := s.Apply(ctx, projections.Envelopes(events[i:i+batch])); err != nil {
					t.Fatal(err)
				}
			}
			crashed := fs.CrashClone(vfs.CrashCloneCfg{
				UnsyncedDataPercent: int(seed * 10), RNG: rand.New(rand.NewPCG(seed, 1)),
			})
			s2, err := Open("db", Options{fs: crashed, NoSync: true, Logger: quiet})
			if err != nil {
				t.Fatalf("seed %d: reopen: %v", seed, err)
			}
			cp, _ := s2.Checkpoint(ctx)
			if cp.Less(events[999].Position) {
				t.Errorf("seed %d: checkpoint %v lost synced batches", seed, cp)
			}
			if cp != events[len(events)-1].Position {
				lost++
			}
			// Exactly the events up to the checkpoint are counted.
			var done, rest []eventstore.RecordedEvent
			for _, e := range events {
				if cp.Less(e.Position) {
					rest = append(rest, e)
				} else {
					done = append(done, e)
				}
			}
			check(t, s2, done)
			// The in-process feeder resumes after the checkpoint.
			if err := s2.Apply(ctx, projections.Envelopes(rest)); err != nil {
				t.Fatal(err)
			}
			check(t, s2, events)
			s2.Close()
			if t.Failed() {
				t.Fatalf("seed %d: see above", seed)
			}
		}
		if lost == 0 {
			t.Error("no crash lost anything: the test tests nothing")
		}
		t.Logf("%d of %d crashes lost unsynced batches", lost, crashes)
	})
}

// Reset forgets the applied versions of the streams as well (the contract
// checks the records).
func TestResetForgetsAppliedVersions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openTest(t, t.TempDir(), Options{})
	events := testEvents()
	if err := s.Apply(ctx, projections.Envelopes(events)); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := s.AppliedVersion(ctx, events[0].Stream); !ok {
		t.Fatal("no AppliedVersion before Reset")
	}
	if err := s.Reset(ctx); err != nil {
		t.Fatal(err)
	}
	if v, ok, err := s.AppliedVersion(ctx, events[0].Stream); ok || err != nil {
		t.Errorf("AppliedVersion after Reset = %d, %v, %v", v, ok, err)
	}
}

// Events of other types and undecodable clicks count in the applied
// versions of their streams and in the checkpoint; undecodable ones in
// Undecodable (the contract checks that they count in no record).
func TestUndecodableClicks(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openTest(t, t.TempDir(), Options{})
	f := newFeed()
	f.add(click.Recorded{LinkID: "L1", WorkspaceID: "W1", Timestamp: time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)})
	f.addRaw(click.Stream("L1"), "ClickRecordedV9", []byte(`{}`)) // unknown type in the stream
	bad := f.addRaw(click.Stream("L1"), click.EventRecorded, []byte(`{not json`))
	f.addRaw("link-L1", "LinkCreated", []byte(`{"link_id":"L1"}`)) // another category
	if err := s.Apply(ctx, projections.Envelopes(f.events)); err != nil {
		t.Fatal(err)
	}
	if s.Undecodable() != 1 {
		t.Errorf("Undecodable = %d", s.Undecodable())
	}
	if v, _, _ := s.AppliedVersion(ctx, click.Stream("L1")); v != bad.Version {
		t.Errorf("AppliedVersion = %d, want %d", v, bad.Version)
	}
	if cp, _ := s.Checkpoint(ctx); cp != f.events[3].Position {
		t.Errorf("Checkpoint = %v", cp)
	}
}

func TestOptionsValidate(t *testing.T) {
	t.Parallel()
	err := Options{CacheSize: -1, StreamCacheSize: -2, MemTableSize: 10}.Validate()
	if err == nil {
		t.Fatal("no error")
	}
	for _, s := range []string{"CacheSize", "StreamCacheSize", "MemTableSize"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not name %s", err, s)
		}
	}
	if _, err := Open("", Options{}); err == nil {
		t.Error("Open without dir")
	}
}

// genClicks makes n clicks over the given links (workspace = link % ws),
// days, and a few dozen values of each field, with visitors drawn from a
// pool so that some repeat. Link 0 of day 0 gets many distinct visitors.
func genClicks(rng *rand.Rand, n, links, workspaces, days int, start time.Time) []click.Recorded {
	browsers := []string{"Chrome", "Safari", "Firefox", "Edge", "Opera", "Samsung Internet", "Instagram", "Facebook", ""}
	oses := []string{"iOS", "Android", "Windows", "macOS", "Linux", "ChromeOS", ""}
	versions := []string{"10", "11", "14", "17.4", "13.1", ""}
	devices := []string{"mobile", "desktop", "tablet", ""}
	countries := []string{"US", "DE", "FR", "GB", "BR", "IN", "JP", "CN", "NG", "AU", "CA", "ES", "IT", "NL", "SE", "MX", ""}
	continents := []string{"NA", "EU", "EU", "EU", "SA", "AS", "AS", "AS", "AF", "OC", "NA", "EU", "EU", "EU", "EU", "NA", ""}
	cities := []string{"New York", "Berlin", "Paris", "London", "São Paulo", "Mumbai", "Tokyo", "Shanghai", "Lagos", "Sydney",
		"Toronto", "Madrid", "Rome", "Amsterdam", "Stockholm", "Mexico City", "Austin", "Munich", "Lyon", "Leeds", ""}
	langs := []string{"en", "de", "fr", "en-GB", "pt-BR", "hi", "ja", "zh", "es", "it", "nl", "sv", ""}
	refs := []string{"", "", "twitter.com", "facebook.com", "google.com", "news.ycombinator.com", "reddit.com", "linkedin.com"}
	apps := []string{"Instagram", "Facebook", "TikTok", "LinkedIn", ""}
	out := make([]click.Recorded, n)
	for i := range out {
		l := zipf(rng, links)
		day := rng.IntN(days)
		ci := rng.IntN(len(countries))
		fromApp := rng.IntN(8) == 0
		c := click.Recorded{
			ClickID:     fmt.Sprintf("c%d", i),
			LinkID:      fmt.Sprintf("link-%05d", l),
			WorkspaceID: fmt.Sprintf("ws-%03d", l%workspaces),
			Code:        fmt.Sprintf("code%d", l),
			Timestamp:   start.AddDate(0, 0, day).Add(time.Duration(rng.Int64N(int64(24 * time.Hour)))),
			Source:      click.SourceRedirect,
			QR:          rng.IntN(10) == 0,
			Visitor:     fmt.Sprintf("%016x", rng.IntN(n/3+1)),
			Browser:     browsers[rng.IntN(len(browsers))],
			OS:          oses[rng.IntN(len(oses))],
			OSVersion:   versions[rng.IntN(len(versions))],
			DeviceType:  devices[rng.IntN(len(devices))],
			FromApp:     fromApp,
			Language:    langs[rng.IntN(len(langs))],
			Referrer:    refs[rng.IntN(len(refs))],
			Country:     countries[ci],
			Continent:   continents[ci],
			City:        cities[rng.IntN(len(cities))],
			Destination: "https://example.com/landing",
		}
		if fromApp {
			c.App = apps[rng.IntN(len(apps))]
		}
		if rng.IntN(50) == 0 {
			c.Visitor = ""
		}
		out[i] = c
	}
	return out
}

// zipf draws a link index in [0, n) with a heavy head.
func zipf(rng *rand.Rand, n int) int {
	// Inverse of a power law: a few links get most clicks.
	u := rng.Float64()
	return min(n-1, int(float64(n)*u*u*u))
}

func TestReplayEquality(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(7, 7))
	start := time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)
	clicks := genClicks(rng, 20000, 40, 4, 5, start)
	// One busy link-day with enough distinct visitors to turn into a sketch,
	// arriving in pieces.
	for i := range 6000 {
		c := clicks[i%len(clicks)]
		c.LinkID, c.WorkspaceID = "link-busy", "ws-000"
		c.Timestamp = start.Add(time.Duration(i) * time.Second)
		c.Visitor = fmt.Sprintf("busy-%d", i%5000)
		clicks = append(clicks, c)
	}
	rng.Shuffle(len(clicks), func(i, j int) { clicks[i], clicks[j] = clicks[j], clicks[i] })

	es, err := embedded.Open(embedded.Options{Dir: t.TempDir(), Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { es.Close() })
	for _, c := range clicks {
		data, _ := json.Marshal(c)
		if _, err := es.Append(ctx, click.Stream(c.LinkID), eventstore.Any(), eventstore.EventData{Type: click.EventRecorded, Data: data}); err != nil {
			t.Fatal(err)
		}
		if rng.IntN(100) == 0 { // other categories in the log
			if _, err := es.Append(ctx, "link-"+c.LinkID, eventstore.Any(), eventstore.EventData{Type: "LinkUpdated", Data: []byte(`{}`)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	var all []eventstore.RecordedEvent
	for pos := eventstore.Start; ; {
		page, err := es.ReadAll(ctx, pos, 10000)
		if err != nil {
			t.Fatal(err)
		}
		if len(page) == 0 {
			break
		}
		all = append(all, page...)
		pos = page[len(page)-1].Position
	}

	// Live: small batches of relevant events, with redeliveries.
	live := openTest(t, t.TempDir(), Options{StreamCacheSize: 8}) // tiny cache: dedup reads the database
	for i := 0; i < len(all); {
		n := 1 + rng.IntN(64)
		var batch []eventstore.RecordedEvent
		for _, e := range all[i:min(len(all), i+n)] {
			if projections.Relevant(live, e.Stream) {
				batch = append(batch, e)
			}
		}
		if rng.IntN(10) == 0 && i > 100 { // redeliver a few earlier ones
			back := all[i-100 : i-100+rng.IntN(100)]
			for _, e := range back {
				if projections.Relevant(live, e.Stream) {
					batch = append(batch, e)
				}
			}
		}
		if len(batch) > 0 {
			if err := live.Apply(ctx, projections.Envelopes(batch)); err != nil {
				t.Fatal(err)
			}
		}
		i += n
	}

	replayed := openTest(t, t.TempDir(), Options{})
	// Something stale to be reset away.
	if err := replayed.Apply(ctx, projections.Envelopes(testEvents())); err != nil {
		t.Fatal(err)
	}
	n, err := projections.Replay(ctx, es, replayed, projections.ReplayOptions{PageSize: 5000})
	if err != nil {
		t.Fatal(err)
	}
	if n != uint64(len(clicks)) {
		t.Errorf("replay applied %d events, want %d", n, len(clicks))
	}

	// Both must answer every query identically, and match a direct count.
	links, wss := map[string]bool{}, map[string]bool{}
	perLink := map[string]int64{}
	for _, c := range clicks {
		links[c.LinkID], wss[c.WorkspaceID] = true, true
		perLink[c.LinkID]++
	}
	lcp, _ := live.Checkpoint(ctx)
	rcp, _ := replayed.Checkpoint(ctx)
	if head, _ := es.Head(ctx); lcp != rcp || rcp != head {
		t.Errorf("checkpoints live %v, replay %v, head %v", lcp, rcp, head)
	}
	for _, id := range slices.Sorted(maps.Keys(links)) {
		a, err := live.LinkDaily(ctx, id, allFrom, allTo)
		if err != nil {
			t.Fatal(err)
		}
		b, err := replayed.LinkDaily(ctx, id, allFrom, allTo)
		if err != nil {
			t.Fatal(err)
		}
		if d := statstest.Diff(a, b); d != "" {
			t.Errorf("LinkDaily(%s) live vs replay: %s", id, d)
		}
		var total int64
		for _, d := range a {
			total += d.TotalClicks
		}
		if total != perLink[id] {
			t.Errorf("link %s: %d clicks, want %d", id, total, perLink[id])
		}
	}
	for _, id := range slices.Sorted(maps.Keys(wss)) {
		a, _ := live.WorkspaceDaily(ctx, id, allFrom, allTo)
		b, _ := replayed.WorkspaceDaily(ctx, id, allFrom, allTo)
		if d := statstest.Diff(a, b); d != "" {
			t.Errorf("WorkspaceDaily(%s) live vs replay: %s", id, d)
		}
	}
	// The busy day crossed into a sketch: its estimate is close.
	busy, _ := live.LinkDaily(ctx, "link-busy", start, start)
	if len(busy) != 1 || busy[0].TotalClicks != 6000 || busy[0].UniqueVisitors < 4900 || busy[0].UniqueVisitors > 5100 {
		t.Errorf("busy day: %+v", busy)
	}
	// Uniques below the threshold are exact.
	exact := map[string]map[string]bool{}
	for _, c := range clicks {
		if c.LinkID != "link-00039" || c.Visitor == "" {
			continue
		}
		d := c.Timestamp.UTC().Format(time.DateOnly)
		if exact[d] == nil {
			exact[d] = map[string]bool{}
		}
		exact[d][c.Visitor] = true
	}
	days, _ := live.LinkDaily(ctx, "link-00039", allFrom, allTo)
	for _, d := range days {
		if int64(len(exact[d.Date])) != d.UniqueVisitors {
			t.Errorf("link-00039 %s: %d unique, want %d", d.Date, d.UniqueVisitors, len(exact[d.Date]))
		}
	}
}

// TestConcurrentQueries runs queries while batches are applied (run with
// -race): each query sees whole batches only.
func TestConcurrentQueries(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openTest(t, t.TempDir(), Options{})
	rng := rand.New(rand.NewPCG(1, 2))
	start := time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)
	clicks := genClicks(rng, 6000, 1, 1, 3, start) // one link, one workspace
	f := newFeed()
	for _, c := range clicks {
		f.add(c)
	}
	const batch = 100
	done := make(chan struct{})
	var wg sync.WaitGroup
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-done:
					return
				default:
				}
				days, err := s.WorkspaceDaily(ctx, "ws-000", allFrom, allTo)
				if err != nil {
					t.Error(err)
					return
				}
				var total int64
				for _, d := range days {
					total += d.TotalClicks
				}
				if total%batch != 0 {
					t.Errorf("saw %d clicks: a batch in part", total)
					return
				}
				if _, err := s.LinkClicked(ctx, "link-00000"); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	for i := 0; i < len(f.events); i += batch {
		if err := s.Apply(ctx, projections.Envelopes(f.events[i:i+batch])); err != nil {
			t.Fatal(err)
		}
	}
	close(done)
	wg.Wait()
	days, _ := s.LinkDaily(ctx, "link-00000", allFrom, allTo)
	var total int64
	for _, d := range days {
		total += d.TotalClicks
	}
	if total != int64(len(clicks)) {
		t.Errorf("total %d, want %d", total, len(clicks))
	}
}

// TestBreakdownsInMapOrder: every click's keys come in the order of their
// maps, each map once, so that a delta of one click needs no sort
// (batchAgg.finish), in app and browser clicks alike.
func TestBreakdownsInMapOrder(t *testing.T) {
	t.Parallel()
	clicks := genClicks(rand.New(rand.NewPCG(3, 3)), 500, 4, 2, 2, time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC))
	for i := range clicks {
		c := fieldsOf(&clicks[i])
		if i%2 == 0 { // an in-app click, which counts under two more maps
			c.FromApp, c.App = true, "Instagram"
		}
		last := -1
		breakdowns(&c, func(m int, _, _ string) {
			if m <= last {
				t.Fatalf("click %d: map %d after map %d", i, m, last)
			}
			last = m
		})
	}
}
