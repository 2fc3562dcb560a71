package clickhouse

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/linkd/linkd/domain/radar"
	"github.com/linkd/linkd/eventstore"
	"github.com/linkd/linkd/projections"
	"github.com/linkd/linkd/queries"
)

// Radar in ClickHouse: the page views and custom events of domain/radar, one
// row each in radar_events, and the visits cut from them in radar_sessions
// (docs/analytics.md). It is a projector of its own (RadarProjectionName,
// category "radar", its checkpoint in radar_checkpoint) on the connection
// of the statistics Projection, so that a replay of one does not empty the
// other. The sales of the visitors' clicks are read from sales, which the
// statistics Projection writes.
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

// RadarProjectionName is the Radar projector's name (replay --projection).
const RadarProjectionName = "clickhouse_radar"

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
)

// radar_daily: per project, UTC day, dimension and value, the hits and
// the unique visitors (uniq states) of radar_events, written by the view
// radar_daily_mv with every INSERT into radar_events. The reports read it
// for ranges of whole days. Every INSERT into radar_events has an
// insert_id (increasing) that radar_daily keeps as max_insert_id: an
// INSERT whose rows reached radar_events but not the view (a crash
// between the two) is found at start and rebuilt from radar_events.
var radarDailyColumns = []col{
	{"project_id", "String"},
	{"date", "Date"},
	{"dimension", "String"},
	{"value", "String"},
	{"hits", "UInt64"},
	{"visitors", "AggregateFunction(" + uniqFunc + ", String)"},
	{"max_insert_id", "AggregateFunction(max, UInt64)"},
}

// radar_clicks: per project and visitor who came through a short-link
// click, its first click and its latest country, from its hits with a
// click (the sales join of the reports), written by radar_clicks_mv.
var radarClicksColumns = []col{
	{"project_id", "String"},
	{"visitor_id", "String"},
	{"first_click", "AggregateFunction(argMin, String, DateTime)"},
	{"click_country", "AggregateFunction(argMax, String, DateTime)"},
	{"max_insert_id", "AggregateFunction(max, UInt64)"},
}

func radarClicksQuery(source string) string {
	return "SELECT project_id, visitor_id, argMinState(click_id, timestamp) AS first_click, " +
		"argMaxStateIf(country, timestamp, country != '') AS click_country, maxState(insert_id) AS max_insert_id FROM " + source +
		" WHERE click_id != '' GROUP BY project_id, visitor_id"
}

// radar_daily_hll: radar_daily's unique visitors as uniqHLL12 states
// (about 2.5 KB, merged in microseconds, where a uniq state of a busy day
// holds 65,536 hashes that cost milliseconds to merge), written by
// radar_daily_hll_mv. The reports count with them when a range has more
// visitors than radarExactLimit.
var radarHLLColumns = []col{
	{"project_id", "String"},
	{"date", "Date"},
	{"dimension", "String"},
	{"value", "String"},
	{"visitors", "AggregateFunction(uniqHLL12, String)"},
	{"max_insert_id", "AggregateFunction(max, UInt64)"},
}

// radarHLLQuery is radar_daily's rows (radarDailyQuery) with uniqHLL12
// states.
func radarHLLQuery(source string) string {
	return "SELECT project_id, date, tupleElement(dv, 1) AS dimension, tupleElement(dv, 2) AS value, " +
		"uniqHLL12State(visitor_id) AS visitors, maxState(insert_id) AS max_insert_id FROM " + source +
		" ARRAY JOIN " + radarDims + " AS dv GROUP BY project_id, date, dimension, value"
}

// radar_weekly_hll: radar_daily_hll's rows per week (Monday to Sunday,
// week is the Monday) instead of day, written by radar_weekly_hll_mv.
var radarWeeklyColumns = []col{
	{"project_id", "String"},
	{"week", "Date"},
	{"dimension", "String"},
	{"value", "String"},
	{"visitors", "AggregateFunction(uniqHLL12, String)"},
	{"max_insert_id", "AggregateFunction(max, UInt64)"},
}

func radarWeeklyQuery(source string) string {
	return "SELECT project_id, toMonday(date) AS week, tupleElement(dv, 1) AS dimension, tupleElement(dv, 2) AS value, " +
		"uniqHLL12State(visitor_id) AS visitors, maxState(insert_id) AS max_insert_id FROM " + source +
		" ARRAY JOIN " + radarDims + " AS dv GROUP BY project_id, week, dimension, value"
}

// radar_daily_sources: per project, UTC day a visit started on and its
// entry source (the source of its first hit, as the embedded projection
// counts it: radar_sessions.source is the first non-empty one), the visits,
// bounces and durations (sum of sign * ..., exact as radar_sessions is) and
// the visitors as uniq and uniqHLL12 states (the rows of sign 1: a visit's
// states all have its entry source), written by radar_daily_sources_mv
// with every INSERT into radar_sessions.
var radarSourcesColumns = []col{
	{"project_id", "String"},
	{"date", "Date"},
	{"source", "String"},
	{"visits", "Int64"},
	{"bounces", "Int64"},
	{"duration_ms", "Int64"},
	{"visitors", "AggregateFunction(" + uniqFunc + ", String)"},
	{"visitors_hll", "AggregateFunction(uniqHLL12, String)"},
	{"max_insert_id", "AggregateFunction(max, UInt64)"},
}

func radarSourcesQuery(source string) string {
	return "SELECT project_id, toDate(started_at) AS date, entry_source AS source, sum(sign) AS visits, sum(sign * is_bounce) AS bounces, " +
		"sum(sign * (1 - is_bounce) * (end_ms - start_ms)) AS duration_ms, " + uniqFunc + "StateIf(visitor_id, sign = 1) AS visitors, " +
		"uniqHLL12StateIf(visitor_id, sign = 1) AS visitors_hll, maxState(insert_id) AS max_insert_id FROM " + source +
		" GROUP BY project_id, date, source"
}

// radarViews are the views of radar_events and radar_sessions: view,
// target, its columns, its SELECT over a source, and the table it reads.
var radarViews = []struct {
	name, target string
	cols         []col
	query        func(string) string
	from         string
}{
	{tRadarDailyView, tRadarDaily, radarDailyColumns, radarDailyQuery, tRadarEvents},
	{tRadarClicksView, tRadarClicks, radarClicksColumns, radarClicksQuery, tRadarEvents},
	{tRadarHLLView, tRadarHLL, radarHLLColumns, radarHLLQuery, tRadarEvents},
	{tRadarWeeklyView, tRadarWeekly, radarWeeklyColumns, radarWeeklyQuery, tRadarEvents},
	{tRadarSourceView, tRadarSources, radarSourcesColumns, radarSourcesQuery, tRadarSessions},
}

// radarDailyQuery is the SELECT of radar_daily_mv over source: each row of
// radar_events counts in dimension "all", in "kind" (pageview or event),
// in "page" (page views) or "event" (custom events), and in "country",
// "browser", "os" and "hostname".
func radarDailyQuery(source string) string {
	return "SELECT project_id, date, tupleElement(dv, 1) AS dimension, tupleElement(dv, 2) AS value, count() AS hits, " +
		uniqFunc + "State(visitor_id) AS visitors, maxState(insert_id) AS max_insert_id FROM " + source +
		" ARRAY JOIN " + radarDims + " AS dv GROUP BY project_id, date, dimension, value"
}

// radarDims are the (dimension, value) pairs a row of radar_events counts
// in.
const radarDims = "arrayConcat([('all', ''), ('kind', toString(kind)), ('country', country), ('browser', browser), ('os', os), ('hostname', hostname)], " +
	"if(kind = 'pageview', [('page', pathname)], [('event', event_name)]))"

var radarEventColumns = []col{
	{"project_id", "String"},
	{"workspace_id", "String"},
	{"visitor_id", "String"},
	{"session_id", "String"},
	{"timestamp", "DateTime"},
	{"date", "Date"},
	{"kind", "Enum8('pageview' = 1, 'event' = 2)"},
	{"event_name", "String"},
	{"url", "String"},
	{"hostname", "String"},
	{"pathname", "String"},
	{"referrer", "String"},
	{"source", "String"},
	{"country", "String"},
	{"browser", "String"},
	{"os", "String"},
	{"device", "String"},
	{"props.key", "Array(String)"},
	{"props.value", "Array(String)"},
	{"click_id", "String"},
	{"link_id", "String"},
	{"stream_version", "UInt64"},
	{"position", "UInt64"},
	{"insert_id", "UInt64"},
}

var radarSessionColumns = []col{
	{"project_id", "String"},
	{"workspace_id", "String"},
	{"visitor_id", "String"},
	{"session_id", "String"},
	{"sign", "Int8"},
	{"version", "UInt64"},
	{"started_at", "DateTime"},
	{"ended_at", "DateTime"},
	{"start_ms", "Int64"},
	{"end_ms", "Int64"},
	{"duration_ms", "UInt64"},
	{"pageviews", "UInt32"},
	{"events", "UInt32"},
	{"is_bounce", "UInt8"},
	{"entry_page", "String"},
	{"exit_page", "String"},
	{"hostname", "String"},
	{"source", "String"},
	{"referrer", "String"},
	{"country", "String"},
	{"browser", "String"},
	{"os", "String"},
	{"device", "String"},
	{"click_id", "String"},
	{"link_id", "String"},
	{"position", "UInt64"},
	// Rows written before entry_source was added have their source.
	{"entry_source", "String DEFAULT source"},
	{"insert_id", "UInt64"},
}

func radarTables() []table {
	return []table{
		{name: tRadarEvents, cols: radarEventColumns,
			engine: "ENGINE = MergeTree PARTITION BY toYYYYMM(date) ORDER BY (project_id, date, visitor_id, timestamp)"},
		{name: tRadarSessions, cols: radarSessionColumns,
			engine: "ENGINE = CollapsingMergeTree(sign) PARTITION BY toYYYYMM(started_at) ORDER BY (project_id, started_at, session_id)"},
		{name: tRadarDaily, cols: radarDailyColumns,
			engine: "ENGINE = SummingMergeTree PARTITION BY toYYYYMM(date) ORDER BY (project_id, date, dimension, value) SETTINGS index_granularity = 256"},
		{name: tRadarClicks, cols: radarClicksColumns,
			engine: "ENGINE = AggregatingMergeTree ORDER BY (project_id, visitor_id) SETTINGS index_granularity = 1024"},
		{name: tRadarHLL, cols: radarHLLColumns,
			engine: "ENGINE = AggregatingMergeTree PARTITION BY toYYYYMM(date) ORDER BY (project_id, date, dimension, value) SETTINGS index_granularity = 256"},
		{name: tRadarWeekly, cols: radarWeeklyColumns,
			engine: "ENGINE = AggregatingMergeTree PARTITION BY toYYYYMM(week) ORDER BY (project_id, week, dimension, value) SETTINGS index_granularity = 256"},
		{name: tRadarSources, cols: radarSourcesColumns,
			engine: "ENGINE = SummingMergeTree PARTITION BY toYYYYMM(date) ORDER BY (project_id, date, source) SETTINGS index_granularity = 256"},
		{name: tRadarCheckpoint, cols: []col{{"projection", "String"}, {"commit_position", "UInt64"}, {"prepare_position", "UInt64"}, {"updated_at", "DateTime"}},
			engine: "ENGINE = ReplacingMergeTree(commit_position) ORDER BY projection"},
	}
}

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

// RadarProjection is the Radar projector and the Radar reports of
// ClickHouse (queries.RadarReadModel but for people and details, which the
// embedded projection answers: docs/decisions.md).
type RadarProjection struct {
	p *Projection // the connection, database and options

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

var _ projections.Projector = (*RadarProjection)(nil)

// NewRadar creates the Radar tables if missing on p's database and returns
// the Radar projector, which uses p's connection (close p after it).
func NewRadar(ctx context.Context, p *Projection) (*RadarProjection, error) {
	r := &RadarProjection{p: p, maxVisitors: 1 << 18}
	if err := r.ensureSchema(ctx); err != nil {
		return nil, err
	}
	return r, nil
}

func (r *RadarProjection) ensureSchema(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, r.p.opts.DDLTimeout)
	defer cancel()
	for _, t := range radarTables() {
		if err := r.p.ensureTable(ctx, t); err != nil {
			return fmt.Errorf("clickhouse radar: schema: %w", err)
		}
	}
	for _, v := range radarViews {
		q := "CREATE MATERIALIZED VIEW IF NOT EXISTS " + r.p.tbl(v.name) + " TO " + r.p.tbl(v.target) +
			" AS " + v.query(r.p.tbl(v.from))
		if err := r.p.conn.Exec(ctx, q); err != nil {
			return fmt.Errorf("clickhouse radar: create view %s: %w", v.name, err)
		}
	}
	return nil
}

// Name is RadarProjectionName.
func (r *RadarProjection) Name() string { return RadarProjectionName }

// Categories is the Radar streams.
func (r *RadarProjection) Categories() []string { return []string{radar.Category} }

// MaxBatch asks for large deliveries: each Apply writes a part per table.
func (r *RadarProjection) MaxBatch() int { return 32768 }

// Checkpoint is the position of the last event applied.
func (r *RadarProjection) Checkpoint(ctx context.Context) (eventstore.Position, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.loadLocked(ctx); err != nil {
		return eventstore.Start, err
	}
	return r.checkpoint, nil
}

// Reset drops the Radar tables and creates them again, empty.
func (r *RadarProjection) Reset(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.loaded = false
	dctx, cancel := context.WithTimeout(ctx, r.p.opts.DDLTimeout)
	defer cancel()
	var drop []table
	for _, v := range radarViews {
		drop = append(drop, table{name: v.name})
	}
	for _, t := range append(drop, radarTables()...) {
		if err := r.p.conn.Exec(dctx, "DROP TABLE IF EXISTS "+r.p.tbl(t.name)); err != nil {
			return fmt.Errorf("clickhouse radar: reset: drop %s: %w", t.name, err)
		}
	}
	return r.ensureSchema(ctx)
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
func (r *RadarProjection) loadLocked(ctx context.Context) error {
	if r.loaded {
		return nil
	}
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, r.p.opts.QueryTimeout)
	defer cancel()
	r.visitors = map[string]*visitorState{}
	r.checkpoint, r.maxWritten, r.newest, r.unknownBefore = eventstore.Start, 0, 0, math.MinInt64
	rows, err := r.p.conn.Query(ctx, "SELECT commit_position, prepare_position FROM "+r.p.tbl(tRadarCheckpoint)+
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
	if err := r.p.conn.QueryRow(ctx, "SELECT max(position) FROM "+r.p.tbl(tRadarEvents)).Scan(&evMax); err != nil {
		return fmt.Errorf("clickhouse radar: load: %w", err)
	}
	if err := r.p.conn.QueryRow(ctx, "SELECT max(position), max(end_ms) FROM "+r.p.tbl(tRadarSessions)).Scan(&sessMax, &endMax); err != nil {
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
		if err := r.p.conn.QueryRow(ctx, "SELECT max(insert_id), count() FROM "+r.p.tbl(t)).Scan(&m, &n); err != nil {
			return fmt.Errorf("clickhouse radar: load: %w", err)
		}
		last[t], count[t] = m, n
	}
	for _, v := range radarViews {
		var have, n uint64
		if err := r.p.conn.QueryRow(ctx, "SELECT maxMerge(max_insert_id), count() FROM "+r.p.tbl(v.target)).Scan(&have, &n); err != nil {
			return fmt.Errorf("clickhouse radar: load: %w", err)
		}
		where := "insert_id > " + strconv.FormatUint(have, 10)
		switch {
		case n == 0 && count[v.from] > 0:
			where = "1"
		case last[v.from] <= have:
			continue
		}
		q := "INSERT INTO " + r.p.tbl(v.target) + " (" + columnNames(v.cols) + ") " +
			v.query("(SELECT * FROM "+r.p.tbl(v.from)+" WHERE "+where+")")
		// A new table of a large database takes longer than a query.
		rctx, rcancel := context.WithTimeout(parent, r.p.opts.RecoveryTimeout)
		err := r.p.conn.Exec(rctx, q)
		rcancel()
		if err != nil {
			return fmt.Errorf("clickhouse radar: rebuild %s: %w", v.target, err)
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
func (r *RadarProjection) readSessions(ctx context.Context, where string, args ...any) ([]*session, error) {
	rows, err := r.p.conn.Query(ctx, sessionSelect+r.p.tbl(tRadarSessions)+" WHERE "+where+
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
func (r *RadarProjection) loadMarks(ctx context.Context, project string, visitors []string) error {
	return r.p.forChunks(ctx, visitors, func(ctx context.Context, in string, args []any) error {
		args = append([]any{project}, args...)
		where := "project_id = ? AND visitor_id IN (" + in + ")"
		for _, v := range args[1:] {
			st := r.state(project, v.(string))
			st.eventsMark, st.sessMark, st.marks = -1, -1, true
		}
		rows, err := r.p.conn.Query(ctx, "SELECT visitor_id, max(stream_version) FROM "+r.p.tbl(tRadarEvents)+" WHERE "+where+" GROUP BY visitor_id", args...)
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

func (r *RadarProjection) state(project, visitor string) *visitorState {
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
func (r *RadarProjection) Apply(ctx context.Context, events []projections.Event) error {
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

func (r *RadarProjection) applyLocked(ctx context.Context, events []projections.Event) error {
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
			r.p.log.Warn("clickhouse radar: undecodable event skipped", "stream", re.Stream, "version", re.Version, "err", err)
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
		cols := []any{[]string{RadarProjectionName}, []uint64{last.Commit}, []uint64{last.Prepare}, []time.Time{time.Now().UTC().Truncate(time.Second)}}
		if err := r.p.insertColumns(ctx, tRadarCheckpoint, "`projection`, commit_position, prepare_position, updated_at", cols, ""); err != nil {
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
func (r *RadarProjection) forget() {
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

func (r *RadarProjection) insertEvents(ctx context.Context, hits []radarHit, sessions []string) error {
	names := columnNames(radarEventColumns)
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
		if err := r.p.insertColumns(ctx, tRadarEvents, names, cols, ""); err != nil {
			return err
		}
		r.nextInsert++
	}
	return nil
}

func (r *RadarProjection) insertSessions(ctx context.Context, rows []sessionRow) error {
	names := columnNames(radarSessionColumns)
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
			pageviews[j], events[j], bounce[j] = s.pageviews, s.events, b2u(s.bounce())
			entry[j], exit[j], host[j], source[j], ref[j] = s.entry, s.exit, s.hostname, s.source, s.referrer
			entrySource[j], insertID[j] = s.entrySource, r.nextInsert
			country[j], browser[j], os[j], device[j], clickID[j], linkID[j], position[j] = s.country, s.browser, s.os, s.device, s.clickID, s.linkID, s.position
		}
		cols := []any{project, workspace, visitor, id, sign, version, started, ended, startMS, endMS, duration, pageviews, events, bounce,
			entry, exit, host, source, ref, country, browser, os, device, clickID, linkID, position, entrySource, insertID}
		if err := r.p.insertColumns(ctx, tRadarSessions, names, cols, ""); err != nil {
			return err
		}
		r.nextInsert++
	}
	return nil
}

var errNoRadar = errors.New("clickhouse radar: people and details are read from the embedded Radar projection")

// RadarPeople is not served by ClickHouse (see RadarProjection).
func (r *RadarProjection) RadarPeople(context.Context, queries.RadarRange, int, string) (queries.RadarPeoplePage, error) {
	return queries.RadarPeoplePage{}, errNoRadar
}

// RadarVisitor is not served by ClickHouse (see RadarProjection).
func (r *RadarProjection) RadarVisitor(context.Context, queries.RadarRange, string) (queries.RadarVisitorDetails, bool, error) {
	return queries.RadarVisitorDetails{}, false, errNoRadar
}
