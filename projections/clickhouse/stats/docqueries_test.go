package stats

import (
	"fmt"
	"github.com/linkd/linkd/projections"
	"maps"
	"os"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/linkd/linkd/domain/click"
	"github.com/linkd/linkd/domain/conversion"
	"github.com/linkd/linkd/domain/link"
	"github.com/linkd/linkd/eventstore"
	"github.com/linkd/linkd/internal/testsupport/chtest"
)

// docQuery is a query of docs/analytics.md: a ```sql block whose first line
// is "-- test: <name>".
type docQuery struct{ name, sql string }

var docBlock = regexp.MustCompile("(?s)```sql\n-- test: ([a-z_]+)\n(.*?)```")

func documentedQueries(t *testing.T) []docQuery {
	t.Helper()
	data, err := os.ReadFile("../../../docs/analytics.md")
	if err != nil {
		t.Fatal(err)
	}
	var out []docQuery
	for _, m := range docBlock.FindAllStringSubmatch(string(data), -1) {
		out = append(out, docQuery{name: m[1], sql: strings.TrimSpace(m[2])})
	}
	return out
}

// TestDocumentedQueries runs every analyst query of docs/analytics.md on
// data loaded through the projector and compares its rows with the same
// question answered in Go from the raw clicks.
func TestDocumentedQueries(t *testing.T) {
	t.Parallel()
	ctx := chtest.Context(t, 2*time.Minute)
	dsn := chtest.DSN(t)
	p := openTest(t, ctx, dsn)
	conn := rawConn(t, p, dsn)

	var serverToday time.Time
	if err := conn.QueryRow(ctx, "SELECT today()").Scan(&serverToday); err != nil {
		t.Fatal(err)
	}
	today := time.Date(serverToday.Year(), serverToday.Month(), serverToday.Day(), 0, 0, 0, 0, time.UTC)
	if now := time.Now().UTC(); now.Format(time.DateOnly) != today.Format(time.DateOnly) || now.Hour() == 23 && now.Minute() >= 58 {
		t.Skip("too close to midnight UTC: the server's today() and the test's would differ")
	}

	// Links of ws_demo (one deleted later) and of another workspace.
	l := newEventLog()
	created := today.AddDate(0, 0, -20)
	links := map[string]struct{ ws, code, name string }{
		"lnk_demo": {"ws_demo", "demo", "Demo launch"},
		"lnk_b":    {"ws_demo", "bee", "Newsletter"},
		"lnk_c":    {"ws_demo", "sea", "Podcast"},
		"lnk_gone": {"ws_demo", "gone", "Old promo"},
		"lnk_x":    {"ws_other", "x", "Elsewhere"},
	}
	ids := []string{"lnk_demo", "lnk_b", "lnk_c", "lnk_gone", "lnk_x"}
	for _, id := range ids {
		ln := links[id]
		l.add(link.Stream(id), linkCreated(id, ln.ws, ln.code, ln.name, created))
	}
	var rename link.Patch
	rename.Name.Set, rename.Name.V = true, "Newsletter (May)"
	l.add(link.Stream("lnk_b"), &link.Updated{LinkID: "lnk_b", Changes: rename, At: created.Add(time.Hour)})

	// Clicks over the last ten days, today included, in time order.
	countries := []string{"US", "BR", "DE", "US", "FR", "", "US"}
	referrers := []string{"google.com", "", "t.co", "google.com", "news.ycombinator.com"}
	weights := map[string]int{"lnk_demo": 5, "lnk_b": 3, "lnk_c": 2, "lnk_gone": 2, "lnk_x": 3}
	start := today.AddDate(0, 0, -9)
	n := 0
	for it, ts := 0, start; ts.Before(today.Add(time.Duration(time.Now().UTC().Hour()) * time.Hour)); it, ts = it+1, ts.Add(47*time.Minute) {
		for k, id := range ids {
			if (it+k)%7 >= weights[id] {
				continue
			}
			n++
			l.click(click.Recorded{
				ClickID: fmt.Sprint("c", n), LinkID: id, WorkspaceID: links[id].ws, Code: links[id].code,
				Timestamp: ts.Add(time.Duration(n%40) * time.Second), Source: click.SourceRedirect,
				QR: n%4 == 0, Visitor: fmt.Sprintf("%032x", n%13), Country: countries[n%len(countries)],
				Referrer: referrers[n%len(referrers)], DeviceType: "mobile", OS: "iOS",
			})
		}
	}
	l.add(link.Stream("lnk_gone"), &link.Deleted{LinkID: "lnk_gone", WorkspaceID: "ws_demo", Code: "gone", At: today})

	// Leads and sales: customers of ws_demo on lnk_demo and lnk_b, one of
	// ws_other; one sale 40 days ago (out of every range).
	type conv struct {
		id, link, ws, cur, country string
		sale, first                bool
		amount                     int64
		at                         time.Time
	}
	var convs []conv
	addConv := func(c conv) {
		convs = append(convs, c)
		ext := "cust-" + c.id[:2]
		ck := conversion.Click{ClickID: "clk-" + c.id, LinkID: c.link, WorkspaceID: c.ws, ClickedAt: c.at.Add(-time.Hour), Country: c.country, DeviceType: "mobile"}
		stream := conversion.CustomerStream(c.ws, ext)
		if c.sale {
			l.add(stream, &conversion.SaleTracked{ConversionID: c.id, EventName: "Purchase", Click: ck, CustomerID: "cus-" + c.id[:2], CustomerExternalID: ext,
				AmountMinor: c.amount, Currency: c.cur, First: c.first, Timestamp: c.at})
		} else {
			l.add(stream, &conversion.LeadTracked{ConversionID: c.id, EventName: "Sign up", Click: ck, CustomerID: "cus-" + c.id[:2], CustomerExternalID: ext,
				First: c.first, Timestamp: c.at})
		}
	}
	addConv(conv{id: "a1-lead", link: "lnk_demo", ws: "ws_demo", country: "US", first: true, at: today.AddDate(0, 0, -5)})
	addConv(conv{id: "a1-s1", link: "lnk_demo", ws: "ws_demo", country: "US", sale: true, first: true, amount: 2999, cur: "usd", at: today.AddDate(0, 0, -5).Add(time.Hour)})
	addConv(conv{id: "a1-s2", link: "lnk_demo", ws: "ws_demo", country: "US", sale: true, amount: 2999, cur: "usd", at: today.AddDate(0, 0, -2)})
	addConv(conv{id: "b2-lead", link: "lnk_demo", ws: "ws_demo", country: "DE", first: true, at: today.AddDate(0, 0, -3)})
	addConv(conv{id: "b2-s1", link: "lnk_demo", ws: "ws_demo", country: "DE", sale: true, first: true, amount: 4900, cur: "eur", at: today.AddDate(0, 0, -3)})
	addConv(conv{id: "c3-lead", link: "lnk_b", ws: "ws_demo", country: "BR", first: true, at: today.AddDate(0, 0, -1)})
	addConv(conv{id: "c3-s1", link: "lnk_b", ws: "ws_demo", country: "BR", sale: true, first: true, amount: 1500, cur: "usd", at: today.AddDate(0, 0, -1)})
	addConv(conv{id: "d4-lead", link: "lnk_c", ws: "ws_demo", country: "FR", first: true, at: today.AddDate(0, 0, -1)})
	addConv(conv{id: "e5-s1", link: "lnk_demo", ws: "ws_demo", country: "US", sale: true, first: true, amount: 100000, cur: "jpy", at: today.AddDate(0, 0, -40)})
	addConv(conv{id: "x9-s1", link: "lnk_x", ws: "ws_other", country: "US", sale: true, first: true, amount: 777, cur: "usd", at: today.AddDate(0, 0, -1)})
	if err := p.Apply(ctx, projections.Envelopes(l.events)); err != nil {
		t.Fatal(err)
	}
	// At least once: the conversions delivered a second time count once.
	var again []eventstore.RecordedEvent
	for _, ev := range l.events {
		if ev.Type == conversion.EventSaleTracked || ev.Type == conversion.EventLeadTracked {
			again = append(again, ev)
		}
	}
	if err := p.Apply(ctx, projections.Envelopes(again)); err != nil {
		t.Fatal(err)
	}
	if err := p.Flush(ctx); err != nil { // what analysts see at most FlushInterval later
		t.Fatal(err)
	}
	clicks := l.clicks()
	day := func(c click.Recorded) time.Time { return c.Timestamp.UTC().Truncate(24 * time.Hour) }
	date := func(t time.Time) string { return t.Format(time.DateOnly) }
	inWS := func(c click.Recorded) bool { return c.WorkspaceID == "ws_demo" }
	byKey := func(keep func(c click.Recorded) bool, key func(c click.Recorded) string) map[string]int {
		m := map[string]int{}
		for _, c := range clicks {
			if keep(c) {
				m[key(c)]++
			}
		}
		return m
	}
	// rowsByCount sorts "key, count" rows by count descending, then key.
	rowsByCount := func(m map[string]int, limit int) [][]string {
		var rows [][]string
		for k, v := range m {
			rows = append(rows, []string{k, fmt.Sprint(v)})
		}
		sort.Slice(rows, func(i, j int) bool {
			if rows[i][1] != rows[j][1] {
				return len(rows[i][1]) > len(rows[j][1]) || len(rows[i][1]) == len(rows[j][1]) && rows[i][1] > rows[j][1]
			}
			return rows[i][0] < rows[j][0]
		})
		if limit > 0 && len(rows) > limit {
			rows = rows[:limit]
		}
		return rows
	}
	sorted := func(m map[string][]string) [][]string {
		var keys []string
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var rows [][]string
		for _, k := range keys {
			rows = append(rows, append([]string{k}, m[k]...))
		}
		return rows
	}
	last30 := func(c click.Recorded) bool { return !day(c).Before(today.AddDate(0, 0, -30)) }

	want := map[string][][]string{
		"clicks_by_country_last_week": rowsByCount(byKey(func(c click.Recorded) bool {
			return inWS(c) && !day(c).Before(today.AddDate(0, 0, -7)) && day(c).Before(today)
		}, func(c click.Recorded) string { return c.Country }), 0),
		"top_links": func() [][]string {
			var rows [][]string
			for _, r := range rowsByCount(byKey(func(c click.Recorded) bool { return inWS(c) && last30(c) },
				func(c click.Recorded) string { return c.LinkID }), 10) {
				name := links[r[0]].name
				if r[0] == "lnk_b" {
					name = "Newsletter (May)"
				}
				rows = append(rows, []string{r[0], name, links[r[0]].code, r[1]})
			}
			return rows
		}(),
		"qr_vs_direct": func() [][]string {
			m := map[string][]string{}
			qr, direct := map[string]int{}, map[string]int{}
			for _, c := range clicks {
				if inWS(c) && last30(c) {
					if c.QR {
						qr[date(day(c))]++
					} else {
						direct[date(day(c))]++
					}
					m[date(day(c))] = nil
				}
			}
			for d := range m {
				m[d] = []string{fmt.Sprint(qr[d]), fmt.Sprint(direct[d])}
			}
			return sorted(m)
		}(),
		"hourly_curve": func() [][]string {
			m := map[string][]string{}
			for k, v := range byKey(func(c click.Recorded) bool {
				return c.LinkID == "lnk_demo" && !day(c).Before(today.AddDate(0, 0, -1))
			}, func(c click.Recorded) string { return c.Timestamp.UTC().Truncate(time.Hour).Format(time.DateTime) }) {
				m[k] = []string{fmt.Sprint(v)}
			}
			return sorted(m)
		}(),
		"unique_visitors_per_day": func() [][]string {
			visitors := map[string]map[string]bool{}
			total := map[string]int{}
			for _, c := range clicks {
				if c.LinkID == "lnk_demo" && last30(c) {
					d := date(day(c))
					if visitors[d] == nil {
						visitors[d] = map[string]bool{}
					}
					visitors[d][c.Visitor] = true
					total[d]++
				}
			}
			m := map[string][]string{}
			for d, v := range visitors {
				m[d] = []string{fmt.Sprint(len(v)), fmt.Sprint(total[d])}
			}
			return sorted(m)
		}(),
		"top_referrers": rowsByCount(byKey(func(c click.Recorded) bool { return inWS(c) && last30(c) && c.Referrer != "" },
			func(c click.Recorded) string { return c.Referrer }), 10),
		"link_countries": rowsByCount(byKey(func(c click.Recorded) bool { return c.LinkID == "lnk_demo" && last30(c) && c.Country != "" },
			func(c click.Recorded) string { return c.Country }), 0),
		"brazil_per_day": func() [][]string {
			m := map[string][]string{}
			for k, v := range byKey(func(c click.Recorded) bool { return inWS(c) && last30(c) && c.Country == "BR" },
				func(c click.Recorded) string { return date(day(c)) }) {
				m[k] = []string{fmt.Sprint(v)}
			}
			return sorted(m)
		}(),
		"clicks_of_deleted_links": rowsByCount(byKey(func(c click.Recorded) bool { return c.LinkID == "lnk_gone" },
			func(c click.Recorded) string { return c.LinkID }), 0),
	}
	recent := func(c conv) bool { return c.ws == "ws_demo" && !c.at.Before(today.AddDate(0, 0, -30)) }
	type agg struct{ n, sum int64 }
	group := func(keep func(c conv) bool, key func(c conv) [2]string) map[[2]string]*agg {
		m := map[[2]string]*agg{}
		for _, c := range convs {
			if keep(c) {
				k := key(c)
				if m[k] == nil {
					m[k] = &agg{}
				}
				m[k].n++
				m[k].sum += c.amount
			}
		}
		return m
	}
	sales := func(c conv) bool { return c.sale && recent(c) }
	want["revenue_by_link"] = func() [][]string {
		var rows [][]string
		for k, a := range group(sales, func(c conv) [2]string { return [2]string{c.link, c.cur} }) {
			rows = append(rows, []string{k[0], k[1], fmt.Sprint(a.n), fmt.Sprint(a.sum)})
		}
		sort.Slice(rows, func(i, j int) bool { return rows[i][0]+" "+rows[i][1] < rows[j][0]+" "+rows[j][1] })
		return rows
	}()
	want["new_vs_recurring_revenue"] = func() [][]string {
		var rows [][]string
		for k, a := range group(sales, func(c conv) [2]string {
			if c.first {
				return [2]string{"new", c.cur}
			}
			return [2]string{"recurring", c.cur}
		}) {
			rows = append(rows, []string{k[0], k[1], fmt.Sprint(a.n), fmt.Sprint(a.sum)})
		}
		sort.Slice(rows, func(i, j int) bool { return rows[i][0]+" "+rows[i][1] < rows[j][0]+" "+rows[j][1] })
		return rows
	}()
	want["revenue_by_country"] = func() [][]string {
		type row struct {
			country, cur string
			sum          int64
		}
		var rs []row
		for k, a := range group(sales, func(c conv) [2]string { return [2]string{c.country, c.cur} }) {
			rs = append(rs, row{k[0], k[1], a.sum})
		}
		sort.Slice(rs, func(i, j int) bool {
			if rs[i].sum != rs[j].sum {
				return rs[i].sum > rs[j].sum
			}
			return rs[i].country+" "+rs[i].cur < rs[j].country+" "+rs[j].cur
		})
		var rows [][]string
		for _, r := range rs {
			rows = append(rows, []string{r.country, r.cur, fmt.Sprint(r.sum)})
		}
		return rows
	}()
	want["conversion_funnel"] = func() [][]string {
		clicksOf := byKey(func(c click.Recorded) bool { return inWS(c) && last30(c) }, func(c click.Recorded) string { return c.LinkID })
		var rows [][]string
		for _, id := range slices.Sorted(maps.Keys(clicksOf)) {
			var leads, sales int
			for _, c := range convs {
				if c.link == id && recent(c) {
					if c.sale {
						sales++
					} else {
						leads++
					}
				}
			}
			rows = append(rows, []string{id, fmt.Sprint(clicksOf[id]), fmt.Sprint(leads), fmt.Sprint(sales)})
		}
		return rows
	}()

	queries := documentedQueries(t)
	if len(queries) < 5 {
		t.Fatalf("docs/analytics.md has %d tested queries, want at least 5", len(queries))
	}
	seen := map[string]bool{}
	for _, q := range queries {
		seen[q.name] = true
		t.Run(q.name, func(t *testing.T) {
			exp, ok := want[q.name]
			if !ok {
				t.Fatalf("no expected result for documented query %q: add one to this test", q.name)
			}
			if len(exp) == 0 {
				t.Fatalf("the test data gives %q no rows: it proves nothing", q.name)
			}
			got := chtest.QueryStrings(t, ctx, conn, q.sql)
			if !reflect.DeepEqual(got, exp) {
				t.Errorf("%s\n got %v\nwant %v", q.sql, got, exp)
			}
		})
	}
	for name := range want {
		if !seen[name] {
			t.Errorf("expected result for %q, but docs/analytics.md has no such query", name)
		}
	}
}
