package core

import (
	"bytes"
	"context"
	"encoding/binary"
	"strings"
	"time"

	"github.com/linkd/linkd/internal/storage/sidedb"
	"github.com/linkd/linkd/internal/storage/sidedb/sidedbtest"
)

// customerEventsV5 is schema version 5's table of the customers' journeys,
// which version 6 moved to Pebble (journeys.go).
const customerEventsV5 = `CREATE TABLE customer_events (
		customer_id TEXT NOT NULL,
		seq INTEGER NOT NULL,
		kind TEXT NOT NULL,
		conversion_id TEXT NOT NULL,
		event_name TEXT NOT NULL,
		link_id TEXT NOT NULL,
		click_id TEXT NOT NULL,
		clicked_at INTEGER NOT NULL,
		amount_minor INTEGER NOT NULL DEFAULT 0,
		currency TEXT NOT NULL DEFAULT '',
		first INTEGER NOT NULL DEFAULT 0,
		metadata TEXT NOT NULL DEFAULT '',
		at INTEGER NOT NULL,
		PRIMARY KEY (customer_id, seq)) WITHOUT ROWID`

// DowngradeJourneysToV5 moves s's journeys back into the SQLite table of
// schema version 5, and empties their Pebble database.
func DowngradeJourneysToV5(s *Store) error {
	if err := CopyJourneysToV5(s); err != nil {
		return err
	}
	return sidedb.Reset(s.journeys)
}

// CopyJourneysToV5 copies s's journeys into the SQLite table of schema
// version 5 and keeps them in Pebble: what a crash during their move to
// Pebble leaves.
func CopyJourneysToV5(s *Store) error {
	ctx := context.Background()
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, customerEventsV5); err != nil {
		return err
	}
	err = sidedbtest.ToTable(ctx, tx, s.journeys, `INSERT INTO customer_events VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		func(k, v []byte) ([]any, error) {
			i := bytes.IndexByte(k, 0)
			e, err := decodeJourneyEvent(v)
			return []any{string(k[:i]), int64(binary.BigEndian.Uint64(k[i+1:])), e.Kind, e.ConversionID, e.EventName, e.LinkID, e.ClickID,
				e.ClickedAt.UnixNano(), e.AmountMinor, e.Currency, e.First, string(e.Metadata), e.Timestamp.UnixNano()}, err
		})
	if err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `PRAGMA user_version = 5`); err != nil {
		return err
	}
	return tx.Commit()
}

// DowngradeToV1 turns s's tables into what linkd wrote before schema
// version 2 (rowid tables, customer_events, customer_revenue, user_version
// 0), keeping their rows.
func DowngradeToV1(s *Store) error {
	if err := DowngradeJourneysToV5(s); err != nil {
		return err
	}
	ctx := context.Background()
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	for _, t := range append(withoutRowID, "customer_events") {
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

// ClicksEvery is how long click counts wait in memory at most.
const ClicksEvery = clicksEvery

// AgeClicks makes the pending click counts d older: the next batch writes
// them when that reaches clicksEvery.
func (s *Store) AgeClicks(d time.Duration) {
	s.clicksMu.Lock()
	s.clicks.since = s.clicks.since.Add(-d)
	s.clicksMu.Unlock()
}
