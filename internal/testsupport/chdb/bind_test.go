package chdb

import (
	"database/sql"
	"strings"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/google/uuid"
)

type stringer struct{}

func (stringer) String() string { return "it's" }

func TestBind(t *testing.T) {
	s := "a'b"
	var nilString *string
	var nilTime *time.Time
	at := time.Date(2026, 4, 1, 12, 0, 0, 0, time.UTC)
	paris := time.Date(2026, 4, 1, 14, 0, 0, 500, time.FixedZone("CEST", 2*3600))
	n := 7
	tests := []struct {
		query string
		args  []any
		want  string
	}{
		{"SELECT ?", nil, "SELECT ?"}, // no args: unchanged
		{"SELECT ?", []any{"x"}, "SELECT 'x'"},
		{"SELECT ?", []any{`back\slash 'quote' nul` + "\x00"}, `SELECT 'back\\slash \'quote\' nul\0'`},
		{"SELECT ?", []any{"tab\tnew\nline"}, "SELECT 'tab\tnew\nline'"},
		{"SELECT ?, ?, ?, ?", []any{int8(-8), int16(-16), int32(-32), int64(-64)}, "SELECT -8, -16, -32, -64"},
		{"SELECT ?, ?, ?, ?, ?", []any{uint8(8), uint16(16), uint32(32), uint64(18446744073709551615), 5}, "SELECT 8, 16, 32, 18446744073709551615, 5"},
		{"SELECT ?, ?", []any{float32(1.5), 2.25}, "SELECT cast(1.5, 'Float32'), cast(2.25, 'Float64')"},
		{"SELECT ?, ?", []any{true, false}, "SELECT 1, 0"},
		{"SELECT ?", []any{at}, "SELECT toDateTime('2026-04-01 12:00:00', 'UTC')"},
		{"SELECT ?", []any{paris}, "SELECT toDateTime('2026-04-01 12:00:00', 'UTC')"}, // the same moment, whole seconds
		{"SELECT ?", []any{&at}, "SELECT toDateTime('2026-04-01 12:00:00', 'UTC')"},
		{"SELECT ?, ?, ?", []any{nil, nilString, nilTime}, "SELECT NULL, NULL, NULL"},
		{"SELECT ?", []any{[]byte("bytes'")}, `SELECT 'bytes\''`},
		{"SELECT ?", []any{[][]byte{[]byte("ab")}}, "SELECT [[97, 98]]"}, // nested []byte: numbers, as clickhouse-go
		{"SELECT ?, ?", []any{&s, &n}, `SELECT 'a\'b', 7`},
		{"SELECT ?", []any{[]string{"a", "b'"}}, `SELECT ['a', 'b\'']`},
		{"SELECT ?", []any{[]uint64{1, 2}}, "SELECT [1, 2]"},
		{"SELECT ?", []any{[]any{1, "x", nil}}, "SELECT [1, 'x', NULL]"},
		{"SELECT ?", []any{[]time.Time{at}}, "SELECT [toDateTime('2026-04-01 12:00:00', 'UTC')]"},
		{"SELECT ?", []any{stringer{}}, `SELECT 'it\'s'`},
		{"SELECT ?", []any{uuid.MustParse("61f0c404-5cb3-11e7-907b-a6006ad3dba0")}, "SELECT '61f0c404-5cb3-11e7-907b-a6006ad3dba0'"},
		{"SELECT ?", []any{sql.NullString{String: "v", Valid: true}}, "SELECT 'v'"},
		{"SELECT ?", []any{sql.NullString{}}, "SELECT NULL"},
		// Not placeholders: in strings, identifiers, comments.
		{"SELECT '?', `a?`, \"b?\", ? -- c?\n, ? /* d? /* e? */ ? */ # f?\n", []any{1, 2},
			"SELECT '?', `a?`, \"b?\", 1 -- c?\n, 2 /* d? /* e? */ ? */ # f?\n"},
		{`SELECT 'it\'s ?', ?`, []any{1}, `SELECT 'it\'s ?', 1`},
		{`SELECT 'it''s ?', ?`, []any{1}, `SELECT 'it''s ?', 1`},
		{"SELECT `a``?`, ?", []any{1}, "SELECT `a``?`, 1"},
		{`SELECT \?, ?`, []any{1}, `SELECT ?, 1`},                  // \? is a literal ?
		{"SELECT ?", []any{1, 2}, "SELECT 1"},                      // extra args are ignored, as clickhouse-go
		{"WHERE x IN ?", []any{[]string{"a"}}, "WHERE x IN ['a']"}, // as clickhouse-go
	}
	for _, tc := range tests {
		got, err := bind(tc.query, tc.args...)
		if err != nil {
			t.Errorf("bind(%q, %v): %v", tc.query, tc.args, err)
			continue
		}
		if got != tc.want {
			t.Errorf("bind(%q, %v)\n got %q\nwant %q", tc.query, tc.args, got, tc.want)
		}
	}
}

func TestBindErrors(t *testing.T) {
	for _, tc := range []struct {
		query string
		args  []any
		want  string
	}{
		{"SELECT ?, ?", []any{1}, "have no arg for param ?"},
		{"SELECT @x", []any{clickhouse.Named("x", 1)}, "named parameters"},
		{"SELECT ?", []any{struct{}{}}, "cannot bind"},
		{"SELECT ?", []any{time.Second}, "not supported by chdb"},
	} {
		_, err := bind(tc.query, tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("bind(%q, %v) = %v; want an error with %q", tc.query, tc.args, err, tc.want)
		}
	}
}
