package chdb

import (
	"fmt"
	"math/big"
	"net"
	"reflect"
	"strconv"
	"strings"
	"time"
	_ "time/tzdata" // DateTime('zone') columns whatever the host has

	"github.com/google/uuid"
	"github.com/shopspring/decimal"
)

// kind is what a ClickHouse type is for decoding and encoding.
type kind int

const (
	kOther kind = iota // kept as text: Map, Tuple, AggregateFunction, ...
	kNothing
	kString
	kFixedString
	kEnum8
	kEnum16
	kUUID
	kBool
	kInt8
	kInt16
	kInt32
	kInt64
	kUInt8
	kUInt16
	kUInt32
	kUInt64
	kBigInt // Int128, Int256, UInt128, UInt256
	kFloat32
	kFloat64
	kDecimal
	kDate
	kDate32
	kDateTime
	kDateTime64
	kIPv4
	kIPv6
	kNullable
	kArray
)

var (
	typeString  = reflect.TypeFor[string]()
	typeTime    = reflect.TypeFor[time.Time]()
	typeAny     = reflect.TypeFor[any]()
	typeBigInt  = reflect.TypeFor[*big.Int]()
	typeUUID    = reflect.TypeFor[uuid.UUID]()
	typeDecimal = reflect.TypeFor[decimal.Decimal]()
	typeIP      = reflect.TypeFor[net.IP]()
)

// simpleTypes are the types without parameters.
var simpleTypes = map[string]struct {
	kind kind
	scan reflect.Type
}{
	"String":  {kString, typeString},
	"UUID":    {kUUID, typeUUID},
	"Bool":    {kBool, reflect.TypeFor[bool]()},
	"Int8":    {kInt8, reflect.TypeFor[int8]()},
	"Int16":   {kInt16, reflect.TypeFor[int16]()},
	"Int32":   {kInt32, reflect.TypeFor[int32]()},
	"Int64":   {kInt64, reflect.TypeFor[int64]()},
	"UInt8":   {kUInt8, reflect.TypeFor[uint8]()},
	"UInt16":  {kUInt16, reflect.TypeFor[uint16]()},
	"UInt32":  {kUInt32, reflect.TypeFor[uint32]()},
	"UInt64":  {kUInt64, reflect.TypeFor[uint64]()},
	"Int128":  {kBigInt, typeBigInt},
	"Int256":  {kBigInt, typeBigInt},
	"UInt128": {kBigInt, typeBigInt},
	"UInt256": {kBigInt, typeBigInt},
	"Float32": {kFloat32, reflect.TypeFor[float32]()},
	"Float64": {kFloat64, reflect.TypeFor[float64]()},
	"Date":    {kDate, typeTime},
	"Date32":  {kDate32, typeTime},
	"IPv4":    {kIPv4, typeIP},
	"IPv6":    {kIPv6, typeIP},
	"Nothing": {kNothing, typeAny},
}

// colType is a parsed ClickHouse type.
type colType struct {
	name  string // as ClickHouse writes it, e.g. "Array(Nullable(String))"
	kind  kind
	elem  *colType     // of Nullable and Array
	scan  reflect.Type // the Go type clickhouse-go scans it as
	loc   *time.Location
	scale int              // DateTime64's precision
	enum  map[string]int64 // Enum8, Enum16: the values of the names
}

// parseType parses a type as ClickHouse writes it. A type it does not know
// is kOther (scanned as its text).
func parseType(name string) (*colType, error) {
	name = strings.TrimSpace(name)
	t := &colType{name: name, kind: kOther, scan: typeString}
	if s, ok := simpleTypes[name]; ok {
		t.kind, t.scan = s.kind, s.scan
		return t, nil
	}
	base, params, ok := strings.Cut(name, "(")
	if ok {
		if !strings.HasSuffix(params, ")") {
			return nil, fmt.Errorf("chdb: bad type %q", name)
		}
		params = params[:len(params)-1]
	}
	switch base {
	case "LowCardinality":
		inner, err := parseType(params)
		if err != nil {
			return nil, err
		}
		*t = *inner
		t.name = name
	case "SimpleAggregateFunction":
		// SimpleAggregateFunction(f, T) holds T.
		args := splitTopLevel(params)
		if len(args) < 2 {
			return nil, fmt.Errorf("chdb: bad type %q", name)
		}
		inner, err := parseType(strings.Join(args[1:], ","))
		if err != nil {
			return nil, err
		}
		*t = *inner
		t.name = name
	case "Nullable", "Array":
		elem, err := parseType(params)
		if err != nil {
			return nil, err
		}
		t.elem = elem
		if base == "Nullable" {
			t.kind, t.scan = kNullable, reflect.PointerTo(elem.scan)
		} else {
			t.kind, t.scan = kArray, reflect.SliceOf(elem.scan)
		}
	case "FixedString":
		t.kind = kFixedString
	case "Enum8", "Enum16":
		t.kind = kEnum8
		if base == "Enum16" {
			t.kind = kEnum16
		}
		enum, err := parseEnum(params)
		if err != nil {
			return nil, fmt.Errorf("chdb: bad type %q: %w", name, err)
		}
		t.enum = enum
	case "Decimal", "Decimal32", "Decimal64", "Decimal128", "Decimal256":
		t.kind, t.scan = kDecimal, typeDecimal
	case "DateTime", "DateTime64":
		t.kind, t.scan, t.loc = kDateTime, typeTime, time.UTC
		args := splitTopLevel(params)
		if base == "DateTime64" {
			t.kind = kDateTime64
			if len(args) == 0 {
				return nil, fmt.Errorf("chdb: bad type %q", name)
			}
			scale, err := strconv.Atoi(strings.TrimSpace(args[0]))
			if err != nil {
				return nil, fmt.Errorf("chdb: bad type %q", name)
			}
			t.scale = scale
			args = args[1:]
		}
		if len(args) > 0 {
			zone, err := unquote(strings.TrimSpace(args[0]))
			if err != nil {
				return nil, fmt.Errorf("chdb: bad type %q: %w", name, err)
			}
			if t.loc, err = time.LoadLocation(zone); err != nil {
				return nil, fmt.Errorf("chdb: type %q: %w", name, err)
			}
		}
	}
	return t, nil
}

// splitTopLevel splits s on the commas outside parentheses and quotes.
func splitTopLevel(s string) []string {
	if strings.TrimSpace(s) == "" {
		return nil
	}
	var (
		out   []string
		depth int
		quote byte
		start int
	)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0:
			if c == '\\' {
				i++
			} else if c == quote {
				quote = 0
			}
		case c == '\'' || c == '`' || c == '"':
			quote = c
		case c == '(':
			depth++
		case c == ')':
			depth--
		case c == ',' && depth == 0:
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return append(out, s[start:])
}

// parseEnum parses "'a' = 1, 'b' = 2".
func parseEnum(params string) (map[string]int64, error) {
	out := map[string]int64{}
	for _, item := range splitTopLevel(params) {
		item = strings.TrimSpace(item)
		eq := strings.LastIndexByte(item, '=')
		if eq < 0 {
			return nil, fmt.Errorf("enum item %q", item)
		}
		name, err := unquote(strings.TrimSpace(item[:eq]))
		if err != nil {
			return nil, err
		}
		v, err := strconv.ParseInt(strings.TrimSpace(item[eq+1:]), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("enum item %q", item)
		}
		out[name] = v
	}
	return out, nil
}

// unquote reads a whole '...' literal.
func unquote(s string) (string, error) {
	p := &litParser{s: s}
	v, err := p.quoted()
	if err != nil {
		return "", err
	}
	if p.i != len(s) {
		return "", fmt.Errorf("unexpected %q after a string literal", s[p.i:])
	}
	return v, nil
}

// composite tells whether ClickHouse writes values of t in TabSeparated as
// literals ([...], (...), {...}) rather than escaped text.
func (t *colType) composite() bool {
	if t.kind == kArray {
		return true
	}
	if t.kind != kOther {
		return false
	}
	for _, p := range []string{"Map(", "Tuple(", "Nested(", "Variant(", "LowCardinality(Map(", "Point", "Ring", "Polygon", "MultiPolygon", "LineString", "MultiLineString"} {
		if strings.HasPrefix(t.name, p) {
			return true
		}
	}
	return false
}

// decodeTSV decodes a field of a TabSeparated row into a value of t.scan
// (the invalid Value for Nullable(Nothing)'s NULL).
func (t *colType) decodeTSV(field string) (reflect.Value, error) {
	switch {
	case t.kind == kNullable:
		if field == `\N` {
			return reflect.Zero(t.scan), nil
		}
		return t.pointerTo(t.elem.decodeTSV(field))
	case t.kind == kArray:
		p := &litParser{s: field}
		v, err := t.decodeLiteral(p)
		if err != nil {
			return reflect.Value{}, err
		}
		if p.skipSpaces(); p.i != len(field) {
			return reflect.Value{}, fmt.Errorf("chdb: bad %s value %q", t.name, field)
		}
		return v, nil
	case t.composite():
		return reflect.ValueOf(field), nil
	}
	return t.parseScalar(unescape(field))
}

// pointerTo is the value of a Nullable column t whose element decoded to v:
// a pointer to v (the invalid Value stays invalid: Nullable(Nothing)).
func (t *colType) pointerTo(v reflect.Value, err error) (reflect.Value, error) {
	if err != nil || !v.IsValid() {
		return v, err
	}
	p := reflect.New(t.elem.scan)
	p.Elem().Set(v)
	return p, nil
}

// decodeLiteral decodes a value written as a literal, as inside an array.
func (t *colType) decodeLiteral(p *litParser) (reflect.Value, error) {
	p.skipSpaces()
	switch {
	case t.kind == kNullable:
		if p.word("NULL") {
			return reflect.Zero(t.scan), nil
		}
		return t.pointerTo(t.elem.decodeLiteral(p))
	case t.kind == kArray:
		if !p.consume('[') {
			return reflect.Value{}, p.errorf("expected [ for %s", t.name)
		}
		out := reflect.MakeSlice(t.scan, 0, 0)
		for first := true; ; first = false {
			p.skipSpaces()
			if p.consume(']') {
				return out, nil
			}
			if !first && !p.consume(',') {
				return reflect.Value{}, p.errorf("expected , or ] in %s", t.name)
			}
			v, err := t.elem.decodeLiteral(p)
			if err != nil {
				return reflect.Value{}, err
			}
			if !v.IsValid() {
				v = reflect.Zero(t.elem.scan)
			}
			out = reflect.Append(out, v)
		}
	case t.composite():
		s, err := p.balanced()
		if err != nil {
			return reflect.Value{}, err
		}
		return reflect.ValueOf(s), nil
	}
	var s string
	if p.peek() == '\'' {
		var err error
		if s, err = p.quoted(); err != nil {
			return reflect.Value{}, err
		}
	} else {
		s = p.bare()
	}
	return t.parseScalar(s)
}

// parseScalar parses the text of a value of a scalar type.
func (t *colType) parseScalar(s string) (reflect.Value, error) {
	bad := func(err error) (reflect.Value, error) {
		return reflect.Value{}, fmt.Errorf("chdb: bad %s value %q: %w", t.name, s, err)
	}
	switch t.kind {
	case kNothing:
		return reflect.Value{}, nil
	case kInt8, kInt16, kInt32, kInt64:
		n, err := strconv.ParseInt(s, 10, t.scan.Bits())
		if err != nil {
			return bad(err)
		}
		v := reflect.New(t.scan).Elem()
		v.SetInt(n)
		return v, nil
	case kUInt8, kUInt16, kUInt32, kUInt64:
		n, err := strconv.ParseUint(s, 10, t.scan.Bits())
		if err != nil {
			return bad(err)
		}
		v := reflect.New(t.scan).Elem()
		v.SetUint(n)
		return v, nil
	case kFloat32, kFloat64:
		f, err := strconv.ParseFloat(s, t.scan.Bits())
		if err != nil {
			return bad(err)
		}
		v := reflect.New(t.scan).Elem()
		v.SetFloat(f)
		return v, nil
	case kBool:
		switch s {
		case "true", "1":
			return reflect.ValueOf(true), nil
		case "false", "0":
			return reflect.ValueOf(false), nil
		}
		return bad(fmt.Errorf("not a Bool"))
	case kBigInt:
		n, ok := new(big.Int).SetString(s, 10)
		if !ok {
			return bad(fmt.Errorf("not an integer"))
		}
		return reflect.ValueOf(n), nil
	case kDecimal:
		d, err := decimal.NewFromString(s)
		if err != nil {
			return bad(err)
		}
		return reflect.ValueOf(d), nil
	case kDate, kDate32:
		d, err := time.ParseInLocation(time.DateOnly, s, time.UTC)
		if err != nil {
			return bad(err)
		}
		return reflect.ValueOf(d), nil
	case kDateTime, kDateTime64:
		d, err := time.ParseInLocation("2006-01-02 15:04:05.999999999", s, t.loc)
		if err != nil {
			return bad(err)
		}
		return reflect.ValueOf(d), nil
	case kUUID:
		u, err := uuid.Parse(s)
		if err != nil {
			return bad(err)
		}
		return reflect.ValueOf(u), nil
	case kIPv4, kIPv6:
		ip := net.ParseIP(s)
		if ip == nil {
			return bad(fmt.Errorf("not an IP address"))
		}
		if t.kind == kIPv4 {
			ip = ip.To4()
		}
		return reflect.ValueOf(ip), nil
	}
	// String, FixedString, Enum8, Enum16 (the name), and the types kept as
	// text.
	return reflect.ValueOf(s), nil
}

// unescape decodes ClickHouse's backslash escapes (of TabSeparated fields
// and of quoted strings).
func unescape(s string) string {
	i := strings.IndexByte(s, '\\')
	if i < 0 {
		return s
	}
	b := make([]byte, 0, len(s))
	b = append(b, s[:i]...)
	for ; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 == len(s) {
			b = append(b, c)
			continue
		}
		i++
		switch c = s[i]; c {
		case 'b':
			b = append(b, '\b')
		case 'f':
			b = append(b, '\f')
		case 'n':
			b = append(b, '\n')
		case 'r':
			b = append(b, '\r')
		case 't':
			b = append(b, '\t')
		case '0':
			b = append(b, 0)
		case 'a':
			b = append(b, '\a')
		case 'v':
			b = append(b, '\v')
		case 'x':
			if i+2 < len(s) {
				if n, err := strconv.ParseUint(s[i+1:i+3], 16, 8); err == nil {
					b = append(b, byte(n))
					i += 2
					continue
				}
			}
			b = append(b, '\\', 'x')
		default:
			b = append(b, c) // \\ \' \" and any other
		}
	}
	return string(b)
}

// litParser reads ClickHouse literals: [..], '...', numbers, NULL, (...),
// {...}.
type litParser struct {
	s string
	i int
}

func (p *litParser) errorf(format string, args ...any) error {
	return fmt.Errorf("chdb: at %d of %q: %s", p.i, p.s, fmt.Sprintf(format, args...))
}

func (p *litParser) skipSpaces() {
	for p.i < len(p.s) && (p.s[p.i] == ' ' || p.s[p.i] == '\t' || p.s[p.i] == '\n') {
		p.i++
	}
}

func (p *litParser) peek() byte {
	if p.i < len(p.s) {
		return p.s[p.i]
	}
	return 0
}

func (p *litParser) consume(c byte) bool {
	if p.peek() == c {
		p.i++
		return true
	}
	return false
}

// word consumes w when it comes next, as a whole word.
func (p *litParser) word(w string) bool {
	if !strings.HasPrefix(p.s[p.i:], w) {
		return false
	}
	if end := p.i + len(w); end < len(p.s) && isWordByte(p.s[end]) {
		return false
	}
	p.i += len(w)
	return true
}

func isWordByte(c byte) bool {
	return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// quoted reads a '...' literal and returns its text.
func (p *litParser) quoted() (string, error) {
	if !p.consume('\'') {
		return "", p.errorf("expected '")
	}
	var out strings.Builder
	start := p.i // of the text not decoded yet
	for p.i < len(p.s) {
		switch p.s[p.i] {
		case '\\':
			p.i += 2
			continue
		case '\'':
			out.WriteString(unescape(p.s[start:p.i]))
			p.i++
			if p.peek() != '\'' {
				return out.String(), nil
			}
			// '' is a quote.
			out.WriteByte('\'')
			p.i++
			start = p.i
			continue
		}
		p.i++
	}
	return "", p.errorf("unterminated string")
}

// bare reads an unquoted value (a number, nan, inf, true, ...).
func (p *litParser) bare() string {
	start := p.i
	for p.i < len(p.s) {
		switch p.s[p.i] {
		case ',', ']', ')', '}', ' ':
			return p.s[start:p.i]
		}
		p.i++
	}
	return p.s[start:]
}

// balanced reads a value as text: a bracketed literal with what it holds,
// a quoted string (with its quotes) or a bare value.
func (p *litParser) balanced() (string, error) {
	start := p.i
	depth := 0
	for p.i < len(p.s) {
		switch p.s[p.i] {
		case '\'':
			if _, err := p.quoted(); err != nil {
				return "", err
			}
			if depth == 0 {
				return p.s[start:p.i], nil
			}
			continue
		case '[', '(', '{':
			depth++
		case ']', ')', '}':
			if depth == 0 {
				return p.s[start:p.i], nil
			}
			depth--
			if depth == 0 {
				p.i++
				return p.s[start:p.i], nil
			}
		case ',':
			if depth == 0 {
				return p.s[start:p.i], nil
			}
		}
		p.i++
	}
	if depth != 0 {
		return "", p.errorf("unbalanced literal")
	}
	return p.s[start:], nil
}
