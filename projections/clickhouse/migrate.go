package clickhouse

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Migrations.
//
// The schema is the files of migrations/, named NNNN_what.sql and numbered
// from 0001 without gaps. Migrate (at Open, and when Radar starts) runs them in
// order and records in schema_migrations each one the database had not had
// (version: the number, description: the file's name). A database made
// before the schema was kept in files has versions 1 to 4 recorded already,
// which files 0001 to 0004 are: its tables are the shape those files give.
//
// ClickHouse has no transactions, and 18.16 no IF NOT EXISTS on columns, so
// every statement is one the runner can run again, and a file interrupted
// half way is run whole again at the next start. A file holds only:
//
//   - CREATE TABLE IF NOT EXISTS {db}.t (columns) ENGINE ...: when t exists
//     already (made by an older linkd), the columns it lacks are added at its
//     end;
//   - ALTER TABLE {db}.t ADD COLUMN c ...: skipped when t has c;
//   - CREATE MATERIALIZED VIEW IF NOT EXISTS {db}.v TO {db}.t AS SELECT ...;
//   - DROP TABLE IF EXISTS {db}.x: for views made again with another SELECT
//     (a view holds no data) and for what nothing writes any more.
//
// Every start reads the tables and columns the database has (one query) and
// makes again, from the statements of the recorded migrations, a table,
// column or view that went missing, as linkd did before the schema was kept
// in files; but it never runs a recorded migration's DROP again, nor a
// statement whose object a later one drops or defines again. On an
// up-to-date database Migrate runs no DDL but CREATE DATABASE and CREATE
// TABLE schema_migrations, both IF NOT EXISTS.
//
// {db} stands for the database (backquoted). Statements end with ";" at the
// end of a line; "--" starts a comment. A released file never changes: a
// change is a new file, and it only adds (ADR 0105). A change of a sort key or
// engine is a new table named <table>_v2.

//go:embed migrations/*.sql
var migrationFiles embed.FS

// migrationsTable records the migrations applied.
const migrationsTable = "schema_migrations"

type migration struct {
	version    uint32
	name       string // the file's
	statements []statement
}

type kind int

const (
	createTable kind = iota
	addColumn
	createView
	dropTable
)

// statement is a statement of a migration, parsed.
type statement struct {
	kind  kind
	sql   string   // as written, without comments; {db} not replaced
	name  string   // the table or view it creates, alters or drops
	cols  []column // createTable: its columns; addColumn: the one it adds
	view  View     // createView
	where string   // file:line, for errors
	// superseded: a later statement drops name, or creates it again.
	superseded bool
}

// column is a column definition: its name and its text ("`name` Type ...").
type column struct{ name, def string }

var (
	createTableRe = regexp.MustCompile(`(?is)^CREATE\s+TABLE\s+IF\s+NOT\s+EXISTS\s+\{db\}\.(\w+)\s*\(`)
	addColumnRe   = regexp.MustCompile(`(?is)^ALTER\s+TABLE\s+\{db\}\.(\w+)\s+ADD\s+COLUMN\s+(.+)$`)
	createViewRe  = regexp.MustCompile(`(?is)^CREATE\s+MATERIALIZED\s+VIEW\s+IF\s+NOT\s+EXISTS\s+\{db\}\.(\w+)\s+TO\s+\{db\}\.(\w+)\s+AS\s+(SELECT\s.+)$`)
	dropTableRe   = regexp.MustCompile(`(?is)^DROP\s+TABLE\s+IF\s+EXISTS\s+\{db\}\.(\w+)$`)
	fileNameRe    = regexp.MustCompile(`^(\d{4})_[a-z0-9_]+\.sql$`)
)

// embedded is the migrations of migrations/, parsed once.
var embedded = sync.OnceValues(func() ([]migration, error) {
	sub, err := fs.Sub(migrationFiles, "migrations")
	if err != nil {
		return nil, err
	}
	return loadMigrations(sub)
})

// loadMigrations reads and parses the migrations in the top folder of fsys.
func loadMigrations(fsys fs.FS) ([]migration, error) {
	names, err := fs.Glob(fsys, "*.sql")
	if err != nil {
		return nil, err
	}
	var out []migration
	for _, name := range names {
		m := fileNameRe.FindStringSubmatch(name)
		if m == nil {
			return nil, fmt.Errorf("migration %s: name it NNNN_what.sql (lower case)", name)
		}
		v, _ := strconv.ParseUint(m[1], 10, 32)
		text, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, err
		}
		stmts, err := parseStatements(name, string(text))
		if err != nil {
			return nil, err
		}
		out = append(out, migration{version: uint32(v), name: name, statements: stmts})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].version < out[j].version })
	for i, m := range out {
		if m.version != uint32(i+1) {
			return nil, fmt.Errorf("migration %s: numbered %d, want %04d (from 0001, no gaps, no repeats)", m.name, m.version, i+1)
		}
	}
	// From the last statement back: what is dropped or created later.
	later := map[string]bool{}
	for i := len(out) - 1; i >= 0; i-- {
		for j := len(out[i].statements) - 1; j >= 0; j-- {
			s := &out[i].statements[j]
			s.superseded = later[s.name]
			if s.kind != addColumn {
				later[s.name] = true
			}
		}
	}
	return out, nil
}

// parseStatements splits a file into its statements and parses each.
func parseStatements(file, text string) ([]statement, error) {
	var (
		out   []statement
		cur   []string
		first int
	)
	for i, line := range strings.Split(text, "\n") {
		line = strings.TrimRight(stripComment(line), " \t\r")
		if strings.TrimSpace(line) == "" {
			continue
		}
		if len(cur) == 0 {
			first = i + 1
		}
		cur = append(cur, line)
		if !strings.HasSuffix(line, ";") {
			continue
		}
		sql := strings.TrimSuffix(strings.TrimSpace(strings.Join(cur, "\n")), ";")
		cur = nil
		s, err := parseStatement(sql)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", file, first, err)
		}
		s.where = fmt.Sprintf("%s:%d", file, first)
		out = append(out, s)
	}
	if len(cur) > 0 {
		return nil, fmt.Errorf("%s:%d: statement without a ';' at the end of its last line", file, first)
	}
	return out, nil
}

func parseStatement(sql string) (statement, error) {
	s := statement{sql: sql}
	switch {
	case createTableRe.MatchString(sql):
		m := createTableRe.FindStringSubmatchIndex(sql)
		s.kind, s.name = createTable, sql[m[2]:m[3]]
		open := m[1] - 1
		end := closingParen(sql, open)
		if end < 0 {
			return s, fmt.Errorf("CREATE TABLE %s: unbalanced parentheses", s.name)
		}
		if !strings.HasPrefix(strings.TrimSpace(sql[end+1:]), "ENGINE") {
			return s, fmt.Errorf("CREATE TABLE %s: the columns are followed by ENGINE", s.name)
		}
		for _, def := range splitTopLevel(sql[open+1 : end]) {
			c, err := parseColumn(def)
			if err != nil {
				return s, fmt.Errorf("CREATE TABLE %s: %w", s.name, err)
			}
			s.cols = append(s.cols, c)
		}
	case addColumnRe.MatchString(sql):
		m := addColumnRe.FindStringSubmatch(sql)
		c, err := parseColumn(m[2])
		if err != nil {
			return s, fmt.Errorf("ALTER TABLE %s: %w", m[1], err)
		}
		s.kind, s.name, s.cols = addColumn, m[1], []column{c}
	case createViewRe.MatchString(sql):
		m := createViewRe.FindStringSubmatch(sql)
		v, err := parseView(m[1], m[2], m[3])
		if err != nil {
			return s, err
		}
		s.kind, s.name, s.view = createView, m[1], v
	case dropTableRe.MatchString(sql):
		s.kind, s.name = dropTable, dropTableRe.FindStringSubmatch(sql)[1]
	default:
		head, _, _ := strings.Cut(sql, "\n")
		return s, fmt.Errorf("%q: a migration holds only CREATE TABLE IF NOT EXISTS, ALTER TABLE ADD COLUMN, "+
			"CREATE MATERIALIZED VIEW IF NOT EXISTS and DROP TABLE IF EXISTS, on {db}.<name>", head)
	}
	return s, nil
}

// parseColumn parses "`name` Type ..." or "name Type ...".
func parseColumn(def string) (column, error) {
	def = strings.TrimSpace(def)
	var name, rest string
	if strings.HasPrefix(def, "`") {
		end := strings.IndexByte(def[1:], '`')
		if end < 0 {
			return column{}, fmt.Errorf("column %q: unclosed `", def)
		}
		name, rest = def[1:end+1], def[end+2:]
	} else {
		name, rest, _ = strings.Cut(def, " ")
	}
	if name == "" || strings.TrimSpace(rest) == "" {
		return column{}, fmt.Errorf("column %q: want a name and a type", def)
	}
	return column{name: name, def: def}, nil
}

// scan calls f with every byte of s from index from that is outside
// quotes ('...', `...`, "..."), and the depth of parentheses and brackets
// after it, until f returns false.
func scan(s string, from int, f func(i int, c byte, depth int) bool) {
	depth := 0
	var quote byte
	for i := from; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0:
			if c == '\\' {
				i++
			} else if c == quote {
				quote = 0
			}
			continue
		case c == '\'' || c == '`' || c == '"':
			quote = c
			continue
		case c == '(' || c == '[':
			depth++
		case c == ')' || c == ']':
			depth--
		}
		if !f(i, c, depth) {
			return
		}
	}
}

// stripComment cuts a line at "--" outside quotes.
func stripComment(line string) string {
	end := len(line)
	scan(line, 0, func(i int, c byte, _ int) bool {
		if c == '-' && i+1 < len(line) && line[i+1] == '-' {
			end = i
			return false
		}
		return true
	})
	return line[:end]
}

// closingParen returns the index of the parenthesis that closes the one at
// open, outside quotes; -1 if none.
func closingParen(s string, open int) int {
	end := -1
	scan(s, open, func(i int, c byte, depth int) bool {
		if c == ')' && depth == 0 {
			end = i
			return false
		}
		return true
	})
	return end
}

// splitTopLevel splits s at the commas outside parentheses, brackets and
// quotes.
func splitTopLevel(s string) []string {
	var out []string
	from := 0
	scan(s, 0, func(i int, c byte, depth int) bool {
		if c == ',' && depth == 0 {
			out = append(out, strings.TrimSpace(s[from:i]))
			from = i + 1
		}
		return true
	})
	if rest := strings.TrimSpace(s[from:]); rest != "" {
		out = append(out, rest)
	}
	return out
}

// render replaces {db} with the database's name.
func (db *DB) render(sql string) string { return strings.ReplaceAll(sql, "{db}", "`"+db.name+"`") }

// Migrate brings the database to the schema of the migrations: it applies
// those the database has not had, in order, and records each; and makes again
// what the recorded ones made and went missing (see above). It is idempotent.
func (db *DB) Migrate(ctx context.Context) error {
	ms, err := embedded()
	if err != nil {
		return err
	}
	return db.Retry(ctx, func(ctx context.Context) error { return db.migrate(ctx, ms) })
}

func (db *DB) migrate(ctx context.Context, ms []migration) error {
	// InsertContext, not context.WithTimeout: record's batch.Send must not
	// see its context cancelled when migrate returns, which could close
	// the connection after it went back to the pool, under the caller's
	// next query ("use of closed network connection").
	ctx, release := InsertContext(ctx, db.opts.DDLTimeout)
	defer release()
	if err := db.conn.Exec(ctx, "CREATE DATABASE IF NOT EXISTS `"+db.name+"`"); err != nil {
		return fmt.Errorf("create database %s: %w", db.name, err)
	}
	if err := db.conn.Exec(ctx, "CREATE TABLE IF NOT EXISTS "+db.Table(migrationsTable)+
		" (version UInt32, description String, applied_at DateTime) ENGINE = MergeTree ORDER BY version"); err != nil {
		return fmt.Errorf("create %s: %w", migrationsTable, err)
	}
	applied, err := db.applied(ctx)
	if err != nil {
		return err
	}
	have, err := db.schema(ctx)
	if err != nil {
		return err
	}
	for _, m := range ms {
		done := applied[m.version]
		for _, s := range m.statements {
			if done && (s.kind == dropTable || s.superseded) {
				continue
			}
			if err := db.apply(ctx, s, have); err != nil {
				return fmt.Errorf("migration %s: %s: %w", m.name, s.where, err)
			}
		}
		if done {
			continue
		}
		if err := db.record(ctx, m); err != nil {
			return err
		}
		db.opts.Logger.Info("clickhouse: migration applied", "database", db.name, "migration", m.name)
	}
	return nil
}

// applied returns the versions schema_migrations records.
func (db *DB) applied(ctx context.Context) (map[uint32]bool, error) {
	rows, err := db.conn.Query(ctx, "SELECT version FROM "+db.Table(migrationsTable))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", migrationsTable, err)
	}
	defer rows.Close()
	out := map[uint32]bool{}
	for rows.Next() {
		var v uint32
		if err := rows.Scan(&v); err != nil {
			return nil, fmt.Errorf("read %s: %w", migrationsTable, err)
		}
		out[v] = true
	}
	return out, rows.Err()
}

func (db *DB) record(ctx context.Context, m migration) error {
	b, err := db.conn.PrepareBatch(ctx, "INSERT INTO "+db.Table(migrationsTable)+" (version, description, applied_at)")
	if err != nil {
		return fmt.Errorf("record migration %s: %w", m.name, err)
	}
	if err := b.Append(m.version, m.name, time.Now().UTC()); err != nil {
		b.Close()
		return fmt.Errorf("record migration %s: %w", m.name, err)
	}
	if err := b.Send(); err != nil {
		return fmt.Errorf("record migration %s: %w", m.name, err)
	}
	return nil
}

// schema returns the tables and views of the database, each with its
// columns: one query, which on an up-to-date database is all Migrate reads.
func (db *DB) schema(ctx context.Context) (map[string]map[string]bool, error) {
	rows, err := db.conn.Query(ctx, "SELECT table, name FROM system.columns WHERE database = ?", db.name)
	if err != nil {
		return nil, fmt.Errorf("columns of %s: %w", db.name, err)
	}
	defer rows.Close()
	have := map[string]map[string]bool{}
	for rows.Next() {
		var table, name string
		if err := rows.Scan(&table, &name); err != nil {
			return nil, fmt.Errorf("columns of %s: %w", db.name, err)
		}
		if have[table] == nil {
			have[table] = map[string]bool{}
		}
		have[table][name] = true
	}
	return have, rows.Err()
}

// apply runs a statement so that running it again changes nothing, and
// keeps have (schema) up to date. What have holds already is not created
// again; a table that is there, made by an older linkd, gets the columns
// it lacks.
func (db *DB) apply(ctx context.Context, s statement, have map[string]map[string]bool) error {
	cols := have[s.name]
	switch {
	case s.kind == dropTable:
		delete(have, s.name)
	case s.kind == createView && cols != nil:
		return nil
	case s.kind == createView:
		have[s.name] = map[string]bool{}
	case cols == nil && s.kind == createTable:
		have[s.name] = map[string]bool{}
		for _, c := range s.cols {
			have[s.name][c.name] = true
		}
	default: // a table that is there (or, for ADD COLUMN, an error)
		for _, c := range s.cols {
			if cols[c.name] {
				continue
			}
			if err := db.conn.Exec(ctx, "ALTER TABLE "+db.Table(s.name)+" ADD COLUMN "+c.def); err != nil {
				return fmt.Errorf("add column %s.%s: %w", s.name, c.name, err)
			}
			cols[c.name] = true
		}
		return nil
	}
	return db.conn.Exec(ctx, db.render(s.sql))
}
