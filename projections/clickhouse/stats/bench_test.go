package stats

// Benchmarks (docs/performance.md has the commands and results):
//
//	BenchmarkProject        ClickRecorded events through Apply, batches of 8192
//	BenchmarkRawInsert      the same rows into a bare MergeTree: the baseline
//	BenchmarkApplyToVisible Apply of a small batch until LinkDaily shows it
//	BenchmarkQueries10M     30-day LinkDaily / WorkspaceDaily on 10 million
//	                        clicks; opt-in: LINKD_BENCH_10M=1
import (
	"encoding/json"
	"fmt"
	"github.com/linkd/linkd/projections"
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/google/uuid"

	"github.com/linkd/linkd/domain/click"
	"github.com/linkd/linkd/eventstore"
	"github.com/linkd/linkd/internal/testsupport/chtest"
	"github.com/linkd/linkd/internal/testsupport/cpu"
)

// benchGen makes realistic click events: Zipf-distributed links, each in
// one of the workspaces, times spread over days, visitors from a large
// Zipf-distributed pool, enrichment fields from lists of realistic size.
type benchGen struct {
	r          *rand.Rand
	ids        *rand.Rand // the UUIDs (a stream of their own: the other fields stay as they were)
	linkZipf   *rand.Zipf
	visZipf    *rand.Zipf
	links      int
	workspaces int
	start      time.Time
	span       time.Duration
	total      int // clicks over the span
	n          int // clicks made
	seqs       []uint64
	pos        uint64
	cities     []string
}

func newBenchGen(seed uint64, links, workspaces, total int, start time.Time, days int) *benchGen {
	r := rand.New(rand.NewPCG(seed, 2))
	g := &benchGen{
		r:          r,
		ids:        rand.New(rand.NewPCG(seed, 3)),
		linkZipf:   rand.NewZipf(r, 1.1, 10, uint64(links-1)),
		visZipf:    rand.NewZipf(r, 1.05, 1, 5_000_000),
		links:      links,
		workspaces: workspaces,
		start:      start,
		span:       time.Duration(days) * 24 * time.Hour,
		total:      total,
		seqs:       make([]uint64, links),
	}
	for i := range 500 {
		g.cities = append(g.cities, "City "+strconv.Itoa(i))
	}
	return g
}

var (
	benchOS        = []string{"iOS", "Android", "Windows", "macOS", "Linux", "ChromeOS", ""}
	benchVersions  = []string{"17.4", "17.5", "16.7", "14", "13", "10", "10.15.7", ""}
	benchBrowsers  = []string{"Chrome", "Safari", "Firefox", "Edge", "Samsung Internet", "Instagram", "Facebook", "Opera"}
	benchDevices   = []string{"mobile", "desktop", "tablet"}
	benchLangs     = []string{"en", "pt", "de", "fr", "es", "it", "ja", "zh", "ru", "pl", "nl", ""}
	benchReferrers = []string{"", "google.com", "t.co", "facebook.com", "instagram.com", "linkedin.com", "news.ycombinator.com", "reddit.com"}
	benchCountries = []string{"US", "BR", "DE", "FR", "GB", "IN", "JP", "ES", "IT", "CA", "MX", "NL", "PL", "SE", "AU", "AR", "CO", "PT", "TR", "ID", ""}
	benchApps      = []string{"Instagram", "Facebook", "TikTok", "LinkedIn", "Twitter"}
	continentOf    = map[string]string{"US": "NA", "CA": "NA", "MX": "NA", "BR": "SA", "AR": "SA", "CO": "SA",
		"IN": "AS", "JP": "AS", "ID": "AS", "TR": "AS", "AU": "OC"}
)

func (g *benchGen) linkID(i int) string      { return fmt.Sprintf("lnk%07d", i) }
func (g *benchGen) workspaceOf(i int) string { return fmt.Sprintf("ws%03d", i%g.workspaces) }

// next makes n events, in time order.
func (g *benchGen) next(n int) []eventstore.RecordedEvent {
	out := make([]eventstore.RecordedEvent, 0, n)
	arena := make([]byte, 0, n*720) // the JSON bodies of the batch
	for range n {
		li := int(g.linkZipf.Uint64())
		id := g.linkID(li)
		ts := g.start.Add(time.Duration(float64(g.span) * float64(g.n) / float64(g.total)))
		g.n++
		pick := func(vals []string) string { return vals[g.r.IntN(len(vals))] }
		country := pick(benchCountries)
		cont := continentOf[country]
		if cont == "" && country != "" {
			cont = "EU"
		}
		fromApp := g.r.IntN(6) == 0
		app := ""
		if fromApp {
			app = pick(benchApps)
		}
		city := ""
		if g.r.IntN(3) > 0 {
			city = g.cities[int(math.Sqrt(float64(g.r.IntN(len(g.cities)*len(g.cities)))))]
		}
		c := click.Recorded{
			ClickID:        g.uuid().String(),
			LinkID:         id,
			WorkspaceID:    g.workspaceOf(li),
			ProjectID:      "prj" + strconv.Itoa(li%7),
			Code:           "c" + strconv.Itoa(li),
			Timestamp:      ts,
			Source:         click.SourceRedirect,
			QR:             g.r.IntN(5) == 0,
			Visitor:        hex32(g.visZipf.Uint64()),
			Browser:        pick(benchBrowsers),
			BrowserVersion: "126.0.0.0",
			OS:             pick(benchOS),
			OSVersion:      pick(benchVersions),
			DeviceType:     pick(benchDevices),
			Device:         "iPhone",
			FromApp:        fromApp,
			App:            app,
			Language:       pick(benchLangs),
			Referrer:       pick(benchReferrers),
			ReferrerURL:    "https://example.org/some/page",
			Country:        country,
			Continent:      cont,
			City:           city,
			Destination:    "https://example.com/landing?utm_source=linkd",
		}
		from := len(arena)
		arena = c.AppendJSON(arena) // json.Marshal's bytes, for a fraction of its CPU
		data := arena[from:len(arena):len(arena)]
		g.pos++
		out = append(out, eventstore.RecordedEvent{
			ID: g.uuid(), Stream: click.Stream(id), Version: g.seqs[li],
			Position: eventstore.Position{Commit: g.pos, Prepare: g.pos},
			Type:     click.EventRecorded, Data: data, Time: ts,
		})
		g.seqs[li]++
	}
	return out
}

// uuid is a random (version 4) UUID, as uuid.New makes, from the
// generator's own stream: crypto/rand was a large share of the generator's
// CPU.
func (g *benchGen) uuid() uuid.UUID {
	var u uuid.UUID
	a, b := g.ids.Uint64(), g.ids.Uint64()
	for i := range 8 {
		u[i], u[8+i] = byte(a>>(8*i)), byte(b>>(8*i))
	}
	u[6] = u[6]&0x0f | 0x40 // version 4
	u[8] = u[8]&0x3f | 0x80 // variant 10
	return u
}

// hex32 is fmt.Sprintf("%032x", v).
func hex32(v uint64) string {
	var b [32]byte
	for i := range b {
		b[i] = '0'
	}
	h := strconv.AppendUint(nil, v, 16)
	copy(b[32-len(h):], h)
	return string(b[:])
}

// benchBatch is the clicks of one Apply: 8192, or LINKD_BENCH_BATCH.
var benchBatch = func() int {
	if n, err := strconv.Atoi(os.Getenv("LINKD_BENCH_BATCH")); err == nil && n > 0 {
		return n
	}
	return 8192
}()

// BenchmarkProject measures Apply throughput of ClickRecorded events, and
// in the same run the bare insert of the same rows (BenchmarkRawInsert's
// work) as the baseline. One op is one batch of 8192 clicks.
func BenchmarkProject(b *testing.B) {
	ctx := chtest.Context(b, 30*time.Minute)
	dsn := chtest.DSN(b)
	p, err := Open(ctx, dsn, Options{Dial: chtest.Open})
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	g := newBenchGen(1, 20_000, 20, (b.N+1)*benchBatch, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), 30)
	batches := make([][]eventstore.RecordedEvent, b.N)
	for i := range batches {
		batches[i] = g.next(benchBatch)
	}
	b.ResetTimer()
	m := startCPU(dsn)
	for i := range b.N {
		if err := p.Apply(ctx, projections.Envelopes(batches[i])); err != nil {
			b.Fatal(err)
		}
	}
	// The aggregates still pending are part of the work.
	if err := p.Flush(ctx); err != nil {
		b.Fatal(err)
	}
	m.report(b, b.N*benchBatch)
}

// BenchmarkRawInsert inserts the same rows as BenchmarkProject into a bare
// MergeTree copy of clicks (no views, no breakdowns, no dedup, no
// checkpoint): the ceiling the projection is measured against.
func BenchmarkRawInsert(b *testing.B) {
	ctx := chtest.Context(b, 30*time.Minute)
	dsn := chtest.DSN(b)
	p, err := Open(ctx, dsn, Options{Dial: chtest.Open})
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	if err := p.conn.Exec(ctx, "CREATE TABLE "+p.tbl("clicks_raw")+" AS "+p.tbl(tClicks)); err != nil {
		b.Fatal(err)
	}
	g := newBenchGen(1, 20_000, 20, (b.N+1)*benchBatch, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), 30)
	units := make([][]clickRow, b.N)
	for i := range units {
		for _, ev := range g.next(benchBatch) {
			var c click.Recorded
			if err := json.Unmarshal(ev.Data, &c); err != nil {
				b.Fatal(err)
			}
			units[i] = append(units[i], newClickRow(ev, c.LinkID, &c))
		}
	}
	b.ResetTimer()
	m := startCPU(dsn)
	for i := range b.N {
		cols := make([]any, len(clickColumns))
		for j, c := range clickColumns {
			cols[j] = c.values(nil, units[i])
		}
		if err := p.db.InsertColumns(ctx, "clicks_raw", clickInsert, cols, ""); err != nil {
			b.Fatal(err)
		}
	}
	m.report(b, b.N*benchBatch)
}

// cpuMeter measures a benchmark's wall time and the CPU time it costs, in
// this process and in the ClickHouse server (when exactly one
// clickhouse-server runs here): the machine is shared, so wall-clock
// throughput depends on the load; CPU per click does much less.
type cpuMeter struct {
	wall      time.Time
	self, srv time.Duration
	pid       int
}

func startCPU(dsn string) *cpuMeter {
	m := &cpuMeter{wall: time.Now(), pid: chtest.ServerPID(dsn)}
	m.self, m.srv = cpu.Process(), chtest.ServerCPU(m.pid)
	return m
}

func (m *cpuMeter) report(b *testing.B, clicks int) {
	el := time.Since(m.wall)
	b.StopTimer()
	self, srv := cpu.Process()-m.self, chtest.ServerCPU(m.pid)-m.srv
	b.ReportMetric(float64(clicks)/el.Seconds(), "clicks/s")
	b.ReportMetric(float64(self.Microseconds())/float64(clicks), "client-cpu-us/click")
	if m.pid > 0 {
		b.ReportMetric(float64(srv.Microseconds())/float64(clicks), "server-cpu-us/click")
		// Clicks per second of CPU (client and server together): what
		// one idle core would do; the load of the machine matters less.
		b.ReportMetric(float64(clicks)/(self+srv).Seconds(), "clicks/cpu-s")
	}
	b.ReportMetric(cpu.LoadAverage(), "loadavg")
}

// BenchmarkApplyToVisible: one op applies a batch of 100 clicks of one link
// and waits until the last one shows, from the time Apply was called:
//   - read-model: through LinkDaily (which flushes the pending aggregates
//     of the link first, so one read suffices);
//   - analyst-table: in link_clicks_daily, polled with plain SQL every
//     10 ms, as an analyst (or a second linkd) would see it: the
//     aggregates come with the next flush, at most Options.FlushInterval
//     after Apply (the background flush, since no other Apply comes).
func BenchmarkApplyToVisible(b *testing.B) {
	for _, mode := range []string{"read-model", "analyst-table"} {
		b.Run(mode, func(b *testing.B) {
			ctx := chtest.Context(b, 10*time.Minute)
			dsn := chtest.DSN(b)
			p, err := Open(ctx, dsn, Options{Dial: chtest.Open})
			if err != nil {
				b.Fatal(err)
			}
			defer p.Close()
			conn := rawConn(b, p, dsn)
			g := newBenchGen(3, 1, 1, (b.N+1)*100, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), 1)
			day := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			var lat []time.Duration
			b.ResetTimer()
			for i := range b.N {
				batch := g.next(100)
				want := int64((i + 1) * 100)
				t0 := time.Now()
				if err := p.Apply(ctx, projections.Envelopes(batch)); err != nil {
					b.Fatal(err)
				}
				for {
					var n int64
					if mode == "read-model" {
						d, err := p.LinkDaily(ctx, g.linkID(0), day, day)
						if err != nil {
							b.Fatal(err)
						}
						if len(d) == 1 {
							n = d[0].TotalClicks
						}
					} else {
						var u uint64
						if err := conn.QueryRow(ctx, "SELECT sum(clicks) FROM link_clicks_daily WHERE link_id = ?", g.linkID(0)).Scan(&u); err != nil {
							b.Fatal(err)
						}
						n = int64(u)
					}
					if n == want {
						break
					}
					if mode == "read-model" {
						b.Fatalf("LinkDaily shows %d clicks right after Apply, want %d", n, want)
					}
					time.Sleep(10 * time.Millisecond)
				}
				lat = append(lat, time.Since(t0))
			}
			b.StopTimer()
			cpu.ReportPercentiles(b, lat)
			b.ReportMetric(cpu.LoadAverage(), "loadavg")
		})
	}
}

// bench10MDSN is the DSN of the database that keeps the 10 million clicks
// between runs: LINKD_BENCH_DB (default linkd_bench_10m) on the server of
// LINKD_TEST_CLICKHOUSE_DSN.
func bench10MDSN(b *testing.B) string {
	if os.Getenv("LINKD_BENCH_10M") != "1" {
		b.Skip("set LINKD_BENCH_10M=1 to load 10 million clicks (minutes) and time the 30-day queries")
	}
	base := os.Getenv(chtest.EnvDSN)
	if base == "" {
		b.Skip("the 10M benchmarks keep their data between runs: start scripts/clickhouse-test-server.sh and export " + chtest.EnvDSN)
	}
	opts, err := clickhouse.ParseDSN(base)
	if err != nil {
		b.Fatal(err)
	}
	db := os.Getenv("LINKD_BENCH_DB")
	if db == "" {
		db = "linkd_bench_10m"
	}
	return fmt.Sprintf("clickhouse://%s:%s@%s/%s", opts.Auth.Username, opts.Auth.Password, opts.Addr[0], db)
}

// BenchmarkQueries10M loads 10 million clicks through the projector (30 days,
// 20,000 links over 20 workspaces, Zipf) unless the database holds them
// already, then times 30-day LinkDaily and WorkspaceDaily. Opt-in:
// LINKD_BENCH_10M=1.
func BenchmarkQueries10M(b *testing.B) {
	dsn := bench10MDSN(b)
	ctx := chtest.Context(b, 2*time.Hour)
	p, err := Open(ctx, dsn, Options{Dial: chtest.Open})
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()

	const total, links, workspaces = 10_000_000, 20_000, 20
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var have uint64
	if err := p.conn.QueryRow(ctx, "SELECT count() FROM "+p.tbl(tClicks)).Scan(&have); err != nil {
		b.Fatal(err)
	}
	if have != total {
		if err := p.Reset(ctx); err != nil {
			b.Fatal(err)
		}
		g := newBenchGen(10, links, workspaces, total, start, 30)
		batches := make(chan []eventstore.RecordedEvent, 4) // generated ahead, in parallel
		go func() {
			defer close(batches)
			for done := 0; done < total; done += benchBatch {
				batches <- g.next(min(benchBatch, total-done))
			}
		}()
		m := startCPU(dsn)
		for done := 0; done < total; done += benchBatch {
			if err := p.Apply(ctx, projections.Envelopes(<-batches)); err != nil {
				b.Fatal(err)
			}
			if done%1_000_000 < benchBatch {
				b.Logf("loaded %d clicks in %v", done, time.Since(m.wall).Round(time.Second))
			}
		}
		if err := p.Flush(ctx); err != nil {
			b.Fatal(err)
		}
		self, srv := cpu.Process()-m.self, chtest.ServerCPU(m.pid)-m.srv
		b.Logf("loaded %d clicks in %v (%.0f clicks/s, batches of %d; CPU µs/click: %.1f client with the generator, %.1f server; load average now %.2f)",
			total, time.Since(m.wall).Round(time.Second), float64(total)/time.Since(m.wall).Seconds(), benchBatch,
			float64(self.Microseconds())/total, float64(srv.Microseconds())/total, cpu.LoadAverage())
	}
	from, to := start, start.AddDate(0, 0, 29)

	// The busiest link and workspace, and a link of median traffic.
	var hotLink, hotWS, midLink string
	var hotLinkN, hotWSN, midLinkN uint64
	if err := p.conn.QueryRow(ctx, "SELECT link_id, sum(clicks) AS n FROM "+p.tbl(tLinkDaily)+
		" GROUP BY link_id ORDER BY n DESC LIMIT 1").Scan(&hotLink, &hotLinkN); err != nil {
		b.Fatal(err)
	}
	if err := p.conn.QueryRow(ctx, "SELECT workspace_id, sum(clicks) AS n FROM "+p.tbl(tWorkspaceDaily)+
		" GROUP BY workspace_id ORDER BY n DESC LIMIT 1").Scan(&hotWS, &hotWSN); err != nil {
		b.Fatal(err)
	}
	var nLinks uint64
	if err := p.conn.QueryRow(ctx, "SELECT uniqExact(link_id) FROM "+p.tbl(tLinkDaily)).Scan(&nLinks); err != nil {
		b.Fatal(err)
	}
	if err := p.conn.QueryRow(ctx, "SELECT link_id, n FROM (SELECT link_id, sum(clicks) AS n FROM "+p.tbl(tLinkDaily)+
		" GROUP BY link_id ORDER BY n) LIMIT 1 OFFSET ?", nLinks/2).Scan(&midLink, &midLinkN); err != nil {
		b.Fatal(err)
	}
	b.Logf("%d links clicked; busiest link %s: %d clicks; median link %s: %d clicks; busiest workspace %s: %d clicks",
		nLinks, hotLink, hotLinkN, midLink, midLinkN, hotWS, hotWSN)

	for _, bc := range []struct {
		name string
		run  func() error
	}{
		{"LinkDaily/busiest", func() error { _, err := p.LinkDaily(ctx, hotLink, from, to); return err }},
		{"LinkDaily/median", func() error { _, err := p.LinkDaily(ctx, midLink, from, to); return err }},
		{"WorkspaceDaily/busiest", func() error { _, err := p.WorkspaceDaily(ctx, hotWS, from, to); return err }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			var lat []time.Duration
			for range b.N {
				t0 := time.Now()
				if err := bc.run(); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(t0))
			}
			cpu.ReportPercentiles(b, lat)
			b.ReportMetric(cpu.LoadAverage(), "loadavg")
		})
	}
}

// BenchmarkStartup opens the projection on the 10M database: schema check
// and recovery scan (opt-in like BenchmarkQueries10M, after it).
func BenchmarkStartup(b *testing.B) {
	dsn := bench10MDSN(b)
	ctx := chtest.Context(b, 10*time.Minute)
	var lat []time.Duration
	for range b.N {
		t0 := time.Now()
		p, err := Open(ctx, dsn, Options{Dial: chtest.Open})
		if err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
		p.Close()
	}
	cpu.ReportPercentiles(b, lat)
}

// BenchmarkAggregateBreakdown: the projector's share of the breakdowns, per
// batch of 8192 clicks (no server): counting and the rows of both tables.
func BenchmarkAggregateBreakdown(b *testing.B) {
	g := newBenchGen(1, 20_000, 20, benchBatch, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), 30)
	var rows []clickRow
	for _, ev := range g.next(benchBatch) {
		var c click.Recorded
		if err := json.Unmarshal(ev.Data, &c); err != nil {
			b.Fatal(err)
		}
		rows = append(rows, newClickRow(ev, c.LinkID, &c))
	}
	k := newKeyer(nil)
	b.ResetTimer()
	c0 := cpu.Process()
	for range b.N {
		bd := newBreakdowns()
		for i := range rows {
			r := &rows[i]
			bd.addClick(k, r.linkID, r.c.WorkspaceID, dayNumber(r.day), r.c)
		}
		rowsOf(k, bd.link, bd.linkOrder, 1)
		rowsOf(k, bd.workspace, bd.wsOrder, 1)
	}
	b.ReportMetric(float64((cpu.Process()-c0).Nanoseconds())/float64(b.N*benchBatch)/1000, "cpu-us/click")
}
