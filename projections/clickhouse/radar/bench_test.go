package radar

import (
	"context"
	"net/url"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/linkd/linkd/internal/testsupport/chtest"
	"github.com/linkd/linkd/internal/testsupport/cpu"
	"github.com/linkd/linkd/queries"
)

// BenchmarkRadarReports generates a Radar dataset in ClickHouse (server
// side, INSERT ... SELECT FROM numbers: the projector's speed is not what
// is measured) of LINKD_BENCH_RADAR_EVENTS events (opt-in; e.g. 10000000)
// by a tenth as many visitors, all of one project, over 30 days, and times
// the overview and breakdowns of the 30-day range and of a 7-day one.
// docs/performance.md has the command and the results.
//
// The data: visitor v has 10 hits on average (events n with n % V = v),
// cut into 1 to 3 visits two days apart; every fourth hit is a custom event
// (3 names), page views over 50 paths, 21 countries, 8 browsers, 7 systems,
// 8 sources; a visitor in 20 came through a short-link click, and every
// other such click has a sale (usd or eur). Every visit also has an older
// state written and cancelled (sign +1 and -1, unmerged), as a visit
// updated across batches leaves until ClickHouse merges it. The tables are
// then merged (OPTIMIZE ... FINAL), as past days are in a running system,
// unless LINKD_BENCH_RADAR_UNMERGED is set.
//
// LINKD_BENCH_RADAR_DB names a database of the server of
// LINKD_TEST_CLICKHOUSE_DSN to keep the dataset in: it is generated only
// when that database has no Radar events yet, and not dropped after, so
// that runs (of other code, too) time the same data. The projector starts
// on it as linkd would (its recovery fills tables the dataset lacks).
func BenchmarkRadarReports(b *testing.B) {
	n, _ := strconv.Atoi(os.Getenv("LINKD_BENCH_RADAR_EVENTS"))
	if n <= 0 {
		b.Skip("set LINKD_BENCH_RADAR_EVENTS (e.g. 10000000) to generate a Radar dataset and time the reports")
	}
	visitors := max(n/10, 1)
	ctx := chtest.Context(b, time.Hour)
	dsn := ""
	if db := os.Getenv("LINKD_BENCH_RADAR_DB"); db != "" {
		u, err := url.Parse(os.Getenv(chtest.EnvDSN))
		if err != nil || u.Host == "" {
			b.Fatalf("LINKD_BENCH_RADAR_DB needs a server in %s (scripts/clickhouse-test-server.sh)", chtest.EnvDSN)
		}
		u.Path = "/" + db
		dsn = u.String()
	} else {
		dsn = chtest.DSN(b)
	}
	pair := openRadarTest(b, dsn)
	r := pair.Projection
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	t0 := time.Now()
	var have uint64
	if err := r.conn.QueryRow(ctx, "SELECT count() FROM "+r.db.Table(tRadarEvents)).Scan(&have); err != nil {
		b.Fatal(err)
	}
	sql := func(q string) {
		b.Helper()
		q = strings.NewReplacer("{N}", strconv.Itoa(n), "{V}", strconv.Itoa(visitors), "{events}", r.db.Table(tRadarEvents),
			"{sessions}", r.db.Table(tRadarSessions), "{sales}", r.db.Table(tSales), "{daily}", r.db.Table(tRadarDaily)).Replace(q)
		if err := r.conn.Exec(ctx, q); err != nil {
			b.Fatalf("%s: %v", q, err)
		}
	}
	if have > 0 {
		b.Logf("reusing the %d events of %s", have, dsn)
	} else {
		generateRadar(b, sql)
	}
	// The projector's start: its recovery fills the tables of views the
	// dataset was generated without.
	if _, err := r.Checkpoint(ctx); err != nil {
		b.Fatal(err)
	}
	if os.Getenv("LINKD_BENCH_RADAR_UNMERGED") == "" {
		// Data of past days is merged by ClickHouse in the background;
		// freshly generated data is not yet: merge it, as it would be.
		for _, t := range tables {
			var parts uint64
			if err := r.conn.QueryRow(ctx, "SELECT count() FROM system.parts WHERE database = ? AND table = ? AND active",
				r.db.Name(), t).Scan(&parts); err != nil {
				b.Fatal(err)
			}
			var partitions uint64
			if err := r.conn.QueryRow(ctx, "SELECT uniqExact(partition) FROM system.parts WHERE database = ? AND table = ? AND active",
				r.db.Name(), t).Scan(&partitions); err != nil {
				b.Fatal(err)
			}
			if parts > partitions {
				sql("OPTIMIZE TABLE " + r.db.Table(t) + " FINAL")
			}
		}
	}
	var rows, sessions uint64
	_ = r.conn.QueryRow(ctx, "SELECT count() FROM "+r.db.Table(tRadarEvents)).Scan(&rows)
	_ = r.conn.QueryRow(ctx, "SELECT count() FROM "+r.db.Table(tRadarSessions)).Scan(&sessions)
	b.Logf("%d events, %d session rows, %d visitors ready in %v (load average %.2f)", rows, sessions, visitors, time.Since(t0).Round(time.Millisecond), cpu.LoadAverage())
	benchRadarReports(ctx, b, r, start, chtest.ServerPID(dsn))
}

// generateRadar writes the dataset of BenchmarkRadarReports with sql.
func generateRadar(b *testing.B, sql func(string)) {
	// v: visitor, k: its hit, spv: its visits, s: the hit's visit.
	sql(`INSERT INTO {events} (project_id, workspace_id, visitor_id, session_id, timestamp, date, kind, event_name, url, hostname, pathname,
		referrer, source, country, browser, os, device, click_id, link_id, stream_version, position)
		SELECT 'p-bench', 'w-bench', toString(v), concat(toString(v), '-', toString(s)), ts, toDate(ts),
			if(k % 4 = 3, 'event', 'pageview'), if(k % 4 = 3, arrayElement(['Signup', 'Download', 'Purchase'], 1 + (v + k) % 3), ''),
			concat('https://shop.example', p), 'shop.example', p, '', src,
			arrayElement(['US','BR','DE','FR','GB','IN','JP','ES','IT','CA','MX','NL','PL','SE','AU','AR','CO','PT','TR','ID',''], 1 + v % 21),
			arrayElement(['Chrome','Safari','Firefox','Edge','Samsung Internet','Instagram','Facebook','Opera'], 1 + v % 8),
			arrayElement(['iOS','Android','Windows','macOS','Linux','ChromeOS',''], 1 + v % 7), arrayElement(['mobile','desktop','tablet'], 1 + v % 3),
			if(v % 20 = 0, concat('clk-', toString(v)), ''), if(v % 20 = 0, 'l-bench', ''), k, number
		FROM (
			SELECT number, number % {V} AS v, intDiv(number, {V}) AS k, 1 + v % 3 AS spv, k % spv AS s,
				toDateTime('2026-01-01 00:00:00') + (intHash32(v) % (25 * 86400)) + s * 2 * 86400 + intDiv(k, spv) * 40 AS ts,
				concat('/page-', toString(intHash32(number) % 50)) AS p,
				arrayElement(['', 'google.com', 'news.example', 't.co', 'facebook.com', 'newsletter', 'short.example/abc', 'reddit.com'], 1 + (v + s) % 8) AS src
			FROM numbers({N})
		)`)
	for _, sign := range []string{"[1]", "[1, -1]"} {
		older := "0"
		if sign != "[1]" {
			older = "1" // an older state (one hit less), written and cancelled
		}
		sql(`INSERT INTO {sessions} (project_id, workspace_id, visitor_id, session_id, sign, version, started_at, ended_at, start_ms, end_ms,
			duration_ms, pageviews, events, is_bounce, entry_page, exit_page, hostname, source, referrer, country, browser, os, device, click_id, link_id, position)
			SELECT project_id, workspace_id, visitor_id, session_id, sg, ver + 1 - ` + older + `, st, en, toInt64(st) * 1000, toInt64(en) * 1000,
				(toUInt64(en) - toUInt64(st)) * 1000, pv, ev, pv + ev - ` + older + ` = 1 AND ev = 0, entry, entry, 'shop.example', src, '', country, browser, os, device, clk, lnk, pos
			FROM (
				SELECT project_id, any(workspace_id) AS workspace_id, visitor_id, session_id, max(stream_version) AS ver, min(timestamp) AS st, max(timestamp) AS en,
					toUInt32(countIf(kind = 'pageview')) AS pv, toUInt32(countIf(kind = 'event')) AS ev, argMin(pathname, timestamp) AS entry,
					any(source) AS src, any(country) AS country, any(browser) AS browser, any(os) AS os, any(device) AS device,
					any(click_id) AS clk, any(link_id) AS lnk, max(position) AS pos
				FROM {events} GROUP BY project_id, visitor_id, session_id
			) ARRAY JOIN ` + sign + ` AS sg`)
	}
	sql(`INSERT INTO {sales} (event_id, conversion_id, event_name, click_id, link_id, workspace_id, project_id, customer_id, customer_external_id,
		timestamp, date, first, clicked_at, country, device_type, browser, os, referrer, metadata, amount, currency)
		SELECT concat('s-', toString(number)), concat('s-', toString(number)), 'Purchase', concat('clk-', toString(number * 40)), 'l-bench', 'w-bench', 'p-bench',
			'c', 'c', ts, toDate(ts), 1, ts, '', '', '', '', '', '', 1000 + number % 9000, arrayElement(['usd', 'eur'], 1 + number % 2)
		FROM (SELECT number, toDateTime('2026-01-02 00:00:00') + (intHash32(number) % (25 * 86400)) AS ts FROM numbers(intDiv({V}, 40)))`)
}

// benchRadarReports times the reports of the 30-day and a 7-day range.
// The machine is shared: besides latencies, the CPU time a report costs
// the server (pid) and this process, which the load changes much less.
func benchRadarReports(ctx context.Context, b *testing.B, r *Projection, start time.Time, pid int) {
	month := queries.RadarRange{ProjectID: "p-bench", Start: start, End: start.AddDate(0, 0, 30).Add(-time.Second)}
	week := queries.RadarRange{ProjectID: "p-bench", Start: start.AddDate(0, 0, 10), End: start.AddDate(0, 0, 17).Add(-time.Second)}
	o, err := r.RadarOverview(ctx, month)
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("30-day overview: %+v", o)
	for _, bc := range []struct {
		name string
		run  func(ctx context.Context) error
	}{
		{"Overview/30d", func(ctx context.Context) error { _, err := r.RadarOverview(ctx, month); return err }},
		{"Breakdowns/30d", func(ctx context.Context) error { _, err := r.RadarBreakdowns(ctx, month, 50); return err }},
		{"Overview/7d", func(ctx context.Context) error { _, err := r.RadarOverview(ctx, week); return err }},
		{"Breakdowns/7d", func(ctx context.Context) error { _, err := r.RadarBreakdowns(ctx, week, 50); return err }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			var lat []time.Duration
			self, srv := cpu.Process(), chtest.ServerCPU(pid)
			for range b.N {
				t := time.Now()
				if err := bc.run(ctx); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(t))
			}
			cpu.ReportPercentiles(b, lat)
			b.ReportMetric(float64((cpu.Process()-self).Microseconds())/1000/float64(b.N), "client-cpu-ms/op")
			if pid > 0 {
				b.ReportMetric(float64((chtest.ServerCPU(pid)-srv).Microseconds())/1000/float64(b.N), "server-cpu-ms/op")
			}
			b.ReportMetric(cpu.LoadAverage(), "loadavg")
		})
	}
}
