package radar

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/linkd/linkd/queries"
)

// The Radar reports from radar_events, radar_sessions and sales: the same
// rules as the embedded projection (projections/radar), which the shared
// contract (projections/radartest) checks. Times are compared at the
// second (the columns are DateTime).

// radarDirect names visits without a source.
const radarDirect = "Direct / None"

// radarWhere is the filter of a project's rows in the range on a time
// column; a zero end is open.
func radarWhere(r queries.RadarRange, column string, dateColumn string) (string, []any) {
	w := "project_id = ?"
	args := []any{r.ProjectID}
	if !r.Start.IsZero() {
		w += " AND " + column + " >= ?"
		args = append(args, r.Start.UTC().Truncate(time.Second))
		if dateColumn != "" {
			w += " AND " + dateColumn + " >= toDate(?)"
			args = append(args, r.Start.UTC().Format(time.DateOnly))
		}
	}
	if !r.End.IsZero() {
		w += " AND " + column + " <= ?"
		args = append(args, r.End.UTC().Truncate(time.Second))
		if dateColumn != "" {
			w += " AND " + dateColumn + " <= toDate(?)"
			args = append(args, r.End.UTC().Format(time.DateOnly))
		}
	}
	return w, args
}

// The instants a DateTime holds (UTC).
var (
	dateTimeMin = time.Unix(0, 0).UTC()
	dateTimeMax = time.Date(2105, 12, 31, 23, 59, 59, 0, time.UTC)
)

// clampRange brings the ends of a range (years 1 to 9999 in the API) into
// what DateTime holds: a range beyond it has no rows anyway.
func clampRange(r queries.RadarRange) queries.RadarRange {
	clamp := func(t time.Time) time.Time {
		if t.IsZero() {
			return t
		}
		if t.Before(dateTimeMin) {
			return dateTimeMin
		}
		if t.After(dateTimeMax) {
			return dateTimeMax
		}
		return t
	}
	r.Start, r.End = clamp(r.Start), clamp(r.End)
	return r
}

// radarDays returns the range as UTC days when it covers whole days (at
// the second, as the DateTime columns count): radar_daily answers it.
// Open ends are whole days.
func radarDays(r queries.RadarRange) (string, string, bool) {
	from, to := "1970-01-01", "2105-12-31"
	if !r.Start.IsZero() {
		s := r.Start.UTC().Truncate(time.Second)
		if s.Hour() != 0 || s.Minute() != 0 || s.Second() != 0 {
			return "", "", false
		}
		from = s.Format(time.DateOnly)
	}
	if !r.End.IsZero() {
		e := r.End.UTC().Truncate(time.Second)
		if e.Hour() != 23 || e.Minute() != 59 || e.Second() != 59 {
			return "", "", false
		}
		to = e.Format(time.DateOnly)
	}
	return from, to, true
}

// dailyWhere filters radar_daily on a project, days and a dimension.
func dailyWhere(r queries.RadarRange, from, to, dimension string) (string, []any) {
	return "project_id = ? AND date >= toDate(?) AND date <= toDate(?) AND dimension = ?", []any{r.ProjectID, from, to, dimension}
}

// radarSaleSums are the sales recorded in the range on the clicks of the
// project's visitors, each once (a click two visitors came through counts
// its sale once, for the first visitor in visitor_id order), summed by
// currency and the visitor's country (when asked for; else under no
// country): their number, the visitors they are on and their amount.
type radarSaleSums struct {
	sales, buyers int64
	count         map[string]int              // sales by currency
	amount        map[string]map[string]int64 // currency, country: minor units
}

// currency is the currency revenue is reported in.
func (s radarSaleSums) currency(want string) string { return queries.RevenueCurrency(s.count, want) }

func (s radarSaleSums) totals(currency string) queries.RadarSaleTotals {
	t := queries.RadarSaleTotals{Sales: s.sales, Buyers: s.buyers}
	for _, n := range s.amount[currency] {
		t.RevenueMinor += n
	}
	return t
}

// radarSales sums the sales of the range on the server: the 25,000 sales
// of a month of the benchmark's million visitors took 20 ms more to send
// and scan one by one than to sum.
func (r *Projection) radarSales(ctx context.Context, rr queries.RadarRange, withCountry bool) (radarSaleSums, error) {
	out := radarSaleSums{count: map[string]int{}, amount: map[string]map[string]int64{}}
	var where string
	var args []any
	if !rr.Start.IsZero() {
		where += " AND timestamp >= ?"
		args = append(args, rr.Start.UTC().Truncate(time.Second))
	}
	if !rr.End.IsZero() {
		where += " AND timestamp <= ?"
		args = append(args, rr.End.UTC().Truncate(time.Second))
	}
	// A visitor's click is the first its hits carry; its country the
	// latest of those hits (the tracker sends the click with every hit):
	// radar_clicks. Both tables are read FINAL (one row per key: sales is
	// a ReplacingMergeTree by conversion, radar_clicks aggregates per
	// visitor), which costs less than a GROUP BY when their parts are
	// merged. Each sale's row counts once per currency (total 0) and once
	// in the country's total (total 1), where its visitor is counted.
	country := "''" // reading the countries' states costs a tenth of the query
	if withCountry {
		country = "finalizeAggregation(click_country)"
	}
	q := "SELECT cur, country, total, count(), sum(amt), uniqExact(visitor) FROM " +
		"(SELECT conversion_id, any(amount) AS amt, any(currency) AS currency, min(visitor_id) AS visitor, " +
		"argMin(visitor_country, visitor_id) AS country FROM " +
		"(SELECT conversion_id, click_id AS click, amount, currency FROM " + r.db.Table(tSales) + " FINAL WHERE click_id != ''" + where + ") AS s " +
		"ALL INNER JOIN (SELECT visitor_id, finalizeAggregation(first_click) AS click, " + country + " AS visitor_country FROM " +
		r.db.Table(tRadarClicks) + " FINAL WHERE project_id = ?) AS v USING click GROUP BY conversion_id) " +
		"ARRAY JOIN [currency, ''] AS cur, [0, 1] AS total GROUP BY cur, country, total"
	args = append(args, rr.ProjectID)
	rows, err := r.conn.Query(ctx, q, args...)
	if err != nil {
		return out, fmt.Errorf("radar sales: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var cur, country string
		var total uint8
		var n, buyers uint64
		var amount int64
		if err := rows.Scan(&cur, &country, &total, &n, &amount, &buyers); err != nil {
			return out, fmt.Errorf("radar sales: %w", err)
		}
		if total == 1 {
			// A visitor has one country: the countries' buyers add up.
			out.sales += int64(n)
			out.buyers += int64(buyers)
			continue
		}
		out.count[cur] += int(n)
		if out.amount[cur] == nil {
			out.amount[cur] = map[string]int64{}
		}
		out.amount[cur][country] += amount
	}
	if err := rows.Err(); err != nil {
		return out, fmt.Errorf("radar sales: %w", err)
	}
	return out, nil
}

// radarExactLimit is the most unique visitors a range of whole days may
// have for its counts of unique visitors to be exact: up to it they are
// uniq states of radar_daily and radar_daily_sources (exact up to 65,536),
// which are cheap to merge while they are small; beyond, uniqHLL12 states
// of radar_daily_hll and radar_daily_sources (within about 1.6%), as the
// embedded projection's sketches (docs/decisions.md, "Radar's numbers").
// A 30-day uniq merge of a million visitors cost about a second; and a query of radar_daily reads whole
// granules of 256 rows (of about three days), uniq states of every
// dimension: with 35,000 visitors in 7 days, the exact breakdowns cost
// three times the estimated ones (32 against 10 ms of server CPU).
const radarExactLimit = 10000

// radarSpan is a range of whole UTC days (from, to) and how its unique
// visitors are counted: exact, with uniq states, or with uniqHLL12 ones.
type radarSpan struct {
	from, to string
	exact    bool
}

// visitors returns a FROM source of the rows (dimension, value, visitors)
// of a project over s that match where (with whereArgs), its arguments,
// and the expression that merges the visitors of a value: radar_daily's
// uniq states when s is exact, else the uniqHLL12 states of
// radar_weekly_hll for the whole weeks of s and of radar_daily_hll for its
// other days (a 30-day range: 3 weeks and 9 days, 12 states per value
// instead of 30).
func (s radarSpan) visitors(r *Projection, project, where string, whereArgs ...any) (string, []any, string) {
	part := func(table, column, from, to, extra string, extraArgs ...any) (string, []any) {
		args := append(append([]any{project, from, to}, extraArgs...), whereArgs...)
		return "SELECT dimension, value, visitors FROM " + r.db.Table(table) + " WHERE project_id = ? AND " + column + " >= toDate(?) AND " +
			column + " <= toDate(?)" + extra + " AND " + where, args
	}
	if s.exact {
		q, args := part(tRadarDaily, "date", s.from, s.to, "")
		return "(" + q + ")", args, "uniqMerge(visitors)"
	}
	first, last, ok := s.weeks()
	if !ok {
		q, args := part(tRadarHLL, "date", s.from, s.to, "")
		return "(" + q + ")", args, "uniqHLL12Merge(visitors)"
	}
	days, args := part(tRadarHLL, "date", s.from, s.to, " AND (date < toDate(?) OR date > toDate(?) + 6)", first, last)
	weeks, wargs := part(tRadarWeekly, "week", first, last, "")
	return "(" + days + " UNION ALL " + weeks + ")", append(args, wargs...), "uniqHLL12Merge(visitors)"
}

// weeks returns the first and last Mondays of the whole weeks (Monday to
// Sunday) in s, if it has any.
func (s radarSpan) weeks() (first, last string, ok bool) {
	from, err1 := time.Parse(time.DateOnly, s.from)
	to, err2 := time.Parse(time.DateOnly, s.to)
	if err1 != nil || err2 != nil {
		return "", "", false
	}
	for from.Weekday() != time.Monday {
		from = from.AddDate(0, 0, 1)
	}
	for to.Weekday() != time.Sunday {
		to = to.AddDate(0, 0, -1)
	}
	to = to.AddDate(0, 0, -6)
	if to.Before(from) {
		return "", "", false
	}
	return from.Format(time.DateOnly), to.Format(time.DateOnly), true
}

// sourceVisitors is the expression of unique visitors of
// radar_daily_sources over s.
func (s radarSpan) sourceVisitors() string {
	if s.exact {
		return "uniqMerge(visitors)"
	}
	return "uniqHLL12Merge(visitors_hll)"
}

// radarSpan returns, for a range of whole days, its span and its unique
// visitors: estimated from radar_daily_hll, counted again from radar_daily
// when the estimate is at most radarExactLimit. ok is false for other
// ranges.
func (r *Projection) radarSpan(ctx context.Context, rr queries.RadarRange) (radarSpan, uint64, bool, error) {
	from, to, ok := radarDays(rr)
	if !ok {
		return radarSpan{}, 0, false, nil
	}
	s := radarSpan{from: from, to: to}
	var people uint64
	for _, exact := range []bool{false, true} {
		s.exact = exact
		src, args, expr := s.visitors(r, rr.ProjectID, "dimension = 'all'")
		if err := r.conn.QueryRow(ctx, "SELECT "+expr+" FROM "+src, args...).Scan(&people); err != nil {
			return s, 0, true, err
		}
		if people > radarExactLimit {
			s.exact = false
			break
		}
	}
	return s, people, true, nil
}

// concurrently runs fs at once (a report's queries are independent) and
// returns the first error of fs' order.
func concurrently(fs ...func() error) error {
	errs := make([]error, len(fs))
	var wg sync.WaitGroup
	for i, f := range fs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = f()
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// RadarOverview implements queries.RadarReadModel.
func (r *Projection) RadarOverview(ctx context.Context, rr queries.RadarRange) (queries.RadarOverview, error) {
	rr = clampRange(rr)
	ctx, cancel := context.WithTimeout(ctx, r.opts.QueryTimeout)
	defer cancel()
	var o queries.RadarOverview
	var (
		people, pv, ev            uint64
		visits, bounces, duration int64
		sales                     radarSaleSums
	)
	from, to, days := radarDays(rr)
	err := concurrently(
		func() error {
			if !days {
				w, args := radarWhere(rr, "timestamp", "date")
				return r.conn.QueryRow(ctx, "SELECT uniq(visitor_id), countIf(kind = 'pageview'), countIf(kind = 'event') FROM "+
					r.db.Table(tRadarEvents)+" WHERE "+w, args...).Scan(&people, &pv, &ev)
			}
			_, n, _, err := r.radarSpan(ctx, rr)
			people = n
			return err
		},
		func() error {
			if !days {
				return nil
			}
			w, args := dailyWhere(rr, from, to, "kind")
			return r.conn.QueryRow(ctx, "SELECT sumIf(hits, value = 'pageview'), sumIf(hits, value = 'event') FROM "+r.db.Table(tRadarDaily)+
				" WHERE "+w, args...).Scan(&pv, &ev)
		},
		func() error {
			q, args := "SELECT sum(sign), sum(sign * is_bounce), sum(sign * (1 - is_bounce) * toInt64(duration_ms)) FROM "+r.db.Table(tRadarSessions)+" WHERE ", []any(nil)
			var w string
			if days {
				q = "SELECT sum(visits), sum(bounces), sum(duration_ms) FROM " + r.db.Table(tRadarSources) + " WHERE "
				w, args = sourcesWhere(rr, from, to)
			} else {
				w, args = radarWhere(rr, "started_at", "")
			}
			return r.conn.QueryRow(ctx, q+w, args...).Scan(&visits, &bounces, &duration)
		},
		func() (err error) {
			sales, err = r.radarSales(ctx, rr, false)
			return err
		},
	)
	if err != nil {
		return o, fmt.Errorf("clickhouse radar: overview: %w", err)
	}
	t := queries.RadarTotals{People: int64(people), Visits: visits, Pageviews: int64(pv), Events: int64(ev), Bounces: bounces, DurationMS: duration}
	cur := sales.currency(rr.Currency)
	return queries.NewRadarOverviewOfTotals(t, sales.totals(cur), cur), nil
}

// sourcesWhere filters radar_daily_sources on a project and days.
func sourcesWhere(r queries.RadarRange, from, to string) (string, []any) {
	return "project_id = ? AND date >= toDate(?) AND date <= toDate(?)", []any{r.ProjectID, from, to}
}

func (r *Projection) radarCounts(ctx context.Context, q string, args ...any) ([]queries.RadarCount, error) {
	rows, err := r.conn.Query(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []queries.RadarCount
	for rows.Next() {
		var c queries.RadarCount
		var n uint64
		if err := rows.Scan(&c.Name, &n); err != nil {
			return nil, err
		}
		c.People = int64(n)
		out = append(out, c)
	}
	return out, rows.Err()
}

// radarDimensions ranks the values of pages, countries, browsers and
// systems by unique visitors over a span of days (at most limit each), and
// counts the range's visitors, in one query: a query costs about 2 ms of
// server CPU besides its work on 18.16, and the five took 13 ms more than
// this one (30 days over 10 M events).
func (r *Projection) radarDimensions(ctx context.Context, project string, s radarSpan, limit int) (map[string][]queries.RadarCount, uint64, error) {
	src, args, expr := s.visitors(r, project, "(dimension = 'all' OR (dimension IN ('page', 'country', 'browser', 'os') AND value != ''))")
	rows, err := r.conn.Query(ctx, "SELECT dimension, value, "+expr+" AS people FROM "+src+
		" GROUP BY dimension, value ORDER BY dimension, people DESC, value LIMIT "+strconv.Itoa(limit)+" BY dimension", args...)
	if err != nil {
		return nil, 0, err
	}
	defer rows.Close()
	out := map[string][]queries.RadarCount{}
	var people uint64
	for rows.Next() {
		var dim string
		var c queries.RadarCount
		var n uint64
		if err := rows.Scan(&dim, &c.Name, &n); err != nil {
			return nil, 0, err
		}
		if dim == "all" {
			people = n
			continue
		}
		c.People = int64(n)
		out[dim] = append(out[dim], c)
	}
	return out, people, rows.Err()
}

// RadarBreakdowns implements queries.RadarReadModel.
func (r *Projection) RadarBreakdowns(ctx context.Context, rr queries.RadarRange, limit int) (queries.RadarBreakdowns, error) {
	rr = clampRange(rr)
	ctx, cancel := context.WithTimeout(ctx, r.opts.QueryTimeout)
	defer cancel()
	var b queries.RadarBreakdowns
	w, args := radarWhere(rr, "timestamp", "date")
	events := r.db.Table(tRadarEvents)
	lim := " LIMIT " + strconv.Itoa(limit)
	from, to, days := radarDays(rr)
	var (
		dims  = map[string][]queries.RadarCount{} // page, country, browser, os
		mu    sync.Mutex                          // dims, from the tasks over radar_events
		hosts []queries.RadarCount
		sales radarSaleSums
	)
	// rawVisitors ranks the values of column (a dimension, rows matching
	// cond) by unique visitors over radar_events.
	rawVisitors := func(dimension, column, cond string) func() error {
		return func() error {
			counts, err := r.radarCounts(ctx, "SELECT "+column+" AS name, uniq(visitor_id) AS people FROM "+events+" WHERE "+w+" AND "+cond+
				" GROUP BY name ORDER BY people DESC, name"+lim, args...)
			mu.Lock()
			dims[dimension] = counts
			mu.Unlock()
			return err
		}
	}
	// sources and customEvents count visitors over span (days) or
	// radar_events; people: the range's, when known.
	sources := func(span radarSpan) func() error {
		return func() (err error) {
			// A visitor counts for a source when one of its visits (that
			// start in the range) has it as its entry source.
			if days {
				sw, sargs := sourcesWhere(rr, span.from, span.to)
				b.Sources, err = r.radarCounts(ctx, "SELECT if(source = '', ?, source) AS name, "+span.sourceVisitors()+" AS people FROM "+
					r.db.Table(tRadarSources)+" WHERE "+sw+" GROUP BY name HAVING sum(visits) > 0 ORDER BY people DESC, name"+lim,
					append([]any{radarDirect}, sargs...)...)
				return err
			}
			// A (source, visitor) pair whose rows' signs add up above 0
			// (a visit's cancelled states cancel out).
			sw, sargs := radarWhere(rr, "started_at", "")
			b.Sources, err = r.radarCounts(ctx, "SELECT name, count() AS people FROM "+
				"(SELECT if(entry_source = '', ?, entry_source) AS name, visitor_id FROM "+r.db.Table(tRadarSessions)+
				" WHERE "+sw+" GROUP BY name, visitor_id HAVING sum(sign) > 0) GROUP BY name ORDER BY people DESC, name"+lim,
				append([]any{radarDirect}, sargs...)...)
			return err
		}
	}
	customEvents := func(span radarSpan, people uint64) func() error {
		return func() (err error) {
			b.Events, err = r.radarEvents(ctx, rr, limit, span, people, days)
			return err
		}
	}
	err := concurrently(
		func() (err error) {
			sales, err = r.radarSales(ctx, rr, true)
			return err
		},
		func() (err error) {
			hostQ, hostArgs := "SELECT hostname AS name, count() AS n FROM "+events+" WHERE "+w+" GROUP BY name ORDER BY n DESC, name"+lim, args
			if days {
				dw, dargs := dailyWhere(rr, from, to, "hostname")
				hostQ, hostArgs = "SELECT value AS name, sum(hits) AS n FROM "+r.db.Table(tRadarDaily)+" WHERE "+dw+" GROUP BY name ORDER BY n DESC, name"+lim, dargs
			}
			hosts, err = r.radarCounts(ctx, hostQ, hostArgs...)
			return err
		},
		func() error {
			if !days {
				return concurrently(rawVisitors("page", "pathname", "kind = 'pageview'"), rawVisitors("country", "country", "country != ''"),
					rawVisitors("browser", "browser", "browser != ''"), rawVisitors("os", "os", "os != ''"),
					sources(radarSpan{}), customEvents(radarSpan{}, 0))
			}
			// Estimated first; counted exactly when the range has few
			// visitors (radarExactLimit). Sources and events need to know.
			span := radarSpan{from: from, to: to}
			var people uint64
			var err error
			if dims, people, err = r.radarDimensions(ctx, rr.ProjectID, span, limit); err != nil {
				return err
			}
			if people <= radarExactLimit {
				span.exact = true
				if dims, people, err = r.radarDimensions(ctx, rr.ProjectID, span, limit); err != nil {
					return err
				}
			}
			return concurrently(sources(span), customEvents(span, people))
		},
	)
	if err != nil {
		return b, fmt.Errorf("clickhouse radar: breakdowns: %w", err)
	}
	for _, p := range dims["page"] {
		b.Pages = append(b.Pages, queries.RadarPage{Pathname: p.Name, People: p.People})
	}
	if countries := dims["country"]; len(countries) > 0 {
		cur := sales.currency(rr.Currency)
		revenue := sales.amount[cur]
		for _, c := range countries {
			b.Countries = append(b.Countries, queries.RadarCountry{Name: queries.CountryName(c.Name), People: c.People, CountryCode: c.Name,
				Revenue: queries.CurrencyUnits(revenue[c.Name], cur)})
		}
	}
	b.Browsers, b.OS = dims["browser"], dims["os"]
	for _, h := range hosts {
		b.Hostnames = append(b.Hostnames, h.Name)
	}
	return b, nil
}

// RadarEvents implements queries.RadarReadModel.
func (r *Projection) RadarEvents(ctx context.Context, rr queries.RadarRange, limit int) ([]queries.RadarEventStat, error) {
	rr = clampRange(rr)
	ctx, cancel := context.WithTimeout(ctx, r.opts.QueryTimeout)
	defer cancel()
	span, people, days, err := r.radarSpan(ctx, rr)
	if err != nil {
		return nil, fmt.Errorf("clickhouse radar: custom events: %w", err)
	}
	out, err := r.radarEvents(ctx, rr, limit, span, people, days)
	if err != nil {
		return nil, fmt.Errorf("clickhouse radar: custom events: %w", err)
	}
	return out, nil
}

// radarEvents ranks the custom events of the range by volume; span and
// people are the range's (radarSpan) when days is true.
func (r *Projection) radarEvents(ctx context.Context, rr queries.RadarRange, limit int, span radarSpan, people uint64, days bool) ([]queries.RadarEventStat, error) {
	lim := " LIMIT " + strconv.Itoa(limit)
	var out []queries.RadarEventStat
	if !days {
		w, args := radarWhere(rr, "timestamp", "date")
		events := r.db.Table(tRadarEvents)
		if err := r.conn.QueryRow(ctx, "SELECT uniq(visitor_id) FROM "+events+" WHERE "+w, args...).Scan(&people); err != nil {
			return nil, err
		}
		rows, err := r.conn.Query(ctx, "SELECT event_name, uniq(visitor_id), count() AS n FROM "+events+" WHERE "+w+
			" AND kind = 'event' GROUP BY event_name ORDER BY n DESC, event_name"+lim, args...)
		if err != nil {
			return nil, err
		}
		defer rows.Close()
		for rows.Next() {
			var e queries.RadarEventStat
			var p, n uint64
			if err := rows.Scan(&e.EventName, &p, &n); err != nil {
				return nil, err
			}
			e.People, e.Events = int64(p), int64(n)
			out = append(out, e)
		}
		if err := rows.Err(); err != nil {
			return nil, err
		}
	} else {
		// Volumes from radar_daily, unique visitors of the events ranked
		// from the table of span.visitors.
		dw, dargs := dailyWhere(rr, span.from, span.to, "event")
		rows, err := r.conn.Query(ctx, "SELECT value, sum(hits) AS n FROM "+r.db.Table(tRadarDaily)+" WHERE "+dw+
			" GROUP BY value ORDER BY n DESC, value"+lim, dargs...)
		if err != nil {
			return nil, err
		}
		defer rows.Close()
		var names []string
		for rows.Next() {
			var e queries.RadarEventStat
			var n uint64
			if err := rows.Scan(&e.EventName, &n); err != nil {
				return nil, err
			}
			e.Events = int64(n)
			out = append(out, e)
			names = append(names, e.EventName)
		}
		if err := rows.Err(); err != nil {
			return nil, err
		}
		if len(out) > 0 {
			src, sargs, expr := span.visitors(r, rr.ProjectID, "dimension = 'event' AND has(?, value)", names)
			counts, err := r.radarCounts(ctx, "SELECT value, "+expr+" FROM "+src+" GROUP BY value", sargs...)
			if err != nil {
				return nil, err
			}
			byName := map[string]int64{}
			for _, c := range counts {
				byName[c.Name] = c.People
			}
			for i := range out {
				out[i].People = byName[out[i].EventName]
			}
		}
	}
	for i := range out {
		out[i].CompletionRate = queries.Percent(out[i].People, int64(people))
	}
	return out, nil
}
