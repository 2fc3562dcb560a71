package analytics

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/linkd/linkd/projections"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/linkd/linkd/domain/click"
	"github.com/linkd/linkd/eventstore"
	"github.com/linkd/linkd/internal/testsupport/cpu"
)

// Benchmarks (docs/performance.md has the figures):
//
//	go test -run '^$' -bench . -benchtime 200x ./projections/analytics/
//	LINKD_BENCH_10M=1 go test -run '^$' -bench 'Query/10M' -benchtime 2000x -timeout 60m ./projections/analytics/
//
// The workload: 10,000 links in 200 workspaces (link i in workspace i mod
// 200), clicks spread over 30 days, link popularity a power law (the top link
// gets about 4.6% of all clicks), 9 browsers, 7 OSes, 17 countries, 21 cities,
// 13 languages, 8 referrers, 1 click in 8 from an app, 1 in 10 a QR scan, and
// per day a pool of visitors a third the size of the day's clicks.

const (
	benchLinks      = 10_000
	benchWorkspaces = 200
	benchDays       = 30
	benchBatch      = 4096
)

var benchStart = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// benchGen makes click events. Ordered clicks come in time order, as live
// traffic and replays deliver them; otherwise every batch spreads over the
// 30 days (the worst case: ~30 times more records touched per batch).
type benchGen struct {
	rng      *rand.Rand
	total    int
	ordered  bool
	n        int
	versions map[int]uint64
	pos      uint64
}

func newBenchGen(total int, ordered bool, seed uint64) *benchGen {
	return &benchGen{rng: rand.New(rand.NewPCG(seed, 99)), total: total, ordered: ordered, versions: map[int]uint64{}}
}

var (
	bBrowsers   = []string{"Chrome", "Safari", "Firefox", "Edge", "Opera", "Samsung Internet", "Instagram", "Facebook", ""}
	bOSes       = []string{"iOS", "Android", "Windows", "macOS", "Linux", "ChromeOS", ""}
	bVersions   = []string{"10", "11", "14", "17.4", "13.1", ""}
	bDevices    = []string{"mobile", "desktop", "tablet", ""}
	bCountries  = []string{"US", "DE", "FR", "GB", "BR", "IN", "JP", "CN", "NG", "AU", "CA", "ES", "IT", "NL", "SE", "MX", ""}
	bContinents = []string{"NA", "EU", "EU", "EU", "SA", "AS", "AS", "AS", "AF", "OC", "NA", "EU", "EU", "EU", "EU", "NA", ""}
	bCities     = []string{"New York", "Berlin", "Paris", "London", "São Paulo", "Mumbai", "Tokyo", "Shanghai", "Lagos", "Sydney",
		"Toronto", "Madrid", "Rome", "Amsterdam", "Stockholm", "Mexico City", "Austin", "Munich", "Lyon", "Leeds", ""}
	bLangs = []string{"en", "de", "fr", "en-GB", "pt-BR", "hi", "ja", "zh", "es", "it", "nl", "sv", ""}
	bRefs  = []string{"", "", "twitter.com", "facebook.com", "google.com", "news.ycombinator.com", "reddit.com", "linkedin.com"}
	bApps  = []string{"Instagram", "Facebook", "TikTok", "LinkedIn", ""}
)

func benchLinkID(l int) string { return "lnk_" + strconv.Itoa(100000+l) + "_0b1c2d3e4f" }
func benchWSID(w int) string   { return "ws_" + strconv.Itoa(1000+w) + "_9a8b7c6d" }

func (g *benchGen) click() (click.Recorded, int) {
	rng := g.rng
	l := zipf(rng, benchLinks)
	var ts time.Time
	if g.ordered {
		span := float64(benchDays * 24 * time.Hour)
		ts = benchStart.Add(time.Duration(span * float64(g.n) / float64(g.total)))
	} else {
		ts = benchStart.Add(time.Duration(rng.Int64N(int64(benchDays * 24 * time.Hour))))
	}
	g.n++
	day := dayOf(ts)
	perDay := max(1000, g.total/benchDays/3)
	ci := rng.IntN(len(bCountries))
	fromApp := rng.IntN(8) == 0
	c := click.Recorded{
		ClickID:     "clk_" + strconv.Itoa(g.n),
		LinkID:      benchLinkID(l),
		WorkspaceID: benchWSID(l % benchWorkspaces),
		ProjectID:   "prj_1",
		Code:        "c" + strconv.Itoa(l),
		Timestamp:   ts,
		Source:      click.SourceRedirect,
		QR:          rng.IntN(10) == 0,
		Visitor:     strconv.FormatUint(uint64(day)<<32|uint64(rng.IntN(perDay)), 16) + "5d41402abc4b2a76",
		Browser:     bBrowsers[rng.IntN(len(bBrowsers))],
		OS:          bOSes[rng.IntN(len(bOSes))],
		OSVersion:   bVersions[rng.IntN(len(bVersions))],
		DeviceType:  bDevices[rng.IntN(len(bDevices))],
		FromApp:     fromApp,
		Language:    bLangs[rng.IntN(len(bLangs))],
		Referrer:    bRefs[rng.IntN(len(bRefs))],
		ReferrerURL: "",
		Country:     bCountries[ci],
		Continent:   bContinents[ci],
		City:        bCities[rng.IntN(len(bCities))],
		Destination: "https://example.com/landing?utm_source=linkd",
	}
	if c.Referrer != "" {
		c.ReferrerURL = "https://" + c.Referrer + "/some/path"
	}
	if fromApp {
		c.App = bApps[rng.IntN(len(bApps))]
	}
	return c, l
}

// batch makes the next size events, numbered as the event store would.
func (g *benchGen) batch(size int) []eventstore.RecordedEvent {
	out := make([]eventstore.RecordedEvent, size)
	for i := range out {
		c, l := g.click()
		data, err := json.Marshal(c)
		if err != nil {
			panic(err)
		}
		v, ok := g.versions[l]
		if ok {
			v++
		}
		g.versions[l] = v
		g.pos++
		out[i] = eventstore.RecordedEvent{
			Stream: click.Stream(c.LinkID), Version: v, Type: click.EventRecorded, Data: data,
			Position: eventstore.Position{Commit: g.pos, Prepare: g.pos}, Time: c.Timestamp,
		}
	}
	return out
}

// BenchmarkApply: one op is one batch of 4096 clicks. Reported: clicks/s
// (wall time of Apply alone), cpu-us/click (CPU time of the whole process,
// Pebble's flushes and compactions and the GC included, minus the thread
// time spent generating the events) and the load average at the end (the
// machine may be shared).
func BenchmarkApply(b *testing.B) {
	for _, ordered := range []bool{true, false} {
		name := "time-ordered"
		if !ordered {
			name = "30-days-shuffled"
		}
		b.Run(name, func(b *testing.B) { benchApply(b, ordered, false) })
	}
	// As the in-process runner feeds it: stream versions written behind
	// (versioncache.Behind), against every batch above.
	b.Run("time-ordered-versions-behind", func(b *testing.B) { benchApply(b, true, true) })
}

func benchApply(b *testing.B, ordered, behind bool) {
	ctx := context.Background()
	s := openTest(b, b.TempDir(), Options{})
	if behind {
		s.WriteVersionsBehind()
	}
	g := newBenchGen(b.N*benchBatch, ordered, 1)
	var genCPU time.Duration
	cpu0 := cpu.Process()
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		t0 := cpu.ThreadStart()
		batch := g.batch(benchBatch)
		genCPU += cpu.ThreadStop(t0)
		b.StartTimer()
		if err := s.Apply(ctx, projections.Envelopes(batch)); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	clicks := float64(b.N * benchBatch)
	b.ReportMetric(clicks/b.Elapsed().Seconds(), "clicks/s")
	b.ReportMetric(float64((cpu.Process()-cpu0-genCPU).Microseconds())/clicks, "cpu-us/click")
	b.ReportMetric(cpu.LoadAverage(), "loadavg")
}

// loaded keeps the stores of BenchmarkQuery across the benchmark's runs.
var (
	loadedMu sync.Mutex
	loaded   = map[int]*Store{}
	tempDirs []string
)

// load applies n time-ordered clicks in batches of 4096 and reports the
// sustained throughput (Apply time only; generating the JSON is not counted).
func load(b *testing.B, n int) *Store {
	loadedMu.Lock()
	defer loadedMu.Unlock()
	if s, ok := loaded[n]; ok {
		return s
	}
	dir, err := os.MkdirTemp("", "analytics-bench-")
	if err != nil {
		b.Fatal(err)
	}
	tempDirs = append(tempDirs, dir)
	s, err := Open(dir, Options{Logger: quiet})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	g := newBenchGen(n, true, 2)
	var applying, genCPU time.Duration
	wall := time.Now()
	cpu0 := cpu.Process()
	for done := 0; done < n; done += benchBatch {
		c0 := cpu.ThreadStart()
		batch := g.batch(min(benchBatch, n-done))
		genCPU += cpu.ThreadStop(c0)
		t0 := time.Now()
		if err := s.Apply(ctx, projections.Envelopes(batch)); err != nil {
			b.Fatal(err)
		}
		applying += time.Since(t0)
	}
	used := cpu.Process() - cpu0 - genCPU
	m := s.db.Metrics()
	fmt.Fprintf(os.Stderr, "loaded %d clicks: %.0f clicks/s applied (Apply time %v, wall %v incl. generation), %.1f cpu-us/click, load average %.1f; disk %.1f MiB; peak RSS %.0f MiB\n",
		n, float64(n)/applying.Seconds(), applying.Round(time.Millisecond), time.Since(wall).Round(time.Millisecond),
		float64(used.Microseconds())/float64(n), cpu.LoadAverage(), float64(m.DiskSpaceUsage())/(1<<20), float64(cpu.MaxRSS())/(1<<20))
	loaded[n] = s
	return s
}

// BenchmarkQuery: 30-day LinkDaily and WorkspaceDaily on a store holding 1M
// (or, with LINKD_BENCH_10M=1, 10M) clicks. Links are drawn with the click
// distribution (busy links are asked more), workspaces uniformly. Reports
// p50 and p99 latencies.
func BenchmarkQuery(b *testing.B) {
	sizes := []int{1_000_000}
	if os.Getenv("LINKD_BENCH_10M") == "1" {
		sizes = append(sizes, 10_000_000)
	}
	for _, n := range sizes {
		for _, kind := range []string{"LinkDaily", "WorkspaceDaily", "LinkDaily-top"} {
			b.Run(fmt.Sprintf("%s/%s", label(n), kind), func(b *testing.B) {
				s := load(b, n)
				ctx := context.Background()
				rng := rand.New(rand.NewPCG(5, 5))
				from, to := benchStart, benchStart.AddDate(0, 0, benchDays-1)
				lat := make([]time.Duration, 0, b.N)
				records := 0
				b.ResetTimer()
				for range b.N {
					var (
						days []queryResult
						err  error
					)
					t0 := time.Now()
					switch kind {
					case "LinkDaily":
						days, err = wrap(s.LinkDaily(ctx, benchLinkID(zipf(rng, benchLinks)), from, to))
					case "LinkDaily-top":
						days, err = wrap(s.LinkDaily(ctx, benchLinkID(0), from, to))
					default:
						days, err = wrap(s.WorkspaceDaily(ctx, benchWSID(rng.IntN(benchWorkspaces)), from, to))
					}
					lat = append(lat, time.Since(t0))
					if err != nil {
						b.Fatal(err)
					}
					records += len(days)
				}
				b.StopTimer()
				slices.Sort(lat)
				b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
				b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
				b.ReportMetric(float64(records)/float64(b.N), "days/query")
				b.ReportMetric(cpu.LoadAverage(), "loadavg")
			})
		}
	}
}

type queryResult = struct{}

func wrap[T any](v []T, err error) ([]queryResult, error) { return make([]queryResult, len(v)), err }

func label(n int) string {
	if n%1_000_000 == 0 {
		return strconv.Itoa(n/1_000_000) + "M"
	}
	return strconv.Itoa(n)
}

func TestMain(m *testing.M) {
	code := m.Run()
	for _, s := range loaded {
		s.Close()
	}
	for _, d := range tempDirs {
		os.RemoveAll(d)
	}
	os.Exit(code)
}
