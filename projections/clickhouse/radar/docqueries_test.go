package radar

import (
	"github.com/linkd/linkd/projections"
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/linkd/linkd/internal/testsupport/chtest"
	"github.com/linkd/linkd/projections/radartest"
)

var radarDocBlock = regexp.MustCompile("(?s)```sql\n-- radar test: ([a-z_]+)\n(.*?)```")

// TestRadarDocumentedQueries runs the Radar analyst queries of
// docs/analytics.md on the Radar contract's fixture, loaded through the
// projectors (twice: delivery is at least once), and checks their rows,
// worked out by hand from the fixture.
func TestRadarDocumentedQueries(t *testing.T) {
	data, err := os.ReadFile("../../../docs/analytics.md")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][][]string{
		// "/": a (twice), b, d, e; "/pricing": a, c; "/docs": c.
		"radar_top_pages": {{"/", "4", "5"}, {"/pricing", "2", "2"}, {"/docs", "1", "1"}},
		// Direct: a's second visit (a bounce), c's, d's (a bounce).
		"radar_top_sources": {{"Direct / None", "3", "2"}, {"news.example", "2", "2"}, {"short.example/abc", "1", "0"}},
		// The same by entry source, with visitors: a, c, d directly.
		"radar_daily_sources": {{"Direct / None", "3", "2", "3"}, {"news.example", "2", "2", "2"}, {"short.example/abc", "1", "0", "1"}},
		// The visitors of radar_top_pages.
		"radar_daily_hll_pages": {{"/", "4"}, {"/pricing", "2"}, {"/docs", "1"}},
		// Landed on /: a, b, d, e; a then saw /pricing and signed up (c
		// signed up before /pricing, and never landed on /).
		"radar_funnel": {{"4", "1", "1"}},
		// a came through clk-1 from the short link (one usd sale); c and
		// d directly (two eur sales of clk-2, a usd sale of clk-3); e's
		// click has none, and no visitor has clk-9.
		"radar_revenue_by_source": {{"Direct / None", "eur", "2", "3550"}, {"Direct / None", "usd", "1", "10000"}, {"short.example/abc", "usd", "1", "4999"}},
	}
	ctx := chtest.Context(t, 2*time.Minute)
	dsn := chtest.DSN(t)
	pair := openRadarTest(t, dsn)
	events := radartest.Fixture(t)
	for range 2 {
		if err := pair.Apply(ctx, projections.Envelopes(events)); err != nil {
			t.Fatal(err)
		}
	}
	conn := chtest.Conn(t, dsn, pair.stats.Database())
	seen := map[string]bool{}
	for _, m := range radarDocBlock.FindAllStringSubmatch(string(data), -1) {
		name, q := m[1], strings.TrimSpace(m[2])
		seen[name] = true
		t.Run(name, func(t *testing.T) {
			exp, ok := want[name]
			if !ok {
				t.Fatalf("no expected result for documented query %q: add one to this test", name)
			}
			if got := chtest.QueryStrings(t, ctx, conn, q); !reflect.DeepEqual(got, exp) {
				t.Errorf("%s\n got %v\nwant %v", q, got, exp)
			}
		})
	}
	for name := range want {
		if !seen[name] {
			t.Errorf("docs/analytics.md has no Radar query %q", name)
		}
	}
}
