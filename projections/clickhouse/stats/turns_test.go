package stats

import (
	"testing"
	"time"

	"github.com/linkd/linkd/internal/testsupport/chtest"
	"github.com/linkd/linkd/projections"
)

// TestInstancesTakeTurns: two projections on the same tables, as two
// instances of a deployment, write them in turns (ADR 0125), each turn
// begun and ended with Reload, and each given again events of the last
// turn whose offsets did not reach Kafka. The one that writes last
// remembers, from its first turn, marks far below what the other wrote:
// Reload makes it read them again, so no click counts twice.
func TestInstancesTakeTurns(t *testing.T) {
	t.Parallel()
	ctx := chtest.Context(t, 2*time.Minute)
	dsn := chtest.DSN(t)
	l := newEventLog()
	start := time.Date(2026, 3, 30, 0, 0, 0, 0, time.UTC)
	genClicks(l, 900, 17, start, 4) // across a month end
	ev := l.events
	open := func(flush time.Duration) *Projection {
		p, err := Open(ctx, dsn, Options{Dial: chtest.Open, FlushInterval: flush, Standby: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.Close() })
		return p
	}
	// a keeps aggregates pending across Applies: its Reload writes them.
	a, b := open(time.Hour), open(-1)
	turn := func(p *Projection, from, to int) {
		p.Reload(ctx)
		for i := from; i < to; i += 50 {
			if err := p.Apply(ctx, projections.Envelopes(ev[i:min(i+50, to)])); err != nil {
				t.Fatal(err)
			}
		}
		p.Reload(ctx)
	}
	turn(a, 0, 400)
	turn(b, 300, 700)
	turn(a, 600, len(ev))
	checkAll(t, ctx, a, ev, start, start.AddDate(0, 0, 4))
	checkAll(t, ctx, b, ev, start, start.AddDate(0, 0, 4))
	conn := rawConn(t, a, dsn)
	if n := count(t, ctx, conn, "SELECT count() FROM clicks"); n != uint64(len(ev)) {
		t.Errorf("clicks has %d rows, want %d", n, len(ev))
	}
}

// TestStandbyRepairsNothing: a projection opened on standby while another
// process may be writing leaves the tables alone, even what a crash left
// unfinished; the turn it is given repairs it.
func TestStandbyRepairsNothing(t *testing.T) {
	t.Parallel()
	ctx := chtest.Context(t, 2*time.Minute)
	dsn := chtest.DSN(t)
	l := newEventLog()
	start := time.Date(2026, 3, 30, 0, 0, 0, 0, time.UTC)
	genClicks(l, 600, 19, start, 2)
	ev := l.events
	p, err := Open(ctx, dsn, Options{Dial: chtest.Open, FlushInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Apply(ctx, projections.Envelopes(ev[:100])); err != nil {
		t.Fatal(err)
	}
	if err := p.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if err := p.Apply(ctx, projections.Envelopes(ev[100:300])); err != nil {
		t.Fatal(err)
	}
	p.crash() // clicks of the second Apply are in clicks, not in the aggregates

	conn := rawConn(t, p, dsn)
	const have = "SELECT maxMerge(max_insert_id) FROM link_clicks_daily"
	const finals = "SELECT count() FROM link_clicks_daily_final"
	before, finalsBefore := count(t, ctx, conn, have), count(t, ctx, conn, finals)
	if last := count(t, ctx, conn, "SELECT max(insert_id) FROM clicks"); last <= before {
		t.Fatalf("the crash left nothing to repair: clicks up to insert_id %d, link_clicks_daily %d", last, before)
	}
	// Its background task runs every 10 ms.
	s, err := Open(ctx, dsn, Options{Dial: chtest.Open, FlushInterval: 40 * time.Millisecond, Standby: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	time.Sleep(300 * time.Millisecond)
	if after := count(t, ctx, conn, have); after != before {
		t.Errorf("link_clicks_daily went from insert_id %d to %d with a projection on standby", before, after)
	}
	if after := count(t, ctx, conn, finals); after != finalsBefore {
		t.Errorf("link_clicks_daily_final went from %d to %d rows with a projection on standby", finalsBefore, after)
	}
	s.Reload(ctx)
	if err := s.Apply(ctx, projections.Envelopes(ev[250:])); err != nil {
		t.Fatal(err)
	}
	checkAll(t, ctx, s, ev, start, start.AddDate(0, 0, 2))
}
