package clickindex

import (
	"context"
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

// Benchmarks (docs/clickindex.md has the figures):
//
//	go test -run '^$' -bench . -benchtime 200x ./projections/clickindex/
//	LINKD_BENCH_10M=1 go test -run '^$' -bench 'Click/10M' -benchtime 200000x -timeout 60m ./projections/clickindex/
//	LINKD_MEMTEST=1 go test -run TestMemoryFlat -v -timeout 60m ./projections/clickindex/
//
// The workload: tracked clicks as the redirect records them (UUIDv7 click
// ids made with the click, UUIDv7 link, workspace, project and domain ids),
// spread evenly over 89 days and applied in time order as live traffic
// comes, on 10,000 links in 200 workspaces, 9 browsers, 7 OSes, 17
// countries, 8 referrers, 1 click in 10 a QR scan.

const (
	benchLinks      = 10_000
	benchWorkspaces = 200
	benchSpan       = 89 * 24 * time.Hour
	benchBatch      = 4096
)

var benchStart = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// benchNow is the clock of the loaded stores: every click still valid.
func benchNow() time.Time { return benchStart.Add(benchSpan + time.Hour) }

var (
	bBrowsers  = []string{"Chrome", "Safari", "Firefox", "Edge", "Opera", "Samsung Internet", "Instagram", "Facebook", ""}
	bOSes      = []string{"iOS", "Android", "Windows", "macOS", "Linux", "ChromeOS", ""}
	bDevices   = []string{"mobile", "desktop", "tablet", ""}
	bCountries = []string{"US", "DE", "FR", "GB", "BR", "IN", "JP", "CN", "NG", "AU", "CA", "ES", "IT", "NL", "SE", "MX", ""}
	bRefs      = []string{"", "", "twitter.com", "facebook.com", "google.com", "news.ycombinator.com", "reddit.com", "linkedin.com"}
)

func benchID(kind uint16, n int) string {
	return fmt.Sprintf("0190a3c2-%04x-7abc-8def-%012x", kind, n)
}

// benchGen makes the events of total clicks, numbered as the event store
// would. Click i happens at benchTime(i, total) with tracking id
// benchClickID(i, total), so lookups need not keep the ids.
type benchGen struct {
	rng      *rand.Rand
	total, n int
	linkKind uint16 // of the link ids (default 1)
	idOffset uint64 // added to the n of tracking ids
	plainIDs bool   // tracking ids "tid-<n>" instead of UUIDv7
	versions []uint64
	seen     []bool
	pos      uint64
	buf      []byte
}

func newBenchGen(total int, seed uint64) *benchGen {
	return &benchGen{rng: rand.New(rand.NewPCG(seed, 99)), total: total, linkKind: 1,
		versions: make([]uint64, benchLinks), seen: make([]bool, benchLinks)}
}

func benchTime(i, total int) time.Time {
	return benchStart.Add(time.Duration(int64(benchSpan) / int64(total) * int64(i)))
}

func benchClickID(i, total int) string { return v7At(benchTime(i, total), uint64(i)) }

// batch makes the next size events (fewer at the end).
func (g *benchGen) batch(size int) []eventstore.RecordedEvent {
	size = min(size, g.total-g.n)
	out := make([]eventstore.RecordedEvent, size)
	g.buf = make([]byte, 0, size*700)
	for j := range out {
		i := g.n
		g.n++
		rng := g.rng
		l := rng.IntN(benchLinks)
		ts := benchTime(i, g.total)
		exp := ts.Add(click.TrackingTTL)
		id := v7At(ts, uint64(i)+g.idOffset)
		if g.plainIDs {
			id = "tid-" + strconv.Itoa(i)
		}
		c := click.Recorded{
			ClickID: id, TrackingID: id, TrackingExpiresAt: &exp,
			LinkID: benchID(g.linkKind, l), WorkspaceID: benchID(2, l%benchWorkspaces), ProjectID: benchID(3, l%1000),
			Code: "c" + strconv.Itoa(l), Timestamp: ts, Source: click.SourceRedirect, QR: rng.IntN(10) == 0,
			Visitor:    strconv.FormatUint(rng.Uint64(), 16),
			Browser:    bBrowsers[rng.IntN(len(bBrowsers))],
			OS:         bOSes[rng.IntN(len(bOSes))],
			DeviceType: bDevices[rng.IntN(len(bDevices))],
			Referrer:   bRefs[rng.IntN(len(bRefs))],
			Country:    bCountries[rng.IntN(len(bCountries))],
			Language:   "en", City: "Berlin", Continent: "EU",
			Destination: "https://example.com/landing?utm_source=linkd&utm_medium=social",
		}
		if l%4 == 0 {
			c.DomainID = benchID(4, l%100)
		}
		if c.Referrer != "" {
			c.ReferrerURL = "https://" + c.Referrer + "/some/path"
		}
		start := len(g.buf)
		g.buf = c.AppendJSON(g.buf)
		v := g.versions[l]
		if g.seen[l] {
			v++
		}
		g.versions[l], g.seen[l] = v, true
		g.pos++
		out[j] = eventstore.RecordedEvent{
			Stream: click.Stream(c.LinkID), Version: v, Type: click.EventRecorded, Data: g.buf[start:len(g.buf):len(g.buf)],
			Position: eventstore.Position{Commit: g.pos, Prepare: g.pos}, Time: ts,
		}
	}
	return out
}

// BenchmarkApply: one op is one Apply of a batch (4096 clicks, as the
// in-process runner delivers under load, or a single click, as it delivers
// when quiet: one synced commit each). Reported: clicks/s (Apply time
// only; making the events is not counted), cpu-us/click (CPU time of the
// whole process, Pebble's flushes and compactions and the GC included,
// minus the thread time spent making the events: steadier than clicks/s
// on a shared machine) and the load average at the end.
func BenchmarkApply(b *testing.B) {
	for _, size := range []int{benchBatch, 64, 1} {
		b.Run(fmt.Sprintf("batch-%d", size), func(b *testing.B) {
			ctx := context.Background()
			s := openTest(b, b.TempDir(), Options{Now: benchNow})
			g := newBenchGen(b.N*size, 1)
			var applying, genCPU time.Duration
			cpu0 := cpu.Process()
			for range b.N {
				c0 := cpu.ThreadStart()
				batch := g.batch(size)
				genCPU += cpu.ThreadStop(c0)
				t0 := time.Now()
				if err := s.Apply(ctx, projections.Envelopes(batch)); err != nil {
					b.Fatal(err)
				}
				applying += time.Since(t0)
			}
			b.ReportMetric(float64(b.N*size)/applying.Seconds(), "clicks/s")
			b.ReportMetric(float64(applying.Microseconds())/float64(b.N), "us/apply")
			b.ReportMetric(float64((cpu.Process()-cpu0-genCPU).Microseconds())/float64(b.N*size), "cpu-us/click")
			b.ReportMetric(cpu.LoadAverage(), "loadavg")
		})
	}
}

// loaded keeps the stores of BenchmarkClick across the benchmark's runs.
var (
	loadedMu sync.Mutex
	loaded   = map[int]*Store{}
	tempDirs []string
)

// loadStore applies n clicks in batches of 4096 into dir and reports the
// sustained throughput (Apply time only).
func loadStore(tb testing.TB, s *Store, n int) {
	ctx := context.Background()
	g := newBenchGen(n, 2)
	var applying time.Duration
	wall := time.Now()
	for g.n < n {
		batch := g.batch(benchBatch)
		t0 := time.Now()
		if err := s.Apply(ctx, projections.Envelopes(batch)); err != nil {
			tb.Fatal(err)
		}
		applying += time.Since(t0)
	}
	m := s.db.Metrics()
	fmt.Fprintf(os.Stderr, "loaded %d clicks: %.0f clicks/s applied (Apply time %v, wall %v incl. generation); disk %.1f MiB, %d tables\n",
		n, float64(n)/applying.Seconds(), applying.Round(time.Millisecond), time.Since(wall).Round(time.Millisecond),
		float64(m.DiskSpaceUsage())/(1<<20), m.Total().TablesCount)
}

func load(b *testing.B, n int) *Store {
	loadedMu.Lock()
	defer loadedMu.Unlock()
	if s, ok := loaded[n]; ok {
		return s
	}
	dir, err := os.MkdirTemp("", "clickindex-bench-")
	if err != nil {
		b.Fatal(err)
	}
	tempDirs = append(tempDirs, dir)
	s, err := Open(dir, Options{Logger: quiet, Now: benchNow, ExpireEvery: -1})
	if err != nil {
		b.Fatal(err)
	}
	loadStore(b, s, n)
	// Lookups run on what a server finds after a restart: no memtable,
	// every id in tables.
	if err := s.db.Flush(); err != nil {
		b.Fatal(err)
	}
	loaded[n] = s
	return s
}

// BenchmarkClick: lookups on a store holding 1M (or, with LINKD_BENCH_10M=1,
// 10M) ids. hit: a uniformly random id of the store (the worst case for the
// cache: old and new ids alike); miss: a UUIDv7 of the same period that was
// never handed out; parallel: hits from GOMAXPROCS goroutines. Reports p50
// and p99 latencies (serial cases) and lookups/s.
func BenchmarkClick(b *testing.B) {
	sizes := []int{1_000_000}
	if os.Getenv("LINKD_BENCH_10M") == "1" {
		sizes = append(sizes, 10_000_000)
	}
	for _, n := range sizes {
		for _, kind := range []string{"hit", "miss"} {
			b.Run(fmt.Sprintf("%s/%s", label(n), kind), func(b *testing.B) {
				s := load(b, n)
				ctx := context.Background()
				rng := rand.New(rand.NewPCG(5, 5))
				lat := make([]time.Duration, 0, b.N)
				b.ResetTimer()
				for range b.N {
					i := rng.IntN(n)
					id := benchClickID(i, n)
					if kind == "miss" {
						id = v7At(benchTime(i, n), uint64(i)+1<<40)
					}
					t0 := time.Now()
					c, ok, err := s.Click(ctx, id)
					lat = append(lat, time.Since(t0))
					if err != nil || ok != (kind == "hit") {
						b.Fatalf("Click(%s) = %v, %v", id, ok, err)
					}
					if ok && !c.Timestamp.Equal(benchTime(i, n)) {
						b.Fatalf("Click(%s) = %+v", id, c)
					}
				}
				b.StopTimer()
				slices.Sort(lat)
				b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds())/1000, "p50-us")
				b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds())/1000, "p99-us")
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "lookups/s")
				b.ReportMetric(cpu.LoadAverage(), "loadavg")
			})
		}
		b.Run(fmt.Sprintf("%s/hit-parallel", label(n)), func(b *testing.B) {
			s := load(b, n)
			ctx := context.Background()
			var seed atomicSeed
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				rng := rand.New(rand.NewPCG(seed.next(), 7))
				for pb.Next() {
					if _, ok, err := s.Click(ctx, benchClickID(rng.IntN(n), n)); err != nil || !ok {
						b.Errorf("Click: %v, %v", ok, err)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "lookups/s")
		})
	}
}

// BenchmarkExpire: a store of 1M ids over 89 days; the clock moves so that
// the older half expires; one Expire deletes them. Reported: the time of
// Expire, the ids it deleted per second, and the live table bytes before,
// after Pebble's own compactions reclaimed a quarter of them (s-to-reclaim;
// -1: not within 5 s, MiB-after then is at 5 s), and after a manual
// compaction of the whole key space. uuidv7: the ids
// linkd hands out (one DeleteRange); other-ids: ids that are not UUIDv7
// (read from the expiry index, deleted one by one).
func BenchmarkExpire(b *testing.B) {
	const n = 1_000_000
	for _, plain := range []bool{false, true} {
		name := "uuidv7"
		if plain {
			name = "other-ids"
		}
		b.Run(name, func(b *testing.B) {
			ctx := context.Background()
			var took time.Duration
			var before, after, compacted uint64 // live table bytes
			var reclaim float64
			// The timer runs throughout (loading included), so that b.N
			// stays 1 with -benchtime 2s (make bench): a timer stopped
			// while loading would make the framework ask for thousands of
			// loads. ms/expire is what Expire alone took.
			for range b.N {
				clk := newClock(benchNow())
				s := openTest(b, b.TempDir(), Options{Now: clk.Now})
				g := newBenchGen(n, 4)
				g.plainIDs = plain
				for g.n < n {
					if err := s.Apply(ctx, projections.Envelopes(g.batch(benchBatch))); err != nil {
						b.Fatal(err)
					}
				}
				if err := s.db.Flush(); err != nil {
					b.Fatal(err)
				}
				before = liveBytes(s)
				// The first half of the clicks expires (plus the margins).
				clk.Set(benchTime(n/2, n).Add(click.TrackingTTL + Slack + 24*time.Hour))
				t0 := time.Now()
				if _, err := s.Expire(ctx); err != nil {
					b.Fatal(err)
				}
				took += time.Since(t0)
				// Pebble's own compactions: a delete-only compaction drops
				// the tables a range deletion covers whole.
				after = liveBytes(s)
				reclaim = -1
				for t0 := time.Now(); time.Since(t0) < 5*time.Second; time.Sleep(20 * time.Millisecond) {
					if after = liveBytes(s); after < before*3/4 {
						reclaim = time.Since(t0).Seconds()
						break
					}
				}
				if err := s.db.Compact(ctx, []byte{0}, []byte{0xff}, false); err != nil {
					b.Fatal(err)
				}
				compacted = liveBytes(s)
				left := countKeys(b, s, tagV7) + countKeys(b, s, tagID)
				if left < n*4/10 || left > n/2 {
					b.Fatalf("%d ids left of %d", left, n)
				}
				s.Close()
			}
			b.ReportMetric(took.Seconds()*1000/float64(b.N), "ms/expire")
			b.ReportMetric(float64(n/2*b.N)/took.Seconds(), "ids/s")
			b.ReportMetric(float64(before)/(1<<20), "MiB-before")
			b.ReportMetric(float64(after)/(1<<20), "MiB-after")
			b.ReportMetric(reclaim, "s-to-reclaim")
			b.ReportMetric(float64(compacted)/(1<<20), "MiB-compacted")
		})
	}
}

// liveBytes is the size of the live tables of s (memtables flushed).
func liveBytes(s *Store) uint64 {
	_ = s.db.Flush()
	t := s.db.Metrics().Total()
	return uint64(t.TablesSize)
}

type atomicSeed struct {
	mu sync.Mutex
	n  uint64
}

func (a *atomicSeed) next() uint64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.n++
	return a.n
}

func label(n int) string {
	switch {
	case n%1_000_000 == 0:
		return strconv.Itoa(n/1_000_000) + "M"
	case n%1000 == 0:
		return strconv.Itoa(n/1000) + "k"
	}
	return strconv.Itoa(n)
}

func TestMain(m *testing.M) {
	if os.Getenv(memChildEnv) != "" {
		os.Exit(memChild())
	}
	code := m.Run()
	for _, s := range loaded {
		s.Close()
	}
	for _, d := range tempDirs {
		os.RemoveAll(d)
	}
	os.Exit(code)
}
