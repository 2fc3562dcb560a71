package clickhouse

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/linkd/linkd/domain/click"
	"github.com/linkd/linkd/domain/link"
	"github.com/linkd/linkd/queries"
)

// LinkDaily returns the days of [from, to] (UTC dates) on which the link was
// clicked, from link_clicks_daily and link_clicks_daily_breakdown.
func (p *Projection) LinkDaily(ctx context.Context, linkID string, from, to time.Time) ([]queries.DailyStats, error) {
	out, err := p.daily(ctx, tLinkDaily, tLinkBreakdown, "link_id", linkID, from, to)
	if err != nil {
		return nil, fmt.Errorf("clickhouse: link daily stats: %w", err)
	}
	for i := range out {
		out[i].LinkID = linkID
	}
	return out, nil
}

// WorkspaceDaily is LinkDaily over every link of a workspace, from
// workspace_clicks_daily and workspace_clicks_daily_breakdown. A visitor who
// clicked several links of the workspace on a day is one unique visitor.
func (p *Projection) WorkspaceDaily(ctx context.Context, workspaceID string, from, to time.Time) ([]queries.DailyStats, error) {
	out, err := p.daily(ctx, tWorkspaceDaily, tWorkspaceBreakdown, "workspace_id", workspaceID, from, to)
	if err != nil {
		return nil, fmt.Errorf("clickhouse: workspace daily stats: %w", err)
	}
	return out, nil
}

func utcDate(t time.Time) string { return t.UTC().Format(time.DateOnly) }

func (p *Projection) daily(ctx context.Context, dailyT, breakdownT, keyCol, key string, from, to time.Time) ([]queries.DailyStats, error) {
	ctx, cancel := context.WithTimeout(ctx, p.opts.QueryTimeout)
	defer cancel()
	f, t := utcDate(from), utcDate(to)
	where := " WHERE " + keyCol + " = ? AND date >= toDate(?) AND date <= toDate(?)"

	type result struct {
		rows map[string]map[string]map[string]int64 // date -> dimension -> value -> clicks
		err  error
	}
	ch := make(chan result, 1)
	go func() {
		rows, err := p.conn.Query(ctx, "SELECT toString(date), dimension, value, sum(clicks) FROM "+p.tbl(breakdownT)+
			where+" GROUP BY date, dimension, value", key, f, t)
		if err != nil {
			ch <- result{err: err}
			return
		}
		defer rows.Close()
		out := map[string]map[string]map[string]int64{}
		for rows.Next() {
			var (
				date, dim, value string
				n                uint64
			)
			if err := rows.Scan(&date, &dim, &value, &n); err != nil {
				ch <- result{err: err}
				return
			}
			if out[date] == nil {
				out[date] = map[string]map[string]int64{}
			}
			if out[date][dim] == nil {
				out[date][dim] = map[string]int64{}
			}
			out[date][dim][value] += int64(n)
		}
		ch <- result{rows: out, err: rows.Err()}
	}()

	q := "SELECT toString(date), any(workspace_id)"
	for _, c := range dailyCounters {
		q += ", sum(" + c.name + ")"
	}
	q += ", " + uniqFunc + "Merge(unique_visitors), minMerge(first_click), maxMerge(last_click) FROM " +
		p.tbl(dailyT) + where + " GROUP BY date ORDER BY date"
	var days []queries.DailyStats
	err := func() error {
		rows, err := p.conn.Query(ctx, q, key, f, t)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var (
				d        queries.DailyStats
				counters = make([]uint64, len(dailyCounters))
				uniq     uint64
			)
			dest := []any{&d.Date, &d.WorkspaceID}
			for i := range counters {
				dest = append(dest, &counters[i])
			}
			dest = append(dest, &uniq, &d.FirstClick, &d.LastUpdated)
			if err := rows.Scan(dest...); err != nil {
				return err
			}
			d.TotalClicks, d.QRScans, d.DirectClicks = int64(counters[0]), int64(counters[1]), int64(counters[2])
			d.ChromeClicks, d.IOSClicks, d.AndroidClicks = int64(counters[3]), int64(counters[4]), int64(counters[5])
			d.UniqueVisitors = int64(uniq)
			d.FirstClick, d.LastUpdated = d.FirstClick.UTC(), d.LastUpdated.UTC()
			if d.TotalClicks > 0 {
				days = append(days, d)
			}
		}
		return rows.Err()
	}()
	br := <-ch
	if err != nil {
		return nil, err
	}
	if br.err != nil {
		return nil, br.err
	}
	for i := range days {
		d := &days[i]
		for _, dim := range dimensions {
			m := br.rows[d.Date][dim.name]
			if m == nil {
				m = map[string]int64{}
			}
			*dim.field(d) = m
		}
	}
	return days, nil
}

// LinkClicked reports whether the link has any click.
func (p *Projection) LinkClicked(ctx context.Context, linkID string) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, p.opts.QueryTimeout)
	defer cancel()
	rows, err := p.conn.Query(ctx, "SELECT link_id FROM "+p.tbl(tLinkDaily)+" WHERE link_id = ? LIMIT 1", linkID)
	if err != nil {
		return false, fmt.Errorf("clickhouse: link clicked: %w", err)
	}
	defer rows.Close()
	found := rows.Next()
	if err := rows.Err(); err != nil {
		return false, fmt.Errorf("clickhouse: link clicked: %w", err)
	}
	return found, nil
}

// AppliedVersion tells the last version of a click stream or link stream
// that is in ClickHouse (reads follow writes wait on it).
func (p *Projection) AppliedVersion(ctx context.Context, stream string) (uint64, bool, error) {
	var q, id string
	switch {
	case strings.HasPrefix(stream, click.StreamPrefix):
		id = strings.TrimPrefix(stream, click.StreamPrefix)
		q = "SELECT maxMerge(max_click_seq) FROM " + p.tbl(tLinkDaily) + " WHERE link_id = ? GROUP BY link_id"
	case strings.HasPrefix(stream, link.StreamPrefix):
		id = strings.TrimPrefix(stream, link.StreamPrefix)
		q = "SELECT max(version) FROM " + p.tbl(tLinks) + " WHERE link_id = ? GROUP BY link_id"
	default:
		return 0, false, nil
	}
	ctx, cancel := context.WithTimeout(ctx, p.opts.QueryTimeout)
	defer cancel()
	rows, err := p.conn.Query(ctx, q, id)
	if err != nil {
		return 0, false, fmt.Errorf("clickhouse: applied version: %w", err)
	}
	defer rows.Close()
	if !rows.Next() {
		return 0, false, rows.Err()
	}
	var v uint64
	if err := rows.Scan(&v); err != nil {
		return 0, false, fmt.Errorf("clickhouse: applied version: %w", err)
	}
	return v, true, nil
}
