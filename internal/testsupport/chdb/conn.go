package chdb

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"io"
	"reflect"
	"strings"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/ClickHouse/clickhouse-go/v2/lib/proto"
)

// resultFormat is the format Query reads results in: text that names and
// types its columns.
const resultFormat = "TabSeparatedWithNamesAndTypes"

// errNotSupported is the error of the driver.Conn methods chdb does not
// implement.
func errNotSupported(what string) error {
	return fmt.Errorf("chdb: %s is not supported by chdb", what)
}

// conn is a driver.Conn over an Engine.
type conn struct {
	e  *Engine
	db string // the current database of its queries ("": default)
}

var _ driver.Conn = (*conn)(nil)

func (c *conn) Contributors() []string { return nil }

// ServerVersion reports the version of ClickHouse inside chDB.
func (c *conn) ServerVersion() (*driver.ServerVersion, error) {
	out, err := c.e.run(context.Background(), c.db, "SELECT version(), timezone()", "TabSeparated")
	if err != nil {
		return nil, err
	}
	version, zone, _ := strings.Cut(strings.TrimSpace(string(out)), "\t")
	loc, err := time.LoadLocation(zone)
	if err != nil {
		loc = time.UTC
	}
	return &driver.ServerVersion{
		Name:        "ClickHouse (chDB)",
		DisplayName: "chdb",
		Revision:    proto.DBMS_TCP_PROTOCOL_VERSION,
		Version:     proto.ParseVersion(version),
		Timezone:    loc,
	}, nil
}

// Select scans every row into a new element of *dest, a slice of structs
// (mapped as ScanStruct maps them).
func (c *conn) Select(ctx context.Context, dest any, query string, args ...any) error {
	v := reflect.ValueOf(dest)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Slice {
		return fmt.Errorf("chdb: Select needs a pointer to a slice, not %T", dest)
	}
	rs, err := c.Query(ctx, query, args...)
	if err != nil {
		return err
	}
	defer rs.Close()
	slice := v.Elem()
	elem := slice.Type().Elem()
	for rs.Next() {
		p := reflect.New(elem)
		if err := rs.ScanStruct(p.Interface()); err != nil {
			return err
		}
		slice.Set(reflect.Append(slice, p.Elem()))
	}
	return rs.Err()
}

// Query runs a query and returns all its rows (read at once).
func (c *conn) Query(ctx context.Context, query string, args ...any) (driver.Rows, error) {
	q, err := bind(query, args...)
	if err != nil {
		return nil, err
	}
	out, err := c.e.run(ctx, c.db, q, resultFormat)
	if err != nil {
		return nil, err
	}
	return parseResult(out)
}

// QueryRow runs a query for its first row.
func (c *conn) QueryRow(ctx context.Context, query string, args ...any) driver.Row {
	rs, err := c.Query(ctx, query, args...)
	if err != nil {
		return &row{err: err}
	}
	return &row{rows: rs.(*rows)}
}

// Exec runs a statement; its output, if any, is dropped.
func (c *conn) Exec(ctx context.Context, query string, args ...any) error {
	q, err := bind(query, args...)
	if err != nil {
		return err
	}
	_, err = c.e.run(ctx, c.db, q, "TabSeparated")
	return err
}

// QueryFormat returns the output of query in format.
func (c *conn) QueryFormat(ctx context.Context, format string, query string, args ...any) (io.ReadCloser, error) {
	q, err := bind(query, args...)
	if err != nil {
		return nil, err
	}
	out, err := c.e.run(ctx, c.db, q, format)
	if err != nil {
		return nil, err
	}
	return io.NopCloser(bytes.NewReader(out)), nil
}

// InsertFormat runs the INSERT of query with data, in format, as its rows.
func (c *conn) InsertFormat(ctx context.Context, format string, query string, data io.Reader) error {
	ins, err := parseInsert(query)
	if err != nil {
		return err
	}
	body, err := io.ReadAll(data)
	if err != nil {
		return err
	}
	_, err = c.e.run(ctx, c.db, ins.statement("")+" FORMAT "+format+"\n"+string(body), "TabSeparated")
	return err
}

func (c *conn) AsyncInsert(context.Context, string, bool, ...any) error {
	return errNotSupported("AsyncInsert")
}

// Ping runs SELECT 1.
func (c *conn) Ping(ctx context.Context) error {
	_, err := c.e.run(ctx, c.db, "SELECT 1", "TabSeparated")
	return err
}

// Stats is zero: there is no pool.
func (c *conn) Stats() driver.Stats { return driver.Stats{} }

// Close does nothing: the Engine owns the session.
func (c *conn) Close() error { return nil }

// rows is a result, read at once.
type rows struct {
	names []string
	types []*colType
	data  [][]string // the TabSeparated fields of each row
	pos   int        // the current row is data[pos-1]; 0 before Next
}

var _ driver.Rows = (*rows)(nil)

// parseResult parses TabSeparatedWithNamesAndTypes output.
func parseResult(out []byte) (*rows, error) {
	r := &rows{}
	if len(out) == 0 {
		return r, nil // no result set (a statement)
	}
	text := strings.TrimSuffix(string(out), "\n")
	lines := strings.Split(text, "\n")
	if len(lines) < 2 {
		return nil, fmt.Errorf("chdb: result without names and types: %q", text)
	}
	for _, n := range strings.Split(lines[0], "\t") {
		r.names = append(r.names, unescape(n))
	}
	for _, tn := range strings.Split(lines[1], "\t") {
		t, err := parseType(unescape(tn))
		if err != nil {
			return nil, err
		}
		r.types = append(r.types, t)
	}
	if len(r.names) != len(r.types) {
		return nil, fmt.Errorf("chdb: %d column names, %d types", len(r.names), len(r.types))
	}
	r.data = make([][]string, 0, len(lines)-2)
	for _, line := range lines[2:] {
		fields := strings.Split(line, "\t")
		if len(fields) != len(r.names) {
			return nil, fmt.Errorf("chdb: a result row has %d fields, not %d: %q", len(fields), len(r.names), line)
		}
		r.data = append(r.data, fields)
	}
	return r, nil
}

func (r *rows) Next() bool {
	if r.pos <= len(r.data) {
		r.pos++
	}
	return r.pos <= len(r.data)
}

func (r *rows) Scan(dest ...any) error {
	if r.pos == 0 || r.pos > len(r.data) {
		return fmt.Errorf("chdb: Scan without a current row (call Next): %w", io.EOF)
	}
	if len(dest) != len(r.types) {
		return fmt.Errorf("chdb: expected %d destination arguments in Scan, not %d", len(r.types), len(dest))
	}
	fields := r.data[r.pos-1]
	for i, d := range dest {
		v, err := r.types[i].decodeTSV(fields[i])
		if err != nil {
			return fmt.Errorf("column %q: %w", r.names[i], err)
		}
		if err := scanInto(d, v, r.types[i]); err != nil {
			return fmt.Errorf("column %q: %w", r.names[i], err)
		}
	}
	return nil
}

func (r *rows) ScanStruct(dest any) error {
	targets, err := structTargets("ScanStruct", r.names, dest, true)
	if err != nil {
		return err
	}
	return r.Scan(targets...)
}

func (r *rows) ColumnTypes() []driver.ColumnType {
	out := make([]driver.ColumnType, len(r.types))
	for i, t := range r.types {
		out[i] = &columnType{name: r.names[i], t: t}
	}
	return out
}

func (r *rows) Totals(...any) error { return errNotSupported("Totals (WITH TOTALS)") }

func (r *rows) Columns() []string { return r.names }

func (r *rows) Close() error {
	r.pos = len(r.data) + 1
	return nil
}

// Err is nil: a query's error comes from Query.
func (r *rows) Err() error { return nil }

func (r *rows) HasData() bool { return r.pos < len(r.data) }

// row is QueryRow's result.
type row struct {
	err  error
	rows *rows
}

func (r *row) Err() error { return r.err }

// Scan scans the first row; sql.ErrNoRows when there is none (as
// clickhouse-go).
func (r *row) Scan(dest ...any) error {
	if r.err != nil {
		return r.err
	}
	if !r.rows.Next() {
		return sql.ErrNoRows
	}
	defer r.rows.Close()
	return r.rows.Scan(dest...)
}

func (r *row) ScanStruct(dest any) error {
	if r.err != nil {
		return r.err
	}
	targets, err := structTargets("ScanStruct", r.rows.names, dest, true)
	if err != nil {
		return err
	}
	return r.Scan(targets...)
}

// columnType describes a result column.
type columnType struct {
	name string
	t    *colType
}

func (c *columnType) Name() string { return c.name }

// Nullable is true for Nullable(T) (not LowCardinality(Nullable(T)), as
// clickhouse-go).
func (c *columnType) Nullable() bool { return strings.HasPrefix(c.t.name, "Nullable(") }

// ScanType is the Go type clickhouse-go scans the column as (a string for
// Map, Tuple and the other types chdb keeps as text).
func (c *columnType) ScanType() reflect.Type { return c.t.scan }

func (c *columnType) DatabaseTypeName() string { return c.t.name }
