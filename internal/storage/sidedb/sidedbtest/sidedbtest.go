// Package sidedbtest helps tests put a side database's rows back into
// SQLite, as an older schema kept them (the downgrades that migration
// tests start from).
package sidedbtest

import (
	"context"
	"database/sql"

	"github.com/cockroachdb/pebble/v2"
)

// ToTable inserts a row into SQLite (insert, with row's arguments) for
// every key of db: sidedb.MoveTable's reverse.
func ToTable(ctx context.Context, tx *sql.Tx, db *pebble.DB, insert string, row func(k, v []byte) ([]any, error)) error {
	it, err := db.NewIter(nil)
	if err != nil {
		return err
	}
	for ok := it.First(); ok; ok = it.Next() {
		args, err := row(it.Key(), it.Value())
		if err == nil {
			_, err = tx.ExecContext(ctx, insert, args...)
		}
		if err != nil {
			it.Close()
			return err
		}
	}
	return it.Close()
}
