package radar

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/binary"

	"github.com/linkd/linkd/domain/radar"
	"github.com/linkd/linkd/internal/storage/sidedb"
	"github.com/linkd/linkd/internal/storage/sidedb/sidedbtest"
)

// hitsTableV4 is the SQLite table of hits of schema versions 1 to 4.
const hitsTableV4 = `CREATE TABLE hits (
		project_id TEXT NOT NULL,
		ts INTEGER NOT NULL,
		seq INTEGER NOT NULL,
		visitor_id TEXT NOT NULL,
		session_id TEXT NOT NULL,
		kind INTEGER NOT NULL,
		name TEXT NOT NULL,
		pathname TEXT NOT NULL,
		hostname TEXT NOT NULL,
		source TEXT NOT NULL,
		country TEXT NOT NULL,
		browser TEXT NOT NULL,
		os TEXT NOT NULL,
		device TEXT NOT NULL,
		click_id TEXT NOT NULL,
		props TEXT NOT NULL,
		PRIMARY KEY (project_id, ts, visitor_id, seq)) WITHOUT ROWID`

// hitsBackToSQLite moves the hits from Pebble back into version 4's table.
func hitsBackToSQLite(ctx context.Context, tx *sql.Tx, s *Store) error {
	if _, err := tx.ExecContext(ctx, hitsTableV4); err != nil {
		return err
	}
	err := sidedbtest.ToTable(ctx, tx, s.hits, `INSERT INTO hits (project_id, ts, seq, visitor_id, session_id, kind, name, pathname, hostname, source, country, browser, os, device, click_id, props)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		func(k, v []byte) ([]any, error) {
			l, n := binary.Uvarint(k)
			h, err := decodeHit(n+int(l), k, v)
			return []any{string(k[n : n+int(l)]), h.ts, h.seq, h.visitor, h.session, h.kind, h.name, h.pathname, h.hostname, h.source, h.country, h.browser, h.os, h.device, h.clickID, h.props}, err
		})
	if err != nil {
		return err
	}
	return sidedb.Reset(s.hits)
}

// downgrade runs f in one transaction after the hits' move back into
// SQLite (what every downgrade from schema 5 starts with), and commits.
func downgrade(s *Store, f func(ctx context.Context, tx *sql.Tx) error) error {
	ctx := context.Background()
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := hitsBackToSQLite(ctx, tx, s); err != nil {
		return err
	}
	if err := f(ctx, tx); err != nil {
		return err
	}
	return tx.Commit()
}

// DowngradeToV1 turns s into what linkd wrote before schema version 2
// (conversions keyed by conversion id, with an index by click; the version
// of every stream, customers' too, in applied; user_version 0), keeping
// its rows: the conversions move from Pebble back into SQLite.
func DowngradeToV1(s *Store) error {
	return downgrade(s, func(ctx context.Context, tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, conversionsTable); err != nil {
			return err
		}
		err := sidedbtest.ToTable(ctx, tx, s.conv, `INSERT INTO conversions (click_id, conversion_id, kind, customer, amount_minor, currency, at) VALUES (?, ?, ?, ?, ?, ?, ?)`,
			func(k, v []byte) ([]any, error) {
				i := bytes.IndexByte(k, 0)
				c, err := decodeConversion(string(k[i+1:]), v)
				return []any{string(k[:i]), c.id, c.kind, c.customer, c.amount, c.currency, c.at}, err
			})
		if err != nil {
			return err
		}
		if err := sidedb.Reset(s.conv); err != nil {
			return err
		}
		for _, q := range []string{
			`ALTER TABLE conversions RENAME TO tmp`,
			`CREATE TABLE conversions (
				conversion_id TEXT PRIMARY KEY,
				kind TEXT NOT NULL,
				click_id TEXT NOT NULL,
				customer TEXT NOT NULL,
				amount_minor INTEGER NOT NULL,
				currency TEXT NOT NULL,
				at INTEGER NOT NULL) WITHOUT ROWID`,
			`CREATE INDEX conversions_click ON conversions (click_id, kind)`,
			`INSERT INTO conversions SELECT conversion_id, kind, click_id, customer, amount_minor, currency, at FROM tmp`,
			`DROP TABLE tmp`,
			`CREATE TABLE applied (stream TEXT PRIMARY KEY, version INTEGER NOT NULL) WITHOUT ROWID`,
			`INSERT INTO applied (stream, version) SELECT DISTINCT customer, 99 FROM conversions WHERE customer <> ''`,
			`PRAGMA user_version = 0`,
		} {
			if _, err := tx.ExecContext(ctx, q); err != nil {
				return err
			}
		}
		rows, err := tx.QueryContext(ctx, `SELECT project_id, visitor_id, version FROM visitors`)
		if err != nil {
			return err
		}
		type row struct {
			stream  string
			version int64
		}
		var rs []row
		for rows.Next() {
			var p, v string
			var r row
			if err := rows.Scan(&p, &v, &r.version); err != nil {
				return err
			}
			r.stream = radar.Stream(p, v)
			rs = append(rs, r)
		}
		rows.Close()
		for _, r := range rs {
			if _, err := tx.ExecContext(ctx, `INSERT INTO applied (stream, version) VALUES (?, ?)`, r.stream, r.version); err != nil {
				return err
			}
		}
		for _, q := range []string{
			`ALTER TABLE visitors DROP COLUMN version`,
			`ALTER TABLE visitors DROP COLUMN last_start`,
			`DROP INDEX sessions_start`,
			`ALTER TABLE sessions RENAME TO tmp`,
			`CREATE TABLE sessions (project_id TEXT NOT NULL, session_id TEXT NOT NULL, visitor_id TEXT NOT NULL, start INTEGER NOT NULL,
				end INTEGER NOT NULL, pageviews INTEGER NOT NULL, events INTEGER NOT NULL, source TEXT NOT NULL, referrer TEXT NOT NULL,
				device TEXT NOT NULL, browser TEXT NOT NULL, os TEXT NOT NULL, country TEXT NOT NULL, entry_page TEXT NOT NULL,
				PRIMARY KEY (project_id, session_id)) WITHOUT ROWID`,
			`INSERT INTO sessions SELECT project_id, session_id, visitor_id, start, end, pageviews, events, source, referrer, device, browser, os, country, entry_page FROM tmp`,
			`DROP TABLE tmp`,
			`CREATE INDEX sessions_start ON sessions (project_id, start)`,
			`CREATE INDEX sessions_visitor ON sessions (project_id, visitor_id, start)`,
			`CREATE INDEX hits_visitor ON hits (project_id, visitor_id, ts)`,
			`DROP TABLE rollup_days`,
			`DROP TABLE rollup_dims`,
			`DROP TABLE rollup_dirty`,
			`DROP INDEX visitors_clicked`,
			`CREATE INDEX visitors_click ON visitors (click_id)`,
		} {
			if _, err := tx.ExecContext(ctx, q); err != nil {
				return err
			}
		}
		return nil
	})
}

// AppliedStreams counts the streams in applied; -1 without that table.
func AppliedStreams(s *Store) (n int, err error) {
	var tables int
	if err := s.w.QueryRow(`SELECT count(*) FROM sqlite_master WHERE name = 'applied'`).Scan(&tables); err != nil || tables == 0 {
		return -1, err
	}
	err = s.w.QueryRow(`SELECT count(*) FROM applied`).Scan(&n)
	return n, err
}

// DowngradeToV3 removes what schema version 4 added: the version column of
// sessions, whose versions version 3 kept in the visitors' rows, and what 5
// did: the hits move back into SQLite.
func DowngradeToV3(s *Store) error {
	return downgrade(s, func(ctx context.Context, tx *sql.Tx) error {
		for _, q := range []string{
			`UPDATE visitors SET version = max(version, coalesce((SELECT max(s.version) FROM sessions s
				WHERE s.project_id = visitors.project_id AND s.visitor_id = visitors.visitor_id), -1))`,
			`ALTER TABLE sessions DROP COLUMN version`,
			`PRAGMA user_version = 3`,
		} {
			if _, err := tx.ExecContext(ctx, q); err != nil {
				return err
			}
		}
		return nil
	})
}
