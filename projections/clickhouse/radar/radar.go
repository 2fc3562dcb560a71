// Package radar is Radar in ClickHouse: the page views and custom events of
// domain/radar, one row each in radar_events, the visits cut from them in
// radar_sessions, and the reports read from them and from their aggregates
// (docs/analytics.md). The tables are those of the migrations of
// projections/clickhouse; the projector writes through the connection of the
// statistics projection (projections/clickhouse/stats), whose sales table the
// reports join.
package radar

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/linkd/linkd/domain/radar"
	"github.com/linkd/linkd/eventstore"
	"github.com/linkd/linkd/projections"
	ch "github.com/linkd/linkd/projections/clickhouse"
	"github.com/linkd/linkd/queries"
)

// Radar is a projector of its own (ProjectionName, category "radar", its
// checkpoint in radar_checkpoint) on the connection of the statistics
// projection, so that a replay of one does not empty the other. The sales of
// the visitors' clicks are read from sales, which the statistics projection
// writes.
//
// # Sessions
//
// A visit ends after radar.SessionTimeout without activity, as in the
// embedded projection, whose session ids it shares. radar_sessions is a
// CollapsingMergeTree(sign): each change of a visit writes the row of its
// previous state again with sign -1 and its new state with sign +1, in the
// same INSERT, so sum(sign), sum(sign * pageviews), ... are exact before
// and after merges (Plausible's sessions, without the version column of
// VersionedCollapsingMergeTree, which the SQL subset of 18.16 leaves out:
// the -1 row is always written with, and after, the row it cancels).
//
// # At least once
//
// ClickHouse has no transactions. Every row carries the stream version of
// its visitor's event (a visitor is a stream, delivered in version order)
// and the event's global position. Each Apply inserts radar_events, then
// radar_sessions, one INSERT per month (partition) in ascending order, so a
// failure leaves a prefix of each visitor's rows in each table. The
// projector keeps in memory the visits of the last SessionTimeout (every
// visit an event may continue) with two marks per visitor: the highest
// version in radar_events and the one folded into radar_sessions. After a
// failure, and at start, it forgets them and reloads: the highest position
// written (an event above it was never written: no lookup) and the visits
// that ended in the last SessionTimeout; a visitor's marks are read from
// the tables before one of its events at or below that position is applied.
// The checkpoint is written after the data.
//
// The instances of a deployment write these tables one at a time (ADR
// 0125): each turn starts and ends with Reload, so that what one holds in
// memory never predates rows another wrote.

// ProjectionName is the Radar projector's name (replay --projection).
const ProjectionName = "clickhouse_radar"

const (
	tRadarEvents     = "radar_events"
	tRadarSessions   = "radar_sessions"
	tRadarDaily      = "radar_daily"
	tRadarDailyView  = "radar_daily_mv"
	tRadarClicks     = "radar_clicks"
	tRadarClicksView = "radar_clicks_mv"
	tRadarHLL        = "radar_daily_hll"
	tRadarHLLView    = "radar_daily_hll_mv"
	tRadarWeekly     = "radar_weekly_hll"
	tRadarWeeklyView = "radar_weekly_hll_mv"
	tRadarSources    = "radar_daily_sources"
	tRadarSourceView = "radar_daily_sources_mv"
	tRadarCheckpoint = "radar_checkpoint"
	tSales           = "sales" // the statistics projection's
)

// tables are the Radar tables that hold data: Reset empties them.
var tables = []string{tRadarEvents, tRadarSessions, tRadarDaily, tRadarClicks, tRadarHLL, tRadarWeekly, tRadarSources, tRadarCheckpoint}

// views are the views of radar_events and radar_sessions. Their tables keep
// the max_insert_id of what they got: an INSERT whose rows reached
// radar_events or radar_sessions but not a view's table (a crash between the
// two) is found at start and rebuilt.
var views = []ch.View{
	ch.MustView(tRadarDailyView), ch.MustView(tRadarClicksView), ch.MustView(tRadarHLLView),
	ch.MustView(tRadarWeeklyView), ch.MustView(tRadarSourceView),
}

// The columns of the INSERTs into radar_events and radar_sessions.
var (
	eventColumns = ch.Columns("project_id", "workspace_id", "visitor_id", "session_id", "timestamp", "date", "kind", "event_name",
		"url", "hostname", "pathname", "referrer", "source", "country", "browser", "os", "device", "props.key", "props.value",
		"click_id", "link_id", "stream_version", "position", "insert_id")
	sessionColumns = ch.Columns("project_id", "workspace_id", "visitor_id", "session_id", "sign", "version", "started_at", "ended_at",
		"start_ms", "end_ms", "duration_ms", "pageviews", "events", "is_bounce", "entry_page", "exit_page", "hostname", "source",
		"referrer", "country", "browser", "os", "device", "click_id", "link_id", "position", "entry_source", "insert_id")
)

// session is the state of a visit: a row of radar_sessions.
type session struct {
	projectID, workspaceID, visitorID, id string
	startMS, endMS                        int64
	pageviews, events                     uint32
	entry, exit, hostname, source         string
	entrySource                           string // the first hit's source
	referrer, country, browser, os        string
	device, clickID, linkID               string
	version, position                     uint64
}

func (s *session) bounce() bool { return s.pageviews == 1 && s.events == 0 }

// visitorState is what the projector knows of a visitor.
type visitorState struct {
	sess *session // the latest visit (as written), nil: none known
	// The highest stream versions in radar_events and folded into
	// radar_sessions, when marks is true. A visitor loaded with its latest
	// visit only (at start) has none until they are read, or until it has
	// an event above the highest position written: then nothing of it can
	// come again that the tables do not already hold, and both are -1.
	eventsMark, sessMark int64
	marks                bool
}

// Projection is the Radar projector and the Radar reports of ClickHouse
// (queries.RadarReadModel but for people and details, which the embedded
// projection answers: docs/decisions.md).
type Projection struct {
	db   *ch.DB
	conn driver.Conn // db's
	opts ch.Options  // db's
	log  *slog.Logger

	mu         sync.Mutex
	loaded     bool                     // the state below matches the tables
	visitors   map[string]*visitorState // project \x00 visitor
	maxWritten uint64                   // highest position in the tables when loaded
	checkpoint eventstore.Position
	newest     int64 // latest activity seen (ms), to forget visits that are over
	// unknownBefore: visits that ended at or before this instant (ms) may
	// be in the tables and not in memory (not loaded, or forgotten).
	unknownBefore int64
	maxVisitors   int    // visitors kept in memory before the visits that are over are forgotten
	nextInsert    uint64 // insert_id of the next INSERT into radar_events
}

var (
	_ projections.Projector = (*Projection)(nil)
	_ projections.Reloader  = (*Projection)(nil)
)

// New returns the Radar projector on db, the statistics projection's
// connection (stats.Projection.DB; close that projection after this one),
// once the schema is up to date (db.Migrate: a restarted projector gets back
// a table or view that went missing).
func New(ctx context.Context, db *ch.DB) (*Projection, error) {
	if err := db.Migrate(ctx); err != nil {
		return nil, fmt.Errorf("clickhouse radar: schema: %w", err)
	}
	o := db.Options()
	return &Projection{db: db, conn: db.Conn(), opts: o, log: o.Logger, maxVisitors: 1 << 18}, nil
}

// Name is ProjectionName.
func (r *Projection) Name() string { return ProjectionName }

// Categories is the Radar streams.
func (r *Projection) Categories() []string { return []string{radar.Category} }

// MaxBatch asks for large deliveries: each Apply writes a part per table.
func (r *Projection) MaxBatch() int { return 32768 }

// Checkpoint is the position of the last event applied.
func (r *Projection) Checkpoint(ctx context.Context) (eventstore.Position, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.loadLocked(ctx); err != nil {
		return eventstore.Start, err
	}
	return r.checkpoint, nil
}

// Reload implements projections.Reloader: what is in memory (marks,
// visits, the highest position written) is read again from the tables
// before the next Apply. Nothing is pending: every Apply writes its rows.
func (r *Projection) Reload(context.Context) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.loaded = false
}

// Reset empties the Radar tables.
func (r *Projection) Reset(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.loaded = false
	ctx, cancel := context.WithTimeout(ctx, r.opts.DDLTimeout)
	defer cancel()
	for _, t := range tables {
		if err := r.conn.Exec(ctx, "TRUNCATE TABLE IF EXISTS "+r.db.Table(t)); err != nil {
			return fmt.Errorf("clickhouse radar: reset: empty %s: %w", t, err)
		}
	}
	return nil
}

func visitorKey(project, visitor string) string { return project + "\x00" + visitor }

// sessionID names the visit of a visitor that starts at ms (as the
// embedded projection does).
func sessionID(project, visitor string, ms int64) string {
	sum := sha256.Sum256([]byte(project + "\x00" + visitor + "\x00" + strconv.FormatInt(ms, 10)))
	return hex.EncodeToString(sum[:12])
}

// loadLocked reads, once after start or a failure, the checkpoint, the
// highest position written and the visits that may still go on.
func (r *Projection) loadLocked(ctx context.Context) error {
	if r.loaded {
		return nil
	}
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, r.opts.QueryTimeout)
	defer cancel()
	r.visitors = map[string]*visitorState{}
	r.checkpoint, r.maxWritten, r.newest, r.unknownBefore = eventstore.Start, 0, 0, math.MinInt64
	rows, err := r.conn.Query(ctx, "SELECT commit_position, prepare_position FROM "+r.db.Table(tRadarCheckpoint)+
		" ORDER BY commit_position DESC, prepare_position DESC LIMIT 1")
	if err != nil {
		return fmt.Errorf("clickhouse radar: read checkpoint: %w", err)
	}
	for rows.Next() {
		if err := rows.Scan(&r.checkpoint.Commit, &r.checkpoint.Prepare); err != nil {
			rows.Close()
			return fmt.Errorf("clickhouse radar: read checkpoint: %w", err)
		}
	}
	rows.Close()
	var evMax, sessMax uint64
	var endMax int64
	if err := r.conn.QueryRow(ctx, "SELECT max(position) FROM "+r.db.Table(tRadarEvents)).Scan(&evMax); err != nil {
		return fmt.Errorf("clickhouse radar: load: %w", err)
	}
	if err := r.conn.QueryRow(ctx, "SELECT max(position), max(end_ms) FROM "+r.db.Table(tRadarSessions)).Scan(&sessMax, &endMax); err != nil {
		return fmt.Errorf("clickhouse radar: load: %w", err)
	}
	r.maxWritten = max(evMax, sessMax)
	// Recovery of the views' tables: the INSERTs into radar_events and
	// radar_sessions (one sequence of insert_id) that a view did not write
	// (radar_clicks only has those with a click: what it lacks of the
	// others is nothing). An empty target, new in an existing database,
	// is filled from every row.
	last, count := map[string]uint64{}, map[string]uint64{}
	for _, t := range []string{tRadarEvents, tRadarSessions} {
		var m, n uint64
		if err := r.conn.QueryRow(ctx, "SELECT max(insert_id), count() FROM "+r.db.Table(t)).Scan(&m, &n); err != nil {
			return fmt.Errorf("clickhouse radar: load: %w", err)
		}
		last[t], count[t] = m, n
	}
	for _, v := range views {
		var have, n uint64
		if err := r.conn.QueryRow(ctx, "SELECT maxMerge(max_insert_id), count() FROM "+r.db.Table(v.Target)).Scan(&have, &n); err != nil {
			return fmt.Errorf("clickhouse radar: load: %w", err)
		}
		where := "insert_id > " + strconv.FormatUint(have, 10)
		switch {
		case n == 0 && count[v.Source] > 0:
			where = "1"
		case last[v.Source] <= have:
			continue
		}
		// A new table of a large database takes longer than a query.
		rctx, rcancel := context.WithTimeout(parent, r.opts.RecoveryTimeout)
		err := r.conn.Exec(rctx, r.db.Refill(v, v.Source, where))
		rcancel()
		if err != nil {
			return fmt.Errorf("clickhouse radar: rebuild %s: %w", v.Target, err)
		}
	}
	r.nextInsert = max(last[tRadarEvents], last[tRadarSessions]) + 1
	r.newest = endMax
	if r.maxWritten > 0 {
		// The visits an event may still continue: those that ended in the
		// last SessionTimeout (and some) of the latest activity.
		floor := endMax - radar.SessionTimeout.Milliseconds() - 5*time.Minute.Milliseconds()
		r.unknownBefore = floor
		found, err := r.readSessions(ctx, "end_ms >= ?", floor)
		if err != nil {
			return fmt.Errorf("clickhouse radar: load visits: %w", err)
		}
		for _, s := range found {
			r.visitors[visitorKey(s.projectID, s.visitorID)] = &visitorState{sess: s}
		}
	}
	r.loaded = true
	return nil
}

// sessionSelect reads the latest state of each visit (the row of the
// highest version, when it is not cancelled).
const sessionSelect = "SELECT project_id, visitor_id, session_id, argMax(workspace_id, version), argMax(start_ms, version), argMax(end_ms, version), " +
	"argMax(pageviews, version), argMax(events, version), argMax(entry_page, version), argMax(exit_page, version), argMax(hostname, version), " +
	"argMax(source, version), argMax(entry_source, version), argMax(referrer, version), argMax(country, version), argMax(browser, version), argMax(os, version), " +
	"argMax(device, version), argMax(click_id, version), argMax(link_id, version), max(version), argMax(position, version) FROM "

// readSessions returns the latest visit of each visitor among the rows of
// radar_sessions that match where.
func (r *Projection) readSessions(ctx context.Context, where string, args ...any) ([]*session, error) {
	rows, err := r.conn.Query(ctx, sessionSelect+r.db.Table(tRadarSessions)+" WHERE "+where+
		" GROUP BY project_id, visitor_id, session_id HAVING argMax(sign, version) = 1", args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	latest := map[string]*session{}
	for rows.Next() {
		s := &session{}
		if err := rows.Scan(&s.projectID, &s.visitorID, &s.id, &s.workspaceID, &s.startMS, &s.endMS, &s.pageviews, &s.events,
			&s.entry, &s.exit, &s.hostname, &s.source, &s.entrySource, &s.referrer, &s.country, &s.browser, &s.os, &s.device,
			&s.clickID, &s.linkID, &s.version, &s.position); err != nil {
			return nil, err
		}
		k := visitorKey(s.projectID, s.visitorID)
		if o := latest[k]; o == nil || s.version > o.version {
			latest[k] = s
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	out := make([]*session, 0, len(latest))
	for _, s := range latest {
		out = append(out, s)
	}
	return out, nil
}

// loadMarks reads the marks and latest visit of visitors (keys of one
// project).
func (r *Projection) loadMarks(ctx context.Context, project string, visitors []string) error {
	return r.db.ForChunks(ctx, visitors, func(ctx context.Context, in string, args []any) error {
		args = append([]any{project}, args...)
		where := "project_id = ? AND visitor_id IN (" + in + ")"
		for _, v := range args[1:] {
			st := r.state(project, v.(string))
			st.eventsMark, st.sessMark, st.marks = -1, -1, true
		}
		rows, err := r.conn.Query(ctx, "SELECT visitor_id, max(stream_version) FROM "+r.db.Table(tRadarEvents)+" WHERE "+where+" GROUP BY visitor_id", args...)
		if err != nil {
			return err
		}
		for rows.Next() {
			var v string
			var m uint64
			if err := rows.Scan(&v, &m); err != nil {
				rows.Close()
				return err
			}
			r.state(project, v).eventsMark = int64(m)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		found, err := r.readSessions(ctx, where, args...)
		if err != nil {
			return err
		}
		for _, s := range found {
			st := r.state(project, s.visitorID)
			st.sess, st.sessMark = s, int64(s.version)
		}
		return nil
	})
}

func (r *Projection) state(project, visitor string) *visitorState {
	k := visitorKey(project, visitor)
	st := r.visitors[k]
	if st == nil {
		st = &visitorState{}
		r.visitors[k] = st
	}
	return st
}

// radarHit is a decoded page view or custom event.
type radarHit struct {
	re    eventstore.RecordedEvent
	hit   *radar.Hit
	event bool
	name  string
	props map[string]string
}

// Apply writes a batch: its new page views and events, the new states of
// the visits they change, then the checkpoint.
func (r *Projection) Apply(ctx context.Context, events []projections.Event) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.loadLocked(ctx); err != nil {
		return err
	}
	if err := r.applyLocked(ctx, events); err != nil {
		r.loaded = false // what is in memory may be ahead of the tables
		return fmt.Errorf("clickhouse radar: apply: %w", err)
	}
	return nil
}

func (r *Projection) applyLocked(ctx context.Context, events []projections.Event) error {
	last := r.checkpoint
	var hits []radarHit
	for i := range events {
		ev := &events[i]
		re := ev.RecordedEvent
		if last.Less(re.Position) {
			last = re.Position
		}
		if !strings.HasPrefix(re.Stream, radar.StreamPrefix) || (re.Type != radar.EventPageviewRecorded && re.Type != radar.EventRecordedName) {
			continue
		}
		e, err := ev.Decode()
		if err != nil {
			r.log.Warn("clickhouse radar: undecodable event skipped", "stream", re.Stream, "version", re.Version, "err", err)
			continue
		}
		switch e := e.(type) {
		case *radar.PageviewRecorded:
			hits = append(hits, radarHit{re: re, hit: &e.Hit})
		case *radar.EventRecorded:
			hits = append(hits, radarHit{re: re, hit: &e.Hit, event: true, name: e.Name, props: e.Props})
		}
	}
	// Marks and latest visit, from the tables, of the visitors with an
	// event that may have been written, or that may continue a visit not
	// in memory.
	missing := map[string][]string{}
	timeout := radar.SessionTimeout.Milliseconds()
	for _, h := range hits {
		st := r.visitors[visitorKey(h.hit.ProjectID, h.hit.VisitorID)]
		if st != nil && st.marks {
			continue
		}
		if h.re.Position.Commit > r.maxWritten && (st != nil || h.hit.At.UnixMilli()-timeout > r.unknownBefore) {
			continue
		}
		missing[h.hit.ProjectID] = append(missing[h.hit.ProjectID], h.hit.VisitorID)
	}
	for project, vs := range missing {
		sort.Strings(vs)
		vs = compactStrings(vs)
		if err := r.loadMarks(ctx, project, vs); err != nil {
			return fmt.Errorf("load marks: %w", err)
		}
	}
	type change struct{ old, cur *session }
	var (
		evRows  []radarHit
		evSess  []string
		changed = map[string]*change{}
		order   []string
	)
	for _, h := range hits {
		st := r.state(h.hit.ProjectID, h.hit.VisitorID)
		if !st.marks {
			// Above the highest position written (else its marks were
			// read above): none of its events is in the tables yet.
			st.eventsMark, st.sessMark, st.marks = -1, -1, true
		}
		v := int64(h.re.Version)
		ms := h.hit.At.UnixMilli()
		r.newest = max(r.newest, ms)
		s := st.sess
		if v > st.sessMark {
			pv, ev := uint32(1), uint32(0)
			if h.event {
				pv, ev = 0, 1
			}
			if s == nil || ms-s.endMS > timeout {
				s = &session{
					projectID: h.hit.ProjectID, workspaceID: h.hit.WorkspaceID, visitorID: h.hit.VisitorID,
					id: sessionID(h.hit.ProjectID, h.hit.VisitorID, ms), startMS: ms, endMS: ms, pageviews: pv, events: ev,
					entry: h.hit.Pathname, exit: h.hit.Pathname, hostname: h.hit.Hostname, source: h.hit.Source, entrySource: h.hit.Source, referrer: h.hit.Referrer,
					country: h.hit.Country, browser: h.hit.Browser, os: h.hit.OS, device: h.hit.Device,
					clickID: h.hit.ClickID, linkID: h.hit.LinkID,
				}
				changed[s.id] = &change{cur: s}
				order = append(order, s.id)
			} else {
				c := changed[s.id]
				if c == nil {
					c = &change{old: s}
					changed[s.id] = c
					order = append(order, s.id)
				}
				n := *s
				s = &n
				c.cur = s
				s.endMS = max(s.endMS, ms)
				s.pageviews += pv
				s.events += ev
				if !h.event {
					s.exit = h.hit.Pathname
				}
				if s.source == "" {
					s.source = h.hit.Source
				}
				if s.clickID == "" {
					s.clickID, s.linkID = h.hit.ClickID, h.hit.LinkID
				}
			}
			s.version, s.position = uint64(v), h.re.Position.Commit
			st.sess, st.sessMark = s, v
		}
		if v > st.eventsMark {
			evRows = append(evRows, h)
			// The visit the event belongs to: the visitor's current one.
			id := ""
			if st.sess != nil {
				id = st.sess.id
			}
			evSess = append(evSess, id)
			st.eventsMark = v
		}
	}
	if err := r.insertEvents(ctx, evRows, evSess); err != nil {
		return err
	}
	var rows []sessionRow
	for _, id := range order {
		c := changed[id]
		if c.old != nil {
			rows = append(rows, sessionRow{c.old, -1})
		}
		rows = append(rows, sessionRow{c.cur, 1})
	}
	if err := r.insertSessions(ctx, rows); err != nil {
		return err
	}
	if r.checkpoint != last {
		cols := []any{[]string{ProjectionName}, []uint64{last.Commit}, []uint64{last.Prepare}, []time.Time{time.Now().UTC().Truncate(time.Second)}}
		if err := r.db.InsertColumns(ctx, tRadarCheckpoint, "`projection`, commit_position, prepare_position, updated_at", cols, ""); err != nil {
			return fmt.Errorf("checkpoint: %w", err)
		}
		r.checkpoint = last
	}
	r.forget()
	return nil
}

// forget drops the visitors whose latest visit is over (no event can
// continue it) when they are many: at most their marks are read again,
// for an event that comes again after a failure.
func (r *Projection) forget() {
	if len(r.visitors) < r.maxVisitors {
		return
	}
	cutoff := r.newest - radar.SessionTimeout.Milliseconds() - 5*time.Minute.Milliseconds()
	for k, st := range r.visitors {
		if st.sess == nil || st.sess.endMS < cutoff {
			if st.sess != nil {
				r.unknownBefore = max(r.unknownBefore, st.sess.endMS)
			}
			delete(r.visitors, k)
		}
	}
}

func compactStrings(s []string) []string {
	out := s[:0]
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}

type sessionRow struct {
	s    *session
	sign int8
}

func monthOf(ms int64) int {
	t := time.UnixMilli(ms).UTC()
	return t.Year()*100 + int(t.Month())
}

// byMonth splits indexes 0..n-1 by the month of each, ascending.
func byMonth(n int, ms func(i int) int64) [][]int {
	groups := map[int][]int{}
	var months []int
	for i := range n {
		m := monthOf(ms(i))
		if _, ok := groups[m]; !ok {
			months = append(months, m)
		}
		groups[m] = append(groups[m], i)
	}
	sort.Ints(months)
	out := make([][]int, len(months))
	for i, m := range months {
		out[i] = groups[m]
	}
	return out
}

func (r *Projection) insertEvents(ctx context.Context, hits []radarHit, sessions []string) error {
	for _, idx := range byMonth(len(hits), func(i int) int64 { return hits[i].hit.At.UnixMilli() }) {
		n := len(idx)
		var (
			project, workspace, visitor, sess, name, url, host, path, ref, source = make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
			country, browser, os, device, clickID, linkID, kind                   = make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
			ts, date                                                              = make([]time.Time, n), make([]time.Time, n)
			keys, values                                                          = make([][]string, n), make([][]string, n)
			version, position, insertID                                           = make([]uint64, n), make([]uint64, n), make([]uint64, n)
		)
		for j, i := range idx {
			h := hits[i]
			x := h.hit
			project[j], workspace[j], visitor[j], sess[j] = x.ProjectID, x.WorkspaceID, x.VisitorID, sessions[i]
			at := x.At.UTC()
			ts[j] = at.Truncate(time.Second)
			date[j] = time.Date(at.Year(), at.Month(), at.Day(), 0, 0, 0, 0, time.UTC)
			kind[j] = "pageview"
			if h.event {
				kind[j], name[j] = "event", h.name
			}
			url[j], host[j], path[j], ref[j], source[j] = x.URL, x.Hostname, x.Pathname, x.Referrer, x.Source
			country[j], browser[j], os[j], device[j], clickID[j], linkID[j] = x.Country, x.Browser, x.OS, x.Device, x.ClickID, x.LinkID
			ks := make([]string, 0, len(h.props))
			for k := range h.props {
				ks = append(ks, k)
			}
			sort.Strings(ks)
			vs := make([]string, len(ks))
			for k, key := range ks {
				vs[k] = h.props[key]
			}
			keys[j], values[j] = ks, vs
			version[j], position[j], insertID[j] = h.re.Version, h.re.Position.Commit, r.nextInsert
		}
		cols := []any{project, workspace, visitor, sess, ts, date, kind, name, url, host, path, ref, source,
			country, browser, os, device, keys, values, clickID, linkID, version, position, insertID}
		if err := r.db.InsertColumns(ctx, tRadarEvents, eventColumns, cols, ""); err != nil {
			return err
		}
		r.nextInsert++
	}
	return nil
}

func (r *Projection) insertSessions(ctx context.Context, rows []sessionRow) error {
	for _, idx := range byMonth(len(rows), func(i int) int64 { return rows[i].s.startMS }) {
		n := len(idx)
		var (
			project, workspace, visitor, id, entry, exit, host, source, ref = make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
			entrySource                                                     = make([]string, n)
			insertID                                                        = make([]uint64, n)
			country, browser, os, device, clickID, linkID                   = make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
			sign                                                            = make([]int8, n)
			version, duration, position                                     = make([]uint64, n), make([]uint64, n), make([]uint64, n)
			started, ended                                                  = make([]time.Time, n), make([]time.Time, n)
			startMS, endMS                                                  = make([]int64, n), make([]int64, n)
			pageviews, events                                               = make([]uint32, n), make([]uint32, n)
			bounce                                                          = make([]uint8, n)
		)
		for j, i := range idx {
			s := rows[i].s
			project[j], workspace[j], visitor[j], id[j], sign[j], version[j] = s.projectID, s.workspaceID, s.visitorID, s.id, rows[i].sign, s.version
			started[j], ended[j] = time.UnixMilli(s.startMS).UTC().Truncate(time.Second), time.UnixMilli(s.endMS).UTC().Truncate(time.Second)
			startMS[j], endMS[j], duration[j] = s.startMS, s.endMS, uint64(s.endMS-s.startMS)
			pageviews[j], events[j] = s.pageviews, s.events
			if s.bounce() {
				bounce[j] = 1
			}
			entry[j], exit[j], host[j], source[j], ref[j] = s.entry, s.exit, s.hostname, s.source, s.referrer
			entrySource[j], insertID[j] = s.entrySource, r.nextInsert
			country[j], browser[j], os[j], device[j], clickID[j], linkID[j], position[j] = s.country, s.browser, s.os, s.device, s.clickID, s.linkID, s.position
		}
		cols := []any{project, workspace, visitor, id, sign, version, started, ended, startMS, endMS, duration, pageviews, events, bounce,
			entry, exit, host, source, ref, country, browser, os, device, clickID, linkID, position, entrySource, insertID}
		if err := r.db.InsertColumns(ctx, tRadarSessions, sessionColumns, cols, ""); err != nil {
			return err
		}
		r.nextInsert++
	}
	return nil
}

var errNoRadar = errors.New("clickhouse radar: people and details are read from the embedded Radar projection")

// RadarPeople is not served by ClickHouse (see Projection).
func (r *Projection) RadarPeople(context.Context, queries.RadarRange, int, string) (queries.RadarPeoplePage, error) {
	return queries.RadarPeoplePage{}, errNoRadar
}

// RadarVisitor is not served by ClickHouse (see Projection).
func (r *Projection) RadarVisitor(context.Context, queries.RadarRange, string) (queries.RadarVisitorDetails, bool, error) {
	return queries.RadarVisitorDetails{}, false, errNoRadar
}
