package stats

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"
)

// Final records of days that are over.
//
// The daily tables receive a part per flush; ClickHouse merges them in the
// background, but a month keeps several parts, and on 18.16 a query pays
// about half a millisecond of server CPU for every part it reads (measured on
// the 10-million-click benchmark: the 30 days of the busiest link cost 5.6 ms
// over the 7 parts of link_clicks_daily, 2 ms over one). The unique visitors
// are uniq states merged at read time, about 30 ms of CPU for 30 days of the
// busiest workspace before this change. A day that is over no longer
// changes, except when a click of it comes late, so its record (counters,
// unique visitors, first and last click), computed once from the daily
// tables with the same functions (the very numbers a query would compute),
// is kept in link_clicks_daily_final and workspace_clicks_daily_final,
// written once a day. A 30-day query reads the final records, and the daily
// tables only for the days after the last final day (whose parts are the
// recent, small ones: parts that hold only older days are skipped by their
// date range).
//
// Breakdowns are not part of the final records (since schema version 3):
// queries read them from the breakdown tables for every day, and sum the
// maps themselves. Copying them into the final records cost more than
// anything else the server did while a replay or a catch-up ran (sumMap,
// about 0.45 µs of server CPU per key of a link's day: 3.3 of the 8 s of
// server CPU of a replay of a million clicks over 30 days), and saved a
// 30-day query nothing measurable.
//
// Completeness: days are made final in order, a month at a time (one
// INSERT, one part each), so every day up to the latest day with a valid
// final record (finalLink, finalWorkspace) that has clicks has a final
// record.
//
// A record is as of the highest insert_id of the day's rows in the daily
// table.
//
// Late clicks: a final record is superseded by a newer version
// (ReplacingMergeTree(version), read with argMax(..., version)). Before the
// clicks of a day already made final reach the daily tables (a flush, or a
// repair in recovery), the projector writes an invalid record (valid = 0)
// for that link or workspace and day, with version 2 × the highest insert_id
// of those clicks; the record made again afterwards has version 2 × that
// insert_id + 1 and wins. A query that finds an invalid record (the new
// record was not written yet, for example after a crash) computes that day
// from the daily tables instead. So a final record is used only while no
// click of its day came after it.

const (
	finalLag = 2 // days: yesterday's clicks may still come in
)

// loadDays reads, at Open, the latest day with clicks and the latest days
// made final.
func (p *Projection) loadDays(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, p.opts.QueryTimeout)
	defer cancel()
	var maxDay time.Time
	if err := p.conn.QueryRow(ctx, "SELECT max(date) FROM "+p.tbl(tWorkspaceDaily)).Scan(&maxDay); err != nil {
		return fmt.Errorf("latest day: %w", err)
	}
	p.maxDay = dayNumber(maxDay.UTC())
	for _, s := range []scope{linkScope, workspaceScope} {
		d, err := p.lastFinal(ctx, s)
		if err != nil {
			return err
		}
		s.finalDay(p).Store(d)
	}
	return nil
}

// lastFinal is the latest day with a valid final record of scope s.
func (p *Projection) lastFinal(ctx context.Context, s scope) (int32, error) {
	var d time.Time
	if err := p.conn.QueryRow(ctx, "SELECT max(date) FROM "+p.tbl(s.final)+" WHERE valid = 1").Scan(&d); err != nil {
		return 0, fmt.Errorf("latest final day of %s: %w", s.final, err)
	}
	return dayNumber(d.UTC()), nil
}

// finalHorizon is the latest day that may be made final when maxDay is the
// latest day with clicks in the daily tables.
func (p *Projection) finalHorizon(maxDay int32) int32 {
	return min(maxDay, dayNumber(time.Now().UTC())) - finalLag
}

// finalizeDue tells whether days are over that were not made final.
func (p *Projection) finalizeDue() bool {
	h := p.finalHorizon(p.maxDay)
	return h > p.finalLink.Load() || h > p.finalWorkspace.Load()
}

// finalizeUpTo makes the days up to horizon final, a month at a time, and
// the late cells of the last flush final again. It runs in the flush in
// flight (pending.go), or with the projection idle and locked.
func (p *Projection) finalizeUpTo(ctx context.Context, horizon int32, lateLinks, lateWorkspaces map[cellKey]uint64) error {
	for _, s := range []scope{linkScope, workspaceScope} {
		final := s.finalDay(p)
		for final.Load() < horizon {
			from := dayTime(final.Load() + 1)
			if final.Load() == 0 {
				// Nothing final yet: start at the first day with clicks.
				var first time.Time
				if err := p.conn.QueryRow(ctx, "SELECT min(date) FROM "+p.tbl(s.daily)).Scan(&first); err != nil {
					return fmt.Errorf("first day of %s: %w", s.daily, err)
				}
				if first.UTC().After(from) {
					from = first.UTC()
				}
			}
			to := dayTime(horizon)
			if end := time.Date(from.Year(), from.Month()+1, 0, 0, 0, 0, 0, time.UTC); end.Before(to) {
				to = end // one month (partition) per INSERT
			}
			cond := "date >= toDate('" + utcDate(from) + "') AND date <= toDate('" + utcDate(to) + "')"
			if err := p.finalize(ctx, s, cond); err != nil {
				return err
			}
			final.Store(dayNumber(to))
		}
	}
	if err := p.refinalize(ctx, linkScope, lateLinks); err != nil {
		return err
	}
	return p.refinalize(ctx, workspaceScope, lateWorkspaces)
}

// finalize writes the final records of the cells of scope s that cond
// selects (a condition on the key and date columns, with args).
func (p *Projection) finalize(ctx context.Context, s scope, cond string, args ...any) error {
	ws, wsCol := "", ""
	if s.key == "link_id" {
		ws, wsCol = linkWorkspace+", ", "workspace_id, "
	}
	var sums []string
	for _, c := range dailyCounters {
		sums = append(sums, "sum("+c+")")
	}
	q := "INSERT INTO " + p.tbl(s.final) + " (" + s.key + ", date, " + wsCol + strings.Join(dailyCounters, ", ") +
		", unique_visitors, first_click, last_click, as_of_insert_id, valid, version) " +
		"SELECT " + s.key + ", date, " + ws + strings.Join(sums, ", ") + ", uniqMerge(unique_visitors), " +
		"minMerge(first_click), maxMerge(last_click), maxMerge(max_insert_id) AS asof, 1, asof * 2 + 1 FROM " + p.tbl(s.daily) +
		" WHERE " + cond + " GROUP BY " + s.key + ", date"
	qctx, cancel := context.WithTimeout(ctx, p.opts.InsertTimeout)
	defer cancel()
	if err := p.conn.Exec(qctx, q, args...); err != nil {
		return fmt.Errorf("final records in %s: %w", s.final, err)
	}
	return nil
}

// refinalize makes the final records of the given cells again, a day at a
// time.
func (p *Projection) refinalize(ctx context.Context, s scope, cells map[cellKey]uint64) error {
	byDay := map[int32][]string{}
	for c := range cells {
		byDay[c.day] = append(byDay[c.day], c.key)
	}
	days := make([]int32, 0, len(byDay))
	for d := range byDay {
		days = append(days, d)
	}
	sort.Slice(days, func(i, j int) bool { return days[i] < days[j] })
	for _, d := range days {
		keys := byDay[d]
		sort.Strings(keys)
		err := p.db.ForChunks(ctx, keys, func(ctx context.Context, in string, args []any) error {
			return p.finalize(ctx, s, "date = toDate('"+utcDate(dayTime(d))+"') AND "+s.key+" IN ("+in+")", args...)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// invalidate writes invalid final records for cells whose day was made
// final and whose clicks up to the given insert_id are about to reach the
// daily tables (see above).
func (p *Projection) invalidate(ctx context.Context, s scope, cells map[cellKey]uint64, queryID string) error {
	if len(cells) == 0 {
		return nil
	}
	var (
		keys    []string
		days    []time.Time
		asOf    []uint64
		valid   []uint8
		version []uint64
	)
	for c, id := range cells {
		keys = append(keys, c.key)
		days = append(days, dayTime(c.day))
		asOf = append(asOf, id)
		valid = append(valid, 0)
		version = append(version, 2*id)
	}
	return p.db.InsertColumns(ctx, s.final, s.key+", date, as_of_insert_id, valid, version",
		[]any{keys, days, asOf, valid, version}, queryID)
}

// invalidateRepaired writes invalid final records for the cells of the
// units after have, of days made final, before recovery rebuilds them.
func (p *Projection) invalidateRepaired(ctx context.Context, have uint64) error {
	for _, s := range []scope{linkScope, workspaceScope} {
		final, err := p.lastFinal(ctx, s)
		if err != nil {
			return err
		}
		if final == 0 {
			continue
		}
		q := "INSERT INTO " + p.tbl(s.final) + " (" + s.key + ", date, as_of_insert_id, valid, version) SELECT " + s.key +
			", date, max(insert_id), 0, max(insert_id) * 2 FROM " + p.tbl(tClicks) + " WHERE insert_id > ? AND date <= toDate('" +
			utcDate(dayTime(final)) + "') GROUP BY " + s.key + ", date"
		if err := p.conn.Exec(ctx, q, have); err != nil {
			return fmt.Errorf("invalidate final records of %s: %w", s.final, err)
		}
	}
	return nil
}
