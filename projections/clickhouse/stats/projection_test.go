package stats

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/linkd/linkd/domain/click"
	"github.com/linkd/linkd/domain/link"
	"github.com/linkd/linkd/eventstore"
	"github.com/linkd/linkd/internal/testsupport/chtest"
	"github.com/linkd/linkd/projections"
	"github.com/linkd/linkd/projections/statstest"
	"github.com/linkd/linkd/queries"
)

// testLinks: link -> workspace.
var testLinks = []struct{ id, ws string }{
	{"la", "w1"}, {"lb", "w1"}, {"lc", "w1"}, {"ld", "w2"}, {"le", "w2"}, {"lf", "w3"},
}

// genClicks makes n varied clicks over the links, from start over days
// days, in time order (as click streams record them).
func genClicks(l *eventLog, n int, seed uint64, start time.Time, days int) {
	r := rand.New(rand.NewPCG(seed, 1))
	pick := func(vals ...string) string { return vals[r.IntN(len(vals))] }
	step := time.Duration(days) * 24 * time.Hour / time.Duration(n)
	for i := range n {
		ln := testLinks[r.IntN(len(testLinks))]
		os := pick("iOS", "Android", "Windows", "macOS", "", "ios")
		fromApp := r.IntN(5) == 0
		app := pick("Instagram", "TikTok", "", "", "", "")
		if fromApp {
			app = pick("Instagram", "TikTok", "")
		}
		visitor := fmt.Sprintf("%032x", r.IntN(40))
		if r.IntN(20) == 0 {
			visitor = ""
		}
		country := pick("US", "BR", "DE", "FR", "")
		continent := map[string]string{"US": "NA", "BR": "SA", "DE": "EU", "FR": "EU"}[country]
		l.click(click.Recorded{
			ClickID:     fmt.Sprintf("c%d-%d", seed, i),
			LinkID:      ln.id,
			WorkspaceID: ln.ws,
			Code:        "code-" + ln.id,
			Timestamp:   start.Add(time.Duration(i) * step),
			Source:      pick(click.SourceRedirect, click.SourceAPI),
			QR:          r.IntN(4) == 0,
			Visitor:     visitor,
			Browser:     pick("Chrome", "Safari", "Firefox", "Instagram", "", "chrome"),
			OS:          os,
			OSVersion:   pick("17.4", "14", "10", ""),
			DeviceType:  pick("mobile", "desktop", "tablet", ""),
			Device:      pick("iPhone", "Android", "Windows PC"),
			FromApp:     fromApp,
			App:         app,
			Language:    pick("en", "pt", "de", ""),
			Referrer:    pick("google.com", "t.co", ""),
			Country:     country,
			Continent:   continent,
			City:        pick("Berlin", "Lisbon", "", "São Paulo"),
			Region:      pick("BE", ""),
			Destination: "https://example.com/" + ln.id,
		})
	}
}

// checkAll fails unless p holds, over [from, to], the records of the events
// that a statstest.Model fed the same events gives (the statistics contract,
// contract_test.go, holds both to records counted by hand).
func checkAll(t *testing.T, ctx context.Context, p statstest.Reader, events []eventstore.RecordedEvent, from, to time.Time) {
	t.Helper()
	m := statstest.NewModel()
	if err := m.Apply(ctx, projections.Envelopes(events)); err != nil {
		t.Fatal(err)
	}
	m.Check(t, ctx, p, from, to)
}

// rawConn opens a connection whose default database is the projection's,
// as an analyst's would be.
func rawConn(t testing.TB, p *Projection, dsn string) driver.Conn {
	t.Helper()
	return chtest.Conn(t, dsn, p.Database())
}

func count(t testing.TB, ctx context.Context, conn driver.Conn, q string, args ...any) uint64 {
	t.Helper()
	var n uint64
	if err := conn.QueryRow(ctx, q, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return n
}

func TestSplitUnits(t *testing.T) {
	mk := func(link string, seq uint64, month int) clickRow {
		return clickRow{linkID: link, seq: seq, month: month}
	}
	type unit []string // "link/seq"
	cases := []struct {
		name string
		rows []clickRow
		max  int
		want []unit
	}{
		{"empty", nil, 10, nil},
		{"one month is one unit", []clickRow{mk("a", 0, 202603), mk("b", 0, 202603), mk("a", 1, 202603)}, 10,
			[]unit{{"a/0", "b/0", "a/1"}}},
		{"split by size", []clickRow{mk("a", 0, 202603), mk("a", 1, 202603), mk("a", 2, 202603)}, 2,
			[]unit{{"a/0", "a/1"}, {"a/2"}}},
		{"month end: each link's rows stay in seq order", []clickRow{
			mk("a", 0, 202603), mk("b", 7, 202604), mk("a", 1, 202604), mk("b", 8, 202603), mk("a", 2, 202604),
		}, 10, []unit{{"a/0"}, {"b/7"}, {"b/8"}, {"a/1", "a/2"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got []unit
			for _, u := range splitUnits(tc.rows, tc.max) {
				var names unit
				for _, r := range u {
					names = append(names, fmt.Sprintf("%s/%d", r.linkID, r.seq))
					if r.month != u[0].month {
						t.Errorf("unit spans months: %v", u)
					}
				}
				got = append(got, names)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestClickAppearsInClicksAndDaily(t *testing.T) {
	t.Parallel()
	ctx := chtest.Context(t, time.Minute)
	dsn := chtest.DSN(t)
	p := openTest(t, ctx, dsn)
	conn := rawConn(t, p, dsn)
	ts := time.Date(2026, 3, 1, 10, 11, 12, 500_000_000, time.UTC)
	exp := ts.Add(click.TrackingTTL)
	c := click.Recorded{
		ClickID: "c1", LinkID: "l1", WorkspaceID: "w1", ProjectID: "p1", DomainID: "d1", Code: "abc",
		Timestamp: ts, Source: click.SourceRedirect, QR: true, Visitor: "0123456789abcdef0123456789abcdef",
		Browser: "Chrome", BrowserVersion: "126.0", OS: "Android", OSVersion: "14", DeviceType: "mobile",
		Device: "Android", FromApp: true, App: "Instagram", Language: "pt", Referrer: "t.co",
		ReferrerURL: "https://t.co/x", Country: "BR", Continent: "SA", City: "São Paulo", Region: "SP",
		Destination: "https://example.com/?utm_source=x", TrackingID: "tid1", TrackingExpiresAt: &exp,
	}
	l := newEventLog()
	ev := l.click(c)
	if err := p.Apply(ctx, projections.Envelopes(l.events)); err != nil {
		t.Fatal(err)
	}
	// The aggregate tables are written at most FlushInterval later, for
	// analysts; the read model's own queries flush first when needed.
	if err := p.Flush(ctx); err != nil {
		t.Fatal(err)
	}

	var (
		got                                                   click.Recorded
		gotTS                                                 time.Time
		date                                                  time.Time
		qr, fromApp                                           uint8
		gotExp                                                *time.Time
		seq, pos, prep, insertID                              uint64
		source, browser, ver, osName, osVer, devType, device  string
		app, lang, ref, refURL, country, cont, city, reg, dst string
	)
	err := conn.QueryRow(ctx, "SELECT click_id, link_id, workspace_id, project_id, domain_id, code, timestamp, date, "+
		"source, qr, visitor, browser, browser_version, os, os_version, device_type, device, from_app, app, language, "+
		"referrer, referrer_url, country, continent, city, region, destination, tracking_id, tracking_expires_at, "+
		"click_seq, event_position, event_prepare_position, insert_id FROM clicks").Scan(
		&got.ClickID, &got.LinkID, &got.WorkspaceID, &got.ProjectID, &got.DomainID, &got.Code, &gotTS, &date,
		&source, &qr, &got.Visitor, &browser, &ver, &osName, &osVer, &devType, &device, &fromApp, &app, &lang,
		&ref, &refURL, &country, &cont, &city, &reg, &dst, &got.TrackingID, &gotExp,
		&seq, &pos, &prep, &insertID)
	if err != nil {
		t.Fatal(err)
	}
	got.Timestamp, got.Source, got.QR, got.Browser, got.BrowserVersion = gotTS.UTC(), source, qr == 1, browser, ver
	got.OS, got.OSVersion, got.DeviceType, got.Device, got.FromApp, got.App = osName, osVer, devType, device, fromApp == 1, app
	got.Language, got.Referrer, got.ReferrerURL, got.Country, got.Continent = lang, ref, refURL, country, cont
	got.City, got.Region, got.Destination = city, reg, dst
	if gotExp != nil {
		u := gotExp.UTC()
		got.TrackingExpiresAt = &u
	}
	want := c
	want.Timestamp = ts.Truncate(time.Second)
	wexp := exp.Truncate(time.Second)
	want.TrackingExpiresAt = &wexp
	if !reflect.DeepEqual(got, want) {
		t.Errorf("clicks row:\n got %+v\nwant %+v", got, want)
	}
	if date.Format(time.DateOnly) != "2026-03-01" || seq != 0 || pos != ev.Position.Commit || prep != ev.Position.Prepare || insertID == 0 {
		t.Errorf("date %v seq %d position %d/%d insert_id %d", date, seq, pos, prep, insertID)
	}

	var clicks, qrScans, uniq uint64
	if err := conn.QueryRow(ctx, "SELECT sum(clicks), sum(qr_scans), uniqMerge(unique_visitors) FROM link_clicks_daily "+
		"WHERE link_id = 'l1' AND date = '2026-03-01'").Scan(&clicks, &qrScans, &uniq); err != nil {
		t.Fatal(err)
	}
	if clicks != 1 || qrScans != 1 || uniq != 1 {
		t.Errorf("link_clicks_daily: clicks %d qr %d uniq %d, want 1 1 1", clicks, qrScans, uniq)
	}
	if n := count(t, ctx, conn, "SELECT sum(c) FROM link_clicks_daily_breakdown_v2 ARRAY JOIN breakdownMap.key AS k, breakdownMap.clicks AS c "+
		"WHERE link_id = 'l1' AND k = cityHash64('country:BR')"); n != 1 {
		t.Errorf("breakdown country BR: %d", n)
	}
	if n := count(t, ctx, conn, "SELECT toUInt64(count()) FROM breakdown_values WHERE key = cityHash64('city:São Paulo') AND dimension = 'city' AND value = 'São Paulo'"); n != 1 {
		t.Errorf("breakdown_values has %d entries for city São Paulo, want 1", n)
	}
	if n := count(t, ctx, conn, "SELECT sum(clicks) FROM workspace_clicks_daily WHERE workspace_id = 'w1'"); n != 1 {
		t.Errorf("workspace_clicks_daily: %d", n)
	}
	ok, err := p.LinkClicked(ctx, "l1")
	if err != nil || !ok {
		t.Errorf("LinkClicked(l1) = %v, %v", ok, err)
	}
	ok, err = p.LinkClicked(ctx, "nope")
	if err != nil || ok {
		t.Errorf("LinkClicked(nope) = %v, %v", ok, err)
	}
	v, ok, err := p.AppliedVersion(ctx, click.Stream("l1"))
	if err != nil || !ok || v != 0 {
		t.Errorf("AppliedVersion = %d %v %v", v, ok, err)
	}
}

func TestDuplicatesAreNeverCounted(t *testing.T) {
	t.Parallel()
	ctx := chtest.Context(t, 2*time.Minute)
	dsn := chtest.DSN(t)
	p := openTest(t, ctx, dsn)
	conn := rawConn(t, p, dsn)
	l := newEventLog()
	start := time.Date(2026, 3, 31, 12, 0, 0, 0, time.UTC)
	genClicks(l, 600, 2, start, 2)
	ev := l.events

	// The same event twice in one batch, and the batch overlapping the next.
	batch1 := append(append([]eventstore.RecordedEvent{}, ev[:200]...), ev[100:250]...)
	if err := p.Apply(ctx, projections.Envelopes(batch1)); err != nil {
		t.Fatal(err)
	}
	if err := p.Apply(ctx, projections.Envelopes(ev[150:400])); err != nil {
		t.Fatal(err)
	}
	// A restart: a new Projection knows nothing in memory; everything
	// comes again.
	p.Close()
	p2 := openTest(t, ctx, dsn)
	if cp, err := p2.Checkpoint(ctx); err != nil || cp != ev[399].Position {
		t.Errorf("Checkpoint after restart = %v, %v; want %v", cp, err, ev[399].Position)
	}
	if err := p2.Apply(ctx, projections.Envelopes(ev[:500])); err != nil {
		t.Fatal(err)
	}
	if err := p2.Apply(ctx, projections.Envelopes(ev)); err != nil {
		t.Fatal(err)
	}
	if err := p2.Apply(ctx, projections.Envelopes(ev[len(ev)-1:])); err != nil {
		t.Fatal(err)
	}
	if n := count(t, ctx, conn, "SELECT count() FROM clicks"); n != uint64(len(ev)) {
		t.Errorf("clicks has %d rows, want %d", n, len(ev))
	}
	if n := count(t, ctx, conn, "SELECT uniqExact(link_id, click_seq) FROM clicks"); n != uint64(len(ev)) {
		t.Errorf("clicks has %d distinct (link_id, click_seq), want %d", n, len(ev))
	}
	checkAll(t, ctx, p2, l.events, start, start.AddDate(0, 0, 2))
	cp, err := p2.Checkpoint(ctx)
	if err != nil || cp != ev[len(ev)-1].Position {
		t.Errorf("Checkpoint = %v, %v; want %v", cp, err, ev[len(ev)-1].Position)
	}
}

// TestRecoveryAfterCrash leaves what a crash between two INSERTs leaves:
// rows in clicks that the daily tables or the breakdown tables lack. Open
// must rebuild them, and the redelivered events must not count again.
func TestRecoveryAfterCrash(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		// views missing while the interrupted batch is applied
		missing []string
	}{
		{"clicks landed, no target", []string{tLinkDaily, tWorkspaceDaily, tLinkBreakdown, tWorkspaceBreakdown}},
		{"daily tables landed, breakdowns not", []string{tLinkBreakdown, tWorkspaceBreakdown}},
		{"one daily table missing", []string{tWorkspaceDaily}},
		{"one breakdown missing", []string{tLinkBreakdown}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := chtest.Context(t, 2*time.Minute)
			dsn := chtest.DSN(t)
			p := openTest(t, ctx, dsn)
			l := newEventLog()
			start := time.Date(2026, 3, 30, 0, 0, 0, 0, time.UTC)
			genClicks(l, 400, 3, start, 3)
			ev := l.events
			if err := p.Apply(ctx, projections.Envelopes(ev[:150])); err != nil {
				t.Fatal(err)
			}
			for _, target := range tc.missing {
				if err := p.conn.Exec(ctx, "DROP TABLE "+p.tbl(target+"_mv")); err != nil {
					t.Fatal(err)
				}
			}
			// The interrupted Apply: its INSERTs reach only some tables.
			// The batch spans a month end, so it is several units.
			if err := p.Apply(ctx, projections.Envelopes(ev[150:300])); err != nil {
				t.Fatal(err)
			}
			p.Close() // crash: the views come back with the next Open

			p2 := openTest(t, ctx, dsn)
			if err := p2.Apply(ctx, projections.Envelopes(ev)); err != nil {
				t.Fatal(err)
			}
			checkAll(t, ctx, p2, l.events, start, start.AddDate(0, 0, 2))
		})
	}
}

// TestFailedApplyRecovers: an Apply that fails (here: its deadline passes
// before it can write) makes the next one recover first; nothing is lost or
// counted twice.
func TestFailedApplyRecovers(t *testing.T) {
	t.Parallel()
	ctx := chtest.Context(t, time.Minute)
	p := openTest(t, ctx, chtest.DSN(t))
	l := newEventLog()
	start := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	genClicks(l, 300, 4, start, 2)
	if err := p.Apply(ctx, projections.Envelopes(l.events[:100])); err != nil {
		t.Fatal(err)
	}
	dead, cancel := context.WithTimeout(ctx, time.Nanosecond)
	defer cancel()
	<-dead.Done()
	if err := p.Apply(dead, projections.Envelopes(l.events[100:200])); err == nil {
		t.Fatal("Apply with an expired context succeeded")
	}
	if err := p.Apply(ctx, projections.Envelopes(l.events[100:])); err != nil {
		t.Fatal(err)
	}
	checkAll(t, ctx, p, l.events, start, start.AddDate(0, 0, 1))
}

func TestResetAndReplayGiveTheSameNumbers(t *testing.T) {
	t.Parallel()
	ctx := chtest.Context(t, 2*time.Minute)
	dsn := chtest.DSN(t)
	p := openTest(t, ctx, dsn)
	conn := rawConn(t, p, dsn)
	l := newEventLog()
	start := time.Date(2026, 3, 29, 0, 0, 0, 0, time.UTC)
	for _, ln := range testLinks {
		l.add(link.Stream(ln.id), linkCreated(ln.id, ln.ws, "code-"+ln.id, "name "+ln.id, start))
	}
	genClicks(l, 1200, 5, start, 5)
	l.add(link.Stream("la"), &link.Updated{LinkID: "la", At: start.Add(time.Hour)})
	store := &memStore{events: l.events}

	// Live delivery in small batches, as the runner does.
	for i := 0; i < len(l.events); i += 50 {
		if err := p.Apply(ctx, projections.Envelopes(l.events[i:min(i+50, len(l.events))])); err != nil {
			t.Fatal(err)
		}
	}
	snapshot := func() [][]queries.DailyStats {
		var out [][]queries.DailyStats
		for _, ln := range testLinks {
			d, err := p.LinkDaily(ctx, ln.id, start, start.AddDate(0, 0, 5))
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, d)
			w, err := p.WorkspaceDaily(ctx, ln.ws, start, start.AddDate(0, 0, 5))
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, w)
		}
		return out
	}
	live := snapshot()
	checkAll(t, ctx, p, l.events, start, start.AddDate(0, 0, 5))
	for i := range 2 {
		n, err := projections.Replay(ctx, store, p, projections.ReplayOptions{PageSize: 333})
		if err != nil {
			t.Fatal(err)
		}
		if n != uint64(len(l.events)) {
			t.Errorf("replay #%d applied %d events, want %d", i+1, n, len(l.events))
		}
		if got := snapshot(); !reflect.DeepEqual(got, live) {
			t.Errorf("replay #%d differs from live:\n got %+v\nwant %+v", i+1, got, live)
		}
		if c := count(t, ctx, conn, "SELECT count() FROM clicks"); c != uint64(len(l.clicks())) {
			t.Errorf("clicks after replay: %d", c)
		}
	}
}

func TestLinksDimension(t *testing.T) {
	t.Parallel()
	ctx := chtest.Context(t, time.Minute)
	dsn := chtest.DSN(t)
	p := openTest(t, ctx, dsn)
	conn := rawConn(t, p, dsn)
	at := time.Date(2026, 2, 1, 8, 0, 0, 0, time.UTC)
	dom := "dom1"
	l := newEventLog()
	c := linkCreated("k1", "w1", "abc", "Spring sale", at)
	c.DomainID = &dom
	l.add(link.Stream("k1"), c)
	l.add(link.Stream("k2"), linkCreated("k2", "w1", "def", "Other", at))
	if err := p.Apply(ctx, projections.Envelopes(l.events)); err != nil {
		t.Fatal(err)
	}
	// A patch that renames the link and moves it to a project.
	var patch link.Patch
	patch.Name.Set, patch.Name.V = true, "Summer sale"
	patch.ProjectID.Set, patch.ProjectID.V = true, "p9"
	l.add(link.Stream("k1"), &link.Updated{LinkID: "k1", At: at.Add(time.Hour), Changes: patch})
	l.add(link.Stream("k1"), &link.Archived{LinkID: "k1", At: at.Add(2 * time.Hour)})
	l.add(link.Stream("k2"), &link.Deleted{LinkID: "k2", WorkspaceID: "w1", Code: "def", At: at.Add(3 * time.Hour)})
	// A restart between the batches: the state of k1 comes from ClickHouse.
	p.Close()
	p = openTest(t, ctx, dsn)
	if err := p.Apply(ctx, projections.Envelopes(l.events)); err != nil { // everything again: dedup by version
		t.Fatal(err)
	}
	type row struct {
		code, domain, name, ws, project, url string
		created, updated                     time.Time
		archived, deleted                    uint8
		version                              uint64
	}
	get := func(id string) row {
		var r row
		if err := conn.QueryRow(ctx, "SELECT code, domain_id, name, workspace_id, project_id, original_url, created_at, updated_at, "+
			"archived, deleted, version FROM links FINAL WHERE link_id = ?", id).Scan(
			&r.code, &r.domain, &r.name, &r.ws, &r.project, &r.url, &r.created, &r.updated, &r.archived, &r.deleted, &r.version); err != nil {
			t.Fatal(err)
		}
		r.created, r.updated = r.created.UTC(), r.updated.UTC()
		return r
	}
	if got, want := get("k1"), (row{"abc", "dom1", "Summer sale", "w1", "p9", "https://example.com/abc", at, at.Add(2 * time.Hour), 1, 0, 2}); got != want {
		t.Errorf("k1:\n got %+v\nwant %+v", got, want)
	}
	if got := get("k2"); got.deleted != 1 || got.version != 1 || got.name != "Other" {
		t.Errorf("k2: %+v", got)
	}
	v, ok, err := p.AppliedVersion(ctx, link.Stream("k1"))
	if err != nil || !ok || v != 2 {
		t.Errorf("AppliedVersion(k1) = %d %v %v", v, ok, err)
	}
}

// TestViewsAreRecreatedOnNewVersion: a database at an older schema version
// gets its views made again (a new version may define them differently).
func TestViewsAreRecreatedOnNewVersion(t *testing.T) {
	t.Parallel()
	ctx := chtest.Context(t, time.Minute)
	dsn := chtest.DSN(t)
	p := openTest(t, ctx, dsn)
	// An "older" link_clicks_daily_mv that counts only clicks.
	for _, q := range []string{
		"DROP TABLE " + p.tbl(tLinkDaily+"_mv"),
		"CREATE MATERIALIZED VIEW " + p.tbl(tLinkDaily+"_mv") + " TO " + p.tbl(tLinkDaily) +
			" AS SELECT link_id, date, workspace_id, count() AS clicks FROM " + p.tbl(tClicks) + " GROUP BY link_id, date, workspace_id",
		"TRUNCATE TABLE " + p.tbl("schema_migrations"),
	} {
		if err := p.conn.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	p.Close()
	p = openTest(t, ctx, dsn)
	l := newEventLog()
	start := time.Date(2026, 7, 1, 0, 0, 0, 0, time.UTC)
	genClicks(l, 200, 6, start, 1)
	if err := p.Apply(ctx, projections.Envelopes(l.events)); err != nil {
		t.Fatal(err)
	}
	checkAll(t, ctx, p, l.events, start, start)
}

// TestKillPending: recovery first stops the INSERTs of a failed Apply that
// the server is still running, and waits for them to end.
func TestKillPending(t *testing.T) {
	t.Parallel()
	chtest.SkipOnChDB(t, "chDB runs one query at a time and keeps no query ids")
	ctx := chtest.Context(t, time.Minute)
	p := openTest(t, ctx, chtest.DSN(t))
	id := "linkd-test-kill-" + p.run
	done := make(chan error, 1)
	go func() {
		qctx := clickhouse.Context(ctx, clickhouse.WithQueryID(id))
		done <- p.conn.Exec(qctx, "SELECT sleep(3)")
	}()
	for {
		var n uint64
		if err := p.conn.QueryRow(ctx, "SELECT count() FROM system.processes WHERE query_id = ?", id).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == 1 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	p.mu.Lock()
	p.pending = append(p.pending, id)
	err := p.killPending(ctx)
	p.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	var n uint64
	if err := p.conn.QueryRow(ctx, "SELECT count() FROM system.processes WHERE query_id = ?", id).Scan(&n); err != nil || n != 0 {
		t.Errorf("query still running after killPending: %d, %v", n, err)
	}
	<-done
}

// TestCheckpointIsStored: the checkpoint is in ClickHouse after Apply (every
// time with CheckpointEvery < 0), after Flush, and after Close.
func TestCheckpointIsStored(t *testing.T) {
	t.Parallel()
	ctx := chtest.Context(t, time.Minute)
	dsn := chtest.DSN(t)
	l := newEventLog()
	genClicks(l, 30, 8, time.Date(2026, 8, 1, 0, 0, 0, 0, time.UTC), 1)
	ev := l.events
	stored := func() eventstore.Position {
		t.Helper()
		q, err := Open(ctx, dsn, Options{Dial: chtest.Open}) // another process, as after a crash
		if err != nil {
			t.Fatal(err)
		}
		defer q.conn.Close() // not Close: it would store its own checkpoint
		cp, err := q.Checkpoint(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return cp
	}

	every, err := Open(ctx, dsn, Options{Dial: chtest.Open, CheckpointEvery: -1})
	if err != nil {
		t.Fatal(err)
	}
	if err := every.Apply(ctx, projections.Envelopes(ev[:10])); err != nil {
		t.Fatal(err)
	}
	if got := stored(); got != ev[9].Position {
		t.Errorf("after Apply with CheckpointEvery < 0: stored %v, want %v", got, ev[9].Position)
	}
	every.conn.Close()

	lazy, err := Open(ctx, dsn, Options{Dial: chtest.Open, CheckpointEvery: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if err := lazy.Apply(ctx, projections.Envelopes(ev[10:20])); err != nil {
		t.Fatal(err)
	}
	if cp, _ := lazy.Checkpoint(ctx); cp != ev[19].Position {
		t.Errorf("Checkpoint in memory = %v, want %v", cp, ev[19].Position)
	}
	if got := stored(); got != ev[9].Position {
		t.Errorf("before Flush: stored %v, want the older %v", got, ev[9].Position)
	}
	if err := lazy.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if got := stored(); got != ev[19].Position {
		t.Errorf("after Flush: stored %v, want %v", got, ev[19].Position)
	}
	if err := lazy.Apply(ctx, projections.Envelopes(ev[20:])); err != nil {
		t.Fatal(err)
	}
	if err := lazy.Close(); err != nil {
		t.Fatal(err)
	}
	if got := stored(); got != ev[len(ev)-1].Position {
		t.Errorf("after Close: stored %v, want %v", got, ev[len(ev)-1].Position)
	}
}

// A unit sent in several blocks (clickChunk) is still one part of clicks:
// the server squashes the blocks of an INSERT before it writes them.
func TestUnitIsOnePart(t *testing.T) {
	t.Parallel()
	ctx := chtest.Context(t, 2*time.Minute)
	dsn := chtest.DSN(t)
	p := openTest(t, ctx, dsn)
	l := newEventLog()
	start := time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)
	n := 2*clickChunk + 123
	genClicks(l, n, 7, start, 3)
	if err := p.Apply(ctx, projections.Envelopes(l.events)); err != nil {
		t.Fatal(err)
	}
	conn := rawConn(t, p, dsn)
	if got := count(t, ctx, conn, "SELECT count() FROM system.parts WHERE database = ? AND table = 'clicks' AND level = 0", p.Database()); got != 1 {
		t.Errorf("clicks has %d parts of level 0 after one unit, want 1", got)
	}
	if got := count(t, ctx, conn, "SELECT toUInt64(max(rows)) FROM system.parts WHERE database = ? AND table = 'clicks' AND level = 0", p.Database()); got != uint64(n) {
		t.Errorf("the part of the unit has %d rows, want %d", got, n)
	}
	checkAll(t, ctx, p, l.events, start, start.AddDate(0, 0, 2))
}

// A background task that keeps failing (ClickHouse away, a dropped
// database) is retried after 1 s, 2 s, 4 s, ... up to a minute, not at every
// tick; a success starts over.
func TestRetryBacksOff(t *testing.T) {
	var r retry
	if !r.due() {
		t.Fatal("a task that never failed is not due")
	}
	var got []time.Duration
	for range 8 {
		got = append(got, r.failed())
	}
	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second, 32 * time.Second, time.Minute, time.Minute}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("waits %v, want %v", got, want)
	}
	if r.due() {
		t.Error("due right after a failure")
	}
	r.succeeded()
	if d := r.failed(); d != time.Second {
		t.Errorf("first wait after a success: %v, want 1s", d)
	}
}
