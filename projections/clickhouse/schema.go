package clickhouse

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// schemaVersion is recorded in schema_migrations once ensureSchema has
// brought every table to the shape below. Raise it with every change, and
// describe the change in schemaChanges.
const schemaVersion = 4

var schemaChanges = map[uint32]string{
	1: "clicks, link_clicks_daily, workspace_clicks_daily, link_clicks_daily_breakdown, workspace_clicks_daily_breakdown, links, projection_checkpoint",
	2: "daily tables filled from clicks_daily_input (aggregates written at most every FlushInterval); breakdowns as maps in link_clicks_daily_breakdown_v2, workspace_clicks_daily_breakdown_v2 with breakdown_values; final records of past days in link_clicks_daily_final, workspace_clicks_daily_final; link_clicks_daily_breakdown and workspace_clicks_daily_breakdown no longer written",
	3: "final records (link_clicks_daily_final, workspace_clicks_daily_final) no longer hold breakdown maps: breakdowns are read from the breakdown tables for every day",
	4: "leads and sales: one row per recorded conversion (ReplacingMergeTree by conversion_id)",
}

// col is a column of a table: its name and ClickHouse type.
type col struct{ name, typ string }

// table describes a table. Columns are only ever added at the end (never
// renamed, never retyped): ensureSchema adds the ones an older table lacks.
// A change of engine or sort key makes a new table named <name>_v2.
type table struct {
	name   string
	cols   []col
	engine string // ENGINE ... PARTITION BY ... ORDER BY ...
}

// view is a materialized view from source into target.
type view struct {
	name, source, target string
	// query renders the SELECT of the view over a source (the table the
	// view reads, or a subquery): the same text rebuilds the target in
	// recovery.
	query func(source string) string
}

// Table names: the stable ones of docs/analytics.md.
const (
	tClicks             = "clicks"
	tDailyInput         = "clicks_daily_input" // Null: the projector writes the daily tables through it
	tLinkDaily          = "link_clicks_daily"
	tWorkspaceDaily     = "workspace_clicks_daily"
	tLinkBreakdown      = "link_clicks_daily_breakdown_v2"
	tWorkspaceBreakdown = "workspace_clicks_daily_breakdown_v2"
	tValues             = "breakdown_values"
	tLinkFinal          = "link_clicks_daily_final"
	tWorkspaceFinal     = "workspace_clicks_daily_final"
	inputSuffix         = "_input" // the Null table a breakdown table is written through
	tLinks              = "links"
	tCheckpoint         = "projection_checkpoint"
	tMigrations         = "schema_migrations"
)

// Tables and views of schema version 1 that version 2 no longer writes.
// Migration drops the views and the Null input tables (they hold nothing);
// the two breakdown tables keep their data for analysts until a replay
// (Reset drops them).
var (
	legacyViews      = []string{"link_clicks_daily_breakdown_mv", "workspace_clicks_daily_breakdown_mv"}
	legacyInputs     = []string{"link_clicks_daily_breakdown_input", "workspace_clicks_daily_breakdown_input"}
	legacyBreakdowns = []string{"link_clicks_daily_breakdown", "workspace_clicks_daily_breakdown"}
)

// dailyCounters are the counters shared by both daily tables, with the
// expression that computes each from clicks.
var dailyCounters = []struct{ name, expr string }{
	{"clicks", "count()"},
	{"qr_scans", "countIf(qr = 1)"},
	{"direct_clicks", "countIf(qr = 0)"},
	{"chrome_clicks", "countIf(lower(browser) = 'chrome')"},
	{"ios_clicks", "countIf(lower(os) = 'ios')"},
	{"android_clicks", "countIf(lower(os) = 'android')"},
}

// uniqFunc counts unique visitors (clicks without a visitor key count in
// no visitor). uniq keeps the 32-bit hashes of up to 65536 visitors per day
// and scope (exact but for hash collisions), then samples them (about 1%
// error): its state stays small (at most 256 KiB). Merging 30 days of the
// busiest workspace of 10 million clicks took 27 ms of CPU with uniq, 59 ms
// with uniqExact.
const uniqFunc = "uniq"

// dailyTable is link_clicks_daily (withSeq: with the dedup mark) or
// workspace_clicks_daily. Their rows are few but carry unique-visitor
// states, and ClickHouse decodes every row of each granule it reads: a small
// index_granularity keeps a query for one key from decoding the states of its
// neighbours (measured on 10 million clicks, uniqMerge of the busiest link's
// 30 days: 186 ms of CPU at the default 8192, 55 ms at 256, 26 ms at 32,
// 22 ms at 8, 10 ms for its own rows alone; workspace rows are fewer and
// fatter: 323 ms at 8192, 35 ms at 4).
func dailyTable(name string, keys []col, orderBy string, granularity int, withSeq bool) table {
	cols := append([]col{}, keys...)
	for _, c := range dailyCounters {
		cols = append(cols, col{c.name, "UInt64"})
	}
	cols = append(cols,
		col{"unique_visitors", "AggregateFunction(" + uniqFunc + ", String)"},
		col{"first_click", "AggregateFunction(min, DateTime)"},
		col{"last_click", "AggregateFunction(max, DateTime)"},
	)
	if withSeq {
		cols = append(cols, col{"max_click_seq", "AggregateFunction(max, UInt64)"})
	}
	cols = append(cols, col{"max_insert_id", "AggregateFunction(max, UInt64)"})
	return table{
		name: name,
		cols: cols,
		engine: "ENGINE = SummingMergeTree PARTITION BY toYYYYMM(date) ORDER BY " + orderBy +
			" SETTINGS index_granularity = " + strconv.Itoa(granularity),
	}
}

func dailyQuery(keys string, withSeq bool) func(string) string {
	return func(source string) string {
		var b strings.Builder
		b.WriteString("SELECT " + keys)
		for _, c := range dailyCounters {
			fmt.Fprintf(&b, ", %s AS %s", c.expr, c.name)
		}
		b.WriteString(", " + uniqFunc + "StateIf(visitor, visitor != '') AS unique_visitors")
		b.WriteString(", minState(timestamp) AS first_click, maxState(timestamp) AS last_click")
		if withSeq {
			b.WriteString(", maxState(click_seq) AS max_click_seq")
		}
		b.WriteString(", maxState(insert_id) AS max_insert_id")
		b.WriteString(" FROM " + source + " GROUP BY " + keys)
		return b.String()
	}
}

// breakdownQuery passes the projector's rows through (one per link or
// workspace and day, its value keys and their clicks, counted already) and
// adds the max_insert_id state of each.
func breakdownQuery(key string) func(string) string {
	return func(source string) string {
		return "SELECT " + key + ", date, keys AS `breakdownMap.key`, counts AS `breakdownMap.clicks`, " +
			"arrayReduce('maxState', [insert_id]) AS max_insert_id FROM " + source
	}
}

// dimensionType is the type of breakdown_values.dimension: an Enum8 of the
// dimension names (a new dimension extends it with MODIFY COLUMN).
var dimensionType = func() string {
	var b strings.Builder
	b.WriteString("Enum8(")
	for i, d := range dimensions {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "'%s' = %d", d.name, i+1)
	}
	b.WriteString(")")
	return b.String()
}()

// breakdownTables is a breakdown table and its input. A row holds, for one
// link (or workspace) and day, a map from value keys (see valueKey) to
// clicks: breakdownMap is a Nested column whose name ends in "Map", which
// SummingMergeTree sums key by key when it merges rows (on 18.16 as on
// current versions; String keys would not be summed by 18.16, hence the
// numeric keys and breakdown_values). One row per cell and flush instead of
// one per cell, dimension and value: about 0.3 rows a click instead of 6 to
// 7, measured over 10 M clicks. The granularity is small
// because a row carries up to hundreds of keys and a query wants one key's
// 30 rows.
func breakdownTables(name, key string, granularity int) []table {
	return []table{
		{
			name: name,
			cols: []col{
				{key, "String"}, {"date", "Date"},
				{"breakdownMap.key", "Array(UInt64)"}, {"breakdownMap.clicks", "Array(UInt64)"},
				{"max_insert_id", "AggregateFunction(max, UInt64)"},
			},
			engine: "ENGINE = SummingMergeTree PARTITION BY toYYYYMM(date) ORDER BY (" + key + ", date)" +
				" SETTINGS index_granularity = " + strconv.Itoa(granularity),
		},
		{
			// The projector counts the breakdowns and writes them here
			// (Null: nothing is stored); the view adds the max_insert_id
			// state.
			name: name + inputSuffix,
			cols: []col{
				{key, "String"}, {"date", "Date"}, {"keys", "Array(UInt64)"}, {"counts", "Array(UInt64)"},
				{"insert_id", "UInt64"},
			},
			engine: "ENGINE = Null",
		},
	}
}

// dailyInputColumns are the columns of clicks that the daily views read:
// the projector writes them to clicks_daily_input when it flushes.
var dailyInputColumns = []col{
	{"link_id", "String"}, {"workspace_id", "String"}, {"date", "Date"}, {"timestamp", "DateTime"},
	{"qr", "UInt8"}, {"browser", "String"}, {"os", "String"}, {"visitor", "String"},
	{"click_seq", "UInt64"}, {"insert_id", "UInt64"},
}

func tables() []table {
	return slices.Concat([]table{
		{
			name:   tClicks,
			cols:   clickTableColumns(),
			engine: "ENGINE = MergeTree PARTITION BY toYYYYMM(date) ORDER BY (workspace_id, link_id, timestamp)",
		},
		{name: tDailyInput, cols: dailyInputColumns, engine: "ENGINE = Null"},
		dailyTable(tLinkDaily, []col{{"link_id", "String"}, {"date", "Date"}, {"workspace_id", "String"}}, "(link_id, date, workspace_id)", 8, true),
		dailyTable(tWorkspaceDaily, []col{{"workspace_id", "String"}, {"date", "Date"}}, "(workspace_id, date)", 4, false),
		{
			name: tValues,
			cols: []col{{"key", "UInt64"}, {"dimension", dimensionType}, {"value", "String"}},
			// The same entry may be written more than once: a
			// ReplacingMergeTree folds the copies.
			engine: "ENGINE = ReplacingMergeTree ORDER BY key SETTINGS index_granularity = 256",
		},
		finalTable(tLinkFinal, "link_id", true),
		finalTable(tWorkspaceFinal, "workspace_id", false),
		{
			name: tLinks,
			cols: []col{
				{"link_id", "String"}, {"code", "String"}, {"domain_id", "String"}, {"name", "String"},
				{"workspace_id", "String"}, {"project_id", "String"}, {"original_url", "String"},
				{"created_at", "DateTime"}, {"updated_at", "DateTime"},
				{"archived", "UInt8"}, {"deleted", "UInt8"},
				{"version", "UInt64"}, {"event_position", "UInt64"},
			},
			engine: "ENGINE = ReplacingMergeTree(version) ORDER BY link_id",
		},
		{
			name: tCheckpoint,
			cols: []col{
				{"projection", "String"}, {"commit_position", "UInt64"}, {"prepare_position", "UInt64"},
				{"updated_at", "DateTime"},
			},
			engine: "ENGINE = ReplacingMergeTree(commit_position) ORDER BY projection",
		},
	}, breakdownTables(tLinkBreakdown, "link_id", 32), breakdownTables(tWorkspaceBreakdown, "workspace_id", 8), conversionTables())
}

func views() []view {
	return []view{
		{name: tLinkDaily + "_mv", source: tDailyInput, target: tLinkDaily, query: dailyQuery("link_id, date, workspace_id", true)},
		{name: tWorkspaceDaily + "_mv", source: tDailyInput, target: tWorkspaceDaily, query: dailyQuery("workspace_id, date", false)},
		{name: tLinkBreakdown + "_mv", source: tLinkBreakdown + inputSuffix, target: tLinkBreakdown, query: breakdownQuery("link_id")},
		{name: tWorkspaceBreakdown + "_mv", source: tWorkspaceBreakdown + inputSuffix, target: tWorkspaceBreakdown, query: breakdownQuery("workspace_id")},
	}
}

func (p *Projection) tbl(name string) string { return "`" + p.db + "`." + name }

func (t table) columnList() string {
	names := make([]string, len(t.cols))
	for i, c := range t.cols {
		names[i] = quoteIdent(c.name)
	}
	return strings.Join(names, ", ")
}

// quoteIdent backquotes a column name: a Nested column's has a dot, and
// current ClickHouse parses some plain names as keywords in a CREATE TABLE
// (projection_checkpoint.projection is a syntax error there unquoted).
func quoteIdent(name string) string {
	return "`" + name + "`"
}

func tableByName(name string) table {
	for _, t := range tables() {
		if t.name == name {
			return t
		}
	}
	panic("clickhouse: no table " + name)
}

// ensureSchema creates the database, every table and view that is missing,
// and every column an older table lacks; then records schemaVersion. It is
// idempotent: running it on an up-to-date database changes nothing.
func (p *Projection) ensureSchema(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, p.opts.DDLTimeout)
	defer cancel()
	if err := p.conn.Exec(ctx, "CREATE DATABASE IF NOT EXISTS `"+p.db+"`"); err != nil {
		return fmt.Errorf("create database %s: %w", p.db, err)
	}
	if err := p.conn.Exec(ctx, "CREATE TABLE IF NOT EXISTS "+p.tbl(tMigrations)+
		" (version UInt32, description String, applied_at DateTime) ENGINE = MergeTree ORDER BY version"); err != nil {
		return fmt.Errorf("create %s: %w", tMigrations, err)
	}
	var current uint32
	if err := p.conn.QueryRow(ctx, "SELECT max(version) FROM "+p.tbl(tMigrations)).Scan(&current); err != nil {
		return fmt.Errorf("read %s: %w", tMigrations, err)
	}
	for _, t := range tables() {
		if err := p.ensureTable(ctx, t); err != nil {
			return err
		}
	}
	if current < schemaVersion {
		// A new version may define a view differently: views hold no
		// data, so they are all made again. Version 1's breakdown views
		// and their Null inputs go (see legacyViews).
		if err := p.dropViews(ctx); err != nil {
			return err
		}
		for _, name := range slices.Concat(legacyViews, legacyInputs) {
			if err := p.conn.Exec(ctx, "DROP TABLE IF EXISTS "+p.tbl(name)); err != nil {
				return fmt.Errorf("drop %s: %w", name, err)
			}
		}
	}
	for _, v := range views() {
		q := "CREATE MATERIALIZED VIEW IF NOT EXISTS " + p.tbl(v.name) + " TO " + p.tbl(v.target) +
			" AS " + v.query(p.tbl(v.source))
		if err := p.conn.Exec(ctx, q); err != nil {
			return fmt.Errorf("create view %s: %w", v.name, err)
		}
	}
	for v := current + 1; v <= schemaVersion; v++ {
		b, err := p.conn.PrepareBatch(ctx, "INSERT INTO "+p.tbl(tMigrations)+" (version, description, applied_at)")
		if err != nil {
			return fmt.Errorf("record schema version: %w", err)
		}
		if err := b.Append(v, schemaChanges[v], time.Now().UTC()); err != nil {
			b.Close()
			return fmt.Errorf("record schema version: %w", err)
		}
		if err := b.Send(); err != nil {
			return fmt.Errorf("record schema version: %w", err)
		}
	}
	return nil
}

func (p *Projection) ensureTable(ctx context.Context, t table) error {
	defs := make([]string, len(t.cols))
	for i, c := range t.cols {
		defs[i] = quoteIdent(c.name) + " " + c.typ
	}
	q := "CREATE TABLE IF NOT EXISTS " + p.tbl(t.name) + " (" + strings.Join(defs, ", ") + ") " + t.engine
	if err := p.conn.Exec(ctx, q); err != nil {
		return fmt.Errorf("create table %s: %w", t.name, err)
	}
	rows, err := p.conn.Query(ctx, "SELECT name FROM system.columns WHERE database = ? AND table = ?", p.db, t.name)
	if err != nil {
		return fmt.Errorf("columns of %s: %w", t.name, err)
	}
	have := map[string]bool{}
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			rows.Close()
			return fmt.Errorf("columns of %s: %w", t.name, err)
		}
		have[name] = true
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("columns of %s: %w", t.name, err)
	}
	for _, c := range t.cols {
		if have[c.name] {
			continue
		}
		if err := p.conn.Exec(ctx, "ALTER TABLE "+p.tbl(t.name)+" ADD COLUMN "+quoteIdent(c.name)+" "+c.typ); err != nil {
			return fmt.Errorf("add column %s.%s: %w", t.name, c.name, err)
		}
	}
	return nil
}

func (p *Projection) dropViews(ctx context.Context) error {
	for _, v := range views() {
		if err := p.conn.Exec(ctx, "DROP TABLE IF EXISTS "+p.tbl(v.name)); err != nil {
			return fmt.Errorf("drop view %s: %w", v.name, err)
		}
	}
	return nil
}

// dropSchema drops every view and table but schema_migrations, those of
// schema version 1 included.
func (p *Projection) dropSchema(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, p.opts.DDLTimeout)
	defer cancel()
	if err := p.dropViews(ctx); err != nil {
		return err
	}
	names := slices.Concat(legacyViews, legacyInputs, legacyBreakdowns)
	for _, t := range tables() {
		names = append(names, t.name)
	}
	for _, name := range names {
		if err := p.conn.Exec(ctx, "DROP TABLE IF EXISTS "+p.tbl(name)); err != nil {
			return fmt.Errorf("drop table %s: %w", name, err)
		}
	}
	return nil
}
