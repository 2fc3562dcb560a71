package radar

import (
	"context"
	"github.com/linkd/linkd/projections"
	"math"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/linkd/linkd/domain/radar"
	"github.com/linkd/linkd/internal/testsupport/chtest"
	"github.com/linkd/linkd/projections/projectiontest"
	"github.com/linkd/linkd/projections/radartest"
	"github.com/linkd/linkd/queries"
)

// The Radar reports' contract, shared with the embedded projection.
func TestRadarContract(t *testing.T) {
	radartest.Run(t, func(t *testing.T) radartest.Store { return openRadarTest(t, chtest.DSN(t)) })
}

// A restart (a new projector on the same tables) in the middle of visits,
// with the events since an older checkpoint delivered again, gives the same
// reports: the visits that go on are read back, repeats are skipped.
func TestRadarRestartRedelivery(t *testing.T) {
	dsn := chtest.DSN(t)
	events := radartest.Fixture(t)
	first := openRadarTest(t, dsn)
	for i := 0; i < len(events)*2/3; i++ {
		if err := first.Apply(context.Background(), projections.Envelopes(events[i:i+1])); err != nil {
			t.Fatal(err)
		}
	}
	for _, from := range []int{len(events) / 3, len(events) / 2} {
		ctx := chtest.Context(t, time.Minute)
		again, err := New(ctx, first.stats.DB())
		if err != nil {
			t.Fatal(err)
		}
		pair := radarPair{Projection: again, stats: first.stats}
		cp, err := pair.Checkpoint(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if want := events[len(events)*2/3-1].Position; cp != want {
			t.Fatalf("checkpoint %v, want %v", cp, want)
		}
		if err := pair.Apply(ctx, projections.Envelopes(events[from:len(events)*2/3])); err != nil {
			t.Fatal(err)
		}
		first = pair
	}
	if err := first.Apply(context.Background(), projections.Envelopes(events[len(events)*2/3-1:])); err != nil {
		t.Fatal(err)
	}
	got, want := radartest.Read(t, first), radartest.Expected()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("after restarts:\n got %+v\nwant %+v", got, want)
	}
	// One row of each visit's latest state is left uncancelled.
	var live, rows uint64
	ctx := chtest.Context(t, time.Minute)
	if err := first.conn.QueryRow(ctx, "SELECT toUInt64(sum(sign)), count() FROM "+first.db.Table(tRadarSessions)+" WHERE project_id = 'p1'").Scan(&live, &rows); err != nil {
		t.Fatal(err)
	}
	if live != 6 {
		t.Errorf("visits of p1: %d (rows %d), want 6", live, rows)
	}
	// radar_daily_sources saw each row of radar_sessions once.
	var visits int64
	if err := first.conn.QueryRow(ctx, "SELECT sum(visits) FROM "+first.db.Table(tRadarSources)+" WHERE project_id = 'p1'").Scan(&visits); err != nil {
		t.Fatal(err)
	}
	if visits != 6 {
		t.Errorf("visits of p1 in %s: %d, want 6", tRadarSources, visits)
	}
}

// A visitor forgotten from memory (its visit looked over) whose next event
// comes late, after other visitors' later ones (a lagging partition),
// still continues its visit: it is read back from the tables.
func TestRadarForgottenVisitorContinuesItsVisit(t *testing.T) {
	pair := openRadarTest(t, chtest.DSN(t))
	pair.maxVisitors = 1
	var l projectiontest.Log
	hit := func(visitor string, at time.Duration) {
		l.Add(t, radar.Stream("p1", visitor), &radar.PageviewRecorded{Hit: radar.Hit{ProjectID: "p1", VisitorID: visitor,
			URL: "https://a.example/", Hostname: "a.example", Pathname: "/", At: radartest.T0.Add(at)}})
		if err := pair.Apply(context.Background(), projections.Envelopes(l.Events[len(l.Events)-1:])); err != nil {
			t.Fatal(err)
		}
	}
	hit("x", 0)
	hit("y", 40*time.Minute) // x's visit looks over: x is forgotten
	if _, ok := pair.visitors[visitorKey("p1", "x")]; ok {
		t.Fatal("x was not forgotten")
	}
	hit("x", 20*time.Minute) // late, but within x's visit
	o, err := pair.RadarOverview(context.Background(), queries.RadarRange{ProjectID: "p1", Start: radartest.T0.Add(-time.Hour), End: radartest.T0.Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	if o.Visits != 2 || o.Pageviews != 3 || o.BounceRate != 50 || o.AvgDurationS != 600 {
		t.Errorf("overview %+v, want 2 visits (x's of 20 minutes, y's bounce), 3 page views", o)
	}
}

// An INSERT into radar_events whose rows the views did not carry to
// radar_daily and radar_clicks (a crash between the two: here the views are
// dropped for the batch) is rebuilt when the projector starts again.
func TestRadarDailyRecovery(t *testing.T) {
	ctx := chtest.Context(t, 2*time.Minute)
	first := openRadarTest(t, chtest.DSN(t))
	events := radartest.Fixture(t)
	half := 4 // c's hits (its click has sales) come next
	if err := first.Apply(ctx, projections.Envelopes(events[:half])); err != nil {
		t.Fatal(err)
	}
	for _, v := range views {
		if err := first.conn.Exec(ctx, "DROP TABLE "+first.db.Table(v.Name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := first.Apply(ctx, projections.Envelopes(events[half:half+6])); err != nil {
		t.Fatal(err)
	}
	again, err := New(ctx, first.stats.DB()) // a restart: the view is created again, radar_daily rebuilt
	if err != nil {
		t.Fatal(err)
	}
	pair := radarPair{Projection: again, stats: first.stats}
	if err := pair.Apply(ctx, projections.Envelopes(events[half:])); err != nil {
		t.Fatal(err)
	}
	got, want := radartest.Read(t, pair), radartest.Expected()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("after the rebuild:\n got %+v\nwant %+v", got, want)
	}
}

// A database made before radar_daily_hll, radar_weekly_hll and
// radar_daily_sources (and radar_sessions' entry_source and insert_id) gets
// them filled from every row when the projector starts on it.
func TestRadarNewTablesFilledAtStart(t *testing.T) {
	ctx := chtest.Context(t, 2*time.Minute)
	first := openRadarTest(t, chtest.DSN(t))
	if err := first.Apply(ctx, projections.Envelopes(radartest.Fixture(t))); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		"DROP TABLE " + first.db.Table(tRadarHLLView), "DROP TABLE " + first.db.Table(tRadarWeeklyView), "DROP TABLE " + first.db.Table(tRadarSourceView),
		"DROP TABLE " + first.db.Table(tRadarHLL), "DROP TABLE " + first.db.Table(tRadarWeekly), "DROP TABLE " + first.db.Table(tRadarSources),
		"ALTER TABLE " + first.db.Table(tRadarSessions) + " DROP COLUMN entry_source", "ALTER TABLE " + first.db.Table(tRadarSessions) + " DROP COLUMN insert_id",
	} {
		if err := first.conn.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	again, err := New(ctx, first.stats.DB())
	if err != nil {
		t.Fatal(err)
	}
	pair := radarPair{Projection: again, stats: first.stats}
	if _, err := pair.Checkpoint(ctx); err != nil {
		t.Fatal(err)
	}
	got, want := radartest.Read(t, pair), radartest.Expected()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("after the upgrade:\n got %+v\nwant %+v", got, want)
	}
}

// Unique visitors of whole days are exact up to radarExactLimit (beyond
// the 16 values uniqHLL12 keeps exactly), and estimates within a few
// percent beyond.
func TestRadarUniqueVisitorsOfDays(t *testing.T) {
	for _, tc := range []struct {
		name     string
		visitors int
		exact    bool
	}{
		{"small", 1000, true},
		{"near the limit", radarExactLimit * 9 / 10, true}, // the estimate is within 2%
		{"large", radarExactLimit + 10000, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := chtest.Context(t, 2*time.Minute)
			pair := openRadarTest(t, chtest.DSN(t))
			r := pair.Projection
			// Visitor v: a page view of /p<v % 2> from source s<v % 2>
			// on 2026-03-14, one visit each, through the views as the
			// projector writes them (insert_id 1 and 2).
			for _, q := range []string{
				"INSERT INTO " + r.db.Table(tRadarEvents) + " (project_id, visitor_id, session_id, timestamp, date, kind, hostname, pathname, source, insert_id) " +
					"SELECT 'p1', toString(number), toString(number), toDateTime('2026-03-14 10:00:00') + number % 3600, toDate('2026-03-14'), 'pageview', 'a.example', " +
					"concat('/p', toString(number % 2)), concat('s', toString(number % 2)), 1 FROM numbers(" + strconv.Itoa(tc.visitors) + ")",
				"INSERT INTO " + r.db.Table(tRadarSessions) + " (project_id, visitor_id, session_id, sign, version, started_at, ended_at, pageviews, is_bounce, " +
					"source, entry_source, insert_id) SELECT 'p1', toString(number), toString(number), 1, 0, toDateTime('2026-03-14 10:00:00') + number % 3600, " +
					"toDateTime('2026-03-14 10:00:00') + number % 3600, 1, 1, concat('s', toString(number % 2)), concat('s', toString(number % 2)), 2 FROM numbers(" +
					strconv.Itoa(tc.visitors) + ")",
			} {
				if err := r.conn.Exec(ctx, q); err != nil {
					t.Fatalf("%s: %v", q, err)
				}
			}
			// March: its whole weeks from radar_weekly_hll, when estimated.
			rr := queries.RadarRange{ProjectID: "p1", Start: time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC), End: time.Date(2026, 3, 31, 23, 59, 59, 0, time.UTC)}
			o, err := r.RadarOverview(ctx, rr)
			if err != nil {
				t.Fatal(err)
			}
			b, err := r.RadarBreakdowns(ctx, rr, 10)
			if err != nil {
				t.Fatal(err)
			}
			counts := map[string]int64{"people": o.People, "visits": o.Visits}
			for _, p := range b.Pages {
				counts["page "+p.Pathname] = p.People
			}
			for _, s := range b.Sources {
				counts["source "+s.Name] = s.People
			}
			n := int64(tc.visitors)
			want := map[string]int64{"people": n, "visits": n, "page /p0": n / 2, "page /p1": n / 2, "source s0": n / 2, "source s1": n / 2}
			for k, w := range want {
				got, ok := counts[k]
				switch {
				case !ok:
					t.Errorf("%s missing", k)
				case tc.exact || k == "visits":
					if got != w {
						t.Errorf("%s: %d, want exactly %d", k, got, w)
					}
				case math.Abs(float64(got-w)) > 0.05*float64(w):
					t.Errorf("%s: %d, want %d within 5%%", k, got, w)
				}
			}
		})
	}
}

func TestRadarSpanWeeks(t *testing.T) {
	for _, tc := range []struct {
		from, to, first, last string
		ok                    bool
	}{
		{"2026-01-01", "2026-01-30", "2026-01-05", "2026-01-19", true}, // Thursday to Friday
		{"2026-03-09", "2026-03-15", "2026-03-09", "2026-03-09", true}, // one week
		{"2026-03-10", "2026-03-16", "", "", false},
		{"2026-03-14", "2026-03-15", "", "", false},
		{"1970-01-01", "2105-12-31", "1970-01-05", "2105-12-21", true},
	} {
		first, last, ok := radarSpan{from: tc.from, to: tc.to}.weeks()
		if first != tc.first || last != tc.last || ok != tc.ok {
			t.Errorf("weeks of %s to %s: %s, %s, %v; want %s, %s, %v", tc.from, tc.to, first, last, ok, tc.first, tc.last, tc.ok)
		}
	}
}

// Two instances write the Radar tables in turns (ADR 0125), each turn
// begun and ended with Reload, each given again events of the last turn:
// the reports are those of one pass. The one that writes last remembers,
// from its first turn, visits and marks far behind the tables.
func TestRadarInstancesTakeTurns(t *testing.T) {
	dsn := chtest.DSN(t)
	events := radartest.Fixture(t)
	a := openRadarTest(t, dsn)
	b := openRadarTest(t, dsn)
	n := len(events)
	turn := func(p radarPair, from, to int) {
		ctx := chtest.Context(t, time.Minute)
		p.Reload(ctx)
		p.stats.Reload(ctx)
		for i := from; i < to; i++ {
			if err := p.Apply(ctx, projections.Envelopes(events[i:i+1])); err != nil {
				t.Fatal(err)
			}
		}
		p.Reload(ctx)
		p.stats.Reload(ctx)
	}
	turn(a, 0, n/3)
	turn(b, n/4, 2*n/3)
	turn(a, n/2, n)
	for _, p := range []radarPair{a, b} {
		if got, want := radartest.Read(t, p), radartest.Expected(); !reflect.DeepEqual(got, want) {
			t.Errorf("after turns:\n got %+v\nwant %+v", got, want)
		}
	}
	var live uint64
	ctx := chtest.Context(t, time.Minute)
	if err := a.conn.QueryRow(ctx, "SELECT toUInt64(sum(sign)) FROM "+a.db.Table(tRadarSessions)+" WHERE project_id = 'p1'").Scan(&live); err != nil {
		t.Fatal(err)
	}
	if live != 6 {
		t.Errorf("visits of p1: %d, want 6", live)
	}
}
