package clickhouse

import (
	"context"
	"log/slog"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/linkd/linkd/internal/testsupport/chtest"
)

func TestEmbeddedMigrationsParse(t *testing.T) {
	ms, err := embedded()
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) < 5 {
		t.Fatalf("%d migrations, want at least 5", len(ms))
	}
	// Databases made before the files have versions 1 to 4 recorded: the
	// files keep those numbers.
	for i, name := range []string{"0001_clicks.sql", "0002_flushed_aggregates.sql", "0003_final_records_without_breakdowns.sql", "0004_leads_and_sales.sql"} {
		if ms[i].name != name {
			t.Errorf("migration %d is %s, want %s", i+1, ms[i].name, name)
		}
	}
}

func TestLoadMigrationsRejects(t *testing.T) {
	const table = "CREATE TABLE IF NOT EXISTS {db}.t (`a` UInt8) ENGINE = Memory;\n"
	for _, tc := range []struct {
		name  string
		files fstest.MapFS
		want  string
	}{
		{"a gap", fstest.MapFS{"0001_a.sql": {Data: []byte(table)}, "0003_c.sql": {Data: []byte(table)}}, "want 0002"},
		{"a repeated number", fstest.MapFS{"0001_a.sql": {Data: []byte(table)}, "0001_b.sql": {Data: []byte(table)}}, "want 0002"},
		{"a file name without four digits", fstest.MapFS{"001_a.sql": {Data: []byte(table)}}, "NNNN_what.sql"},
		{"a statement that cannot run twice", fstest.MapFS{"0001_a.sql": {Data: []byte("CREATE TABLE {db}.t (a UInt8) ENGINE = Memory;\n")}}, "a migration holds only"},
		{"a change of a column", fstest.MapFS{"0001_a.sql": {Data: []byte("ALTER TABLE {db}.t MODIFY COLUMN a UInt16;\n")}}, "a migration holds only"},
		{"a table of another database", fstest.MapFS{"0001_a.sql": {Data: []byte("DROP TABLE IF EXISTS other.t;\n")}}, "a migration holds only"},
		{"no ';'", fstest.MapFS{"0001_a.sql": {Data: []byte("DROP TABLE IF EXISTS {db}.t\n")}}, "without a ';'"},
		{"a view column without a name", fstest.MapFS{"0001_a.sql": {Data: []byte(
			"CREATE MATERIALIZED VIEW IF NOT EXISTS {db}.v TO {db}.t AS SELECT a, count() FROM {db}.s GROUP BY a;\n")}}, "needs a name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := loadMigrations(tc.files)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("loadMigrations: %v, want an error saying %q", err, tc.want)
			}
		})
	}
}

func TestParseStatements(t *testing.T) {
	stmts, err := parseStatements("x.sql", `-- a comment; with a semicolon;
CREATE TABLE IF NOT EXISTS {db}.t
(
    `+"`a.b`"+` Array(UInt64), -- a Nested column
    kind Enum8('a' = 1, 'b--c' = 2),
    s String DEFAULT concat('x;', 'y')
)
ENGINE = MergeTree ORDER BY (kind, s);

ALTER TABLE {db}.t ADD COLUMN n UInt8 DEFAULT 1;
`)
	if err != nil {
		t.Fatal(err)
	}
	if len(stmts) != 2 {
		t.Fatalf("%d statements, want 2", len(stmts))
	}
	var got []column
	for _, s := range stmts {
		got = append(got, s.cols...)
	}
	want := []column{
		{"a.b", "`a.b` Array(UInt64)"},
		{"kind", "kind Enum8('a' = 1, 'b--c' = 2)"},
		{"s", "s String DEFAULT concat('x;', 'y')"},
		{"n", "n UInt8 DEFAULT 1"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("columns %q, want %q", got, want)
	}
	if stmts[1].where != "x.sql:10" {
		t.Errorf("second statement at %s, want x.sql:10", stmts[1].where)
	}
}

func TestViewRefill(t *testing.T) {
	v := MustView("link_clicks_daily_mv")
	if v.Source != "clicks_daily_input" || v.Target != "link_clicks_daily" {
		t.Fatalf("view %+v", v)
	}
	db := &DB{name: "x"}
	q := db.Refill(v, "clicks", "insert_id > 7")
	for _, part := range []string{
		"INSERT INTO `x`.link_clicks_daily (`link_id`, `date`, `workspace_id`, `clicks`, ",
		"`max_click_seq`, `max_insert_id`) SELECT link_id, date,",
		"FROM (SELECT * FROM `x`.clicks WHERE insert_id > 7) GROUP BY link_id, date, workspace_id",
	} {
		if !strings.Contains(q, part) {
			t.Errorf("Refill: %s\nlacks %s", q, part)
		}
	}
	if strings.Contains(q, "{db}") {
		t.Errorf("Refill: %s", q)
	}
}

// beforeMigrations creates, on the server of dsn, the database dsn names
// as linkd made it before the schema was kept in migrations
// (testdata/schema_before_migrations.sql, versions 1 to 4 recorded).
func beforeMigrations(t *testing.T, ctx context.Context, dsn string) (string, driver.Conn) {
	t.Helper()
	db := &DB{name: chtest.Database(t, dsn), conn: chtest.Conn(t, dsn, "")}
	text, err := os.ReadFile("testdata/schema_before_migrations.sql")
	if err != nil {
		t.Fatal(err)
	}
	stmts, err := parseStatements("schema_before_migrations.sql", string(text))
	if err != nil {
		t.Fatal(err)
	}
	if err := db.conn.Exec(ctx, "CREATE DATABASE `"+db.name+"`"); err != nil {
		t.Fatal(err)
	}
	for _, s := range stmts {
		if err := db.conn.Exec(ctx, db.render(s.sql)); err != nil {
			t.Fatalf("%s: %v", s.where, err)
		}
	}
	for v := uint32(1); v <= 4; v++ {
		if err := db.record(ctx, migration{version: v, name: "schema version " + strconv.Itoa(int(v))}); err != nil {
			t.Fatal(err)
		}
	}
	return db.name, db.conn
}

// schemaOf describes every table and view of a database as the server
// shows it (its CREATE statement: columns, types, defaults, engine, keys,
// settings, a view's SELECT), the database's name replaced with {db}.
func schemaOf(t *testing.T, ctx context.Context, conn driver.Conn, db string) []string {
	t.Helper()
	var out []string
	for _, r := range chtest.QueryStrings(t, ctx, conn, "SELECT name, create_table_query FROM system.tables WHERE database = ? ORDER BY name", db) {
		out = append(out, r[0]+": "+strings.ReplaceAll(r[1], db, "{db}"))
	}
	return out
}

func sameSchema(t *testing.T, got, want []string) {
	t.Helper()
	if reflect.DeepEqual(got, want) {
		return
	}
	for _, g := range got {
		if !slices.Contains(want, g) {
			t.Errorf("unexpected: %s", g)
		}
	}
	for _, w := range want {
		if !slices.Contains(got, w) {
			t.Errorf("missing: %s", w)
		}
	}
}

// sinceFiles are the tables that migrations added after the schema was
// kept in files (0006 on): the schema of before has none of them.
var sinceFiles = []string{"event_log"}

// The migrations make, on an empty database, exactly the schema that linkd
// made before (every table, column, type, engine and view), and the tables
// added since.
func TestMigrationsMakeTheSchemaOfBefore(t *testing.T) {
	t.Parallel()
	ctx := chtest.Context(t, 2*time.Minute)
	before, conn := beforeMigrations(t, ctx, chtest.DSN(t))
	fresh := openTest(t, ctx, chtest.DSN(t))
	want := schemaOf(t, ctx, conn, before)
	if len(want) < 30 {
		t.Fatalf("the schema of before has %d tables and views", len(want))
	}
	sameSchema(t, withoutSinceFiles(t, schemaOf(t, ctx, conn, fresh.Name())), want)
}

// withoutSinceFiles is schema (of schemaOf) without the tables of
// sinceFiles, which it must have.
func withoutSinceFiles(t *testing.T, schema []string) []string {
	t.Helper()
	for _, name := range sinceFiles {
		i := slices.IndexFunc(schema, func(s string) bool { return strings.HasPrefix(s, name+": ") })
		if i < 0 {
			t.Fatalf("no table %s", name)
		}
		schema = slices.Delete(schema, i, i+1)
	}
	return schema
}

// A database made before the migrations (versions 1 to 4 recorded) gets the
// later ones, keeps its data, and has the schema of a new database.
func TestDatabaseOfBeforeMigrates(t *testing.T) {
	t.Parallel()
	ctx := chtest.Context(t, 2*time.Minute)
	dsn := chtest.DSN(t)
	name, conn := beforeMigrations(t, ctx, dsn)
	if err := conn.Exec(ctx, "INSERT INTO `"+name+"`.clicks (click_id, link_id, workspace_id, timestamp, date, insert_id) "+
		"SELECT 'c1', 'l1', 'w1', toDateTime('2026-03-14 10:00:00'), toDate('2026-03-14'), 1"); err != nil {
		t.Fatal(err)
	}
	want := schemaOf(t, ctx, conn, name)
	db := openTest(t, ctx, dsn)
	sameSchema(t, withoutSinceFiles(t, schemaOf(t, ctx, conn, name)), want)
	if got := chtest.QueryStrings(t, ctx, conn, "SELECT click_id, link_id, insert_id FROM `"+name+"`.clicks"); !reflect.DeepEqual(got, [][]string{{"c1", "l1", "1"}}) {
		t.Errorf("clicks after the migration: %v", got)
	}
	ms, _ := embedded()
	got := chtest.QueryStrings(t, ctx, conn, "SELECT version, description FROM "+db.Table(migrationsTable)+" WHERE version > 4 ORDER BY version")
	if len(got) != len(ms)-4 || got[0][1] != "0005_radar.sql" {
		t.Errorf("recorded after version 4: %v", got)
	}
}

// Open on an up-to-date database changes nothing; a table an older linkd
// made with fewer columns gets the ones it lacks.
func TestSchemaIsIdempotentAndMigrates(t *testing.T) {
	t.Parallel()
	ctx := chtest.Context(t, 2*time.Minute)
	dsn := chtest.DSN(t)
	name := chtest.Database(t, dsn)
	conn := chtest.Conn(t, dsn, "")
	for _, q := range []string{
		"CREATE DATABASE IF NOT EXISTS `" + name + "`",
		"CREATE TABLE `" + name + "`.clicks (click_id String, link_id String, workspace_id String, timestamp DateTime, date Date) " +
			"ENGINE = MergeTree PARTITION BY toYYYYMM(date) ORDER BY (workspace_id, link_id, timestamp)",
	} {
		if err := conn.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	columns := func(db string) [][]string {
		return chtest.QueryStrings(t, ctx, conn, "SELECT table, name, type FROM system.columns WHERE database = ? ORDER BY table, name", db)
	}
	for i := range 2 {
		db, err := Open(ctx, dsn, Options{Dial: chtest.Open})
		if err != nil {
			t.Fatalf("Open #%d: %v", i+1, err)
		}
		db.Close()
	}
	fresh := openTest(t, ctx, chtest.DSN(t))
	if got, want := columns(name), columns(fresh.Name()); !reflect.DeepEqual(got, want) {
		t.Errorf("columns\n got %v\nwant %v", got, want)
	}
	ms, _ := embedded()
	for _, db := range []string{name, fresh.Name()} {
		if got := chtest.QueryStrings(t, ctx, conn, "SELECT toUInt64(count()), toUInt64(uniqExact(version)) FROM `"+db+"`.schema_migrations"); got[0][0] != got[0][1] || got[0][0] != strconv.Itoa(len(ms)) {
			t.Errorf("%s: schema_migrations has %s rows of %s versions, want one per migration (%d)", db, got[0][0], got[0][1], len(ms))
		}
	}
	views := "SELECT toUInt64(count()) FROM system.tables WHERE database = ? AND engine = 'MaterializedView'"
	if got, want := chtest.QueryStrings(t, ctx, conn, views, name), chtest.QueryStrings(t, ctx, conn, views, fresh.Name()); !reflect.DeepEqual(got, want) || want[0][0] != "9" {
		t.Errorf("%v materialized views, want %v (9)", got, want)
	}
}

// The runner applies what a database lacks, each statement so that running
// it again changes nothing (a migration interrupted half way runs whole
// again); at every start it makes again what went missing, but never runs a
// recorded migration's DROP again, nor a definition a later one replaced.
func TestMigrateRunsWhatIsNewAndAgainSafely(t *testing.T) {
	t.Parallel()
	ctx := chtest.Context(t, 2*time.Minute)
	dsn := chtest.DSN(t)
	db := &DB{conn: chtest.Conn(t, dsn, ""), name: chtest.Database(t, dsn), opts: Options{DDLTimeout: time.Minute, Logger: slog.New(slog.DiscardHandler)}}
	files := fstest.MapFS{}
	add := func(name, sql string) { files[name] = &fstest.MapFile{Data: []byte(sql)} }
	exec := func(q string) {
		t.Helper()
		if err := db.conn.Exec(ctx, db.render(q)); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	migrate := func() {
		t.Helper()
		ms, err := loadMigrations(files)
		if err != nil {
			t.Fatal(err)
		}
		if err := db.migrate(ctx, ms); err != nil {
			t.Fatal(err)
		}
	}
	query := func(q string) [][]string {
		t.Helper()
		return chtest.QueryStrings(t, ctx, db.conn, db.render(q), db.name)
	}
	const columns = "SELECT table, name, type, default_expression FROM system.columns WHERE database = ? AND table IN ('t', 'u') ORDER BY table"

	add("0001_t.sql", "CREATE TABLE IF NOT EXISTS {db}.t (`a` UInt8) ENGINE = MergeTree ORDER BY a;\n")
	migrate()
	add("0002_b.sql", "ALTER TABLE {db}.t ADD COLUMN `b` String DEFAULT 'x';\n"+
		"CREATE TABLE IF NOT EXISTS {db}.t (`a` UInt8, `b` String DEFAULT 'x', `c` UInt64) ENGINE = MergeTree ORDER BY a;\n")
	add("0003_u.sql", "CREATE TABLE IF NOT EXISTS {db}.u (`a` UInt64) ENGINE = MergeTree ORDER BY a;\n"+
		"CREATE MATERIALIZED VIEW IF NOT EXISTS {db}.v TO {db}.u AS SELECT a FROM {db}.t;\n"+
		"DROP TABLE IF EXISTS {db}.old;\n")
	add("0004_v.sql", "DROP TABLE IF EXISTS {db}.v;\n"+
		"CREATE MATERIALIZED VIEW IF NOT EXISTS {db}.v TO {db}.u AS SELECT toUInt64(a + 1) AS a FROM {db}.t;\n")
	exec("CREATE TABLE {db}.old (x UInt8) ENGINE = Memory")
	migrate()
	want := [][]string{{"t", "a", "UInt8", ""}, {"t", "b", "String", "'x'"}, {"t", "c", "UInt64", ""}, {"u", "a", "UInt64", ""}}
	if got := query(columns); !reflect.DeepEqual(got, want) {
		t.Fatalf("columns %v, want %v", got, want)
	}
	if got := query("SELECT name FROM system.tables WHERE database = ? AND name = 'old'"); got != nil {
		t.Errorf("old was not dropped")
	}
	records := [][]string{{"1", "0001_t.sql"}, {"2", "0002_b.sql"}, {"3", "0003_u.sql"}, {"4", "0004_v.sql"}}
	if got := query("SELECT version, description FROM {db}.schema_migrations WHERE 1 = 1 OR ? = '' ORDER BY version"); !reflect.DeepEqual(got, records) {
		t.Errorf("recorded %v, want %v", got, records)
	}

	// What went missing comes back, as 0004 defined it; old, made again,
	// stays.
	exec("ALTER TABLE {db}.t DROP COLUMN c")
	exec("DROP TABLE {db}.v")
	exec("CREATE TABLE {db}.old (x UInt8) ENGINE = Memory")
	migrate()
	if got := query(columns); !reflect.DeepEqual(got, want) {
		t.Errorf("columns %v", got)
	}
	exec("INSERT INTO {db}.t (a) SELECT 1")
	if got := query("SELECT a FROM {db}.u WHERE 1 = 1 OR ? = ''"); !reflect.DeepEqual(got, [][]string{{"2"}}) {
		t.Errorf("the view made again wrote %v, want 2 (its definition of 0004)", got)
	}
	if got := query("SELECT name FROM system.tables WHERE database = ? AND name = 'old'"); got == nil {
		t.Errorf("a recorded migration's DROP ran again")
	}

	// As after a crash before the records: everything runs again.
	exec("TRUNCATE TABLE {db}.schema_migrations")
	migrate()
	if got := query("SELECT version, description FROM {db}.schema_migrations WHERE 1 = 1 OR ? = '' ORDER BY version"); !reflect.DeepEqual(got, records) {
		t.Errorf("recorded %v, want %v", got, records)
	}
}
