package sidedb_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"

	"github.com/cockroachdb/pebble/v2"

	"github.com/linkd/linkd/internal/storage/sidedb"
	"github.com/linkd/linkd/internal/storage/sqlitedb"
)

func count(t *testing.T, db *pebble.DB) int {
	t.Helper()
	it, err := db.NewIter(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		n++
	}
	return n
}

// Reset deletes keys of any bytes, the highest included, and keeps the
// database usable; an empty database stays empty.
func TestResetDeletesEveryKey(t *testing.T) {
	db, err := sidedb.Open(filepath.Join(t.TempDir(), "side"), 8<<20, 1<<20, "test")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := sidedb.Reset(db); err != nil {
		t.Fatal(err)
	}
	for _, k := range [][]byte{{0}, []byte("a"), {0xff}, {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 1}} {
		if err := db.Set(k, []byte("v"), pebble.NoSync); err != nil {
			t.Fatal(err)
		}
	}
	if err := sidedb.Reset(db); err != nil {
		t.Fatal(err)
	}
	if n := count(t, db); n != 0 {
		t.Fatalf("%d keys left after Reset", n)
	}
	if err := db.Set([]byte("b"), []byte("v"), pebble.NoSync); err != nil {
		t.Fatal(err)
	}
	if n := count(t, db); n != 1 {
		t.Fatalf("%d keys after a Set following Reset, want 1", n)
	}
}

// MoveTable moves every row of a table that is there and drops it; a
// table that is not there moves nothing.
func TestMoveTable(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	w, r, err := sqlitedb.Open(filepath.Join(dir, "m.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	db, err := sidedb.Open(filepath.Join(dir, "side"), 8<<20, 1<<20, "test")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	kv := func(rows *sql.Rows, key, val []byte) ([]byte, []byte, error) {
		var k, v string
		err := rows.Scan(&k, &v)
		return append(key, k...), append(val, v...), err
	}
	if err := sidedb.MoveTable(ctx, w, db, "old", `SELECT k, v FROM old`, kv); err != nil {
		t.Fatalf("without the table: %v", err)
	}
	for _, q := range []string{`CREATE TABLE old (k TEXT, v TEXT)`, `INSERT INTO old VALUES ('a', '1'), ('b', '2'), ('c', '3')`} {
		if _, err := w.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	if err := sidedb.MoveTable(ctx, w, db, "old", `SELECT k, v FROM old`, kv); err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]string{"a": "1", "b": "2", "c": "3"} {
		v, closer, err := db.Get([]byte(k))
		if err != nil {
			t.Fatalf("%s: %v", k, err)
		}
		if string(v) != want {
			t.Errorf("%s = %q, want %q", k, v, want)
		}
		closer.Close()
	}
	var n int
	if err := w.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE name = 'old'`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("table still there (%d, %v)", n, err)
	}
}
