package radar

import (
	"context"
	"database/sql"
	"encoding/base64"
	"errors"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/linkd/linkd/queries"
)

// DirectSource names visits without a source.
const DirectSource = "Direct / None"

// bounds returns the range in milliseconds; a zero end is open.
func bounds(r queries.RadarRange) (int64, int64) {
	lo, hi := int64(math.MinInt64), int64(math.MaxInt64)
	if !r.Start.IsZero() {
		lo = r.Start.UnixMilli()
	}
	if !r.End.IsZero() {
		hi = r.End.UnixMilli()
	}
	return lo, hi
}

// sales is the sales of the clicks of the project's visitors, recorded in
// the range: one per sale with its visitor. It reads the project's visitors
// who came through a click (visitors_clicked), then each click's
// conversions.
func (s *Store) sales(ctx context.Context, r queries.RadarRange) (queries.RadarSales, error) {
	var out queries.RadarSales
	lo, hi := bounds(r)
	rows, err := s.r.QueryContext(ctx, `SELECT visitor_id, country, click_id FROM visitors INDEXED BY visitors_clicked
		WHERE project_id = ? AND click_id <> ''`, r.ProjectID)
	if err != nil {
		return out, err
	}
	type clicked struct{ visitor, country, click string }
	var vs []clicked
	for rows.Next() {
		var v clicked
		if err := rows.Scan(&v.visitor, &v.country, &v.click); err != nil {
			rows.Close()
			return out, err
		}
		vs = append(vs, v)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return out, err
	}
	it, err := s.conv.NewIter(nil)
	if err != nil {
		return out, err
	}
	defer it.Close()
	for _, v := range vs {
		if err := clickConversions(it, v.click, func(c conversionRow) error {
			if c.kind == "sale" && c.at >= lo && c.at <= hi {
				out.Add(queries.RadarSale{ConversionID: c.id, AmountMinor: c.amount, Currency: c.currency, VisitorID: v.visitor, Country: v.country})
			}
			return nil
		}); err != nil {
			return out, err
		}
	}
	return out, nil
}

// RadarOverview implements queries.RadarReadModel.
func (s *Store) RadarOverview(ctx context.Context, r queries.RadarRange) (queries.RadarOverview, error) {
	lo, hi := bounds(r)
	var o queries.RadarOverview
	a, err := s.aggregate(ctx, r.ProjectID, lo, hi, false)
	if err != nil {
		return o, err
	}
	sales, err := s.sales(ctx, r)
	if err != nil {
		return o, err
	}
	t := queries.RadarTotals{People: a.people.Count(), Visits: a.visits, Pageviews: a.pageviews, Events: a.events,
		Bounces: a.bounces, DurationMS: a.durationMS}
	return queries.NewRadarOverview(t, sales.List, sales.Currency(r.Currency)), nil
}

// ranked is a dimension's values, most people first (then by name), at
// most limit of them; byCount ranks by count instead.
func ranked(a *agg, d dim, limit int, byCount bool, rename func(string) string) []dimRow {
	var out []dimRow
	for k, c := range a.dims {
		if k.dim != d {
			continue
		}
		name := k.value
		if rename != nil {
			name = rename(name)
		}
		out = append(out, dimRow{name: name, n: c.n, people: c.people.Count()})
	}
	sort.Slice(out, func(i, j int) bool {
		x, y := out[i], out[j]
		if byCount && x.n != y.n {
			return x.n > y.n
		}
		if !byCount && x.people != y.people {
			return x.people > y.people
		}
		return x.name < y.name
	})
	if limit >= 0 && len(out) > limit {
		out = out[:limit]
	}
	return out
}

type dimRow struct {
	name      string
	n, people int64
}

func counts(rows []dimRow) []queries.RadarCount {
	var out []queries.RadarCount
	for _, r := range rows {
		out = append(out, queries.RadarCount{Name: r.name, People: r.people})
	}
	return out
}

// RadarBreakdowns implements queries.RadarReadModel.
func (s *Store) RadarBreakdowns(ctx context.Context, r queries.RadarRange, limit int) (queries.RadarBreakdowns, error) {
	lo, hi := bounds(r)
	var b queries.RadarBreakdowns
	a, err := s.aggregate(ctx, r.ProjectID, lo, hi, true)
	if err != nil {
		return b, err
	}
	for _, p := range ranked(a, dimPage, limit, false, nil) {
		b.Pages = append(b.Pages, queries.RadarPage{Pathname: p.name, People: p.people})
	}
	b.Sources = counts(ranked(a, dimSource, limit, false, func(v string) string {
		if v == "" {
			return DirectSource
		}
		return v
	}))
	if countries := ranked(a, dimCountry, limit, false, nil); len(countries) > 0 {
		sales, err := s.sales(ctx, r)
		if err != nil {
			return b, err
		}
		cur := sales.Currency(r.Currency)
		revenue := queries.RevenueByCountry(sales.List, cur)
		for _, c := range countries {
			b.Countries = append(b.Countries, queries.RadarCountry{Name: queries.CountryName(c.name), People: c.people, CountryCode: c.name,
				Revenue: queries.CurrencyUnits(revenue[c.name], cur)})
		}
	}
	b.Browsers = counts(ranked(a, dimBrowser, limit, false, nil))
	b.OS = counts(ranked(a, dimOS, limit, false, nil))
	b.Events = events(a, limit)
	for _, h := range ranked(a, dimHost, limit, true, nil) {
		b.Hostnames = append(b.Hostnames, h.name)
	}
	return b, nil
}

func events(a *agg, limit int) []queries.RadarEventStat {
	var out []queries.RadarEventStat
	people := a.people.Count()
	for _, e := range ranked(a, dimEvent, limit, true, nil) {
		out = append(out, queries.RadarEventStat{EventName: e.name, People: e.people, Events: e.n, CompletionRate: queries.Percent(e.people, people)})
	}
	return out
}

// RadarEvents implements queries.RadarReadModel.
func (s *Store) RadarEvents(ctx context.Context, r queries.RadarRange, limit int) ([]queries.RadarEventStat, error) {
	lo, hi := bounds(r)
	a, err := s.aggregate(ctx, r.ProjectID, lo, hi, true)
	if err != nil {
		return nil, err
	}
	return events(a, limit), nil
}

// visitor reads a project's visitor: sql.ErrNoRows when there is none.
// The first lead on the visitor's click identifies them (the customer's
// name and email) unless identify said more; its sales are their revenue
// in currency.
func (s *Store) visitor(ctx context.Context, projectID, visitorID, currency string) (queries.RadarVisitor, error) {
	var v queries.RadarVisitor
	var clickID string
	var first, last int64
	if err := s.r.QueryRowContext(ctx, `SELECT v.visitor_id, v.name, v.email, v.country, v.source, v.browser, v.device, v.click_id, v.sessions, v.first_seen,
			max(v.last_seen, coalesce(s.end, 0))
		FROM visitors v `+withLastVisit+`
		WHERE v.project_id = ? AND v.visitor_id = ?`, projectID, visitorID).Scan(
		&v.VisitorID, &v.Name, &v.Email, &v.CountryCode, &v.Source, &v.Browser, &v.Device, &clickID, &v.Sessions, &first, &last); err != nil {
		return v, err
	}
	lead := false
	if clickID != "" {
		var first *conversionRow
		var sales []conversionRow
		it, err := s.conv.NewIter(nil)
		if err != nil {
			return v, err
		}
		err = clickConversions(it, clickID, func(c conversionRow) error {
			switch {
			case c.kind == "sale":
				sales = append(sales, c)
			case first == nil || c.at < first.at:
				first = &c
			}
			return nil
		})
		it.Close()
		if err != nil {
			return v, err
		}
		if first != nil {
			lead = true
			var name, email string
			err := s.r.QueryRowContext(ctx, `SELECT name, email FROM customers WHERE stream = ?`, first.customer).Scan(&name, &email)
			if err != nil && !errors.Is(err, sql.ErrNoRows) {
				return v, err
			}
			if v.Name == "" {
				v.Name = name
			}
			if v.Email == "" {
				v.Email = email
			}
		}
		v.Revenue = clickRevenue(sales, currency)
	}
	v.Status = "anonymous"
	if v.Name != "" || v.Email != "" || lead {
		v.Status = "identified"
	}
	if v.Source == "" {
		v.Source = DirectSource
	}
	if v.CountryCode != "" {
		v.CountryName = queries.CountryName(v.CountryCode)
	}
	v.FirstSeen, v.LastSeen = time.UnixMilli(first).UTC(), time.UnixMilli(last).UTC()
	return v, nil
}

// clickRevenue is the revenue of a click's sales in currency ("" for the
// currency with the most of its sales).
func clickRevenue(sales []conversionRow, currency string) float64 {
	type cur struct {
		code  string
		n     int
		minor int64
	}
	var all []cur
	for _, c := range sales {
		i := slices.IndexFunc(all, func(x cur) bool { return x.code == c.currency })
		if i < 0 {
			i = len(all)
			all = append(all, cur{code: c.currency})
		}
		all[i].n++
		all[i].minor += c.amount
	}
	sort.Slice(all, func(i, j int) bool { return all[i].n > all[j].n || all[i].n == all[j].n && all[i].code < all[j].code })
	for _, c := range all {
		if currency == "" || c.code == currency {
			return queries.CurrencyUnits(c.minor, c.code)
		}
	}
	return 0
}

// RadarPeople implements queries.RadarReadModel: the visitors active in
// the range, most recent activity first. The cursor is the last row's
// (activity, visitor).
func (s *Store) RadarPeople(ctx context.Context, r queries.RadarRange, limit int, cursor string) (queries.RadarPeoplePage, error) {
	lo, hi := bounds(r)
	afterMS, afterID := int64(math.MaxInt64), ""
	if cursor != "" {
		ms, id, ok := decodeCursor(cursor)
		if !ok {
			return queries.RadarPeoplePage{}, ErrBadCursor
		}
		afterMS, afterID = ms, id
	}
	refs, err := s.people(ctx, r.ProjectID, lo, hi, afterMS, afterID, limit+1)
	if err != nil {
		return queries.RadarPeoplePage{}, err
	}
	page := queries.RadarPeoplePage{Data: []queries.RadarVisitor{}}
	if len(refs) > limit {
		refs = refs[:limit]
		last := refs[len(refs)-1]
		page.NextCursor = encodeCursor(last.last, last.id)
	}
	for _, x := range refs {
		v, err := s.visitor(ctx, r.ProjectID, x.id, r.Currency)
		if errors.Is(err, sql.ErrNoRows) {
			continue // its first hit is in Pebble, its row not yet (hits.go)
		}
		if err != nil {
			return page, err
		}
		page.Data = append(page.Data, v)
	}
	return page, nil
}

// personRef is a visitor of the people list and its last activity in the
// range (Unix milliseconds).
type personRef struct {
	id   string
	last int64
}

// people lists at most n visitors active in [lo, hi] after the cursor
// (afterMS, afterID), most recent activity first, ties by visitor id. It
// reads the range's hits from the newest back (the hits' key is by time):
// the first hit met of a visitor is its last activity, so it stops as soon
// as it has n, and the first page of a month of a million visitors reads a
// few hundred hits, not the month's. A later page reads the hits after its
// cursor again, to know who was listed already.
func (s *Store) people(ctx context.Context, projectID string, lo, hi, afterMS int64, afterID string, n int) ([]personRef, error) {
	seen := map[string]bool{}
	var out, group []personRef // group: the visitors first met at ts
	ts := int64(math.MinInt64)
	flush := func() {
		slices.SortFunc(group, func(a, b personRef) int { return strings.Compare(a.id, b.id) })
		for _, g := range group {
			if g.last < afterMS || g.last == afterMS && g.id > afterID {
				out = append(out, g)
			}
		}
		group = group[:0]
	}
	err := scanHits(s.hits, projectID, lo, hi, true, func(h *hit) (bool, error) {
		if h.ts != ts {
			if flush(); len(out) >= n {
				return false, nil
			}
			ts = h.ts
		}
		if !seen[h.visitor] {
			seen[h.visitor] = true
			group = append(group, personRef{h.visitor, h.ts})
		}
		return true, nil
	})
	if err != nil {
		return nil, err
	}
	if len(out) < n { // the scan ran out: the visitors of its last instant
		flush()
	}
	return out[:min(n, len(out))], nil
}

// ErrBadCursor is a people cursor this store did not hand out.
var ErrBadCursor = errors.New("Invalid cursor")

func encodeCursor(ms int64, id string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(ms, 10) + "|" + id))
}

func decodeCursor(c string) (int64, string, bool) {
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return 0, "", false
	}
	ms, id, ok := strings.Cut(string(b), "|")
	if !ok {
		return 0, "", false
	}
	n, err := strconv.ParseInt(ms, 10, 64)
	return n, id, err == nil
}

// RadarVisitor implements queries.RadarReadModel.
func (s *Store) RadarVisitor(ctx context.Context, r queries.RadarRange, visitorID string) (queries.RadarVisitorDetails, bool, error) {
	var d queries.RadarVisitorDetails
	v, err := s.visitor(ctx, r.ProjectID, visitorID, r.Currency)
	if errors.Is(err, sql.ErrNoRows) {
		return d, false, nil
	}
	if err != nil {
		return d, false, err
	}
	d.Visitor = v
	lo, hi := bounds(r)
	rows, err := s.r.QueryContext(ctx, `SELECT session_id, start, end, pageviews, events, source, device, browser, os FROM sessions
		WHERE project_id = ? AND visitor_id = ? AND start BETWEEN ? AND ? ORDER BY start DESC`, r.ProjectID, visitorID, lo, hi)
	if err != nil {
		return d, false, err
	}
	d.Sessions = []queries.RadarSession{}
	for rows.Next() {
		var x queries.RadarSession
		var start, end, pv, ev int64
		if err := rows.Scan(&x.SessionID, &start, &end, &pv, &ev, &x.Referrer, &x.Device, &x.Browser, &x.OS); err != nil {
			rows.Close()
			return d, false, err
		}
		x.StartTime, x.EndTime = time.UnixMilli(start).UTC(), time.UnixMilli(end).UTC()
		if !(pv == 1 && ev == 0) {
			x.DurationSeconds = math.Round(float64(end-start)/10) / 100
		}
		if x.Referrer == "" {
			x.Referrer = DirectSource
		}
		d.Sessions = append(d.Sessions, x)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return d, false, err
	}
	// Activity per UTC day: the page views and events of the visits that
	// start on it (hits are not kept by visitor).
	rows, err = s.r.QueryContext(ctx, `SELECT start, pageviews + events FROM sessions
		WHERE project_id = ? AND visitor_id = ? AND start BETWEEN ? AND ? ORDER BY start`, r.ProjectID, visitorID, lo, hi)
	if err != nil {
		return d, false, err
	}
	defer rows.Close()
	d.Heatmap = []queries.RadarHeatmapEntry{}
	for rows.Next() {
		var ms, n int64
		if err := rows.Scan(&ms, &n); err != nil {
			return d, false, err
		}
		day := time.UnixMilli(ms).UTC().Format(time.DateOnly)
		if k := len(d.Heatmap); k > 0 && d.Heatmap[k-1].Date == day {
			d.Heatmap[k-1].Events += n
		} else {
			d.Heatmap = append(d.Heatmap, queries.RadarHeatmapEntry{Date: day, Events: n})
		}
	}
	return d, true, rows.Err()
}
