package core

import (
	"context"
	"strings"
)

// DowngradeToV1 turns s's tables into what linkd wrote before schema
// version 2 (rowid tables, customer_revenue, user_version 0), keeping
// their rows.
func DowngradeToV1(s *Store) error {
	ctx := context.Background()
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	for _, t := range withoutRowID {
		var ddl string
		if err := tx.QueryRowContext(ctx, `SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?`, t).Scan(&ddl); err != nil {
			return err
		}
		for _, q := range []string{
			`ALTER TABLE ` + t + ` RENAME TO tmp`,
			`DROP INDEX IF EXISTS customers_ws`,
			strings.Replace(ddl, " WITHOUT ROWID", "", 1),
			`INSERT INTO ` + t + ` SELECT * FROM tmp`,
			`DROP TABLE tmp`,
		} {
			if _, err := tx.ExecContext(ctx, q); err != nil {
				return err
			}
		}
	}
	if _, err := tx.ExecContext(ctx, `CREATE TABLE customer_revenue (customer_id TEXT NOT NULL, currency TEXT NOT NULL,
		amount_minor INTEGER NOT NULL, PRIMARY KEY (customer_id, currency))`); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `CREATE INDEX customers_ws ON customers (workspace_id, created_at, id)`); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `PRAGMA user_version = 0`); err != nil {
		return err
	}
	return tx.Commit()
}

// Tables returns the CREATE statements of s's tables and indexes.
func Tables(s *Store) (map[string]string, error) {
	rows, err := s.w.Query(`SELECT name, coalesce(sql, '') FROM sqlite_master`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var name, sql string
		if err := rows.Scan(&name, &sql); err != nil {
			return nil, err
		}
		out[name] = sql
	}
	return out, rows.Err()
}

// DowngradeCustomersToV4 keys s's customers by stream again, as schema
// versions 2 to 4 did, keeping their rows.
func DowngradeCustomersToV4(s *Store) error {
	ctx := context.Background()
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	var ddl string
	if err := tx.QueryRowContext(ctx, `SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'customers'`).Scan(&ddl); err != nil {
		return err
	}
	old := strings.Replace(strings.Replace(ddl, "stream TEXT NOT NULL,", "stream TEXT PRIMARY KEY,", 1), "id TEXT PRIMARY KEY,", "id TEXT NOT NULL UNIQUE,", 1)
	for _, q := range []string{
		`ALTER TABLE customers RENAME TO tmp`,
		`DROP INDEX IF EXISTS customers_ws`,
		old,
		`INSERT INTO customers SELECT * FROM tmp`,
		`DROP TABLE tmp`,
		`CREATE INDEX customers_ws ON customers (workspace_id, created_at, id)`,
		`PRAGMA user_version = 4`,
	} {
		if _, err := tx.ExecContext(ctx, q); err != nil {
			return err
		}
	}
	return tx.Commit()
}
