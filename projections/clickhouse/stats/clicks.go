package stats

import (
	"sort"
	"time"

	"github.com/linkd/linkd/domain/click"
	"github.com/linkd/linkd/eventstore"
)

// clickRow is one counted click on its way into the clicks table.
type clickRow struct {
	c        *click.Recorded
	linkID   string // of the stream "clicks-<link id>"
	seq      uint64 // the stream version: the link's click number, from 0
	pos      eventstore.Position
	ts       time.Time // the click's time, UTC, whole seconds
	day      time.Time // its UTC date
	month    int       // toYYYYMM(date): the partition
	insertID uint64
}

func newClickRow(ev eventstore.RecordedEvent, linkID string, c *click.Recorded) clickRow {
	ts := c.Timestamp
	if ts.IsZero() {
		ts = ev.Time
	}
	ts = ts.UTC().Truncate(time.Second)
	day := time.Date(ts.Year(), ts.Month(), ts.Day(), 0, 0, 0, 0, time.UTC)
	return clickRow{
		c:      c,
		linkID: linkID,
		seq:    ev.Version,
		pos:    ev.Position,
		ts:     ts,
		day:    day,
		month:  ts.Year()*100 + int(ts.Month()),
	}
}

// clickColumn is a column of the clicks table with the values a batch of
// rows gives it.
// values fills dst (what it returned for the previous chunk, or nil) when
// it is large enough, so that the chunks of one INSERT share their slices.
type clickColumn struct {
	name   string
	values func(dst any, rows []clickRow) any
}

// reuse returns dst as a []T of n elements when it has the capacity, else
// a new one.
func reuse[T any](dst any, n int) []T {
	if s, ok := dst.([]T); ok && cap(s) >= n {
		return s[:n]
	}
	return make([]T, n)
}

func strCol(name string, f func(r *clickRow) string) clickColumn {
	return clickColumn{name, func(dst any, rows []clickRow) any {
		out := reuse[string](dst, len(rows))
		for i := range rows {
			out[i] = f(&rows[i])
		}
		return out
	}}
}

func u8Col(name string, f func(r *clickRow) bool) clickColumn {
	return clickColumn{name, func(dst any, rows []clickRow) any {
		out := reuse[uint8](dst, len(rows))
		for i := range rows {
			out[i] = b2u(f(&rows[i]))
		}
		return out
	}}
}

func u64Col(name string, f func(r *clickRow) uint64) clickColumn {
	return clickColumn{name, func(dst any, rows []clickRow) any {
		out := reuse[uint64](dst, len(rows))
		for i := range rows {
			out[i] = f(&rows[i])
		}
		return out
	}}
}

func timeCol(name string, f func(r *clickRow) time.Time) clickColumn {
	return clickColumn{name, func(dst any, rows []clickRow) any {
		out := reuse[time.Time](dst, len(rows))
		for i := range rows {
			out[i] = f(&rows[i])
		}
		return out
	}}
}

// clickColumns are the columns of clicks (migrations/0001_clicks.sql of
// projections/clickhouse; docs/analytics.md explains each), in their order.
var clickColumns = []clickColumn{
	strCol("click_id", func(r *clickRow) string { return r.c.ClickID }),
	strCol("link_id", func(r *clickRow) string { return r.linkID }),
	strCol("workspace_id", func(r *clickRow) string { return r.c.WorkspaceID }),
	strCol("project_id", func(r *clickRow) string { return r.c.ProjectID }),
	strCol("domain_id", func(r *clickRow) string { return r.c.DomainID }),
	strCol("code", func(r *clickRow) string { return r.c.Code }),
	timeCol("timestamp", func(r *clickRow) time.Time { return r.ts }),
	timeCol("date", func(r *clickRow) time.Time { return r.day }),
	strCol("source", func(r *clickRow) string { return r.c.Source }),
	u8Col("qr", func(r *clickRow) bool { return r.c.QR }),
	strCol("visitor", func(r *clickRow) string { return r.c.Visitor }),
	strCol("browser", func(r *clickRow) string { return r.c.Browser }),
	strCol("browser_version", func(r *clickRow) string { return r.c.BrowserVersion }),
	strCol("os", func(r *clickRow) string { return r.c.OS }),
	strCol("os_version", func(r *clickRow) string { return r.c.OSVersion }),
	strCol("device_type", func(r *clickRow) string { return r.c.DeviceType }),
	strCol("device", func(r *clickRow) string { return r.c.Device }),
	u8Col("from_app", func(r *clickRow) bool { return r.c.FromApp }),
	strCol("app", func(r *clickRow) string { return r.c.App }),
	strCol("language", func(r *clickRow) string { return r.c.Language }),
	strCol("referrer", func(r *clickRow) string { return r.c.Referrer }),
	strCol("referrer_url", func(r *clickRow) string { return r.c.ReferrerURL }),
	strCol("country", func(r *clickRow) string { return r.c.Country }),
	strCol("continent", func(r *clickRow) string { return r.c.Continent }),
	strCol("city", func(r *clickRow) string { return r.c.City }),
	strCol("region", func(r *clickRow) string { return r.c.Region }),
	strCol("destination", func(r *clickRow) string { return r.c.Destination }),
	strCol("tracking_id", func(r *clickRow) string { return r.c.TrackingID }),
	{"tracking_expires_at", func(dst any, rows []clickRow) any {
		out := reuse[*time.Time](dst, len(rows))
		for i := range rows {
			out[i] = nil
			if t := rows[i].c.TrackingExpiresAt; t != nil {
				u := t.UTC().Truncate(time.Second)
				out[i] = &u
			}
		}
		return out
	}},
	u64Col("click_seq", func(r *clickRow) uint64 { return r.seq }),
	u64Col("event_position", func(r *clickRow) uint64 { return r.pos.Commit }),
	u64Col("event_prepare_position", func(r *clickRow) uint64 { return r.pos.Prepare }),
	u64Col("insert_id", func(r *clickRow) uint64 { return r.insertID }),
}

// splitUnits cuts the rows of a batch (each link's rows in click_seq order)
// into insert units such that
//   - every unit lies in one partition (one month), so that its INSERT makes
//     exactly one part in clicks and in each view's target, committed
//     atomically, and
//   - for every link, the units hold its rows in click_seq order, a link's
//     rows of one unit being consecutive in that order.
//
// Units are inserted one after the other, each only once the one before is
// complete, so whatever a crash leaves behind is, for every link, a prefix of
// its clicks: what the per-link high-water mark of the dedup assumes. Almost
// always a batch is one unit; one that spans the end of a month is two.
func splitUnits(rows []clickRow, maxRows int) [][]clickRow {
	if len(rows) == 0 {
		return nil
	}
	sameMonth := true
	for i := range rows {
		if rows[i].month != rows[0].month {
			sameMonth = false
			break
		}
	}
	var units [][]clickRow
	chunk := func(rs []clickRow) {
		for len(rs) > maxRows {
			units = append(units, rs[:maxRows])
			rs = rs[maxRows:]
		}
		if len(rs) > 0 {
			units = append(units, rs)
		}
	}
	if sameMonth {
		chunk(rows)
		return units
	}
	// Rounds: each takes, of every link, its leading run of rows in one
	// month; within a round, one unit per month.
	var order []string
	queues := map[string][]clickRow{}
	for _, r := range rows {
		if _, ok := queues[r.linkID]; !ok {
			order = append(order, r.linkID)
		}
		queues[r.linkID] = append(queues[r.linkID], r)
	}
	for {
		byMonth := map[int][]clickRow{}
		for _, id := range order {
			q := queues[id]
			if len(q) == 0 {
				continue
			}
			n := 1
			for n < len(q) && q[n].month == q[0].month {
				n++
			}
			byMonth[q[0].month] = append(byMonth[q[0].month], q[:n]...)
			queues[id] = q[n:]
		}
		if len(byMonth) == 0 {
			return units
		}
		months := make([]int, 0, len(byMonth))
		for m := range byMonth {
			months = append(months, m)
		}
		sort.Ints(months)
		for _, m := range months {
			chunk(byMonth[m])
		}
	}
}
