package chdb

import (
	"context"
	stddriver "database/sql/driver"
	"fmt"
	"math"
	"math/big"
	"net"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/column"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/google/uuid"
)

// insertStmt is an INSERT INTO statement as PrepareBatch takes it.
type insertStmt struct {
	table    string   // as written: db.t, `db`.t, ...
	colsText string   // the column list as written, without the parentheses; "" when none
	columns  []string // the column names, unquoted
	settings string   // "SETTINGS ..." as written, or ""
}

// statement is "INSERT INTO table (columns) [SETTINGS ...]".
func (s *insertStmt) statement(settings string) string {
	q := "INSERT INTO " + s.table
	if s.colsText != "" {
		q += " (" + s.colsText + ")"
	}
	switch {
	case s.settings != "":
		q += " " + s.settings
	case settings != "":
		q += " SETTINGS " + settings
	}
	return q
}

// parseInsert parses "INSERT INTO table [(columns)] [SETTINGS ...] [VALUES |
// FORMAT ...]" (what follows VALUES or FORMAT is dropped, as clickhouse-go
// drops it).
func parseInsert(query string) (*insertStmt, error) {
	bad := func(why string) (*insertStmt, error) {
		return nil, fmt.Errorf("chdb: invalid INSERT query (%s): %s", why, query)
	}
	p := &sqlScanner{s: query}
	p.skip()
	if !p.keyword("INSERT") || !p.keyword("INTO") {
		return bad("want INSERT INTO")
	}
	p.keyword("TABLE")
	start := p.i
	for p.i < len(p.s) {
		c := p.s[p.i]
		if c == '`' || c == '"' {
			if !p.quoted() {
				return bad("unterminated identifier")
			}
			continue
		}
		if c == '(' || c == ' ' || c == '\t' || c == '\n' || c == '\r' {
			break
		}
		p.i++
	}
	ins := &insertStmt{table: p.s[start:p.i]}
	if ins.table == "" {
		return bad("no table")
	}
	p.skip()
	if p.peek() == '(' {
		p.i++
		start := p.i
		depth := 1
		for p.i < len(p.s) && depth > 0 {
			switch p.s[p.i] {
			case '`', '"', '\'':
				if !p.quoted() {
					return bad("unterminated quote")
				}
				continue
			case '(':
				depth++
			case ')':
				depth--
			}
			p.i++
		}
		if depth > 0 {
			return bad("unbalanced parentheses")
		}
		ins.colsText = strings.TrimSpace(p.s[start : p.i-1])
		for _, c := range splitTopLevel(ins.colsText) {
			name := strings.TrimSpace(c)
			if len(name) >= 2 && (name[0] == '`' || name[0] == '"') && name[len(name)-1] == name[0] {
				q := string(name[0])
				name = strings.ReplaceAll(unescape(name[1:len(name)-1]), q+q, q)
			}
			if name == "" {
				return bad("empty column name")
			}
			ins.columns = append(ins.columns, name)
		}
		p.skip()
	}
	if start := p.i; p.keyword("SETTINGS") {
		for p.i < len(p.s) {
			if c := p.peek(); c == '\'' || c == '`' || c == '"' {
				if !p.quoted() {
					return bad("unterminated quote")
				}
				continue
			}
			if p.atKeyword("VALUES") || p.atKeyword("FORMAT") {
				break
			}
			p.i++
		}
		ins.settings = strings.TrimSpace(p.s[start:p.i])
	}
	p.skip()
	if p.i < len(p.s) && !p.atKeyword("VALUES") && !p.atKeyword("FORMAT") {
		return bad("unexpected " + strconv.Quote(p.s[p.i:]))
	}
	return ins, nil
}

// sqlScanner walks SQL text.
type sqlScanner struct {
	s string
	i int
}

func (p *sqlScanner) peek() byte {
	if p.i < len(p.s) {
		return p.s[p.i]
	}
	return 0
}

// skip skips white space and comments.
func (p *sqlScanner) skip() {
	for p.i < len(p.s) {
		switch c := p.s[p.i]; {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			p.i++
		case c == '#' || c == '-' && strings.HasPrefix(p.s[p.i:], "--"):
			if j := strings.IndexByte(p.s[p.i:], '\n'); j >= 0 {
				p.i += j + 1
			} else {
				p.i = len(p.s)
			}
		case c == '/' && strings.HasPrefix(p.s[p.i:], "/*"):
			if j := strings.Index(p.s[p.i:], "*/"); j >= 0 {
				p.i += j + 2
			} else {
				p.i = len(p.s)
			}
		default:
			return
		}
	}
}

// atKeyword tells whether the keyword w (any case) comes next.
func (p *sqlScanner) atKeyword(w string) bool {
	if len(p.s)-p.i < len(w) || !strings.EqualFold(p.s[p.i:p.i+len(w)], w) {
		return false
	}
	end := p.i + len(w)
	return end == len(p.s) || !isWordByte(p.s[end])
}

// keyword consumes the keyword w and the space after it.
func (p *sqlScanner) keyword(w string) bool {
	if !p.atKeyword(w) {
		return false
	}
	p.i += len(w)
	p.skip()
	return true
}

// quoted skips a quoted string or identifier; false when it does not end.
func (p *sqlScanner) quoted() bool {
	q := p.s[p.i]
	for p.i++; p.i < len(p.s); p.i++ {
		switch p.s[p.i] {
		case '\\':
			p.i++
		case q:
			if p.i+1 < len(p.s) && p.s[p.i+1] == q {
				p.i++
				continue
			}
			p.i++
			return true
		}
	}
	return false
}

// PrepareBatch starts an INSERT: it learns the columns and their types with
// SELECT columns FROM table LIMIT 0, then keeps the rows appended until
// Send writes them all as one INSERT ... FORMAT TabSeparated. Options are
// ignored.
func (c *conn) PrepareBatch(ctx context.Context, query string, _ ...driver.PrepareBatchOption) (driver.Batch, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	ins, err := parseInsert(query)
	if err != nil {
		return nil, err
	}
	cols := ins.colsText
	if cols == "" {
		cols = "*"
	}
	out, err := c.e.run(ctx, c.db, "SELECT "+cols+" FROM "+ins.table+" LIMIT 0", resultFormat)
	if err != nil {
		return nil, err
	}
	header, err := parseResult(out)
	if err != nil {
		return nil, err
	}
	names := header.names
	if ins.columns != nil {
		if len(ins.columns) != len(header.types) {
			return nil, fmt.Errorf("chdb: %d columns in %q, %d in its result", len(ins.columns), query, len(header.types))
		}
		names = ins.columns
	}
	return &batch{
		ctx:   ctx,
		e:     c.e,
		db:    c.db,
		ins:   ins,
		names: names,
		types: header.types,
		cols:  make([]colData, len(header.types)),
	}, nil
}

// colData is the encoded fields of a column: field i is
// buf[ends[i-1]:ends[i]].
type colData struct {
	buf  []byte
	ends []int
}

func (d *colData) field(i int) []byte {
	start := 0
	if i > 0 {
		start = d.ends[i-1]
	}
	return d.buf[start:d.ends[i]]
}

// mark and reset undo the appends after a mark.
func (d *colData) mark() (int, int) { return len(d.buf), len(d.ends) }

func (d *colData) reset(nbuf, nends int) {
	d.buf, d.ends = d.buf[:nbuf], d.ends[:nends]
}

// dropLast removes the last field.
func (d *colData) dropLast() {
	n := len(d.ends) - 1
	start := 0
	if n > 0 {
		start = d.ends[n-1]
	}
	d.reset(start, n)
}

// add encodes v as the next field.
func (d *colData) add(t *colType, v any) error {
	nbuf := len(d.buf)
	buf, err := t.encode(d.buf, v, false)
	if err != nil {
		d.buf = d.buf[:nbuf]
		return err
	}
	d.buf = buf
	d.ends = append(d.ends, len(d.buf))
	return nil
}

// batch is a driver.Batch that sends its rows as one INSERT at Send.
type batch struct {
	ctx     context.Context
	e       *Engine
	db      string // the current database of its Conn
	ins     *insertStmt
	names   []string
	types   []*colType
	cols    []colData
	flushed int // the rows before the last Flush
	sent    bool
	err     error // an Append's: the batch is invalid
}

var _ driver.Batch = (*batch)(nil)

// fail makes the batch invalid (as clickhouse-go does when an Append fails).
func (b *batch) fail(err error) error {
	b.err = fmt.Errorf("%w: %w", clickhouse.ErrBatchInvalid, err)
	return err
}

func (b *batch) Abort() error {
	if b.sent {
		return clickhouse.ErrBatchAlreadySent
	}
	b.sent, b.cols = true, nil
	return nil
}

// Append appends a row: a value for each column.
func (b *batch) Append(v ...any) error {
	if b.sent {
		return clickhouse.ErrBatchAlreadySent
	}
	if b.err != nil {
		return b.err
	}
	if len(v) != len(b.cols) {
		return b.fail(fmt.Errorf("chdb: expected %d arguments, got %d", len(b.cols), len(v)))
	}
	for i, x := range v {
		if err := b.cols[i].add(b.types[i], x); err != nil {
			for j := range i {
				b.cols[j].dropLast()
			}
			return b.fail(fmt.Errorf("column %q: %w", b.names[i], err))
		}
	}
	return nil
}

func (b *batch) AppendStruct(v any) error {
	values, err := structTargets("AppendStruct", b.names, v, false)
	if err != nil {
		return err
	}
	return b.Append(values...)
}

// Column returns column i, to append to it a slice of values (Append) or
// one value (AppendRow).
func (b *batch) Column(i int) driver.BatchColumn {
	if i < 0 || i >= len(b.cols) {
		return &batchColumn{err: fmt.Errorf("chdb: batch.Column: invalid column index %d", i)}
	}
	return &batchColumn{b: b, i: i}
}

// rows is the number of rows of the batch, checking the columns agree.
func (b *batch) rows() (int, error) {
	if len(b.cols) == 0 {
		return 0, nil
	}
	n := len(b.cols[0].ends)
	for i := range b.cols {
		if m := len(b.cols[i].ends); m != n {
			return 0, fmt.Errorf("chdb: column %q has %d rows, column %q %d", b.names[i], m, b.names[0], n)
		}
	}
	return n, nil
}

// Flush keeps the rows: Send sends them all at once.
func (b *batch) Flush() error {
	if b.sent {
		return clickhouse.ErrBatchAlreadySent
	}
	if b.err != nil {
		return b.err
	}
	n, err := b.rows()
	if err != nil {
		return err
	}
	b.flushed = n
	return nil
}

// Send writes every row as one INSERT INTO ... FORMAT TabSeparated. Send
// after Send fails (clickhouse-go would send again).
func (b *batch) Send() error {
	if b.sent {
		return clickhouse.ErrBatchAlreadySent
	}
	defer func() { b.sent, b.cols = true, nil }()
	if b.err != nil {
		return b.err
	}
	n, err := b.rows()
	if err != nil {
		return err
	}
	if n == 0 {
		return nil
	}
	size := 0
	for i := range b.cols {
		size += len(b.cols[i].buf) + n
	}
	// One block, so one part per partition, whatever the rows' number and
	// size (as the projection asks a server with the same settings).
	settings := fmt.Sprintf("max_insert_block_size = %d, min_insert_block_size_rows = %d, min_insert_block_size_bytes = 0",
		max(n, 1048449), n)
	var q strings.Builder
	q.Grow(size + 256)
	q.WriteString(b.ins.statement(settings))
	q.WriteString(" FORMAT TabSeparated\n")
	for r := range n {
		for i := range b.cols {
			if i > 0 {
				q.WriteByte('\t')
			}
			q.Write(b.cols[i].field(r))
		}
		q.WriteByte('\n')
	}
	_, err = b.e.run(b.ctx, b.db, q.String(), "TabSeparated")
	return err
}

func (b *batch) IsSent() bool { return b.sent }

// Rows is the number of rows appended since the last Flush (as
// clickhouse-go, whose Flush sends them).
func (b *batch) Rows() int {
	if len(b.cols) == 0 {
		return 0
	}
	return len(b.cols[0].ends) - b.flushed
}

// Columns describes the columns as clickhouse-go's column types (the ones
// it knows).
func (b *batch) Columns() []column.Interface {
	var out []column.Interface
	for i, t := range b.types {
		if c, err := column.Type(t.name).Column(b.names[i], &column.ServerContext{Timezone: time.UTC}); err == nil {
			out = append(out, c)
		}
	}
	return out
}

// Close discards the rows unless Send sent them.
func (b *batch) Close() error {
	if !b.sent {
		b.sent, b.cols = true, nil
	}
	return nil
}

// batchColumn is a column of a batch.
type batchColumn struct {
	b   *batch
	i   int
	err error
}

// ready is the error that stops an append to the column, if any.
func (c *batchColumn) ready() error {
	switch {
	case c.err != nil:
		return c.err
	case c.b.sent:
		return clickhouse.ErrBatchAlreadySent
	}
	return c.b.err
}

// Append appends the values of a slice (or array).
func (c *batchColumn) Append(v any) error {
	if err := c.ready(); err != nil {
		return err
	}
	b := c.b
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Slice && rv.Kind() != reflect.Array {
		return b.fail(fmt.Errorf("chdb: column %q: Append wants a slice, not %T", b.names[c.i], v))
	}
	d, t := &b.cols[c.i], b.types[c.i]
	nbuf, nends := d.mark()
	for j := range rv.Len() {
		if err := d.add(t, rv.Index(j).Interface()); err != nil {
			d.reset(nbuf, nends)
			return b.fail(fmt.Errorf("column %q, value %d: %w", b.names[c.i], j, err))
		}
	}
	return nil
}

// AppendRow appends one value.
func (c *batchColumn) AppendRow(v any) error {
	if err := c.ready(); err != nil {
		return err
	}
	b := c.b
	if err := b.cols[c.i].add(b.types[c.i], v); err != nil {
		return b.fail(fmt.Errorf("column %q: %w", b.names[c.i], err))
	}
	return nil
}

// encode appends v as a value of t: as a TabSeparated field (lit false:
// escaped text, \N for NULL) or as a literal inside an array (lit true:
// quoted strings, NULL). Pointers are dereferenced, nil is NULL.
func (t *colType) encode(b []byte, v any, lit bool) ([]byte, error) {
	if vr, ok := v.(stddriver.Valuer); ok {
		if rv := reflect.ValueOf(v); !(rv.Kind() == reflect.Pointer && rv.IsNil()) {
			val, err := vr.Value()
			if err != nil {
				return nil, err
			}
			v = val
		}
	}
	rv := reflect.ValueOf(v)
	for rv.Kind() == reflect.Pointer && rv.Type() != typeBigInt {
		if rv.IsNil() {
			v, rv = nil, reflect.Value{}
			break
		}
		rv = rv.Elem()
		v = rv.Interface()
	}
	if v == nil || (rv.Kind() == reflect.Pointer && rv.IsNil()) {
		if t.kind != kNullable && t.kind != kNothing {
			return nil, fmt.Errorf("chdb: NULL for %s", t.name)
		}
		if lit {
			return append(b, "NULL"...), nil
		}
		return append(b, `\N`...), nil
	}
	wrong := func() ([]byte, error) {
		return nil, fmt.Errorf("chdb: cannot insert a %T into %s", v, t.name)
	}
	switch t.kind {
	case kNullable:
		return t.elem.encode(b, v, lit)
	case kArray:
		if rv.Kind() != reflect.Slice && rv.Kind() != reflect.Array {
			return wrong()
		}
		b = append(b, '[')
		for i := range rv.Len() {
			if i > 0 {
				b = append(b, ',')
			}
			var err error
			if b, err = t.elem.encode(b, rv.Index(i).Interface(), true); err != nil {
				return nil, err
			}
		}
		return append(b, ']'), nil
	case kString, kFixedString:
		if s, ok := stringOf(v, rv); ok {
			return escape(b, s, lit), nil
		}
	case kEnum8, kEnum16:
		if s, ok := stringOf(v, rv); ok {
			return escape(b, s, lit), nil
		}
		if s, ok := intText(rv); ok {
			return append(b, s...), nil
		}
	case kInt8, kInt16, kInt32, kInt64, kUInt8, kUInt16, kUInt32, kUInt64:
		if s, ok := intText(rv); ok {
			return append(b, s...), nil
		}
	case kBigInt:
		switch x := v.(type) {
		case *big.Int:
			return append(b, x.String()...), nil
		case big.Int:
			return append(b, x.String()...), nil
		}
		if s, ok := intText(rv); ok {
			return append(b, s...), nil
		}
	case kFloat32, kFloat64:
		if rv.Kind() == reflect.Float32 || rv.Kind() == reflect.Float64 {
			f := rv.Float()
			switch {
			case math.IsNaN(f):
				return append(b, "nan"...), nil
			case math.IsInf(f, 1):
				return append(b, "inf"...), nil
			case math.IsInf(f, -1):
				return append(b, "-inf"...), nil
			}
			return strconv.AppendFloat(b, f, 'g', -1, rv.Type().Bits()), nil
		}
		if s, ok := intText(rv); ok {
			return append(b, s...), nil
		}
	case kBool:
		if rv.Kind() == reflect.Bool {
			return strconv.AppendBool(b, rv.Bool()), nil
		}
		if s, ok := intText(rv); ok {
			return append(b, s...), nil
		}
	case kDecimal:
		if s, ok := v.(fmt.Stringer); ok { // decimal.Decimal
			return append(b, s.String()...), nil
		}
		if rv.Kind() == reflect.Float32 || rv.Kind() == reflect.Float64 {
			return strconv.AppendFloat(b, rv.Float(), 'f', -1, 64), nil
		}
		if s, ok := intText(rv); ok {
			return append(b, s...), nil
		}
		if rv.Kind() == reflect.String {
			return escape(b, rv.String(), false), nil
		}
	case kDate, kDate32, kDateTime, kDateTime64:
		if tm, ok := v.(time.Time); ok {
			return escape(b, t.timeText(tm), lit), nil
		}
		if rv.Kind() == reflect.String {
			return escape(b, rv.String(), lit), nil
		}
	case kUUID:
		switch x := v.(type) {
		case uuid.UUID:
			return escape(b, x.String(), lit), nil
		case [16]byte:
			return escape(b, uuid.UUID(x).String(), lit), nil
		case string:
			return escape(b, x, lit), nil
		}
	case kIPv4, kIPv6:
		switch x := v.(type) {
		case net.IP:
			return escape(b, x.String(), lit), nil
		case string:
			return escape(b, x, lit), nil
		}
	}
	return wrong()
}

// timeText is a time.Time as text for a Date, Date32, DateTime or
// DateTime64 column: a date is the date of tm in its own location (as
// clickhouse-go takes it), a time is tm's moment in the column's time zone.
// The zero time.Time is the epoch (as clickhouse-go writes it).
func (t *colType) timeText(tm time.Time) string {
	if tm.IsZero() {
		tm = time.Unix(0, 0).UTC()
	}
	switch t.kind {
	case kDate, kDate32:
		return tm.Format(time.DateOnly)
	case kDateTime64:
		layout := time.DateTime
		if t.scale > 0 {
			layout += "." + "000000000"[:min(t.scale, 9)]
		}
		return tm.In(t.loc).Format(layout)
	}
	return tm.In(t.loc).Format(time.DateTime)
}

// stringOf is v as a string when it is one ([]byte included).
func stringOf(v any, rv reflect.Value) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, true
	case []byte:
		return string(x), true
	}
	if rv.Kind() == reflect.String {
		return rv.String(), true
	}
	return "", false
}

// intText is rv as an integer literal when it is an integer or a bool.
func intText(rv reflect.Value) (string, bool) {
	switch rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return strconv.FormatInt(rv.Int(), 10), true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return strconv.FormatUint(rv.Uint(), 10), true
	case reflect.Bool:
		if rv.Bool() {
			return "1", true
		}
		return "0", true
	}
	return "", false
}

// escape appends s as a TabSeparated field (lit false) or as a quoted
// literal (lit true).
func escape(b []byte, s string, lit bool) []byte {
	if lit {
		b = append(b, '\'')
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '\\':
			b = append(b, '\\', '\\')
		case '\t':
			b = append(b, '\\', 't')
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case 0:
			b = append(b, '\\', '0')
		case '\'':
			if lit {
				b = append(b, '\\', '\'')
			} else {
				b = append(b, c)
			}
		default:
			b = append(b, c)
		}
	}
	if lit {
		b = append(b, '\'')
	}
	return b
}
