package chdb

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/google/uuid"
)

// shared is the engine of the test binary (chDB has one session per
// process), opened by the first test that needs it.
var shared struct {
	mu  sync.Mutex
	e   *Engine
	dir string // the session's data
}

func TestMain(m *testing.M) {
	code := m.Run()
	shared.mu.Lock()
	if shared.e != nil {
		shared.e.Close()
	}
	if shared.dir != "" {
		os.RemoveAll(shared.dir)
	}
	shared.mu.Unlock()
	os.Exit(code)
}

// testEngine returns the shared engine, or skips the test without the
// library.
func testEngine(t testing.TB) *Engine {
	t.Helper()
	lib := LibPath()
	if lib == "" {
		t.Skip(SkipMessage)
	}
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.e == nil {
		dir, err := os.MkdirTemp("", "chdb-test-")
		if err != nil {
			t.Fatal(err)
		}
		e, err := Open(lib, dir)
		if err != nil {
			os.RemoveAll(dir)
			if errors.Is(err, errNoCgo) {
				t.Skip(err)
			}
			t.Fatal(err)
		}
		shared.e, shared.dir = e, dir
	}
	return shared.e
}

// testDB creates a database for the test, dropped when it ends.
func testDB(t testing.TB, c driver.Conn) string {
	t.Helper()
	b := make([]byte, 6)
	rand.Read(b)
	db := "test_" + hex.EncodeToString(b)
	if err := c.Exec(context.Background(), "CREATE DATABASE "+db); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Exec(context.Background(), "DROP DATABASE IF EXISTS "+db); err != nil && !errors.Is(err, ErrClosed) {
			t.Error(err)
		}
	})
	return db
}

// allTypes is a table with a column of every kind the projection writes
// and reads.
const allTypes = `(
	s String, fs FixedString(4), e8 Enum8('a' = 1, 'b' = 2), e16 Enum16('x' = 1000, 'y' = -5),
	lc LowCardinality(String), u UUID, b Bool,
	u8 UInt8, u16 UInt16, u32 UInt32, u64 UInt64, i8 Int8, i16 Int16, i32 Int32, i64 Int64,
	f32 Float32, f64 Float64, d Date, d32 Date32, dt DateTime, dt64 DateTime64(3),
	ndt Nullable(DateTime), ns Nullable(String), lcn LowCardinality(Nullable(String)),
	au Array(UInt64), as Array(String), an Array(Nullable(UInt8)),
	` + "`m.key` Array(UInt64), `m.clicks` Array(UInt64)" + `
) ENGINE = MergeTree ORDER BY i32`

const allColumns = "s, fs, e8, e16, lc, u, b, u8, u16, u32, u64, i8, i16, i32, i64, f32, f64, d, d32, dt, dt64, ndt, ns, lcn, au, as, an, `m.key`, `m.clicks`"

// record is a row of allTypes as Go values.
type record struct {
	s, fs      string
	e8         int8
	e16        string
	lc         string
	u          uuid.UUID
	b          bool
	u8         uint8
	u16        uint16
	u32        uint32
	u64        uint64
	i8         int8
	i16        int16
	i32        int32
	i64        int64
	f32        float32
	f64        float64
	d, d32, dt time.Time
	dt64       time.Time
	ndt        *time.Time
	ns, lcn    *string
	au         []uint64
	as         []string
	an         []*uint8
	mkey, mcl  []uint64
}

func ptr[T any](v T) *T { return &v }

func testRecords() []record {
	at := time.Date(2026, 4, 1, 12, 0, 0, 0, time.UTC)
	return []record{
		{
			s: "tab\there, new\nline, cr\r, quote', back\\slash, \\N, nul\x00, é✓", fs: "ab\x00\x00", e8: 1, e16: "x", lc: "low",
			u: uuid.MustParse("61f0c404-5cb3-11e7-907b-a6006ad3dba0"), b: true,
			u8: 255, u16: 65535, u32: 4294967295, u64: math.MaxUint64,
			i8: math.MinInt8, i16: math.MinInt16, i32: 1, i64: math.MinInt64,
			f32: 1.5, f64: -2.25e300,
			d: time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC), d32: time.Date(1950, 1, 2, 0, 0, 0, 0, time.UTC),
			dt: at, dt64: at.Add(123 * time.Millisecond), ndt: nil, ns: ptr("not null"), lcn: nil,
			au: []uint64{1, 2, math.MaxUint64}, as: []string{"a'b", "c\td", `e\f`, ""}, an: []*uint8{nil, ptr(uint8(7))},
			mkey: []uint64{10, 20}, mcl: []uint64{1, 2},
		},
		{
			s: "", fs: "abcd", e8: 2, e16: "y", lc: "",
			u: uuid.MustParse("00000000-0000-0000-0000-000000000001"), b: false,
			i32: 2, i8: math.MaxInt8, i16: math.MaxInt16, i64: math.MaxInt64,
			f32: -0.25, f64: math.Inf(1),
			d: time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC), d32: time.Date(2100, 12, 31, 0, 0, 0, 0, time.UTC),
			dt: time.Date(1970, 1, 1, 0, 0, 1, 0, time.UTC), dt64: time.Date(2000, 2, 29, 23, 59, 59, 999e6, time.UTC),
			ndt: ptr(at.Add(time.Hour)), ns: nil, lcn: ptr("lc"),
			au: []uint64{}, as: []string{}, an: []*uint8{},
			mkey: []uint64{}, mcl: []uint64{},
		},
		{
			s: "third", fs: "x\x00\x00\x00", e8: 1, e16: "y", lc: "low",
			u: uuid.MustParse("ffffffff-ffff-ffff-ffff-ffffffffffff"), b: true,
			u8: 1, u16: 2, u32: 3, u64: 4, i8: -1, i16: -2, i32: 3, i64: -4,
			f32: 0, f64: 0.1,
			d: time.Date(2026, 12, 31, 0, 0, 0, 0, time.UTC), d32: time.Date(2026, 12, 31, 0, 0, 0, 0, time.UTC),
			dt: at.AddDate(0, 0, 1), dt64: at.AddDate(0, 0, 1), ndt: ptr(at), ns: ptr(""), lcn: ptr(""),
			au: []uint64{0}, as: []string{"[x]", "'"}, an: []*uint8{ptr(uint8(0)), nil},
			mkey: []uint64{5}, mcl: []uint64{6},
		},
	}
}

// values is r as Append's arguments, in allColumns' order.
func (r record) values() []any {
	return []any{r.s, r.fs, r.e8, r.e16, r.lc, r.u, r.b, r.u8, r.u16, r.u32, r.u64, r.i8, r.i16, r.i32, r.i64,
		r.f32, r.f64, r.d, r.d32, r.dt, r.dt64, r.ndt, r.ns, r.lcn, r.au, r.as, r.an, r.mkey, r.mcl}
}

// appendColumns appends records column by column, as the projection does:
// whole slices, and the Array columns row by row with AppendRow.
func appendColumns(t *testing.T, b driver.Batch, recs []record) {
	t.Helper()
	col := func(f func(r record) any) []any {
		out := make([]any, len(recs))
		for i, r := range recs {
			out[i] = f(r)
		}
		return out
	}
	typed := func(vals []any, sample any) any {
		s := reflect.MakeSlice(reflect.SliceOf(reflect.TypeOf(sample)), len(vals), len(vals))
		for i, v := range vals {
			if v != nil {
				s.Index(i).Set(reflect.ValueOf(v))
			}
		}
		return s.Interface()
	}
	samples := recs[0].values()
	for i := range samples {
		vals := col(func(r record) any { return r.values()[i] })
		switch i {
		case 24, 27: // au, m.key: row by row
			for _, v := range vals {
				if err := b.Column(i).AppendRow(v); err != nil {
					t.Fatalf("column %d AppendRow: %v", i, err)
				}
			}
			continue
		}
		sample := samples[i]
		switch i {
		case 21: // ndt: []*time.Time
			sample = (*time.Time)(nil)
		case 22, 23:
			sample = (*string)(nil)
		}
		if err := b.Column(i).Append(typed(vals, sample)); err != nil {
			t.Fatalf("column %d Append(%T): %v", i, typed(vals, sample), err)
		}
	}
}

// readRecords reads the table back, ordered by i32.
func readRecords(t *testing.T, c driver.Conn, table string) []record {
	t.Helper()
	rows, err := c.Query(context.Background(), "SELECT "+allColumns+" FROM "+table+" ORDER BY i32")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []record
	for rows.Next() {
		var r record
		if err := rows.Scan(&r.s, &r.fs, &r.e8, &r.e16, &r.lc, &r.u, &r.b, &r.u8, &r.u16, &r.u32, &r.u64,
			&r.i8, &r.i16, &r.i32, &r.i64, &r.f32, &r.f64, &r.d, &r.d32, &r.dt, &r.dt64, &r.ndt, &r.ns, &r.lcn,
			&r.au, &r.as, &r.an, &r.mkey, &r.mcl); err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestRoundTrip(t *testing.T) {
	e := testEngine(t)
	c := e.Conn()
	ctx := context.Background()
	db := testDB(t, c)
	table := db + ".all_types"
	if err := c.Exec(ctx, "CREATE TABLE "+table+" "+allTypes); err != nil {
		t.Fatal(err)
	}
	recs := testRecords()

	b, err := c.PrepareBatch(ctx, "INSERT INTO "+table+" ("+allColumns+")")
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	appendColumns(t, b, recs[:2])
	if err := b.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := b.Append(recs[2].values()...); err != nil { // the third row with Append
		t.Fatal(err)
	}
	if b.Rows() != 1 {
		t.Errorf("Rows() after Flush and one Append = %d; want 1", b.Rows())
	}
	if err := b.Send(); err != nil {
		t.Fatal(err)
	}
	if !b.IsSent() {
		t.Error("IsSent() = false after Send")
	}

	got := readRecords(t, c, table)
	if len(got) != len(recs) {
		t.Fatalf("read %d rows; want %d", len(got), len(recs))
	}
	for i := range recs {
		want := recs[i]
		g := got[i]
		// Times: the same moments, in UTC.
		for _, p := range [][2]*time.Time{{&g.d, &want.d}, {&g.d32, &want.d32}, {&g.dt, &want.dt}, {&g.dt64, &want.dt64}} {
			if !p[0].Equal(*p[1]) || p[0].Location() != time.UTC {
				t.Errorf("row %d: time %v; want %v in UTC", i, *p[0], *p[1])
			}
			*p[0] = *p[1]
		}
		if (g.ndt == nil) != (want.ndt == nil) || g.ndt != nil && (!g.ndt.Equal(*want.ndt) || g.ndt.Location() != time.UTC) {
			t.Errorf("row %d: ndt %v; want %v", i, g.ndt, want.ndt)
		}
		g.ndt = want.ndt
		if !reflect.DeepEqual(g, want) {
			t.Errorf("row %d:\n got %+v\nwant %+v", i, g, want)
		}
	}

	// The same values through other destinations.
	var (
		s      []byte
		e8     string
		e8n    int
		u8     int64
		u64    any
		d      any
		ndt    any
		ns     sql.NullString
		au     any
		uuidS  string
		dtText string
	)
	err = c.QueryRow(ctx, "SELECT s, e8, e8, u8, u64, d, ndt, ns, au, u, dt FROM "+table+" WHERE i32 = 1").
		Scan(&s, &e8, &e8n, &u8, &u64, &d, &ndt, &ns, &au, &uuidS, &dtText)
	if err != nil {
		t.Fatal(err)
	}
	r := recs[0]
	if string(s) != r.s || e8 != "a" || e8n != 1 || u8 != 255 || u64 != any(uint64(math.MaxUint64)) ||
		!d.(time.Time).Equal(r.d) || ndt != nil || ns.String != *r.ns || !ns.Valid ||
		!reflect.DeepEqual(au, r.au) || uuidS != r.u.String() || dtText != "2026-04-01 12:00:00" {
		t.Errorf("other destinations: %q %q %d %d %v %v %v %v %v %q %q", s, e8, e8n, u8, u64, d, ndt, ns, au, uuidS, dtText)
	}
}

func TestColumnTypes(t *testing.T) {
	c := testEngine(t).Conn()
	ctx := context.Background()
	db := testDB(t, c)
	if err := c.Exec(ctx, "CREATE TABLE "+db+".t "+allTypes); err != nil {
		t.Fatal(err)
	}
	rows, err := c.Query(ctx, "SELECT "+allColumns+" FROM "+db+".t")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	want := map[string]struct {
		typ      string
		scan     reflect.Type
		nullable bool
	}{
		"s":        {"String", reflect.TypeFor[string](), false},
		"fs":       {"FixedString(4)", reflect.TypeFor[string](), false},
		"e8":       {"Enum8('a' = 1, 'b' = 2)", reflect.TypeFor[string](), false},
		"e16":      {"Enum16('y' = -5, 'x' = 1000)", reflect.TypeFor[string](), false}, // as ClickHouse writes it: by value
		"lc":       {"LowCardinality(String)", reflect.TypeFor[string](), false},
		"u":        {"UUID", reflect.TypeFor[uuid.UUID](), false},
		"b":        {"Bool", reflect.TypeFor[bool](), false},
		"u8":       {"UInt8", reflect.TypeFor[uint8](), false},
		"u16":      {"UInt16", reflect.TypeFor[uint16](), false},
		"u32":      {"UInt32", reflect.TypeFor[uint32](), false},
		"u64":      {"UInt64", reflect.TypeFor[uint64](), false},
		"i8":       {"Int8", reflect.TypeFor[int8](), false},
		"i16":      {"Int16", reflect.TypeFor[int16](), false},
		"i32":      {"Int32", reflect.TypeFor[int32](), false},
		"i64":      {"Int64", reflect.TypeFor[int64](), false},
		"f32":      {"Float32", reflect.TypeFor[float32](), false},
		"f64":      {"Float64", reflect.TypeFor[float64](), false},
		"d":        {"Date", reflect.TypeFor[time.Time](), false},
		"d32":      {"Date32", reflect.TypeFor[time.Time](), false},
		"dt":       {"DateTime", reflect.TypeFor[time.Time](), false},
		"dt64":     {"DateTime64(3)", reflect.TypeFor[time.Time](), false},
		"ndt":      {"Nullable(DateTime)", reflect.TypeFor[*time.Time](), true},
		"ns":       {"Nullable(String)", reflect.TypeFor[*string](), true},
		"lcn":      {"LowCardinality(Nullable(String))", reflect.TypeFor[*string](), false},
		"au":       {"Array(UInt64)", reflect.TypeFor[[]uint64](), false},
		"as":       {"Array(String)", reflect.TypeFor[[]string](), false},
		"an":       {"Array(Nullable(UInt8))", reflect.TypeFor[[]*uint8](), false},
		"m.key":    {"Array(UInt64)", reflect.TypeFor[[]uint64](), false},
		"m.clicks": {"Array(UInt64)", reflect.TypeFor[[]uint64](), false},
	}
	cts := rows.ColumnTypes()
	if len(cts) != len(want) {
		t.Fatalf("%d column types; want %d", len(cts), len(want))
	}
	if got := strings.Join(rows.Columns(), ", "); got != strings.ReplaceAll(allColumns, "`", "") {
		t.Errorf("Columns() = %s", got)
	}
	for _, ct := range cts {
		w, ok := want[ct.Name()]
		if !ok {
			t.Errorf("unexpected column %q", ct.Name())
			continue
		}
		if ct.DatabaseTypeName() != w.typ || ct.ScanType() != w.scan || ct.Nullable() != w.nullable {
			t.Errorf("column %s: %s, %v, nullable %v; want %s, %v, %v", ct.Name(), ct.DatabaseTypeName(), ct.ScanType(), ct.Nullable(), w.typ, w.scan, w.nullable)
		}
	}
	if rows.Next() {
		t.Error("Next() on an empty table = true")
	}
}

func TestQueryRow(t *testing.T) {
	c := testEngine(t).Conn()
	ctx := context.Background()
	var n uint8
	if err := c.QueryRow(ctx, "SELECT 1 WHERE 0").Scan(&n); !errors.Is(err, sql.ErrNoRows) {
		t.Errorf("QueryRow without rows: %v; want sql.ErrNoRows", err)
	}
	// Two rows in a known order (the branches of a UNION ALL run in
	// parallel and come in either order).
	if err := c.QueryRow(ctx, "SELECT toUInt8(arrayJoin([5, 6]))").Scan(&n); err != nil || n != 5 {
		t.Errorf("QueryRow = %d, %v; want the first row, 5", n, err)
	}
	// An aggregate of nothing is a row (as on a server).
	var d time.Time
	db := testDB(t, c)
	if err := c.Exec(ctx, "CREATE TABLE "+db+".t (d Date) ENGINE = MergeTree ORDER BY d"); err != nil {
		t.Fatal(err)
	}
	if err := c.QueryRow(ctx, "SELECT max(d) FROM "+db+".t").Scan(&d); err != nil || !d.Equal(time.Unix(0, 0)) {
		t.Errorf("max(date) of nothing = %v, %v; want 1970-01-01", d, err)
	}
	row := c.QueryRow(ctx, "SELECT * FROM "+db+".missing")
	if row.Err() == nil || row.Scan(&n) == nil {
		t.Errorf("QueryRow of a missing table: Err() = %v", row.Err())
	}
	if err := c.QueryRow(ctx, "SELECT 1, 2").Scan(&n); err == nil || !strings.Contains(err.Error(), "expected 2 destination arguments") {
		t.Errorf("Scan of 1 destination for 2 columns: %v", err)
	}
	if err := c.QueryRow(ctx, "SELECT [1]").Scan(&d); err == nil {
		t.Error("Scan of an Array into a *time.Time: no error")
	}
}

// TestBindRoundTrip: bound arguments come back as they went.
func TestBindRoundTrip(t *testing.T) {
	c := testEngine(t).Conn()
	ctx := context.Background()
	str := "tab\t new\n quote' back\\ nul\x00 ? é✓ \\N"
	at := time.Date(2026, 4, 1, 12, 0, 0, 0, time.UTC)
	var (
		s       string
		i64     int64
		u64     uint64
		f64     float64
		b       uint8
		tm      time.Time
		tmParis time.Time
		strs    []string
		nums    []uint64
		null    any
		bytes   string
		isToday uint8
	)
	err := c.QueryRow(ctx, "SELECT ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, toDate(?) = today() -- ?",
		str, int64(math.MinInt64), uint64(math.MaxUint64), 0.1, true, at,
		at.In(time.FixedZone("CEST", 2*3600)), []string{"a'", "b"}, []uint64{1, 2}, nil, []byte("bytes"),
		time.Now().UTC().Format(time.DateOnly)).
		Scan(&s, &i64, &u64, &f64, &b, &tm, &tmParis, &strs, &nums, &null, &bytes, &isToday)
	if err != nil {
		t.Fatal(err)
	}
	if s != str || i64 != math.MinInt64 || u64 != math.MaxUint64 || f64 != 0.1 || b != 1 ||
		!tm.Equal(at) || !tmParis.Equal(at) || !reflect.DeepEqual(strs, []string{"a'", "b"}) ||
		!reflect.DeepEqual(nums, []uint64{1, 2}) || null != nil || bytes != "bytes" {
		t.Errorf("got %q %d %d %v %d %v %v %q %v %v %q", s, i64, u64, f64, b, tm, tmParis, strs, nums, null, bytes)
	}
	if isToday != 1 && time.Now().UTC().Hour() != 0 {
		t.Errorf("toDate(today in UTC) != today(): the session's time zone is not UTC")
	}
	var found uint64
	if err := c.QueryRow(ctx, "SELECT count() FROM numbers(10) WHERE number IN ?", []uint64{1, 3, 99}).Scan(&found); err != nil || found != 2 {
		t.Errorf("IN ? = %d, %v; want 2", found, err)
	}
}

func TestTimeZone(t *testing.T) {
	c := testEngine(t).Conn()
	var (
		zone, session string
		now           time.Time
		day           time.Time
	)
	if err := c.QueryRow(context.Background(), "SELECT timezone(), getSetting('session_timezone'), now(), today()").Scan(&zone, &session, &now, &day); err != nil {
		t.Fatal(err)
	}
	if zone != "UTC" || session != "UTC" {
		t.Errorf("timezone() = %q, session_timezone = %q; want UTC", zone, session)
	}
	if d := time.Since(now); d < -2*time.Second || d > time.Minute {
		t.Errorf("now() = %v, %v from the clock", now, d)
	}
	if today := time.Now().UTC().Truncate(24 * time.Hour); !day.Equal(today) && !day.Equal(today.Add(-24*time.Hour)) {
		t.Errorf("today() = %v; want %v (UTC)", day, today)
	}
	v, err := c.ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	raw, err := testEngine(t).Query("SELECT version()", "TabSeparated")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(raw, fmt.Sprintf("%d.%d.%d.", v.Version.Major, v.Version.Minor, v.Version.Patch)) || v.Version.Major < 24 || v.Timezone.String() != "UTC" {
		t.Errorf("ServerVersion = %+v; version() = %q", v, raw)
	}
	if err := c.Ping(context.Background()); err != nil {
		t.Errorf("Ping: %v", err)
	}
	if c.Stats() != (driver.Stats{}) || c.Close() != nil {
		t.Error("Stats not zero or Close failed")
	}
}

// TestOnePart: one Send of several Flushes is one INSERT, one part.
func TestOnePart(t *testing.T) {
	c := testEngine(t).Conn()
	ctx := context.Background()
	db := testDB(t, c)
	if err := c.Exec(ctx, "CREATE TABLE "+db+".t (k UInt64, s String, d Date) ENGINE = MergeTree PARTITION BY toYYYYMM(d) ORDER BY k"); err != nil {
		t.Fatal(err)
	}
	insert := func(chunks, perChunk int) {
		b, err := c.PrepareBatch(ctx, "INSERT INTO "+db+".t (k, s, d)")
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		day := time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC)
		for i := range chunks {
			ks, ss, ds := make([]uint64, perChunk), make([]string, perChunk), make([]time.Time, perChunk)
			for j := range perChunk {
				ks[j], ss[j], ds[j] = uint64(i*perChunk+j), "v", day.AddDate(0, 0, j%28)
			}
			for col, v := range []any{ks, ss, ds} {
				if err := b.Column(col).Append(v); err != nil {
					t.Fatal(err)
				}
			}
			if b.Rows() != perChunk {
				t.Errorf("Rows() = %d; want %d", b.Rows(), perChunk)
			}
			if err := b.Flush(); err != nil {
				t.Fatal(err)
			}
			if b.Rows() != 0 {
				t.Errorf("Rows() after Flush = %d; want 0", b.Rows())
			}
		}
		if err := b.Send(); err != nil {
			t.Fatal(err)
		}
	}
	parts := func() (n, rows uint64) {
		if err := c.QueryRow(ctx, "SELECT count(), sum(rows) FROM system.parts WHERE database = ? AND table = 't' AND active", db).Scan(&n, &rows); err != nil {
			t.Fatal(err)
		}
		return n, rows
	}
	insert(5, 1000)
	if n, rows := parts(); n != 1 || rows != 5000 {
		t.Errorf("after one Send of 5 Flushes: %d parts, %d rows; want 1 part of 5000", n, rows)
	}
	if err := c.Exec(ctx, "SYSTEM STOP MERGES "+db+".t"); err != nil {
		t.Fatal(err)
	}
	// More rows than a block of a default INSERT (max_insert_block_size,
	// 1048449): still one part.
	if testing.Short() {
		return
	}
	insert(2, 600_000)
	if n, rows := parts(); n != 2 || rows != 1_205_000 {
		t.Errorf("after a second Send of 1.2 million rows: %d parts, %d rows; want 2 parts, 1205000 rows", n, rows)
	}
}

func TestBatchStates(t *testing.T) {
	c := testEngine(t).Conn()
	ctx := context.Background()
	db := testDB(t, c)
	if err := c.Exec(ctx, "CREATE TABLE "+db+".t (k UInt64, e Enum8('a' = 1)) ENGINE = MergeTree ORDER BY k"); err != nil {
		t.Fatal(err)
	}
	count := func() (n uint64) {
		if err := c.QueryRow(ctx, "SELECT count() FROM "+db+".t").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	// Close without Send discards.
	b, err := c.PrepareBatch(ctx, "INSERT INTO "+db+".t")
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Append(uint64(1), int8(1)); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil || !b.IsSent() || count() != 0 {
		t.Errorf("Close without Send: %v, IsSent %v, %d rows", err, b.IsSent(), count())
	}
	if len(b.Columns()) != 2 || b.Columns()[1].Type() != "Enum8('a' = 1)" {
		t.Errorf("Columns() = %v", b.Columns())
	}
	// Abort.
	b, _ = c.PrepareBatch(ctx, "INSERT INTO "+db+".t (k, e)")
	if err := b.Abort(); err != nil {
		t.Error(err)
	}
	if err := b.Abort(); !errors.Is(err, clickhouse.ErrBatchAlreadySent) {
		t.Errorf("Abort twice: %v", err)
	}
	if err := b.Append(uint64(1), int8(1)); !errors.Is(err, clickhouse.ErrBatchAlreadySent) {
		t.Errorf("Append after Abort: %v", err)
	}
	// A bad Append invalidates the batch.
	b, _ = c.PrepareBatch(ctx, "INSERT INTO "+db+".t (k, e)")
	if err := b.Append("not a number", int8(1)); err == nil {
		t.Error("Append of a string into UInt64: no error")
	}
	if err := b.Append(uint64(1)); err == nil {
		t.Error("Append of 1 value for 2 columns: no error")
	}
	if err := b.Send(); !errors.Is(err, clickhouse.ErrBatchInvalid) {
		t.Errorf("Send of an invalid batch: %v", err)
	}
	// Columns of different lengths.
	b, _ = c.PrepareBatch(ctx, "INSERT INTO "+db+".t (k, e)")
	b.Column(0).Append([]uint64{1, 2})
	b.Column(1).Append([]int8{1})
	if err := b.Send(); err == nil || !strings.Contains(err.Error(), "rows") {
		t.Errorf("Send of columns of 2 and 1 rows: %v", err)
	}
	if err := b.Column(5).Append([]uint64{1}); err == nil {
		t.Error("Column(5) of 2: no error")
	}
	// An Enum8 number the type lacks: ClickHouse's error at Send.
	b, _ = c.PrepareBatch(ctx, "INSERT INTO "+db+".t (k, e)")
	b.Append(uint64(1), int8(99))
	err = b.Send()
	var ex *clickhouse.Exception
	if !errors.As(err, &ex) || !strings.Contains(err.Error(), "99") {
		t.Errorf("Send of Enum8 99: %v; want ClickHouse's error", err)
	}
	if count() != 0 {
		t.Errorf("%d rows after failed inserts", count())
	}
	// Send of nothing sends nothing; Send twice fails.
	b, _ = c.PrepareBatch(ctx, "INSERT INTO "+db+".t (k, e)")
	if err := b.Send(); err != nil {
		t.Error(err)
	}
	if err := b.Send(); !errors.Is(err, clickhouse.ErrBatchAlreadySent) {
		t.Errorf("Send twice: %v", err)
	}
	if err := b.Close(); err != nil {
		t.Errorf("Close after Send: %v", err)
	}
	// AppendStruct, Select, ScanStruct.
	type kv struct {
		K uint64 `ch:"k"`
		E string `ch:"e"`
	}
	b, _ = c.PrepareBatch(ctx, "INSERT INTO "+db+".t (k, e)")
	if err := b.AppendStruct(&kv{K: 7, E: "a"}); err != nil {
		t.Fatal(err)
	}
	if err := b.Send(); err != nil {
		t.Fatal(err)
	}
	var all []kv
	if err := c.Select(ctx, &all, "SELECT k, e FROM "+db+".t"); err != nil || !reflect.DeepEqual(all, []kv{{7, "a"}}) {
		t.Errorf("Select = %v, %v", all, err)
	}
	var one kv
	if err := c.QueryRow(ctx, "SELECT k, e FROM "+db+".t").ScanStruct(&one); err != nil || one != (kv{7, "a"}) {
		t.Errorf("ScanStruct = %v, %v", one, err)
	}
}

func TestErrors(t *testing.T) {
	c := testEngine(t).Conn()
	ctx := context.Background()
	var ex *clickhouse.Exception
	err := c.Exec(ctx, "SELECT * FROM no_such_db.no_such_table")
	if !errors.As(err, &ex) || ex.Code != 81 || !strings.Contains(err.Error(), "no_such_db") || !strings.Contains(err.Error(), "UNKNOWN_DATABASE") {
		t.Errorf("Exec of a missing database: %v", err)
	}
	_, err = c.Query(ctx, "SELEC 1")
	if !errors.As(err, &ex) || ex.Code != 62 || !strings.Contains(err.Error(), "Syntax error") {
		t.Errorf("Query of bad syntax: %v", err)
	}
	_, err = c.PrepareBatch(ctx, "INSERT INTO no_such_db.t (a)")
	if !errors.As(err, &ex) || ex.Code != 81 {
		t.Errorf("PrepareBatch of a missing table: %v", err)
	}
	if _, err := c.PrepareBatch(ctx, "SELECT 1"); err == nil {
		t.Error("PrepareBatch of a SELECT: no error")
	}
	if err := c.AsyncInsert(ctx, "INSERT INTO t VALUES (1)", false); err == nil || !strings.Contains(err.Error(), "not supported by chdb") {
		t.Errorf("AsyncInsert: %v", err)
	}
	// The session survives errors.
	if err := c.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	// A done context starts no query.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := c.Exec(cctx, "SELECT 1"); !errors.Is(err, context.Canceled) {
		t.Errorf("Exec with a done context: %v", err)
	}
	if _, err := c.PrepareBatch(cctx, "INSERT INTO t (a)"); !errors.Is(err, context.Canceled) {
		t.Errorf("PrepareBatch with a done context: %v", err)
	}
}

func TestFormats(t *testing.T) {
	e := testEngine(t)
	c := e.Conn()
	ctx := context.Background()
	if out, err := e.Query("SELECT 1 AS x, 'a' AS y", "JSONEachRow"); err != nil || out != "{\"x\":1,\"y\":\"a\"}\n" {
		t.Errorf("Engine.Query = %q, %v", out, err)
	}
	db := testDB(t, c)
	if err := c.Exec(ctx, "CREATE TABLE "+db+".t (a UInt8, b String) ENGINE = MergeTree ORDER BY a"); err != nil {
		t.Fatal(err)
	}
	if err := c.InsertFormat(ctx, "CSV", "INSERT INTO "+db+".t (a, b) VALUES", strings.NewReader("1,\"x\"\n2,\"y\"\n")); err != nil {
		t.Fatal(err)
	}
	r, err := c.QueryFormat(ctx, "CSV", "SELECT a, b FROM "+db+".t WHERE a > ? ORDER BY a", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	out, err := io.ReadAll(r)
	if err != nil || string(out) != "1,\"x\"\n2,\"y\"\n" {
		t.Errorf("QueryFormat CSV = %q, %v", out, err)
	}
}

// TestConcurrent: several goroutines insert and read at once (run with
// -race).
func TestConcurrent(t *testing.T) {
	c := testEngine(t).Conn()
	ctx := context.Background()
	db := testDB(t, c)
	if err := c.Exec(ctx, "CREATE TABLE "+db+".t (g UInt8, k UInt64, s String) ENGINE = MergeTree ORDER BY (g, k)"); err != nil {
		t.Fatal(err)
	}
	const goroutines, rounds, rows = 8, 10, 50
	var wg sync.WaitGroup
	errs := make(chan error, goroutines)
	for g := range goroutines {
		wg.Go(func() {
			conn := c
			if g%2 == 1 {
				conn = testEngine(t).Conn() // another Conn on the same engine
			}
			for r := range rounds {
				b, err := conn.PrepareBatch(ctx, "INSERT INTO "+db+".t (g, k, s)")
				if err != nil {
					errs <- err
					return
				}
				for i := range rows {
					if err := b.Append(uint8(g), uint64(r*rows+i), fmt.Sprint(g, "-", r, "-", i)); err != nil {
						errs <- err
						return
					}
				}
				if err := b.Send(); err != nil {
					errs <- err
					return
				}
				var n uint64
				if err := conn.QueryRow(ctx, "SELECT count() FROM "+db+".t WHERE g = ?", uint8(g)).Scan(&n); err != nil {
					errs <- err
					return
				}
				if n != uint64((r+1)*rows) {
					errs <- fmt.Errorf("goroutine %d round %d: %d rows; want %d", g, r, n, (r+1)*rows)
					return
				}
				runtime.Gosched()
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	var total, distinct uint64
	if err := c.QueryRow(ctx, "SELECT count(), uniqExact(s) FROM "+db+".t").Scan(&total, &distinct); err != nil {
		t.Fatal(err)
	}
	if want := uint64(goroutines * rounds * rows); total != want || distinct != want {
		t.Errorf("%d rows, %d distinct; want %d", total, distinct, want)
	}
}

// TestSignals: the Go runtime keeps its signal handlers with chDB loaded:
// a nil dereference is a panic (with chDB's SIGSEGV handler it would hang,
// then kill the process), and goroutines are preempted (SIGURG) while
// queries run.
func TestSignals(t *testing.T) {
	c := testEngine(t).Conn()
	if err := c.Exec(context.Background(), "SELECT count() FROM numbers(1000000)"); err != nil {
		t.Fatal(err)
	}
	// Go's handler (that of SIGURG, which only Go handles) with
	// SA_ONSTACK, on the signals chDB takes unless told not to.
	const saOnStack = 0x08000000
	goHandler, _, ok := signalDisposition(int(syscall.SIGURG))
	if !ok {
		t.Fatal("no disposition of SIGURG")
	}
	for _, sig := range []syscall.Signal{syscall.SIGSEGV, syscall.SIGBUS, syscall.SIGFPE, syscall.SIGILL, syscall.SIGABRT, syscall.SIGTRAP, syscall.SIGSYS} {
		h, flags, ok := signalDisposition(int(sig))
		if !ok || h != goHandler || flags&saOnStack == 0 {
			t.Errorf("%v: handler %#x, flags %#x; want Go's %#x with SA_ONSTACK", sig, h, flags, goHandler)
		}
	}
	t.Logf("signal dispositions that calls into chDB changed and the guard put back: %s", signalList(restoredSignals.Load()))
	func() {
		defer func() {
			r := recover()
			if _, ok := r.(runtime.Error); !ok {
				t.Errorf("nil dereference: recovered %v; want a runtime error", r)
			}
		}()
		var p *int
		_ = *p
	}()
	// A goroutine spinning without function calls needs asynchronous
	// preemption (SIGURG) for the stop-the-world of GC to finish.
	stop := make(chan struct{})
	var spun sync.WaitGroup
	spun.Go(func() {
		for i := 0; ; i++ {
			if i%(1<<20) == 0 {
				select {
				case <-stop:
					return
				default:
				}
			}
		}
	})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 5 {
			runtime.GC()
			if err := c.Ping(context.Background()); err != nil {
				t.Error(err)
			}
		}
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Error("GC and queries stuck for 30s beside a spinning goroutine: preemption broken?")
	}
	close(stop)
	spun.Wait()
}

func signalList(mask uint64) string {
	var names []string
	for s := 1; s <= 64; s++ {
		if mask&(1<<(s-1)) != 0 {
			names = append(names, fmt.Sprintf("%d (%v)", s, syscall.Signal(s)))
		}
	}
	if names == nil {
		return "none"
	}
	return strings.Join(names, ", ")
}

// TestOpenTwice: one session per process.
func TestOpenTwice(t *testing.T) {
	e := testEngine(t)
	shared.mu.Lock()
	dir := shared.dir
	shared.mu.Unlock()
	e2, err := Open(LibPath(), dir)
	if err != nil {
		t.Fatalf("Open with the same directory: %v", err)
	}
	if e2.core != e.core {
		t.Error("Open with the same directory made another session")
	}
	if out, err := e2.Query("SELECT 2", "TabSeparated"); err != nil || out != "2\n" {
		t.Errorf("second handle: %q, %v", out, err)
	}
	if err := e2.Close(); err != nil {
		t.Fatal(err)
	}
	e2.Close() // twice: no-op
	if _, err := e2.Query("SELECT 1", "TabSeparated"); !errors.Is(err, ErrClosed) {
		t.Errorf("query on a closed handle: %v", err)
	}
	if out, err := e.Query("SELECT 1", "TabSeparated"); err != nil || out != "1\n" {
		t.Errorf("first handle after the second closed: %q, %v", out, err)
	}
	_, err = Open(LibPath(), filepath.Join(t.TempDir(), "other"))
	if err == nil || !strings.Contains(err.Error(), "one session per process") {
		t.Errorf("Open with another directory: %v", err)
	}
	other := filepath.Join(t.TempDir(), "libchdb.so")
	if err := os.WriteFile(other, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(other, dir); err == nil || !strings.Contains(err.Error(), "loaded in this process already") {
		t.Errorf("Open of another library: %v", err)
	}
}

// TestReopen: after the last handle closes, a session can open again,
// elsewhere.
func TestReopen(t *testing.T) {
	e := testEngine(t)
	c := e.Conn()
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	shared.e = nil
	if err := c.Ping(context.Background()); !errors.Is(err, ErrClosed) {
		t.Errorf("Ping on a closed engine: %v", err)
	}
	dir, err := os.MkdirTemp("", "chdb-test-")
	if err != nil {
		t.Fatal(err)
	}
	os.RemoveAll(shared.dir)
	shared.dir = dir
	e, err = Open(LibPath(), dir)
	if err != nil {
		t.Fatal(err)
	}
	shared.e = e
	c = e.Conn()
	var zone string
	if err := c.QueryRow(context.Background(), "SELECT getSetting('session_timezone')").Scan(&zone); err != nil || zone != "UTC" {
		t.Errorf("reopened session: session_timezone %q, %v", zone, err)
	}
	if err := c.Exec(context.Background(), "CREATE DATABASE reopened"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "metadata", "reopened.sql")); err != nil {
		t.Errorf("the reopened session keeps no data in %s: %v", dir, err)
	}
	if err := c.Exec(context.Background(), "DROP DATABASE reopened"); err != nil {
		t.Fatal(err)
	}
}

// TestViewThroughNull: as the projection writes its daily tables, a batch
// into a Null table feeds a materialized view into a SummingMergeTree of
// aggregate states: one Send, one part in the target.
func TestViewThroughNull(t *testing.T) {
	c := testEngine(t).Conn()
	ctx := context.Background()
	db := testDB(t, c)
	for _, q := range []string{
		"CREATE TABLE " + db + ".input (link_id String, date Date, ts DateTime, visitor String, insert_id UInt64) ENGINE = Null",
		"CREATE TABLE " + db + ".daily (link_id String, date Date, clicks UInt64, " +
			"unique_visitors AggregateFunction(uniq, String), last_click AggregateFunction(max, DateTime), " +
			"max_insert_id AggregateFunction(max, UInt64)) ENGINE = SummingMergeTree PARTITION BY toYYYYMM(date) ORDER BY (link_id, date)",
		"CREATE MATERIALIZED VIEW " + db + ".daily_mv TO " + db + ".daily AS SELECT link_id, date, count() AS clicks, " +
			"uniqStateIf(visitor, visitor != '') AS unique_visitors, maxState(ts) AS last_click, maxState(insert_id) AS max_insert_id " +
			"FROM " + db + ".input GROUP BY link_id, date",
	} {
		if err := c.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	day := time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC)
	b, err := c.PrepareBatch(ctx, "INSERT INTO `"+db+"`.input (`link_id`, `date`, `ts`, `visitor`, `insert_id`)")
	if err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		if err := b.Append(fmt.Sprint("l", i%3), day, day.Add(time.Duration(i)*time.Minute), fmt.Sprint("v", i%10), uint64(7)); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Send(); err != nil {
		t.Fatal(err)
	}
	var (
		clicks, uniques, maxID uint64
		last                   time.Time
	)
	err = c.QueryRow(ctx, "SELECT sum(clicks), uniqMerge(unique_visitors), maxMerge(last_click), maxMerge(max_insert_id) FROM `"+db+"`.daily WHERE link_id = ? AND date >= toDate(?) AND date <= toDate(?)",
		"l0", day.Format(time.DateOnly), day.Format(time.DateOnly)).Scan(&clicks, &uniques, &last, &maxID)
	if err != nil {
		t.Fatal(err)
	}
	if clicks != 34 || uniques != 10 || !last.Equal(day.Add(99*time.Minute)) || maxID != 7 {
		t.Errorf("l0: %d clicks, %d uniques, last %v, max insert_id %d; want 34, 10, %v, 7", clicks, uniques, last, maxID, day.Add(99*time.Minute))
	}
	var parts uint64
	if err := c.QueryRow(ctx, "SELECT count() FROM system.parts WHERE database = ? AND table = 'daily' AND active", db).Scan(&parts); err != nil || parts != 1 {
		t.Errorf("daily: %d parts, %v; want 1", parts, err)
	}
}

// TestConnTo: each Conn of ConnTo reads and writes the tables of its own
// database when a statement names none, whatever the other Conns did before.
func TestConnTo(t *testing.T) {
	e := testEngine(t)
	ctx := context.Background()
	a, b := testDB(t, e.Conn()), testDB(t, e.Conn())
	ca, cb := e.ConnTo(a), e.ConnTo(b)
	for _, c := range []struct {
		conn driver.Conn
		v    string
	}{{ca, "in a"}, {cb, "in b"}} {
		if err := c.conn.Exec(ctx, "CREATE TABLE t (v String) ENGINE = MergeTree ORDER BY v"); err != nil {
			t.Fatal(err)
		}
		batch, err := c.conn.PrepareBatch(ctx, "INSERT INTO t (v)")
		if err != nil {
			t.Fatal(err)
		}
		if err := batch.Append(c.v); err != nil {
			t.Fatal(err)
		}
		if err := batch.Send(); err != nil {
			t.Fatal(err)
		}
	}
	// A caller's own USE does not move the Conns.
	if _, err := e.Query("USE system", "TabSeparated"); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		conn driver.Conn
		want string
	}{{ca, "in a"}, {cb, "in b"}, {ca, "in a"}} {
		var got string
		if err := c.conn.QueryRow(ctx, "SELECT v FROM t").Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != c.want {
			t.Errorf("SELECT v FROM t = %q, want %q", got, c.want)
		}
	}
	var n uint64
	if err := e.Conn().QueryRow(ctx, "SELECT count() FROM `"+a+"`.t").Scan(&n); err != nil || n != 1 {
		t.Errorf("count of %s.t = %d, %v; want 1", a, n, err)
	}
}
