package stats

import (
	"fmt"
	"github.com/linkd/linkd/projections"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/linkd/linkd/domain/click"
	"github.com/linkd/linkd/internal/testsupport/chtest"
)

// crash stops p as a killed process would: no flush, no checkpoint.
func (p *Projection) crash() {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	close(p.bgStop)
	<-p.bgDone
	p.conn.Close()
}

// TestAggregatesAreFlushedLater: Apply writes clicks; the aggregate tables
// get them at the next flush (FlushInterval, a read of the read model, or
// Flush), and the read model always shows them.
func TestAggregatesAreFlushedLater(t *testing.T) {
	t.Parallel()
	ctx := chtest.Context(t, time.Minute)
	dsn := chtest.DSN(t)
	p, err := Open(ctx, dsn, Options{Dial: chtest.Open, FlushInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	conn := rawConn(t, p, dsn)
	l := newEventLog()
	start := time.Date(2026, 5, 10, 0, 0, 0, 0, time.UTC)
	genClicks(l, 300, 11, start, 1)
	if err := p.Apply(ctx, projections.Envelopes(l.events)); err != nil {
		t.Fatal(err)
	}
	if n := count(t, ctx, conn, "SELECT count() FROM clicks"); n != 300 {
		t.Fatalf("clicks has %d rows after Apply, want 300", n)
	}
	if n := count(t, ctx, conn, "SELECT sum(clicks) FROM link_clicks_daily"); n != 0 {
		t.Fatalf("link_clicks_daily has %d clicks before a flush, want 0", n)
	}
	// A read of one link flushes (everything).
	if _, err := p.LinkDaily(ctx, "la", start, start); err != nil {
		t.Fatal(err)
	}
	for _, tbl := range []string{tLinkDaily, tWorkspaceDaily} {
		if n := count(t, ctx, conn, "SELECT sum(clicks) FROM "+tbl); n != 300 {
			t.Errorf("%s has %d clicks after a read, want 300", tbl, n)
		}
	}
	checkAll(t, ctx, p, l.events, start, start)
	// Another process, that applied nothing: it reads the names of the
	// breakdown values from breakdown_values.
	r := openTest(t, ctx, dsn)
	checkAll(t, ctx, r, l.events, start, start)

	// Without reads, the background flush writes them within FlushInterval.
	q, err := Open(ctx, dsn, Options{Dial: chtest.Open, FlushInterval: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	genClicks(l, 100, 12, start.Add(12*time.Hour), 1)
	if err := q.Apply(ctx, projections.Envelopes(l.events)); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for count(t, ctx, conn, "SELECT sum(clicks) FROM link_clicks_daily") != 400 {
		if time.Now().After(deadline) {
			t.Fatal("the background flush did not write the aggregates within 10s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	checkAll(t, ctx, q, l.events, start, start)
}

// TestCrashWithPendingAggregates: a process dies with aggregates pending
// (its clicks are in clicks, acknowledged); the next one rebuilds them from
// clicks and counts the redelivered events once.
func TestCrashWithPendingAggregates(t *testing.T) {
	t.Parallel()
	ctx := chtest.Context(t, 2*time.Minute)
	dsn := chtest.DSN(t)
	l := newEventLog()
	start := time.Date(2026, 3, 30, 0, 0, 0, 0, time.UTC)
	genClicks(l, 900, 13, start, 4) // across a month end
	ev := l.events

	p, err := Open(ctx, dsn, Options{Dial: chtest.Open, FlushInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Apply(ctx, projections.Envelopes(ev[:300])); err != nil {
		t.Fatal(err)
	}
	if err := p.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	for i := 300; i < 700; i += 50 {
		if err := p.Apply(ctx, projections.Envelopes(ev[i:i+50])); err != nil {
			t.Fatal(err)
		}
	}
	p.crash()

	q := openTest(t, ctx, dsn)
	checkAll(t, ctx, q, l.events[:700], start, start.AddDate(0, 0, 3))
	// Redelivery from the (older) checkpoint, then the rest.
	if err := q.Apply(ctx, projections.Envelopes(ev[250:])); err != nil {
		t.Fatal(err)
	}
	checkAll(t, ctx, q, l.events, start, start.AddDate(0, 0, 3))
	conn := rawConn(t, q, dsn)
	if n := count(t, ctx, conn, "SELECT count() FROM clicks"); n != uint64(len(ev)) {
		t.Errorf("clicks has %d rows, want %d", n, len(ev))
	}
}

// TestPastDaysAreFinal: the records of days that are over are stored
// final; a late click of such a day makes its record invalid before it
// reaches the daily tables, the read model then reads that day from the
// daily tables, and the projector makes the record again. The results stay
// exact throughout.
func TestPastDaysAreFinal(t *testing.T) {
	t.Parallel()
	ctx := chtest.Context(t, 2*time.Minute)
	dsn := chtest.DSN(t)
	p, err := Open(ctx, dsn, Options{Dial: chtest.Open, FlushInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	conn := rawConn(t, p, dsn)
	l := newEventLog()
	start := time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC)
	genClicks(l, 1200, 14, start, 6)
	for i := 0; i < len(l.events); i += 100 {
		if err := p.Apply(ctx, projections.Envelopes(l.events[i:min(i+100, len(l.events))])); err != nil {
			t.Fatal(err)
		}
	}
	end := start.AddDate(0, 0, 5)
	checkAll(t, ctx, p, l.events, start, end)
	// Days up to two before the last are final.
	for _, d := range []int32{p.finalLink.Load(), p.finalWorkspace.Load()} {
		if got, want := dayTime(d), end.AddDate(0, 0, -2); !got.Equal(want) {
			t.Errorf("final through %v, want %v", got, want)
		}
	}
	if n := count(t, ctx, conn, "SELECT toUInt64(uniqExact(date)) FROM workspace_clicks_daily_final"); n != 4 {
		t.Errorf("workspace_clicks_daily_final has %d days, want 4", n)
	}
	if n := count(t, ctx, conn, "SELECT toUInt64(count()) FROM (SELECT link_id, date, uniqMerge(unique_visitors) AS u, sum(clicks) AS c "+
		"FROM link_clicks_daily WHERE date <= toDate('2026-04-04') GROUP BY link_id, date) AS d ALL INNER JOIN "+
		"(SELECT link_id, date, argMax(unique_visitors, version) AS f, argMax(clicks, version) AS fc FROM link_clicks_daily_final GROUP BY link_id, date) AS r "+
		"USING (link_id, date) WHERE u = f AND c = fc"); n != 4*uint64(len(testLinks)) {
		t.Errorf("%d final link-days equal the daily tables, want %d", n, 4*len(testLinks))
	}
	latest := func(link string) (valid uint8, asOf, last uint64) {
		t.Helper()
		if err := conn.QueryRow(ctx, "SELECT argMax(valid, version), argMax(as_of_insert_id, version) FROM link_clicks_daily_final "+
			"WHERE link_id = ? AND date = '2026-04-02'", link).Scan(&valid, &asOf); err != nil {
			t.Fatal(err)
		}
		if err := conn.QueryRow(ctx, "SELECT maxMerge(max_insert_id) FROM link_clicks_daily WHERE link_id = ? AND date = '2026-04-02'", link).Scan(&last); err != nil {
			t.Fatal(err)
		}
		return valid, asOf, last
	}

	// Late clicks of day 2, flushed by a projector that stops before it
	// makes the final records again: they are invalid, and the read model
	// reads that day from the daily tables.
	late := start.AddDate(0, 0, 1).Add(23 * time.Hour)
	for i, id := range []string{"la", "ld", "lf", "la"} {
		ws := map[string]string{"la": "w1", "ld": "w2", "lf": "w3"}[id]
		l.click(click.Recorded{ClickID: fmt.Sprint("late", i), LinkID: id, WorkspaceID: ws, Timestamp: late,
			Visitor: fmt.Sprintf("%032x", 1000+i), OS: "iOS", Country: "PT", Continent: "EU", DeviceType: "mobile"})
	}
	p.mu.Lock()
	p.noFinalize = true
	err = p.applyLocked(ctx, projections.Envelopes(l.events[len(l.events)-4:]))
	p.noFinalize = false
	p.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	if valid, _, _ := latest("la"); valid != 0 {
		t.Fatalf("the final record of la on 2026-04-02 is still valid after late clicks")
	}
	checkAll(t, ctx, p, l.events, start, end)

	// Then through Apply, which makes the records again.
	l.click(click.Recorded{ClickID: "late-again", LinkID: "lb", WorkspaceID: "w1", Timestamp: late, Visitor: "v-late"})
	if err := p.Apply(ctx, projections.Envelopes(l.events[len(l.events)-1:])); err != nil {
		t.Fatal(err)
	}
	checkAll(t, ctx, p, l.events, start, end)
	if valid, asOf, last := latest("lb"); valid != 1 || asOf != last {
		t.Errorf("final record of lb on 2026-04-02: valid %d, as of insert %d; the day's last insert is %d", valid, asOf, last)
	}

	// A crash while late clicks were pending: recovery makes their
	// records invalid before it rebuilds the daily tables.
	q, err := Open(ctx, dsn, Options{Dial: chtest.Open, FlushInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	l.click(click.Recorded{ClickID: "late-crash", LinkID: "lc", WorkspaceID: "w1", Timestamp: late, Visitor: "v-crash"})
	if err := q.Apply(ctx, projections.Envelopes(l.events[len(l.events)-1:])); err != nil {
		t.Fatal(err)
	}
	q.crash()
	r := openTest(t, ctx, dsn)
	checkAll(t, ctx, r, l.events, start, end)
}

// TestUpgradeFromVersion1 opens a database of schema version 1 (breakdowns
// in long form, no uniques tables): the new tables are filled from clicks.
func TestUpgradeFromVersion1(t *testing.T) {
	t.Parallel()
	ctx := chtest.Context(t, 2*time.Minute)
	dsn := chtest.DSN(t)
	p := openTest(t, ctx, dsn)
	l := newEventLog()
	start := time.Date(2026, 2, 27, 0, 0, 0, 0, time.UTC)
	genClicks(l, 800, 15, start, 4)
	if err := p.Apply(ctx, projections.Envelopes(l.events)); err != nil {
		t.Fatal(err)
	}
	if err := p.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	// Back to version 1: what version 2 added is gone, version 1's
	// breakdown tables and views are there.
	for _, q := range []string{
		"DROP TABLE " + p.tbl(tLinkBreakdown+"_mv"), "DROP TABLE " + p.tbl(tWorkspaceBreakdown+"_mv"),
		"DROP TABLE " + p.tbl(tLinkBreakdown), "DROP TABLE " + p.tbl(tWorkspaceBreakdown),
		"DROP TABLE " + p.tbl(tLinkBreakdown+inputSuffix), "DROP TABLE " + p.tbl(tWorkspaceBreakdown+inputSuffix),
		"DROP TABLE " + p.tbl(tValues), "DROP TABLE " + p.tbl(tLinkFinal), "DROP TABLE " + p.tbl(tWorkspaceFinal),
		"CREATE TABLE " + p.tbl("link_clicks_daily_breakdown") + " (link_id String, date Date, dimension " + dimensionEnum() +
			", value String, clicks UInt64, max_insert_id AggregateFunction(max, UInt64)) ENGINE = SummingMergeTree PARTITION BY toYYYYMM(date) ORDER BY (link_id, date, dimension, value)",
		"CREATE TABLE " + p.tbl("link_clicks_daily_breakdown_input") + " (link_id String, date Date, dimension " + dimensionEnum() +
			", value String, clicks UInt64, insert_id UInt64) ENGINE = Null",
		"CREATE MATERIALIZED VIEW " + p.tbl("link_clicks_daily_breakdown_mv") + " TO " + p.tbl("link_clicks_daily_breakdown") +
			" AS SELECT link_id, date, dimension, value, clicks, arrayReduce('maxState', [insert_id]) AS max_insert_id FROM " +
			p.tbl("link_clicks_daily_breakdown_input"),
		"TRUNCATE TABLE " + p.tbl("schema_migrations"),
	} {
		if err := p.conn.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	p.Close()
	q := openTest(t, ctx, dsn)
	checkAll(t, ctx, q, l.events, start, start.AddDate(0, 0, 3))
	conn := rawConn(t, q, dsn)
	var views uint64
	if err := conn.QueryRow(ctx, "SELECT toUInt64(count()) FROM system.tables WHERE database = ? AND name IN "+
		"('link_clicks_daily_breakdown_mv', 'link_clicks_daily_breakdown_input')", q.Database()).Scan(&views); err != nil {
		t.Fatal(err)
	}
	if views != 0 {
		t.Errorf("version 1's breakdown view and input remain after the upgrade")
	}
	if n := count(t, ctx, conn, "SELECT toUInt64(count()) FROM system.tables WHERE database = currentDatabase() AND name = 'link_clicks_daily_breakdown'"); n != 1 {
		t.Errorf("version 1's breakdown table (analyst data) was dropped by the upgrade")
	}
}

// counts gives the same counts in each of its forms (list, map, dense
// array, and back to a map when the keyer grows).
func TestCountsForms(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, nkeys := range []int{40, 100, 1000, 5000} {
		var c counts
		want := map[uint32]uint32{}
		for i := range 20000 {
			keys := nkeys
			if i > 10000 {
				keys = 20 * nkeys // the keyer grows
			}
			id := uint32(r.IntN(keys))
			c.add(id, keys)
			want[id]++
		}
		if len(c.kv) != len(want) {
			t.Fatalf("nkeys %d: %d values, want %d", nkeys, len(c.kv), len(want))
		}
		for _, e := range c.kv {
			if want[e.id] != e.n {
				t.Fatalf("nkeys %d: id %d counted %d, want %d", nkeys, e.id, e.n, want[e.id])
			}
		}
	}
}

// Clicks of a day that the flush in flight makes final (after they were
// added to the pending aggregates, or before) are late clicks all the same:
// the final records of their day are made invalid, then again.
func TestLateClicksWhileAFlushIsInFlight(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		// finalizeFirst: the flush in flight makes the days final
		// before the late clicks are added (they see it); otherwise
		// after (markLate finds them).
		finalizeFirst bool
	}{{"days made final after the late clicks came", false}, {"days made final before the late clicks came", true}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := chtest.Context(t, 2*time.Minute)
			p, err := Open(ctx, chtest.DSN(t), Options{Dial: chtest.Open, FlushInterval: time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			l := newEventLog()
			start := time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC)
			genClicks(l, 300, 5, start, 6)
			n := len(l.events)
			late := start.AddDate(0, 0, 1).Add(12 * time.Hour)
			for i, ln := range testLinks {
				l.click(click.Recorded{ClickID: fmt.Sprint("late", i), LinkID: ln.id, WorkspaceID: ln.ws, Timestamp: late,
					Visitor: fmt.Sprintf("%032x", 5000+i), OS: "iOS", Country: "PT", Continent: "EU", DeviceType: "mobile"})
			}
			release := make(chan struct{})
			p.beforeFinalize = func() { <-release }
			// Under the lock, so that the background flusher does not
			// end the flush in flight.
			p.mu.Lock()
			err = p.applyLocked(ctx, projections.Envelopes(l.events[:n]))
			if err == nil {
				err = p.startFlushLocked(ctx)
			}
			f := p.flight
			if err == nil && tc.finalizeFirst {
				close(release)
				<-f.done
			}
			if err == nil {
				err = p.applyLocked(ctx, projections.Envelopes(l.events[n:])) // the late clicks, pending
			}
			if !tc.finalizeFirst {
				close(release)
			}
			if err == nil {
				err = p.waitFlushLocked(ctx)
			}
			lateCells := len(p.pend.lateLinks)
			p.mu.Unlock()
			if err != nil {
				t.Fatal(err)
			}
			if p.finalLink.Load() < dayNumber(late) {
				t.Fatalf("day of the late clicks not final (final through %v)", dayTime(p.finalLink.Load()))
			}
			if lateCells != len(testLinks) {
				t.Fatalf("%d late link cells pending, want %d", lateCells, len(testLinks))
			}
			checkAll(t, ctx, p, l.events, start, start.AddDate(0, 0, 5))
		})
	}
}
