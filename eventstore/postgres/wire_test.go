package postgres

import (
	"bytes"
	"context"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/linkd/linkd/internal/testsupport/pgtest"
)

// PostgreSQL reads the parameters the writer lays out as they were: empty
// and NULL elements, bytes that are not text, a timestamp with
// microseconds, no versions (NULL) and an empty group.
func TestAppendParamsReadByPostgres(t *testing.T) {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, pgtest.DSN(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	q := `SELECT $1::text[], $2::bigint[], $3::uuid[], $4::text[], $5::bytea[], $6::bytea[],
		$7::timestamptz, $8::text[], $9::text, $10::text, $11::boolean`
	if _, err := conn.Prepare(ctx, "wire", q); err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 30, 1, 2, 3, 456789000, time.UTC)
	groups := []*groupRows{
		{
			streams:  []string{"clicks-a", "links-ü", ""},
			versions: []int64{0, -1, 1 << 40},
			ids:      [][16]byte{{1}, {2, 3}, {15: 255}},
			types:    []string{"ClickRecorded", "LinkCreated", "x"},
			datas:    [][]byte{[]byte(`{"a":1}`), {}, {0, 0xff, '\n'}},
			metas:    [][]byte{nil, []byte("m"), {}},
			now:      now,
			cats:     []string{"clicks", "links"},
			relaxed:  true,
		},
		{byDB: true, now: time.Date(1999, 12, 31, 23, 59, 59, 999999000, time.UTC)},
	}
	for i, g := range groups {
		callers := slices.Clone(g.datas)
		params := g.appendParams("chan", "inst-1")
		// The store keeps the copies in the parameters: the callers'
		// bytes may change once answered.
		for j, d := range callers {
			if len(d) > 0 {
				d[0] ^= 0xff
				if g.datas[j][0] == d[0] {
					t.Errorf("group %d: event %d's data is the caller's, not a copy", i, j)
				}
				d[0] ^= 0xff
			}
		}
		// What PostgreSQL made of them, in its text format.
		var text []string
		row := conn.PgConn().ExecPrepared(ctx, "wire", params, binaryFormats, []int16{0}).Read()
		if row.Err != nil || len(row.Rows) != 1 {
			t.Fatalf("group %d: %v, %d rows", i, row.Err, len(row.Rows))
		}
		for _, v := range row.Rows[0] {
			if v == nil {
				text = append(text, "NULL")
			} else {
				text = append(text, string(v))
			}
		}
		want := [][]string{
			{`{clicks-a,links-ü,""}`, `{0,-1,1099511627776}`,
				`{01000000-0000-0000-0000-000000000000,02030000-0000-0000-0000-000000000000,00000000-0000-0000-0000-0000000000ff}`,
				`{ClickRecorded,LinkCreated,x}`, `{"\\x7b2261223a317d","\\x","\\x00ff0a"}`, `{NULL,"\\x6d","\\x"}`,
				`2026-11-30 01:02:03.456789+00`, `{clicks,links}`, `chan`, `inst-1`, `t`},
			{`{}`, `NULL`, `{}`, `{}`, `{}`, `{}`, `1999-12-31 23:59:59.999999+00`, `{}`, `chan`, `inst-1`, `f`},
		}[i]
		if !slices.Equal(text, want) {
			t.Errorf("group %d: PostgreSQL read\n%q\nwant\n%q", i, text, want)
		}
	}
}

func TestParseInt8Array(t *testing.T) {
	for _, vs := range [][]int64{{}, {7}, {-1, 0, 1 << 62}} {
		got, err := parseInt8Array(arrayInt8(vs))
		if err != nil || !slices.Equal(got, vs) {
			t.Errorf("%v: got %v, %v", vs, got, err)
		}
	}
	good := arrayInt8([]int64{1, 2})
	for name, b := range map[string][]byte{
		"short":     good[:8],
		"truncated": good[:len(good)-1],
		"text[]":    arrayText([]string{"a"}),
		"null":      arrayBytes(oidInt8, [][]byte{nil}, true),
	} {
		if _, err := parseInt8Array(b); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if !bytes.Equal(good[8:12], []byte{0, 0, 0, oidInt8}) {
		t.Errorf("element type %v", good[8:12])
	}
}
