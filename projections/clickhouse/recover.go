package clickhouse

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/linkd/linkd/domain/click"
)

// recoverLocked brings every target table level with clicks after a crash
// or a failed Apply, reloads the checkpoint and the next insert_id, and
// empties the caches (they are reloaded from ClickHouse as needed).
//
// Invariant (see splitUnits and applyClicks): INSERTs into clicks run one at
// a time, each in one partition, and the breakdown INSERTs of a unit follow
// its clicks INSERT. So a target can only lack the last unit of clicks (the
// highest insert_id), and has it whole or not at all. Every link and
// workspace of a unit gets rows in every target, so one of them tells:
// if the target's max_insert_id for that key is below the last insert_id,
// the unit is missing. Then the target's missing units are rebuilt from
// clicks, one insert_id at a time in increasing order (so each repair is
// again one part per target, and a crash during recovery leaves the same
// invariant). A normal start-up costs one scan of clicks.insert_id and a
// few key lookups.
func (p *Projection) recoverLocked(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, p.opts.RecoveryTimeout)
	defer cancel()
	if err := p.killPending(ctx); err != nil {
		return err
	}
	var last uint64
	if err := p.conn.QueryRow(ctx, "SELECT max(insert_id) FROM "+p.tbl(tClicks)).Scan(&last); err != nil {
		return fmt.Errorf("max insert_id of clicks: %w", err)
	}
	if last > 0 {
		var linkID, workspaceID string
		if err := p.conn.QueryRow(ctx, "SELECT link_id, workspace_id FROM "+p.tbl(tClicks)+
			" WHERE insert_id = ? LIMIT 1", last).Scan(&linkID, &workspaceID); err != nil {
			return fmt.Errorf("last insert of clicks: %w", err)
		}
		for _, v := range views() {
			key, val := "link_id", linkID
			if v.target == tWorkspaceDaily || v.target == tWorkspaceBreakdown {
				key, val = "workspace_id", workspaceID
			}
			var have uint64
			if err := p.conn.QueryRow(ctx, "SELECT maxMerge(max_insert_id) FROM "+p.tbl(v.target)+
				" WHERE "+key+" = ?", val).Scan(&have); err != nil {
				return fmt.Errorf("max insert_id of %s: %w", v.target, err)
			}
			if have >= last {
				continue
			}
			// The last unit is missing: find every unit that is.
			if err := p.conn.QueryRow(ctx, "SELECT maxMerge(max_insert_id) FROM "+p.tbl(v.target)).Scan(&have); err != nil {
				return fmt.Errorf("max insert_id of %s: %w", v.target, err)
			}
			if err := p.repair(ctx, v, have); err != nil {
				return err
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
	p.needRecovery = false
	return nil
}

// killPending stops the INSERTs of a failed Apply that the server may still
// be running (a client deadline does not stop the server), and waits until
// they are gone, so that recovery sees their final outcome.
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

// repair rebuilds, from clicks, the contribution of every insert_id after
// have to the target of view v.
func (p *Projection) repair(ctx context.Context, v view, have uint64) error {
	rows, err := p.conn.Query(ctx, "SELECT DISTINCT insert_id FROM "+p.tbl(tClicks)+
		" WHERE insert_id > ? ORDER BY insert_id", have)
	if err != nil {
		return fmt.Errorf("repair %s: %w", v.target, err)
	}
	var ids []uint64
	for rows.Next() {
		var id uint64
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return fmt.Errorf("repair %s: %w", v.target, err)
		}
		ids = append(ids, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("repair %s: %w", v.target, err)
	}
	for _, id := range ids {
		p.log.Warn("clickhouse projection: rebuilding an interrupted insert", "table", v.target, "insert_id", id)
		if err := p.repairOne(ctx, v, id); err != nil {
			return fmt.Errorf("repair %s, insert_id %d: %w", v.target, id, err)
		}
	}
	return nil
}

func (p *Projection) repairOne(ctx context.Context, v view, id uint64) error {
	if v.source == tClicks {
		// The view's own SELECT, over that insert's rows of clicks.
		src := fmt.Sprintf("(SELECT * FROM %s WHERE insert_id = %d)", p.tbl(tClicks), id)
		q := "INSERT INTO " + p.tbl(v.target) + " (" + tableByName(v.target).columnList() + ") " + v.query(src)
		return p.conn.Exec(ctx, q)
	}
	// Breakdowns are counted in Go: read the unit back and count again,
	// for this target only.
	rs, err := p.conn.Query(ctx, "SELECT link_id, workspace_id, date, os, os_version, city, language, browser, "+
		"country, continent, device_type, from_app, app, referrer FROM "+p.tbl(tClicks)+" WHERE insert_id = ?", id)
	if err != nil {
		return err
	}
	var unit []clickRow
	for rs.Next() {
		var (
			r       clickRow
			c       click.Recorded
			fromApp uint8
		)
		if err := rs.Scan(&r.linkID, &c.WorkspaceID, &r.day, &c.OS, &c.OSVersion, &c.City, &c.Language, &c.Browser,
			&c.Country, &c.Continent, &c.DeviceType, &fromApp, &c.App, &c.Referrer); err != nil {
			rs.Close()
			return err
		}
		c.FromApp = fromApp == 1
		r.c = &c
		r.day = r.day.UTC()
		unit = append(unit, r)
	}
	rs.Close()
	if err := rs.Err(); err != nil {
		return err
	}
	byLink, byWorkspace := aggregateBreakdown(unit, id)
	rows := byWorkspace
	if v.target == tLinkBreakdown {
		rows = byLink
	}
	return p.insertBreakdown(ctx, v.target, rows, p.queryID(v.source, id))
}
