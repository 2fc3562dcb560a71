package stats

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/linkd/linkd/domain/click"
	ch "github.com/linkd/linkd/projections/clickhouse"
)

// recoverLocked brings every target table level with clicks after a crash
// or a failed Apply or flush, reloads the checkpoint and the next insert_id,
// and empties the caches and the pending aggregates (what was pending is in
// clicks, and so rebuilt here).
//
// Invariant (see splitUnits, applyClicks and flushLocked): INSERTs into
// clicks run one at a time, each in one partition, and each target is
// written by INSERTs that each cover, in one partition, the units that
// follow the ones it has. So a target holds a prefix of the units of
// clicks: it can only lack the last ones, each whole or not at all. Every
// link and workspace of a unit gets rows in every target, so one of them
// tells whether a unit is there: the target's max_insert_id for that key is
// at least the unit's insert_id. Recovery finds the last unit each target
// has (one query per target over the keys of the last units of clicks), then
// rebuilds the ones after it from clicks, in runs of units of one month (each
// repair again one part per target, so that a crash during recovery leaves
// the same invariant). A normal start-up costs one scan of clicks.insert_id
// and a query per target.
func (p *Projection) recoverLocked(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, p.opts.RecoveryTimeout)
	defer cancel()
	// A flush in flight ends first (if it failed, its INSERTs are then
	// among the pending ones).
	_ = p.waitFlushLocked(ctx)
	if err := p.killPending(ctx); err != nil {
		return err
	}
	// Which breakdown values reached breakdown_values is not known: the
	// repairs write every value they use.
	p.keyer.forget()
	var last uint64
	if err := p.conn.QueryRow(ctx, "SELECT max(insert_id) FROM "+p.tbl(tClicks)).Scan(&last); err != nil {
		return fmt.Errorf("max insert_id of clicks: %w", err)
	}
	if last > 0 {
		recent, err := p.lastUnits(ctx, last)
		if err != nil {
			return err
		}
		haves := make([]uint64, len(views))
		least := last
		for i, v := range views {
			if haves[i], err = p.lastUnitOf(ctx, v, recent); err != nil {
				return err
			}
			least = min(least, haves[i])
		}
		if least < last {
			// The units to rebuild may hold late clicks of days made
			// final: their final records are invalid from now on.
			if err := p.invalidateRepaired(ctx, least); err != nil {
				return err
			}
		}
		for i, v := range views {
			if haves[i] < last {
				if err := p.repair(ctx, v, haves[i]); err != nil {
					return err
				}
			}
		}
	}
	pos, err := p.readCheckpoint(ctx)
	if err != nil {
		return err
	}
	p.checkpoint, p.saved, p.savedAt = pos, pos, time.Now()
	p.nextInsertID = last + 1
	p.pending = p.pending[:0]
	p.clickMarks.clear()
	p.links.clear()
	p.resetPending()
	p.needRecovery = false
	return nil
}

// unitKey is a unit of clicks with one of its links and that link's
// workspace.
type unitKey struct {
	id                  uint64
	linkID, workspaceID string
}

// recentUnits is how many of the last insert_ids of clicks recovery looks
// at before it scans a whole target: more than a flush holds at any rate
// seen (a unit is an Apply's batch of one month).
const recentUnits = 1024

// lastUnits returns the units of clicks among the last recentUnits
// insert_ids, the last first.
func (p *Projection) lastUnits(ctx context.Context, last uint64) ([]unitKey, error) {
	from := uint64(0)
	if last > recentUnits {
		from = last - recentUnits
	}
	rows, err := p.conn.Query(ctx, "SELECT insert_id, any(link_id), any(workspace_id) FROM "+p.tbl(tClicks)+
		" WHERE insert_id > ? GROUP BY insert_id ORDER BY insert_id DESC", from)
	if err != nil {
		return nil, fmt.Errorf("last units of clicks: %w", err)
	}
	defer rows.Close()
	var out []unitKey
	for rows.Next() {
		var u unitKey
		if err := rows.Scan(&u.id, &u.linkID, &u.workspaceID); err != nil {
			return nil, fmt.Errorf("last units of clicks: %w", err)
		}
		out = append(out, u)
	}
	return out, rows.Err()
}

// targetKey is the column of v's target that names a unit's link or
// workspace.
func targetKey(target string) string {
	if target == tWorkspaceDaily || target == tWorkspaceBreakdown {
		return "workspace_id"
	}
	return "link_id"
}

// lastUnitOf returns the last insert_id of clicks that the target of v holds
// (0: none).
func (p *Projection) lastUnitOf(ctx context.Context, v ch.View, recent []unitKey) (uint64, error) {
	key := targetKey(v.Target)
	keyOf := func(u unitKey) string {
		if key == "workspace_id" {
			return u.workspaceID
		}
		return u.linkID
	}
	seen := map[string]bool{}
	var args []any
	for _, u := range recent {
		if k := keyOf(u); !seen[k] {
			seen[k] = true
			args = append(args, k)
		}
	}
	have := map[string]uint64{}
	err := p.db.ForChunks(ctx, anyStrings(args), func(ctx context.Context, in string, args []any) error {
		rows, err := p.conn.Query(ctx, "SELECT "+key+", maxMerge(max_insert_id) FROM "+p.tbl(v.Target)+
			" WHERE "+key+" IN ("+in+") GROUP BY "+key, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var (
				k string
				m uint64
			)
			if err := rows.Scan(&k, &m); err != nil {
				return err
			}
			have[k] = m
		}
		return rows.Err()
	})
	if err != nil {
		return 0, fmt.Errorf("max insert_id of %s: %w", v.Target, err)
	}
	// The target holds a prefix of the units: the first one (from the
	// last) that it holds is its last.
	for _, u := range recent {
		if have[keyOf(u)] >= u.id {
			return u.id, nil
		}
	}
	var m uint64
	if err := p.conn.QueryRow(ctx, "SELECT maxMerge(max_insert_id) FROM "+p.tbl(v.Target)).Scan(&m); err != nil {
		return 0, fmt.Errorf("max insert_id of %s: %w", v.Target, err)
	}
	return m, nil
}

func anyStrings(args []any) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = a.(string)
	}
	return out
}

// killPending stops the INSERTs of a failed Apply or flush that the server
// may still be running (a client deadline does not stop the server), and
// waits until they are gone, so that recovery sees their final outcome.
func (p *Projection) killPending(ctx context.Context) error {
	if len(p.pending) == 0 {
		return nil
	}
	ids := append([]string(nil), p.pending...)
	in := strings.TrimSuffix(strings.Repeat("?, ", len(ids)), ", ")
	args := make([]any, len(ids))
	for i, id := range ids {
		args[i] = id
	}
	for {
		var running uint64
		if err := p.conn.QueryRow(ctx, "SELECT count() FROM system.processes WHERE query_id IN ("+in+")", args...).Scan(&running); err != nil {
			return fmt.Errorf("pending inserts: %w", err)
		}
		if running == 0 {
			p.pending = p.pending[:0]
			return nil
		}
		if err := p.conn.Exec(ctx, "KILL QUERY WHERE query_id IN ("+in+") ASYNC", args...); err != nil {
			return fmt.Errorf("kill pending inserts: %w", err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("pending inserts: %w", ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// repairRows bounds the clicks of one repair INSERT (the breakdowns of a
// run are counted in memory).
const repairRows = 200_000

// repair rebuilds, from clicks, the contribution of every insert_id after
// have to the target of view v: in runs of consecutive units of one month,
// each one INSERT.
func (p *Projection) repair(ctx context.Context, v ch.View, have uint64) error {
	rows, err := p.conn.Query(ctx, "SELECT insert_id, toYYYYMM(any(date)), count() FROM "+p.tbl(tClicks)+
		" WHERE insert_id > ? GROUP BY insert_id ORDER BY insert_id", have)
	if err != nil {
		return fmt.Errorf("repair %s: %w", v.Target, err)
	}
	type run struct {
		from, to uint64
		month    uint32
		rows     uint64
	}
	var runs []run
	for rows.Next() {
		var (
			id, n uint64
			month uint32
		)
		if err := rows.Scan(&id, &month, &n); err != nil {
			rows.Close()
			return fmt.Errorf("repair %s: %w", v.Target, err)
		}
		if k := len(runs) - 1; k >= 0 && runs[k].month == month && runs[k].rows+n <= repairRows {
			runs[k].to, runs[k].rows = id, runs[k].rows+n
			continue
		}
		runs = append(runs, run{from: id, to: id, month: month, rows: n})
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("repair %s: %w", v.Target, err)
	}
	for _, r := range runs {
		p.log.Warn("clickhouse projection: rebuilding aggregates of clicks", "table", v.Target,
			"insert_ids", strconv.FormatUint(r.from, 10)+"-"+strconv.FormatUint(r.to, 10), "clicks", r.rows)
		if err := p.repairRun(ctx, v, r.from, r.to); err != nil {
			return fmt.Errorf("repair %s, insert_ids %d to %d: %w", v.Target, r.from, r.to, err)
		}
	}
	return nil
}

func (p *Projection) repairRun(ctx context.Context, v ch.View, from, to uint64) error {
	where := fmt.Sprintf("insert_id >= %d AND insert_id <= %d", from, to)
	if v.Source == tDailyInput {
		// The view's own SELECT, over those rows of clicks.
		qctx := withQueryID(ctx, p.queryID(v.Target+"-repair", to))
		return p.conn.Exec(qctx, p.db.Refill(v, tClicks, where))
	}
	// Breakdowns are counted in Go: read the clicks back and count again,
	// for this target only.
	rs, err := p.conn.Query(ctx, "SELECT link_id, workspace_id, date, os, os_version, city, language, browser, "+
		"country, continent, device_type, from_app, app, referrer FROM "+p.tbl(tClicks)+" WHERE "+where)
	if err != nil {
		return err
	}
	bd := newBreakdowns()
	for rs.Next() {
		var (
			linkID  string
			day     time.Time
			c       click.Recorded
			fromApp uint8
		)
		if err := rs.Scan(&linkID, &c.WorkspaceID, &day, &c.OS, &c.OSVersion, &c.City, &c.Language, &c.Browser,
			&c.Country, &c.Continent, &c.DeviceType, &fromApp, &c.App, &c.Referrer); err != nil {
			rs.Close()
			return err
		}
		c.FromApp = fromApp == 1
		bd.addClick(p.keyer, linkID, c.WorkspaceID, dayNumber(day.UTC()), &c)
	}
	rs.Close()
	if err := rs.Err(); err != nil {
		return err
	}
	entries := p.keyer.take()
	if err := p.valueInserts(entries)(ctx, p.queryID(tValues+"-repair", to)); err != nil {
		return err
	}
	p.values.putAll(entries)
	rows := rowsOf(p.keyer, bd.workspace, bd.wsOrder, to)
	if v.Target == tLinkBreakdown {
		rows = rowsOf(p.keyer, bd.link, bd.linkOrder, to)
	}
	return p.insertBreakdown(ctx, v.Target, rows, p.queryID(v.Source+"-repair", to))
}
