package chdb

import (
	stddriver "database/sql/driver"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
)

// bind replaces the positional ? placeholders of query with args, written as
// SQL literals, as clickhouse-go binds them client-side. A ? inside a
// '...' string, a `...` or "..." identifier or a comment is not a
// placeholder; \? stands for a literal ? (the backslash is dropped). Without
// args the query is returned unchanged. Extra args are ignored (as
// clickhouse-go does); too few are an error.
func bind(query string, args ...any) (string, error) {
	if len(args) == 0 {
		return query, nil
	}
	for _, a := range args {
		switch a.(type) {
		case driver.NamedValue, driver.NamedDateValue:
			return "", fmt.Errorf("chdb: named parameters (%T) are not supported by chdb; use positional ?", a)
		}
	}
	var (
		buf     strings.Builder
		last    = 0 // start of the text not copied yet
		argi    = 0
		missing = 0
		state   quoteState
	)
	for i := 0; i < len(query); i++ {
		if query[i] == '?' && !state.inIdentifierOrComment() {
			switch {
			case i > 0 && query[i-1] == '\\':
				// \? is a literal ?.
				buf.WriteString(query[last : i-1])
				buf.WriteByte('?')
				last = i + 1
			case state.single:
				// A ? in a string literal is text.
			default:
				buf.WriteString(query[last:i])
				if argi < len(args) {
					lit, err := literal(args[argi], false)
					if err != nil {
						return "", fmt.Errorf("chdb: argument %d: %w", argi+1, err)
					}
					buf.WriteString(lit)
					argi++
				} else {
					missing++
				}
				last = i + 1
			}
			continue
		}
		i = state.update(query, i)
	}
	if missing > 0 {
		return "", fmt.Errorf("chdb: have no arg for param ? at last %d positions", missing)
	}
	buf.WriteString(query[last:])
	return buf.String(), nil
}

// quoteState tracks whether the scanner of bind is in a string literal, a
// quoted identifier or a comment (ClickHouse's: -- and # to the end of the
// line, nested /* */).
type quoteState struct {
	backtick, single, double, line bool
	block                          int // depth of /* */
}

func (s *quoteState) inIdentifierOrComment() bool {
	return s.backtick || s.double || s.line || s.block > 0
}

// update consumes query[pos] and returns the index of the last byte it
// consumed (pos+1 for a two-byte token).
func (s *quoteState) update(query string, pos int) int {
	c := query[pos]
	next := byte(0)
	if pos+1 < len(query) {
		next = query[pos+1]
	}
	switch {
	case s.line:
		if c == '\n' {
			s.line = false
		}
	case s.block > 0:
		switch {
		case c == '/' && next == '*':
			s.block++
			return pos + 1
		case c == '*' && next == '/':
			s.block--
			return pos + 1
		}
	case s.backtick, s.single, s.double:
		q := byte('`')
		if s.single {
			q = '\''
		} else if s.double {
			q = '"'
		}
		if c == '\\' {
			return pos + 1 // an escaped character
		}
		if c == q {
			if next == q {
				return pos + 1 // a doubled quote
			}
			s.backtick, s.single, s.double = false, false, false
		}
	default:
		switch {
		case c == '`':
			s.backtick = true
		case c == '\'':
			s.single = true
		case c == '"':
			s.double = true
		case c == '#':
			s.line = true
		case c == '-' && next == '-':
			s.line = true
			return pos + 1
		case c == '/' && next == '*':
			s.block++
			return pos + 1
		}
	}
	return pos
}

// quoteString writes s as a ClickHouse string literal.
func quoteString(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte('\'')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '\\':
			b.WriteString(`\\`)
		case '\'':
			b.WriteString(`\'`)
		case 0:
			b.WriteString(`\0`)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('\'')
	return b.String()
}

// literal writes v as a SQL literal, with clickhouse-go's semantics: NULL
// for nil (and nil pointers), strings quoted and escaped, bools as 1/0,
// floats as cast(x, 'Float64'), time.Time as a DateTime of the same moment
// (seconds; clickhouse-go writes toDateTime('...') for a UTC time on a UTC
// server, this writes toDateTime('...', 'UTC')), []byte as a string at the
// top level and as an array of numbers inside a slice, slices and arrays as
// [a, b], maps as map(k, v), fmt.Stringer as its quoted String().
func literal(v any, nested bool) (string, error) {
	if vr, ok := v.(stddriver.Valuer); ok {
		if rv := reflect.ValueOf(v); !(rv.Kind() == reflect.Pointer && rv.IsNil()) {
			val, err := vr.Value()
			if err != nil {
				return "", err
			}
			v = val
		}
	}
	switch v := v.(type) {
	case nil:
		return "NULL", nil
	case string:
		return quoteString(v), nil
	case []byte:
		if v == nil {
			return "NULL", nil
		}
		if !nested {
			return quoteString(string(v)), nil
		}
	case bool:
		if v {
			return "1", nil
		}
		return "0", nil
	case time.Time:
		return timeLiteral(v), nil
	case *time.Time:
		if v == nil {
			return "NULL", nil
		}
		return timeLiteral(*v), nil
	case float32:
		return floatLiteral(float64(v), 32), nil
	case float64:
		return floatLiteral(v, 64), nil
	case time.Duration:
		return "", fmt.Errorf("cannot bind a time.Duration: not supported by chdb")
	case fmt.Stringer:
		if rv := reflect.ValueOf(v); rv.Kind() == reflect.Pointer && rv.IsNil() {
			return "NULL", nil
		}
		return quoteString(v.String()), nil
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Pointer:
		if rv.IsNil() {
			return "NULL", nil
		}
		return literal(rv.Elem().Interface(), nested)
	case reflect.String:
		return quoteString(rv.String()), nil
	case reflect.Bool:
		return literal(rv.Bool(), nested)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return strconv.FormatInt(rv.Int(), 10), nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return strconv.FormatUint(rv.Uint(), 10), nil
	case reflect.Float32:
		return floatLiteral(rv.Float(), 32), nil
	case reflect.Float64:
		return floatLiteral(rv.Float(), 64), nil
	case reflect.Slice, reflect.Array:
		items := make([]string, rv.Len())
		for i := range items {
			s, err := literal(rv.Index(i).Interface(), true)
			if err != nil {
				return "", err
			}
			items[i] = s
		}
		return "[" + strings.Join(items, ", ") + "]", nil
	case reflect.Map:
		items := make([]string, 0, 2*rv.Len())
		iter := rv.MapRange()
		for iter.Next() {
			k, err := literal(iter.Key().Interface(), true)
			if err != nil {
				return "", err
			}
			val, err := literal(iter.Value().Interface(), true)
			if err != nil {
				return "", err
			}
			items = append(items, k, val)
		}
		return "map(" + strings.Join(items, ", ") + ")", nil
	}
	return "", fmt.Errorf("cannot bind a %T: not supported by chdb", v)
}

// timeLiteral is the DateTime of t's moment, in whole seconds (as
// clickhouse-go binds a time.Time).
func timeLiteral(t time.Time) string {
	return "toDateTime('" + t.UTC().Format(time.DateTime) + "', 'UTC')"
}

// floatLiteral is clickhouse-go's: cast(x, 'Float64'), so that 1.0 stays a
// float.
func floatLiteral(f float64, bits int) string {
	typ := "Float64"
	if bits == 32 {
		typ = "Float32"
	}
	var s string
	switch {
	case math.IsNaN(f):
		s = "'nan'"
	case math.IsInf(f, 1):
		s = "'inf'"
	case math.IsInf(f, -1):
		s = "'-inf'"
	default:
		s = strconv.FormatFloat(f, 'g', -1, bits)
	}
	return "cast(" + s + ", '" + typ + "')"
}
