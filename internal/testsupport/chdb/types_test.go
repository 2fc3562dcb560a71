package chdb

import (
	"errors"
	"math"
	"math/big"
	"net"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/column"
	"github.com/google/uuid"
	"github.com/shopspring/decimal"
)

// testTypes are the ClickHouse types whose ScanType must be clickhouse-go's.
var testTypes = []string{
	"String", "FixedString(4)", "Enum8('a' = 1, 'b' = 2)", "Enum16('x' = 1000, 'y' = -5)",
	"LowCardinality(String)", "UUID", "Bool",
	"UInt8", "UInt16", "UInt32", "UInt64", "Int8", "Int16", "Int32", "Int64",
	"Int128", "UInt256", "Float32", "Float64", "Decimal(18, 2)",
	"Date", "Date32", "DateTime", "DateTime('Europe/Paris')", "DateTime64(3)", "DateTime64(6, 'UTC')",
	"IPv4", "IPv6",
	"Nullable(String)", "Nullable(DateTime)", "Nullable(UInt64)", "LowCardinality(Nullable(String))",
	"Array(UInt64)", "Array(String)", "Array(Nullable(UInt8))", "Array(Array(String))", "Array(Date)",
	"SimpleAggregateFunction(max, UInt64)",
}

// TestScanTypeIsClickHouseGos compares each ScanType with the one of
// clickhouse-go's column of the same type.
func TestScanTypeIsClickHouseGos(t *testing.T) {
	sc := &column.ServerContext{Timezone: time.UTC}
	for _, name := range testTypes {
		ct, err := parseType(name)
		if err != nil {
			t.Errorf("parseType(%q): %v", name, err)
			continue
		}
		col, err := column.Type(name).Column("c", sc)
		if err != nil {
			t.Fatalf("clickhouse-go column %q: %v", name, err)
		}
		c := &columnType{name: "c", t: ct}
		if got, want := c.ScanType(), col.ScanType(); got != want {
			t.Errorf("ScanType of %s = %v; clickhouse-go's is %v", name, got, want)
		}
		if got := c.DatabaseTypeName(); got != name {
			t.Errorf("DatabaseTypeName = %q; want %q", got, name)
		}
		_, nullable := col.(*column.Nullable)
		if c.Nullable() != nullable {
			t.Errorf("Nullable() of %s = %v; want %v", name, c.Nullable(), nullable)
		}
	}
}

func TestParseTypeDetails(t *testing.T) {
	ct, err := parseType(`Enum8('a' = 1, 'it\'s' = -2, 'x = y' = 3)`)
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]int64{"a": 1, "it's": -2, "x = y": 3}; !reflect.DeepEqual(ct.enum, want) {
		t.Errorf("enum = %v; want %v", ct.enum, want)
	}
	ct, err = parseType("DateTime64(3, 'Europe/Paris')")
	if err != nil {
		t.Fatal(err)
	}
	if ct.kind != kDateTime64 || ct.scale != 3 || ct.loc.String() != "Europe/Paris" {
		t.Errorf("DateTime64(3, 'Europe/Paris') = kind %v, scale %d, loc %v", ct.kind, ct.scale, ct.loc)
	}
	ct, err = parseType("Map(String, UInt64)")
	if err != nil {
		t.Fatal(err)
	}
	if ct.kind != kOther || ct.scan != typeString || !ct.composite() {
		t.Errorf("Map(String, UInt64) = %+v; want kept as text", ct)
	}
}

func TestDecodeTSV(t *testing.T) {
	at := time.Date(2026, 4, 1, 12, 0, 0, 0, time.UTC)
	day := time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC)
	u8 := func(v uint8) *uint8 { return &v }
	str := func(v string) *string { return &v }
	paris, _ := time.LoadLocation("Europe/Paris")
	tests := []struct {
		typ, field string
		want       any
	}{
		{"String", `x\\y\tz\nw\'q\0`, "x\\y\tz\nw'q\x00"},
		{"String", "", ""},
		{"String", `\\N`, `\N`},
		{"FixedString(4)", `ab\0\0`, "ab\x00\x00"},
		{"Enum8('a' = 1)", "a", "a"},
		{"LowCardinality(String)", "lc", "lc"},
		{"UUID", "61f0c404-5cb3-11e7-907b-a6006ad3dba0", uuid.MustParse("61f0c404-5cb3-11e7-907b-a6006ad3dba0")},
		{"Bool", "true", true},
		{"UInt8", "255", uint8(255)},
		{"UInt64", "18446744073709551615", uint64(18446744073709551615)},
		{"Int8", "-128", int8(-128)},
		{"Int64", "-9223372036854775808", int64(-9223372036854775808)},
		{"Int128", "-170141183460469231731687303715884105728", func() *big.Int {
			n, _ := new(big.Int).SetString("-170141183460469231731687303715884105728", 10)
			return n
		}()},
		{"Float32", "1.5", float32(1.5)},
		{"Float64", "-inf", math.Inf(-1)},
		{"Decimal(18, 2)", "1.25", decimal.RequireFromString("1.25")},
		{"Date", "2026-04-01", day},
		{"Date32", "1950-01-02", time.Date(1950, 1, 2, 0, 0, 0, 0, time.UTC)},
		{"DateTime", "2026-04-01 12:00:00", at},
		{"DateTime('Europe/Paris')", "2026-04-01 14:00:00", at.In(paris)},
		{"DateTime64(3)", "2026-04-01 12:00:00.123", at.Add(123 * time.Millisecond)},
		{"IPv4", "10.0.0.1", net.IPv4(10, 0, 0, 1).To4()},
		{"Nullable(String)", `\N`, (*string)(nil)},
		{"Nullable(String)", `a\tb`, str("a\tb")},
		{"Array(UInt64)", "[]", []uint64{}},
		{"Array(UInt64)", "[1,2,3]", []uint64{1, 2, 3}},
		{"Array(String)", `['a\tb','c\'d','e\\f','']`, []string{"a\tb", "c'd", "e\\f", ""}},
		{"Array(Nullable(UInt8))", "[NULL,1]", []*uint8{nil, u8(1)}},
		{"Array(Array(String))", "[['a'],[],['b','c']]", [][]string{{"a"}, {}, {"b", "c"}}},
		{"Array(Date)", "['2026-04-01']", []time.Time{day}},
		{"Array(Tuple(UInt8, String))", "[(1,'a,]'),(2,'b')]", []string{"(1,'a,]')", "(2,'b')"}},
		{"Map(String, UInt64)", "{'k':1}", "{'k':1}"},
		{"Array(Float64)", "[nan,inf,-inf,1.5]", nil}, // checked below
	}
	for _, tc := range tests {
		ct, err := parseType(tc.typ)
		if err != nil {
			t.Fatal(err)
		}
		v, err := ct.decodeTSV(tc.field)
		if err != nil {
			t.Errorf("decode %s %q: %v", tc.typ, tc.field, err)
			continue
		}
		if v.Type() != ct.scan {
			t.Errorf("decode %s %q: a %v; want a %v", tc.typ, tc.field, v.Type(), ct.scan)
		}
		if tc.want == nil {
			continue
		}
		got := v.Interface()
		if tm, ok := got.(time.Time); ok {
			want := tc.want.(time.Time)
			if !tm.Equal(want) || tm.Location().String() != want.Location().String() {
				t.Errorf("decode %s %q = %v; want %v", tc.typ, tc.field, tm, want)
			}
			continue
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("decode %s %q = %#v; want %#v", tc.typ, tc.field, got, tc.want)
		}
	}
	for _, tc := range []struct{ typ, field string }{
		{"UInt8", "256"}, {"Array(UInt64)", "[1,2"}, {"Array(String)", "['a]"}, {"Date", "2026-13-01"},
	} {
		ct, _ := parseType(tc.typ)
		if _, err := ct.decodeTSV(tc.field); err == nil {
			t.Errorf("decode %s %q: no error", tc.typ, tc.field)
		}
	}
}

func TestEncode(t *testing.T) {
	at := time.Date(2026, 4, 1, 12, 0, 0, 123456789, time.UTC)
	s := "p"
	var nilTime *time.Time
	tests := []struct {
		typ  string
		v    any
		want string
	}{
		{"String", "a\tb\nc\\d'e\x00", `a\tb\nc\\d'e\0`},
		{"String", []byte("bytes"), "bytes"},
		{"String", &s, "p"},
		{"String", `\N`, `\\N`},
		{"FixedString(2)", "ab", "ab"},
		{"Enum8('a' = 1, 'b' = 2)", int8(2), "2"},
		{"Enum8('a' = 1, 'b' = 2)", "b", "b"},
		{"UInt8", uint8(255), "255"},
		{"UInt64", uint64(18446744073709551615), "18446744073709551615"},
		{"Int8", int8(-128), "-128"},
		{"UInt8", true, "1"},
		{"Float32", float32(1.5), "1.5"},
		{"Float64", 0.1, "0.1"},
		{"Bool", true, "true"},
		{"Date", time.Date(2026, 4, 1, 23, 0, 0, 0, time.FixedZone("X", -5*3600)), "2026-04-01"}, // its own date, as clickhouse-go
		{"Date", time.Time{}, "1970-01-01"},
		{"DateTime", at, "2026-04-01 12:00:00"},
		{"DateTime", at.In(time.FixedZone("X", 2*3600)), "2026-04-01 12:00:00"}, // the moment, in UTC
		{"DateTime('Europe/Paris')", at, "2026-04-01 14:00:00"},
		{"DateTime64(3)", at, "2026-04-01 12:00:00.123"},
		{"Nullable(DateTime)", nilTime, `\N`},
		{"Nullable(DateTime)", &at, "2026-04-01 12:00:00"},
		{"Nullable(String)", nil, `\N`},
		{"UUID", uuid.MustParse("61f0c404-5cb3-11e7-907b-a6006ad3dba0"), "61f0c404-5cb3-11e7-907b-a6006ad3dba0"},
		{"Array(UInt64)", []uint64{1, 2, 3}, "[1,2,3]"},
		{"Array(UInt64)", []uint64{}, "[]"},
		{"Array(String)", []string{"a'b", "c\td", `e\f`}, `['a\'b','c\td','e\\f']`},
		{"Array(Nullable(String))", []*string{nil, &s}, "[NULL,'p']"},
		{"Array(Date)", []time.Time{at}, "['2026-04-01']"},
		{"Array(Array(UInt8))", [][]uint8{{1}, {}}, "[[1],[]]"},
		{"Decimal(18, 2)", decimal.RequireFromString("1.25"), "1.25"},
	}
	for _, tc := range tests {
		ct, err := parseType(tc.typ)
		if err != nil {
			t.Fatal(err)
		}
		got, err := ct.encode(nil, tc.v, false)
		if err != nil {
			t.Errorf("encode %s %#v: %v", tc.typ, tc.v, err)
			continue
		}
		if string(got) != tc.want {
			t.Errorf("encode %s %#v = %q; want %q", tc.typ, tc.v, got, tc.want)
		}
	}
	for _, tc := range []struct {
		typ string
		v   any
	}{
		{"String", nil}, {"UInt8", "x"}, {"Array(UInt64)", uint64(1)}, {"DateTime", 5}, {"Map(String, UInt8)", "x"},
	} {
		ct, _ := parseType(tc.typ)
		if _, err := ct.encode(nil, tc.v, false); err == nil {
			t.Errorf("encode %s %#v: no error", tc.typ, tc.v)
		}
	}
}

func TestParseInsert(t *testing.T) {
	tests := []struct {
		query                   string
		table, colsText, settng string
		columns                 []string
	}{
		{"INSERT INTO db.t (a, b)", "db.t", "a, b", "", []string{"a", "b"}},
		{"insert into `db`.t(`a`, `m.key`, \"c\") VALUES", "`db`.t", "`a`, `m.key`, \"c\"", "", []string{"a", "m.key", "c"}},
		{"-- comment\nINSERT INTO t", "t", "", "", nil},
		{"INSERT INTO t (a) SETTINGS async_insert = 1 VALUES (1)", "t", "a", "SETTINGS async_insert = 1", []string{"a"}},
		{"INSERT INTO TABLE t (a) FORMAT Native", "t", "a", "", []string{"a"}},
		{"INSERT INTO `d b`.`t``x` (a)", "`d b`.`t``x`", "a", "", []string{"a"}},
	}
	for _, tc := range tests {
		ins, err := parseInsert(tc.query)
		if err != nil {
			t.Errorf("parseInsert(%q): %v", tc.query, err)
			continue
		}
		if ins.table != tc.table || ins.colsText != tc.colsText || ins.settings != tc.settng || !reflect.DeepEqual(ins.columns, tc.columns) {
			t.Errorf("parseInsert(%q) = %+v", tc.query, ins)
		}
	}
	if got := (&insertStmt{table: "t", colsText: "a"}).statement("x = 1"); got != "INSERT INTO t (a) SETTINGS x = 1" {
		t.Errorf("statement = %q", got)
	}
	for _, q := range []string{"SELECT 1", "INSERT INTO", "INSERT INTO t (a", "INSERT INTO t (a) garbage"} {
		if _, err := parseInsert(q); err == nil {
			t.Errorf("parseInsert(%q): no error", q)
		}
	}
}

func TestQueryError(t *testing.T) {
	err := queryError("Code: 60. DB::Exception: Unknown table expression identifier 'x.y' in scope SELECT * FROM x.y. (UNKNOWN_TABLE)\n")
	var ex *clickhouse.Exception
	if !errors.As(err, &ex) {
		t.Fatalf("%v is not a *clickhouse.Exception", err)
	}
	if ex.Code != 60 || ex.CodeName != "UNKNOWN_TABLE" || !strings.Contains(ex.Message, "Unknown table expression identifier 'x.y'") {
		t.Errorf("exception = %+v", ex)
	}
	if !strings.Contains(err.Error(), "(UNKNOWN_TABLE)") {
		t.Errorf("error text %q lost the code name", err)
	}
	if err := queryError("something else"); err.Error() != "chdb: something else" {
		t.Errorf("queryError(other) = %v", err)
	}
}
