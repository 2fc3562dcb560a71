package stats

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"

	"github.com/linkd/linkd/domain"
	"github.com/linkd/linkd/domain/click"
	"github.com/linkd/linkd/domain/conversion"
	"github.com/linkd/linkd/domain/link"
	"github.com/linkd/linkd/eventstore"
	"github.com/linkd/linkd/projections"
	ch "github.com/linkd/linkd/projections/clickhouse"
)

// Apply writes a batch: the new clicks (with their daily aggregates and
// breakdowns), the new states of the links it changes, then the
// checkpoint. Events already applied are skipped. When it returns nil every
// row is in ClickHouse and visible to queries. After an error the next call
// first recovers (see the package comment).
func (p *Projection) Apply(ctx context.Context, events []projections.Event) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return errClosed
	}
	// A batch whose context already ended is not started: the driver may
	// still run a query on a pooled connection before it looks.
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("clickhouse: apply: %w", err)
	}
	if p.needRecovery {
		if err := p.recoverLocked(ctx); err != nil {
			return fmt.Errorf("clickhouse: recover: %w", err)
		}
	}
	p.pending = p.pending[:0]
	if err := p.applyLocked(ctx, events); err != nil {
		p.needRecovery = true
		return fmt.Errorf("clickhouse: apply: %w", err)
	}
	p.pending = p.pending[:0]
	return nil
}

func (p *Projection) applyLocked(ctx context.Context, events []projections.Event) error {
	var (
		clickEvents = make([]projections.Event, 0, len(events))
		linkEvents  []projections.Event
		convEvents  []projections.Event
		last        = p.checkpoint
	)
	for _, ev := range events {
		if last.Less(ev.Position) {
			last = ev.Position
		}
		switch {
		case strings.HasPrefix(ev.Stream, click.StreamPrefix):
			clickEvents = append(clickEvents, ev)
		case strings.HasPrefix(ev.Stream, link.StreamPrefix):
			linkEvents = append(linkEvents, ev)
		case strings.HasPrefix(ev.Stream, conversion.CustomerStreamPrefix):
			convEvents = append(convEvents, ev)
		}
	}
	if err := p.applyConversions(ctx, convEvents); err != nil {
		return err
	}
	if err := p.applyClicks(ctx, clickEvents); err != nil {
		return err
	}
	if err := p.applyLinks(ctx, linkEvents); err != nil {
		return err
	}
	p.checkpoint = last
	if p.opts.CheckpointEvery < 0 || time.Since(p.savedAt) >= p.opts.CheckpointEvery {
		return p.saveCheckpoint(ctx)
	}
	return nil
}

// applyClicks inserts the clicks not applied yet, unit by unit, and adds
// their aggregates to the pending ones (written by flushLocked).
func (p *Projection) applyClicks(ctx context.Context, events []projections.Event) error {
	if len(events) == 0 {
		return nil
	}
	ids := make([]string, 0, len(events))
	for _, ev := range events {
		ids = append(ids, strings.TrimPrefix(ev.Stream, click.StreamPrefix))
	}
	marks, err := p.clickMarksOf(ctx, ids)
	if err != nil {
		return err
	}
	// Which events are new clicks: each link's clicks come in click_seq
	// order, so a click is new when it is above the link's mark.
	var fresh []int
	for i, ev := range events {
		if ev.Type != click.EventRecorded || int64(ev.Version) <= marks[ids[i]] {
			continue // not a click, or applied already
		}
		marks[ids[i]] = int64(ev.Version)
		fresh = append(fresh, i)
	}
	decoded := make([]*click.Recorded, len(fresh))
	bad := make([]bool, len(fresh))
	parallel(len(fresh), func(lo, hi int) {
		for j := lo; j < hi; j++ {
			ev := &events[fresh[j]]
			e, err := ev.Decode()
			c, ok := e.(*click.Recorded)
			if err == nil && !ok {
				err = fmt.Errorf("%s is not a click", ev.Type)
			}
			decoded[j] = c
			if err != nil {
				// A poison event must not stop the projection: it
				// is skipped, every time it comes, and logged.
				p.log.Warn("clickhouse projection: undecodable click skipped",
					"stream", ev.Stream, "version", ev.Version, "err", err)
				bad[j] = true
			}
		}
	})
	rows := make([]clickRow, 0, len(fresh))
	for j, i := range fresh {
		if !bad[j] {
			rows = append(rows, newClickRow(events[i].RecordedEvent, ids[i], decoded[j]))
		}
	}
	for _, unit := range splitUnits(rows, p.opts.MaxInsertRows) {
		if len(p.pend.units) > 0 && p.pend.month != unit[0].month {
			// Pending aggregates stay in one partition (one part per
			// target and flush).
			if err := p.flushLocked(ctx); err != nil {
				return err
			}
		}
		id := p.nextInsertID
		p.nextInsertID++
		for i := range unit {
			unit[i].insertID = id
		}
		// Count the aggregates while the server takes the clicks. If the
		// INSERT fails, recovery drops the pending aggregates anyway.
		counted := make(chan struct{})
		go func() {
			defer close(counted)
			p.addUnit(unit, id)
		}()
		err := p.insertClicks(ctx, unit, id)
		<-counted
		if err != nil {
			return err
		}
	}
	if p.flushDue() {
		if p.opts.FlushInterval < 0 {
			return p.flushLocked(ctx) // written with every Apply
		}
		// Written while the next units go into clicks.
		return p.startFlushLocked(ctx)
	}
	return nil
}

// parallel runs f over [0, n) in GOMAXPROCS parts at once (one part when n
// is small).
func parallel(n int, f func(lo, hi int)) {
	workers := runtime.GOMAXPROCS(0)
	if n < 1024 || workers < 2 {
		f(0, n)
		return
	}
	var wg sync.WaitGroup
	step := (n + workers - 1) / workers
	for lo := 0; lo < n; lo += step {
		wg.Add(1)
		go func(lo, hi int) {
			defer wg.Done()
			f(lo, hi)
		}(lo, min(lo+step, n))
	}
	wg.Wait()
}

func (p *Projection) queryID(table string, insertID uint64) string {
	id := "linkd-" + p.run + "-" + table + "-" + strconv.FormatUint(insertID, 10)
	p.pending = append(p.pending, id)
	return id
}

var clickInsert = func() string {
	names := make([]string, len(clickColumns))
	for i, c := range clickColumns {
		names[i] = c.name
	}
	return ch.Columns(names...)
}()

// clickChunk is the rows of one block of an INSERT into clicks.
//
// clickhouse-go encodes a block's String columns into byte buffers that start
// empty with every INSERT and grow by appending (by 1.25x once large): a
// unit of 32768 rows sent as one block had its strings copied about five
// times over (a quarter of Apply's client CPU). Sent in blocks of clickChunk
// rows (batch.Flush between them), the buffers reach their size with the
// first block and are reused for the next ones (Flush resets the block and
// keeps the capacity), and the server parses a block while the client
// encodes the next.
//
// The server squashes the blocks of one INSERT into one block before it
// writes (min_insert_block_size_rows, set to the unit's rows): a unit is
// still one part in clicks and in each view's target, committed at the end
// of the INSERT, as docs/analytics.md requires.
const clickChunk = 4096

func (p *Projection) insertClicks(ctx context.Context, rows []clickRow, insertID uint64) error {
	ctx, release := ch.InsertContext(ctx, p.opts.InsertTimeout)
	defer release()
	ctx = clickhouse.Context(ctx,
		clickhouse.WithQueryID(p.queryID(tClicks, insertID)),
		clickhouse.WithSettings(clickhouse.Settings{
			// One block for the whole unit, whatever its size in bytes.
			"min_insert_block_size_rows":  len(rows),
			"min_insert_block_size_bytes": 0,
		}))
	b, err := p.conn.PrepareBatch(ctx, "INSERT INTO "+p.tbl(tClicks)+" ("+clickInsert+")")
	if err != nil {
		return fmt.Errorf("insert into %s: %w", tClicks, err)
	}
	defer b.Close()
	cols := make([]any, len(clickColumns))
	for lo := 0; lo < len(rows); lo += clickChunk {
		hi := min(lo+clickChunk, len(rows))
		for i, c := range clickColumns {
			cols[i] = c.values(cols[i], rows[lo:hi])
			if err := b.Column(i).Append(cols[i]); err != nil {
				return fmt.Errorf("insert into %s: column %d: %w", tClicks, i, err)
			}
		}
		if hi < len(rows) {
			// Sends the block (the server holds it until the end).
			if err := b.Flush(); err != nil {
				return fmt.Errorf("insert into %s: %w", tClicks, err)
			}
		}
	}
	if err := b.Send(); err != nil {
		return fmt.Errorf("insert into %s: %w", tClicks, err)
	}
	return nil
}

func withQueryID(ctx context.Context, id string) context.Context {
	return clickhouse.Context(ctx, clickhouse.WithQueryID(id))
}

// clickMarksOf returns the highest click_seq applied of each link (-1 for
// none): from the pending aggregates, the cache, or else link_clicks_daily,
// which holds every unit that is not pending.
func (p *Projection) clickMarksOf(ctx context.Context, ids []string) (map[string]int64, error) {
	marks := make(map[string]int64)
	var missing []string
	for _, id := range ids {
		if _, ok := marks[id]; ok {
			continue
		}
		if m, ok := p.pend.marks[id]; ok {
			marks[id] = m
			continue
		}
		if f := p.flushing; f != nil {
			if m, ok := f.q.marks[id]; ok {
				marks[id] = m
				continue
			}
		}
		if m, ok := p.clickMarks.get(id); ok {
			marks[id] = m
			continue
		}
		marks[id] = -1
		missing = append(missing, id)
	}
	err := p.db.ForChunks(ctx, missing, func(ctx context.Context, in string, args []any) error {
		rows, err := p.conn.Query(ctx, "SELECT link_id, maxMerge(max_click_seq) FROM "+p.tbl(tLinkDaily)+
			" WHERE link_id IN ("+in+") GROUP BY link_id", args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var (
				id  string
				seq uint64
			)
			if err := rows.Scan(&id, &seq); err != nil {
				return err
			}
			marks[id] = int64(seq)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("load click marks: %w", err)
	}
	return marks, nil
}

func (p *Projection) writeCheckpoint(ctx context.Context, pos eventstore.Position) error {
	cols := []any{
		[]string{ProjectionName}, []uint64{pos.Commit}, []uint64{pos.Prepare}, []time.Time{time.Now().UTC()},
	}
	err := p.db.InsertColumns(ctx, tCheckpoint, "projection, commit_position, prepare_position, updated_at", cols, "")
	if err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	return nil
}

func (p *Projection) readCheckpoint(ctx context.Context) (eventstore.Position, error) {
	ctx, cancel := context.WithTimeout(ctx, p.opts.QueryTimeout)
	defer cancel()
	rows, err := p.conn.Query(ctx, "SELECT commit_position, prepare_position FROM "+p.tbl(tCheckpoint)+
		" WHERE projection = ? ORDER BY commit_position DESC, prepare_position DESC LIMIT 1", ProjectionName)
	if err != nil {
		return eventstore.Start, fmt.Errorf("read checkpoint: %w", err)
	}
	defer rows.Close()
	var pos eventstore.Position
	if rows.Next() {
		if err := rows.Scan(&pos.Commit, &pos.Prepare); err != nil {
			return eventstore.Start, fmt.Errorf("read checkpoint: %w", err)
		}
	}
	return pos, rows.Err()
}

// linkRow is a row of the links table: the state of a link after the event
// of version version.
type linkRow struct {
	id, code, domainID, name, workspaceID, projectID, originalURL string
	createdAt, updatedAt                                          time.Time
	archived, deleted                                             bool
	version, position                                             uint64
}

const linkColumns = "link_id, code, domain_id, name, workspace_id, project_id, original_url, created_at, updated_at, archived, deleted, version, event_position"

func str(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

func second(t time.Time) time.Time { return t.UTC().Truncate(time.Second) }

// applyLinks writes the new state of every link the events change: one row
// per link and batch, its version the last event's.
func (p *Projection) applyLinks(ctx context.Context, events []projections.Event) error {
	if len(events) == 0 {
		return nil
	}
	ids := make([]string, 0, len(events))
	for _, ev := range events {
		ids = append(ids, strings.TrimPrefix(ev.Stream, link.StreamPrefix))
	}
	states, err := p.linksOf(ctx, ids)
	if err != nil {
		return err
	}
	var (
		changed   []string
		isChanged = map[string]bool{}
	)
	for i := range events {
		ev := &events[i]
		id := ids[i]
		st := states[id]
		if st != nil && ev.Version <= st.version {
			continue // applied already
		}
		e, err := ev.Decode()
		if err != nil {
			if !errors.Is(err, domain.ErrUnknownEvent) {
				p.log.Warn("clickhouse projection: undecodable link event skipped",
					"stream", ev.Stream, "version", ev.Version, "err", err)
			}
			continue
		}
		next := linkRow{id: id}
		if st != nil {
			next = *st
		}
		switch e := e.(type) {
		case *link.Created:
			next = linkRow{
				id: id, code: e.Code, domainID: str(e.DomainID), name: e.Name,
				workspaceID: e.WorkspaceID, projectID: str(e.ProjectID), originalURL: e.OriginalURL,
				createdAt: second(e.At), updatedAt: second(e.At),
			}
		case *link.Updated:
			c := e.Changes
			if c.WorkspaceID.Set {
				next.workspaceID = c.WorkspaceID.V
			}
			if c.ProjectID.Set {
				next.projectID = c.ProjectID.V
			}
			if c.OriginalURL.Set {
				next.originalURL = c.OriginalURL.V
			}
			if c.Code.Set {
				next.code = c.Code.V
			}
			if c.Name.Set {
				next.name = c.Name.V
			}
			next.updatedAt = second(e.At)
		case *link.Archived:
			next.archived, next.updatedAt = true, second(e.At)
		case *link.Unarchived:
			next.archived, next.updatedAt = false, second(e.At)
		case *link.Deleted:
			next.deleted, next.updatedAt = true, second(e.At)
			if next.workspaceID == "" {
				next.workspaceID = e.WorkspaceID
			}
			if next.code == "" {
				next.code = e.Code
			}
			if next.domainID == "" {
				next.domainID = str(e.DomainID)
			}
		default:
			continue // a link event this table does not show
		}
		next.version, next.position = ev.Version, ev.Position.Commit
		if !isChanged[id] {
			isChanged[id] = true
			changed = append(changed, id)
		}
		states[id] = &next
	}
	if len(changed) > 0 {
		n := len(changed)
		var (
			idc, code, dom, name, ws, proj, url = make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
			created, updated                    = make([]time.Time, n), make([]time.Time, n)
			archived, deleted                   = make([]uint8, n), make([]uint8, n)
			version, position                   = make([]uint64, n), make([]uint64, n)
		)
		for i, id := range changed {
			r := states[id]
			idc[i], code[i], dom[i], name[i], ws[i], proj[i], url[i] = r.id, r.code, r.domainID, r.name, r.workspaceID, r.projectID, r.originalURL
			created[i], updated[i] = r.createdAt, r.updatedAt
			archived[i], deleted[i] = b2u(r.archived), b2u(r.deleted)
			version[i], position[i] = r.version, r.position
		}
		cols := []any{idc, code, dom, name, ws, proj, url, created, updated, archived, deleted, version, position}
		if err := p.db.InsertColumns(ctx, tLinks, linkColumns, cols, ""); err != nil {
			return err
		}
	}
	for id, st := range states {
		p.links.put(id, st)
	}
	return nil
}

func b2u(b bool) uint8 {
	if b {
		return 1
	}
	return 0
}

// linksOf returns the latest row of each link, nil for links never seen.
func (p *Projection) linksOf(ctx context.Context, ids []string) (map[string]*linkRow, error) {
	out := make(map[string]*linkRow)
	var missing []string
	for _, id := range ids {
		if _, ok := out[id]; ok {
			continue
		}
		if r, ok := p.links.get(id); ok {
			out[id] = r
			continue
		}
		out[id] = nil
		missing = append(missing, id)
	}
	err := p.db.ForChunks(ctx, missing, func(ctx context.Context, in string, args []any) error {
		rows, err := p.conn.Query(ctx, "SELECT "+linkColumns+" FROM "+p.tbl(tLinks)+
			" WHERE link_id IN ("+in+") ORDER BY version DESC LIMIT 1 BY link_id", args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var (
				r                 linkRow
				archived, deleted uint8
			)
			if err := rows.Scan(&r.id, &r.code, &r.domainID, &r.name, &r.workspaceID, &r.projectID, &r.originalURL,
				&r.createdAt, &r.updatedAt, &archived, &deleted, &r.version, &r.position); err != nil {
				return err
			}
			r.archived, r.deleted = archived == 1, deleted == 1
			r.createdAt, r.updatedAt = r.createdAt.UTC(), r.updatedAt.UTC()
			out[r.id] = &r
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("load links: %w", err)
	}
	return out, nil
}
