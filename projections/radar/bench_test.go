package radar

import (
	"context"
	"fmt"
	"github.com/linkd/linkd/projections"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/linkd/linkd/domain"
	"github.com/linkd/linkd/domain/radar"
	"github.com/linkd/linkd/eventstore"
	"github.com/linkd/linkd/queries"
)

// BenchmarkReports30Days reads overview and breakdowns for a 30-day range
// of a site with RADAR_BENCH_EVENTS events (default 10 million) of
// RADAR_BENCH_VISITORS visitors (default 1 million) over 30 days: 500
// pages, 20 sources, 50 countries, 6 browsers, 5 systems, 10 custom
// events. The store is built once through Apply (minutes) into
// RADAR_BENCH_DIR when set, and kept there for later runs.
//
//	RADAR_BENCH_DIR=/tmp/radar-bench go test -run '^$' -bench Reports30Days -benchtime 200x ./projections/radar/
func BenchmarkReports30Days(b *testing.B) { benchReports(b, false) }

// BenchmarkReports30DaysFromHits is the baseline: the same reports on the
// same store computed from the hits and visits, as the first version did
// (seconds each at 10 million events: run it with -benchtime 3x).
func BenchmarkReports30DaysFromHits(b *testing.B) { benchReports(b, true) }

func benchReports(b *testing.B, fromHits bool) {
	s, r := benchSite(b)
	s.noRollups = fromHits
	ctx := context.Background()
	o, err := s.RadarOverview(ctx, r)
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("overview: %d people, %d visits, %d page views, %d events", o.People, o.Visits, o.Pageviews, o.Events)
	benchLatency(b, func() {
		if _, err := s.RadarOverview(ctx, r); err != nil {
			b.Fatal(err)
		}
		if _, err := s.RadarBreakdowns(ctx, r, 50); err != nil {
			b.Fatal(err)
		}
	})
}

// BenchmarkPeople30Days reads the first two pages (50 each) of the people
// list of the store of BenchmarkReports30Days for 30 days.
func BenchmarkPeople30Days(b *testing.B) {
	s, r := benchSite(b)
	ctx := context.Background()
	benchLatency(b, func() {
		p, err := s.RadarPeople(ctx, r, 50, "")
		if err != nil || len(p.Data) != 50 {
			b.Fatal(len(p.Data), err)
		}
		if _, err := s.RadarPeople(ctx, r, 50, p.NextCursor); err != nil {
			b.Fatal(err)
		}
	})
}

// BenchmarkPeople30DaysGrouped is its baseline, what the first version
// did: the range's hits grouped by visitor, for the first page.
func BenchmarkPeople30DaysGrouped(b *testing.B) {
	s, r := benchSite(b)
	lo, hi := bounds(r)
	benchLatency(b, func() {
		if p := groupHits(b, s, r.ProjectID, lo, hi, math.MaxInt64, "", 51); len(p) != 51 {
			b.Fatal(len(p))
		}
	})
}

// benchSite opens the generated site of RADAR_BENCH_DIR (built once) and
// gives its 30 days.
func benchSite(b *testing.B) (*Store, queries.RadarRange) {
	events := envInt("RADAR_BENCH_EVENTS", 10_000_000)
	visitors := envInt("RADAR_BENCH_VISITORS", 1_000_000)
	dir := os.Getenv("RADAR_BENCH_DIR")
	if dir == "" {
		dir = b.TempDir()
	}
	path := filepath.Join(dir, fmt.Sprintf("radar-%d-%d.db", events, visitors))
	day0 := time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC)
	if _, err := os.Stat(path); err != nil {
		start := time.Now()
		if err := buildSite(path, events, visitors, day0); err != nil {
			b.Fatal(err)
		}
		b.Logf("built %d events in %s", events, time.Since(start).Round(time.Second))
	}
	s, err := Open(path)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return s, queries.RadarRange{ProjectID: "p1", Start: day0, End: day0.AddDate(0, 0, 30).Add(-time.Millisecond)}
}

// benchLatency runs f b.N times and reports its p50 and p99.
func benchLatency(b *testing.B, f func()) {
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		t := time.Now()
		f()
		lat = append(lat, time.Since(t))
	}
	b.StopTimer()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
}

func envInt(name string, def int) int {
	var n int
	if _, err := fmt.Sscan(os.Getenv(name), &n); err != nil || n <= 0 {
		return def
	}
	return n
}

// buildSite applies a generated site's events, in time order, in batches
// as the runner delivers them under load.
func buildSite(path string, events, visitors int, day0 time.Time) error {
	s, err := Open(path + ".tmp")
	if err != nil {
		return err
	}
	rng := rand.New(rand.NewPCG(7, 11))
	ctx := context.Background()
	versions := make([]uint32, visitors)
	perMS := float64(events) / float64(30*dayMS)
	batch := make([]eventstore.RecordedEvent, 0, 4096)
	// Visits of 1 to 6 hits a minute apart, each of a random visitor, one
	// starting every events/(30 days × 3.5) ms.
	for i := 0; i < events; {
		at := day0.Add(time.Duration(float64(i)/perMS) * time.Millisecond)
		v := rng.IntN(visitors)
		for j := 0; j < 1+rng.IntN(6) && i < events; j++ {
			i++
			ev, err := benchHit(rng, v, at.Add(time.Duration(j)*time.Minute), uint64(versions[v]), uint64(i))
			if err != nil {
				return err
			}
			batch = append(batch, ev)
			versions[v]++
			if len(batch) == cap(batch) || i == events {
				if err := s.Apply(ctx, projections.Envelopes(batch)); err != nil {
					return err
				}
				batch = batch[:0]
			}
		}
	}
	if err := s.Close(); err != nil {
		return err
	}
	return os.Rename(path+".tmp", path)
}

// BenchmarkApplyHits applies the page views and events of a busy site as
// collect feeds them (batches of 128, each hit of a random one of 100,000
// visitors, the next page of a visit a minute after the last): the
// projector's cost per hit, the most of bench/collect.sh's CPU.
//
//	go test -run '^$' -bench ApplyHits -benchtime 200000x ./projections/radar/
func BenchmarkApplyHits(b *testing.B) {
	s, err := Open(filepath.Join(b.TempDir(), "radar.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	const visitors = 100_000
	rng := rand.New(rand.NewPCG(3, 5))
	versions := make([]uint32, visitors)
	last := make([]time.Time, visitors)
	day0 := time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC)
	ctx := context.Background()
	batch := make([]eventstore.RecordedEvent, 0, 4096)
	pos := uint64(0)
	next := func() eventstore.RecordedEvent {
		v := rng.IntN(visitors)
		at := day0.Add(time.Duration(pos) * time.Millisecond)
		if !last[v].IsZero() && at.Sub(last[v]) < time.Minute {
			at = last[v].Add(time.Minute)
		}
		last[v] = at
		pos++
		ev, err := benchHit(rng, v, at, uint64(versions[v]), pos)
		if err != nil {
			b.Fatal(err)
		}
		versions[v]++
		return ev
	}
	var applying time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; {
		b.StopTimer()
		batch = batch[:0]
		for len(batch) < cap(batch) && i < b.N {
			batch = append(batch, next())
			i++
		}
		b.StartTimer()
		t := time.Now()
		if err := s.Apply(ctx, projections.Envelopes(batch)); err != nil {
			b.Fatal(err)
		}
		applying += time.Since(t)
	}
	b.ReportMetric(float64(applying.Nanoseconds())/1e3/float64(b.N), "us/hit")
}

// benchHit is the page view (or, one time in ten, custom event) of visitor
// v at at, the version-th of the visitor's stream, at position pos of the
// log: one of 500 pages, its source, country, browser and system by v.
func benchHit(rng *rand.Rand, v int, at time.Time, version, pos uint64) (eventstore.RecordedEvent, error) {
	browsers := []string{"Chrome", "Safari", "Firefox", "Edge", "Samsung Internet", "Opera"}
	systems := []string{"Windows", "iOS", "Android", "macOS", "Linux"}
	visitor := fmt.Sprint("visitor-", v)
	h := radar.Hit{ProjectID: "p1", VisitorID: visitor, Hostname: "shop.example", Pathname: fmt.Sprint("/p/", rng.IntN(500)),
		Source: fmt.Sprint("source-", v%20), Country: fmt.Sprintf("C%02d", v%50), Browser: browsers[v%6], OS: systems[v%5], Device: "Desktop", At: at}
	h.URL = "https://shop.example" + h.Pathname
	var e domain.Event = &radar.PageviewRecorded{Hit: h}
	if rng.IntN(10) == 0 {
		e = &radar.EventRecorded{Hit: h, Name: fmt.Sprint("event-", rng.IntN(10))}
	}
	name, data, err := domain.EncodeEvent(e)
	if err != nil {
		return eventstore.RecordedEvent{}, err
	}
	return eventstore.RecordedEvent{Stream: radar.Stream("p1", visitor), Version: version, Type: name, Data: data,
		Position: eventstore.Position{Commit: pos, Prepare: pos}, Time: at}, nil
}
