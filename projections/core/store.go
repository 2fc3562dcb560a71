// Package core is the projection of links, workspaces, members, projects,
// domains and API keys into an embedded SQLite database (modernc.org/sqlite,
// WAL): the read model every API query is served from.
//
// Idempotence: every row remembers the version of its stream it reflects,
// and an event at or below it is skipped. A link's click count is the
// version of its click stream plus one (the stream numbers clicks from 0),
// so a repeated click changes nothing. The checkpoint (the highest global
// position applied) is written in the same transaction as the data.
package core

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/cockroachdb/pebble/v2"

	"github.com/linkd/linkd/domain/conversion"
	"github.com/linkd/linkd/domain/pixel"
	"github.com/linkd/linkd/domain/utmtemplate"
	"github.com/linkd/linkd/eventstore"
	"github.com/linkd/linkd/internal/storage/sidedb"
	"github.com/linkd/linkd/internal/storage/sqlitedb"
	"github.com/linkd/linkd/projections"
)

// Name is the projection's name.
const Name = "core"

// Change tells listeners that an entity changed in the read model.
type Change struct {
	Kind string // "link", "workspace", "project", "domain", "apikey"
	ID   string
}

// Store is the core read model.
type Store struct {
	projections.LongBatches

	w        *sql.DB    // one connection: the projector's
	r        *sql.DB    // readers
	journeys *pebble.DB // journeys.go

	mu        sync.RWMutex
	listeners []func([]Change)

	clicksMu sync.RWMutex  // guards clicks.m; only the projector writes it
	clicks   pendingClicks // clicks.go
}

// Open opens (creating if needed) the database file at path, and the
// Pebble directory of the customers' journeys beside it (path without
// ".db", then "-journeys").
func Open(path string) (*Store, error) {
	w, r, err := sqlitedb.Open(path)
	if err != nil {
		return nil, err
	}
	j, err := openJourneys(journeysDir(path))
	if err != nil {
		return nil, errors.Join(fmt.Errorf("core: journeys: %w", err), r.Close(), w.Close())
	}
	s := &Store{w: w, r: r, journeys: j}
	if err := s.migrate(context.Background()); err != nil {
		s.Close()
		return nil, fmt.Errorf("core: schema: %w", err)
	}
	if err := moveJourneys(context.Background(), s.w, s.journeys); err != nil {
		s.Close()
		return nil, fmt.Errorf("core: journeys: %w", err)
	}
	return s, nil
}

// Close closes the databases.
func (s *Store) Close() error {
	var err error
	if err = s.flushClicks(context.Background()); err != nil {
		err = fmt.Errorf("core: write pending click counts: %w", err)
	}
	return errors.Join(err, s.r.Close(), s.w.Close(), sidedb.Close(s.journeys))
}

// OnChange registers f to be told, after each applied batch, what changed.
func (s *Store) OnChange(f func([]Change)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.listeners = append(s.listeners, f)
}

func (s *Store) notify(ch []Change) {
	if len(ch) == 0 {
		return
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	for _, f := range s.listeners {
		f(ch)
	}
}

var schema = []string{
	sqlitedb.CheckpointTable,
	`CREATE TABLE IF NOT EXISTS workspaces (
		id TEXT PRIMARY KEY,
		name TEXT NOT NULL,
		description TEXT NOT NULL,
		owner_id TEXT NOT NULL,
		plan TEXT NOT NULL,
		is_default INTEGER NOT NULL,
		created_at INTEGER NOT NULL,
		updated_at INTEGER NOT NULL,
		deleted INTEGER NOT NULL DEFAULT 0,
		version INTEGER NOT NULL)`,
	`CREATE TABLE IF NOT EXISTS members (
		workspace_id TEXT NOT NULL,
		user_id TEXT NOT NULL,
		email TEXT NOT NULL,
		role TEXT NOT NULL,
		joined_at INTEGER NOT NULL,
		PRIMARY KEY (workspace_id, user_id))`,
	`CREATE INDEX IF NOT EXISTS members_user ON members(user_id)`,
	`CREATE TABLE IF NOT EXISTS projects (
		id TEXT PRIMARY KEY,
		workspace_id TEXT NOT NULL,
		name TEXT NOT NULL,
		description TEXT NOT NULL,
		color TEXT NOT NULL,
		created_at INTEGER NOT NULL,
		updated_at INTEGER NOT NULL,
		deleted INTEGER NOT NULL DEFAULT 0,
		version INTEGER NOT NULL)`,
	`CREATE INDEX IF NOT EXISTS projects_ws ON projects(workspace_id, deleted, created_at, id)`,
	`CREATE TABLE IF NOT EXISTS domains (
		id TEXT PRIMARY KEY,
		workspace_id TEXT NOT NULL,
		domain TEXT NOT NULL,
		description TEXT NOT NULL,
		is_verified INTEGER NOT NULL,
		dns_configured INTEGER NOT NULL,
		cname_added INTEGER NOT NULL,
		last_checked INTEGER,
		created_at INTEGER NOT NULL,
		updated_at INTEGER NOT NULL,
		deleted INTEGER NOT NULL DEFAULT 0,
		version INTEGER NOT NULL)`,
	`CREATE INDEX IF NOT EXISTS domains_ws ON domains(workspace_id, deleted, created_at, id)`,
	`CREATE INDEX IF NOT EXISTS domains_name ON domains(domain, deleted)`,
	`CREATE TABLE IF NOT EXISTS links (
		id TEXT PRIMARY KEY,
		workspace_id TEXT NOT NULL,
		project_id TEXT,
		domain_id TEXT,
		code TEXT NOT NULL,
		created_by TEXT NOT NULL,
		created_at INTEGER NOT NULL,
		updated_at INTEGER NOT NULL,
		is_archived INTEGER NOT NULL,
		deleted INTEGER NOT NULL DEFAULT 0,
		doc TEXT NOT NULL,
		version INTEGER NOT NULL)`,
	`CREATE INDEX IF NOT EXISTS links_ws ON links(workspace_id, deleted, is_archived, created_at, id)`,
	`CREATE INDEX IF NOT EXISTS links_project ON links(project_id, deleted)`,
	`CREATE INDEX IF NOT EXISTS links_code ON links(code, deleted)`,
	`CREATE TABLE IF NOT EXISTS link_clicks (
		link_id TEXT PRIMARY KEY,
		clicks INTEGER NOT NULL,
		last_click INTEGER NOT NULL) WITHOUT ROWID`,
	`CREATE TABLE IF NOT EXISTS api_keys (
		id TEXT PRIMARY KEY,
		user_id TEXT NOT NULL,
		name TEXT NOT NULL,
		hash TEXT NOT NULL,
		prefix TEXT NOT NULL,
		kind TEXT NOT NULL,
		access TEXT NOT NULL,
		permissions TEXT NOT NULL,
		project_id TEXT NOT NULL,
		allowed_hostnames TEXT NOT NULL,
		operator INTEGER NOT NULL,
		is_active INTEGER NOT NULL,
		created_at INTEGER NOT NULL,
		version INTEGER NOT NULL)`,
	`CREATE INDEX IF NOT EXISTS api_keys_hash ON api_keys(hash)`,
	`CREATE INDEX IF NOT EXISTS api_keys_user ON api_keys(user_id, created_at, id)`,
}

var tables = []string{"checkpoint", "workspaces", "members", "projects", "domains", "links", "link_clicks", "api_keys",
	"customers", "utm_templates", "pixels"}

// schemaVersion is the version of the tables above, kept in SQLite's
// user_version (0: written before versions were kept).
//
//   - 2: link_clicks and the customer tables are WITHOUT ROWID.
//   - 3: no customer_revenue (summed from the journeys when read).
//   - 4: utm_templates and pixels (new tables, nothing to convert).
//   - 5: customers keyed by id (time-ordered: a new customer is written at
//     the end of the B-tree, not at the random place of its stream's hash).
//   - 6: no customer_events: the journeys are in Pebble (journeys.go);
//     Open moves the rows of an older file there.
const schemaVersion = 6

// withoutRowID are the tables that version 2 made WITHOUT ROWID.
// (customer_events too, which Open now moves to Pebble as it is.)
var withoutRowID = []string{"link_clicks", "customers"}

// migrate creates what is missing and brings an older database to
// schemaVersion in place, keeping its rows and its checkpoint: the read
// model need not be rebuilt from the log (which, with Kafka, would not
// feed it again).
func (s *Store) migrate(ctx context.Context) error {
	return sqlitedb.Migrate(ctx, s.w, "the read model", schemaVersion, func(tx *sql.Tx, _ int) error {
		create := func() error {
			for _, stmt := range append(append(schema[:len(schema):len(schema)], customerSchema...), extensionSchema...) {
				if _, err := tx.ExecContext(ctx, stmt); err != nil {
					return err
				}
			}
			return nil
		}
		if err := create(); err != nil {
			return err
		}
		rebuilt := false
		for _, t := range withoutRowID {
			var ddl string
			if err := tx.QueryRowContext(ctx, `SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?`, t).Scan(&ddl); err != nil {
				return fmt.Errorf("%s: %w", t, err)
			}
			// Version 2 made them WITHOUT ROWID; version 5 keys customers by
			// id (the columns stay in their order, for the copy below).
			if strings.Contains(ddl, "WITHOUT ROWID") && !(t == "customers" && strings.Contains(ddl, "stream TEXT PRIMARY KEY")) {
				continue
			}
			// Rename, create anew (create() below), copy, drop: the old table's
			// indexes go with it and are created again.
			if _, err := tx.ExecContext(ctx, `ALTER TABLE `+t+` RENAME TO `+t+`_v1`); err != nil {
				return fmt.Errorf("%s: %w", t, err)
			}
			if _, err := tx.ExecContext(ctx, `DROP INDEX IF EXISTS customers_ws`); err != nil {
				return err
			}
			rebuilt = true
		}
		if rebuilt {
			if err := create(); err != nil {
				return err
			}
			for _, t := range withoutRowID {
				var n int
				if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?`, t+"_v1").Scan(&n); err != nil {
					return err
				}
				if n == 0 {
					continue
				}
				if _, err := tx.ExecContext(ctx, `INSERT INTO `+t+` SELECT * FROM `+t+`_v1`); err != nil {
					return fmt.Errorf("%s: %w", t, err)
				}
				if _, err := tx.ExecContext(ctx, `DROP TABLE `+t+`_v1`); err != nil {
					return fmt.Errorf("%s: %w", t, err)
				}
			}
		}
		if _, err := tx.ExecContext(ctx, `DROP TABLE IF EXISTS customer_revenue`); err != nil {
			return err
		}
		return nil
	})
}

// Name implements projections.Projector.
func (s *Store) Name() string { return Name }

// Categories implements projections.Projector.
func (s *Store) Categories() []string {
	return []string{"link", "clicks", "workspace", "project", "domain", "apikey", conversion.CustomerCategory, utmtemplate.Category, pixel.Category}
}

// Checkpoint implements projections.Projector.
func (s *Store) Checkpoint(ctx context.Context) (eventstore.Position, error) {
	return sqlitedb.Checkpoint(ctx, s.w)
}

// Reset implements projections.Projector: it empties every table and the
// journeys.
func (s *Store) Reset(ctx context.Context) error {
	if err := sidedb.Reset(s.journeys); err != nil {
		return fmt.Errorf("core: reset: %w", err)
	}
	if err := sqlitedb.Empty(ctx, s.w, tables); err != nil {
		return err
	}
	s.clearClicks()
	s.notify([]Change{{Kind: "reset"}})
	return nil
}
