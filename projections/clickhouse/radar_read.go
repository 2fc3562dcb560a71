package clickhouse

import (
	"context"
	"fmt"
	"strconv"
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

// radarSales are the sales recorded in the range on the clicks of the
// project's visitors, each once, with the visitor and (withCountry) its
// country; and the currency revenue is reported in.
func (r *RadarProjection) radarSales(ctx context.Context, rr queries.RadarRange, withCountry bool) (queries.RadarSales, error) {
	var out queries.RadarSales
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
	// radar_clicks.
	country := "''"
	if withCountry {
		country = "argMaxMerge(click_country)"
	}
	q := "SELECT s.conversion_id, s.amount, s.currency, v.visitor_id, v.visitor_country FROM " +
		"(SELECT conversion_id, any(click_id) AS click, any(amount) AS amount, any(currency) AS currency FROM " + r.p.tbl(tSales) +
		" WHERE click_id != ''" + where + " GROUP BY conversion_id) AS s ALL INNER JOIN " +
		"(SELECT visitor_id, argMinMerge(first_click) AS click, " + country + " AS visitor_country FROM " + r.p.tbl(tRadarClicks) +
		" WHERE project_id = ? GROUP BY visitor_id) AS v USING click ORDER BY s.conversion_id, v.visitor_id"
	args = append(args, rr.ProjectID)
	rows, err := r.p.conn.Query(ctx, q, args...)
	if err != nil {
		return out, fmt.Errorf("radar sales: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var x queries.RadarSale
		if err := rows.Scan(&x.ConversionID, &x.AmountMinor, &x.Currency, &x.VisitorID, &x.Country); err != nil {
			return out, fmt.Errorf("radar sales: %w", err)
		}
		out.Add(x)
	}
	if err := rows.Err(); err != nil {
		return out, fmt.Errorf("radar sales: %w", err)
	}
	return out, nil
}

// RadarOverview implements queries.RadarReadModel.
func (r *RadarProjection) RadarOverview(ctx context.Context, rr queries.RadarRange) (queries.RadarOverview, error) {
	rr = clampRange(rr)
	ctx, cancel := context.WithTimeout(ctx, r.p.opts.QueryTimeout)
	defer cancel()
	var o queries.RadarOverview
	var people, pv, ev uint64
	if from, to, ok := radarDays(rr); ok {
		w, args := dailyWhere(rr, from, to, "all")
		if err := r.p.conn.QueryRow(ctx, "SELECT "+uniqFunc+"Merge(visitors) FROM "+r.p.tbl(tRadarDaily)+" WHERE "+w, args...).Scan(&people); err != nil {
			return o, fmt.Errorf("clickhouse radar: overview: %w", err)
		}
		w, args = dailyWhere(rr, from, to, "kind")
		if err := r.p.conn.QueryRow(ctx, "SELECT sumIf(hits, value = 'pageview'), sumIf(hits, value = 'event') FROM "+r.p.tbl(tRadarDaily)+" WHERE "+w, args...).Scan(&pv, &ev); err != nil {
			return o, fmt.Errorf("clickhouse radar: overview: %w", err)
		}
	} else {
		w, args := radarWhere(rr, "timestamp", "date")
		if err := r.p.conn.QueryRow(ctx, "SELECT "+uniqFunc+"(visitor_id), countIf(kind = 'pageview'), countIf(kind = 'event') FROM "+
			r.p.tbl(tRadarEvents)+" WHERE "+w, args...).Scan(&people, &pv, &ev); err != nil {
			return o, fmt.Errorf("clickhouse radar: overview: %w", err)
		}
	}
	w, args := radarWhere(rr, "started_at", "")
	var visits, bounces, duration int64
	if err := r.p.conn.QueryRow(ctx, "SELECT sum(sign), sum(sign * is_bounce), sum(sign * (1 - is_bounce) * toInt64(duration_ms)) FROM "+
		r.p.tbl(tRadarSessions)+" WHERE "+w, args...).Scan(&visits, &bounces, &duration); err != nil {
		return o, fmt.Errorf("clickhouse radar: overview: %w", err)
	}
	sales, err := r.radarSales(ctx, rr, false)
	if err != nil {
		return o, fmt.Errorf("clickhouse radar: overview: %w", err)
	}
	t := queries.RadarTotals{People: int64(people), Visits: visits, Pageviews: int64(pv), Events: int64(ev), Bounces: bounces, DurationMS: duration}
	return queries.NewRadarOverview(t, sales.List, sales.Currency(rr.Currency)), nil
}

func (r *RadarProjection) radarCounts(ctx context.Context, q string, args ...any) ([]queries.RadarCount, error) {
	rows, err := r.p.conn.Query(ctx, q, args...)
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

// RadarBreakdowns implements queries.RadarReadModel.
func (r *RadarProjection) RadarBreakdowns(ctx context.Context, rr queries.RadarRange, limit int) (queries.RadarBreakdowns, error) {
	rr = clampRange(rr)
	ctx, cancel := context.WithTimeout(ctx, r.p.opts.QueryTimeout)
	defer cancel()
	var b queries.RadarBreakdowns
	w, args := radarWhere(rr, "timestamp", "date")
	events := r.p.tbl(tRadarEvents)
	from, to, days := radarDays(rr)
	// byVisitors ranks the values of a dimension by unique visitors, from
	// radar_daily (dimension) or radar_events (column, cond).
	byVisitors := func(dimension, column, cond string) ([]queries.RadarCount, error) {
		if days {
			dw, dargs := dailyWhere(rr, from, to, dimension)
			if cond != "" {
				dw += " AND value != ''"
			}
			return r.radarCounts(ctx, "SELECT value AS name, "+uniqFunc+"Merge(visitors) AS people FROM "+r.p.tbl(tRadarDaily)+" WHERE "+dw+
				" GROUP BY name ORDER BY people DESC, name LIMIT "+strconv.Itoa(limit), dargs...)
		}
		if cond == "" {
			cond = "1"
		}
		return r.radarCounts(ctx, "SELECT "+column+" AS name, "+uniqFunc+"(visitor_id) AS people FROM "+events+" WHERE "+w+" AND "+cond+
			" GROUP BY name ORDER BY people DESC, name LIMIT "+strconv.Itoa(limit), args...)
	}
	fail := func(err error) (queries.RadarBreakdowns, error) {
		return b, fmt.Errorf("clickhouse radar: breakdowns: %w", err)
	}
	pages, err := byVisitors("page", "pathname", "kind = 'pageview'")
	if err != nil {
		return fail(err)
	}
	for _, p := range pages {
		b.Pages = append(b.Pages, queries.RadarPage{Pathname: p.Name, People: p.People})
	}
	sw, sargs := radarWhere(rr, "started_at", "")
	// A visitor counts for a source when one of its visits has it: a
	// (source, visitor) pair whose rows' signs add up above 0 (a visit's
	// cancelled states have their own source and cancel out).
	if b.Sources, err = r.radarCounts(ctx, "SELECT name, count() AS people FROM "+
		"(SELECT if(source = '', ?, source) AS name, visitor_id FROM "+r.p.tbl(tRadarSessions)+
		" WHERE "+sw+" GROUP BY name, visitor_id HAVING sum(sign) > 0) GROUP BY name ORDER BY people DESC, name LIMIT "+strconv.Itoa(limit),
		append([]any{radarDirect}, sargs...)...); err != nil {
		return fail(err)
	}
	countries, err := byVisitors("country", "country", "country != ''")
	if err != nil {
		return fail(err)
	}
	if len(countries) > 0 {
		sales, err := r.radarSales(ctx, rr, true)
		if err != nil {
			return fail(err)
		}
		cur := sales.Currency(rr.Currency)
		revenue := queries.RevenueByCountry(sales.List, cur)
		for _, c := range countries {
			b.Countries = append(b.Countries, queries.RadarCountry{Name: queries.CountryName(c.Name), People: c.People, CountryCode: c.Name,
				Revenue: queries.CurrencyUnits(revenue[c.Name], cur)})
		}
	}
	if b.Browsers, err = byVisitors("browser", "browser", "browser != ''"); err != nil {
		return fail(err)
	}
	if b.OS, err = byVisitors("os", "os", "os != ''"); err != nil {
		return fail(err)
	}
	if b.Events, err = r.radarEvents(ctx, rr, limit); err != nil {
		return fail(err)
	}
	hostQ, hostArgs := "SELECT hostname AS name, count() AS n FROM "+events+" WHERE "+w+" GROUP BY name ORDER BY n DESC, name LIMIT "+strconv.Itoa(limit), args
	if days {
		dw, dargs := dailyWhere(rr, from, to, "hostname")
		hostQ, hostArgs = "SELECT value AS name, sum(hits) AS n FROM "+r.p.tbl(tRadarDaily)+" WHERE "+dw+" GROUP BY name ORDER BY n DESC, name LIMIT "+strconv.Itoa(limit), dargs
	}
	hosts, err := r.radarCounts(ctx, hostQ, hostArgs...)
	if err != nil {
		return fail(err)
	}
	for _, h := range hosts {
		b.Hostnames = append(b.Hostnames, h.Name)
	}
	return b, nil
}

// RadarEvents implements queries.RadarReadModel.
func (r *RadarProjection) RadarEvents(ctx context.Context, rr queries.RadarRange, limit int) ([]queries.RadarEventStat, error) {
	rr = clampRange(rr)
	ctx, cancel := context.WithTimeout(ctx, r.p.opts.QueryTimeout)
	defer cancel()
	out, err := r.radarEvents(ctx, rr, limit)
	if err != nil {
		return nil, fmt.Errorf("clickhouse radar: custom events: %w", err)
	}
	return out, nil
}

func (r *RadarProjection) radarEvents(ctx context.Context, rr queries.RadarRange, limit int) ([]queries.RadarEventStat, error) {
	w, args := radarWhere(rr, "timestamp", "date")
	events := r.p.tbl(tRadarEvents)
	peopleQ := "SELECT " + uniqFunc + "(visitor_id) FROM " + events + " WHERE " + w
	eventsQ := "SELECT event_name, " + uniqFunc + "(visitor_id), count() AS n FROM " + events + " WHERE " + w +
		" AND kind = 'event' GROUP BY event_name ORDER BY n DESC, event_name LIMIT " + strconv.Itoa(limit)
	peopleArgs, eventsArgs := args, args
	if from, to, ok := radarDays(rr); ok {
		var dw string
		dw, peopleArgs = dailyWhere(rr, from, to, "all")
		peopleQ = "SELECT " + uniqFunc + "Merge(visitors) FROM " + r.p.tbl(tRadarDaily) + " WHERE " + dw
		dw, eventsArgs = dailyWhere(rr, from, to, "event")
		eventsQ = "SELECT value, " + uniqFunc + "Merge(visitors), sum(hits) AS n FROM " + r.p.tbl(tRadarDaily) + " WHERE " + dw +
			" GROUP BY value ORDER BY n DESC, value LIMIT " + strconv.Itoa(limit)
	}
	var people uint64
	if err := r.p.conn.QueryRow(ctx, peopleQ, peopleArgs...).Scan(&people); err != nil {
		return nil, err
	}
	rows, err := r.p.conn.Query(ctx, eventsQ, eventsArgs...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []queries.RadarEventStat
	for rows.Next() {
		var e queries.RadarEventStat
		var p, n uint64
		if err := rows.Scan(&e.EventName, &p, &n); err != nil {
			return nil, err
		}
		e.People, e.Events = int64(p), int64(n)
		e.CompletionRate = queries.Percent(e.People, int64(people))
		out = append(out, e)
	}
	return out, rows.Err()
}
