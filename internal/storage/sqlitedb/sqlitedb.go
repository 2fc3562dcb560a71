// Package sqlitedb holds what the embedded SQLite read models (the core
// projection, Radar) share: how a database is opened (WAL, one writer
// connection, pooled read-only readers), the checkpoint row stored with
// their data, and a batch transaction whose statements are prepared once.
package sqlitedb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"

	_ "modernc.org/sqlite" // database/sql driver "sqlite"

	"github.com/linkd/linkd/eventstore"
)

// pragmas of every connection: WAL with NORMAL sync (a read model is
// rebuilt from the log, so a commit need not be synced), a generous page
// cache, and WAL checkpoints every 32,768 pages (128 MiB of WAL) rather
// than SQLite's 1,000, so that pages written by many batches are copied
// back once: the Radar projector under collect's traffic applied a hit in
// 40-44 µs against 47-52 µs with checkpoints every 8,192 pages
// (BenchmarkApplyHits, alternated in one session; 65,536 pages: 38 µs).
// Statement journals (what an upsert of many rows keeps to undo itself)
// and temporary tables stay in memory: on disk every statement that
// touched a page wrote it to a temporary file first, a system call per
// page (1.5% of a redirect's CPU with 10,000 links clicked, the core
// projector's click counts).
var pragmas = []string{"journal_mode(WAL)", "synchronous(NORMAL)", "busy_timeout(10000)", "foreign_keys(OFF)",
	"cache_size(-65536)", "wal_autocheckpoint(32768)", "temp_store(MEMORY)"}

// Open opens (creating if needed) the database file at path: w is the
// projector's one connection (transactions take the write lock at once),
// r the readers' pool, read-only.
func Open(path string) (w, r *sql.DB, err error) {
	q := url.Values{}
	for _, p := range pragmas {
		q.Add("_pragma", p)
	}
	dsn := "file:" + path + "?" + q.Encode()
	if w, err = sql.Open("sqlite", dsn+"&_txlock=immediate"); err != nil {
		return nil, nil, err
	}
	w.SetMaxOpenConns(1)
	if r, err = sql.Open("sqlite", dsn+"&_pragma=query_only(1)"); err != nil {
		w.Close()
		return nil, nil, err
	}
	r.SetMaxOpenConns(8)
	r.SetMaxIdleConns(8)
	return w, r, nil
}

// CheckpointTable is the table of the checkpoint: the global position of
// the last event applied, one row.
const CheckpointTable = `CREATE TABLE IF NOT EXISTS checkpoint (
		id INTEGER PRIMARY KEY CHECK (id = 1),
		commit_pos INTEGER NOT NULL,
		prepare_pos INTEGER NOT NULL)`

// Checkpoint reads the checkpoint; eventstore.Start when none.
func Checkpoint(ctx context.Context, db *sql.DB) (eventstore.Position, error) {
	var p eventstore.Position
	err := db.QueryRowContext(ctx, `SELECT commit_pos, prepare_pos FROM checkpoint WHERE id = 1`).Scan(&p.Commit, &p.Prepare)
	if errors.Is(err, sql.ErrNoRows) {
		return eventstore.Start, nil
	}
	return p, err
}

// Batch is the transaction a projector applies a batch in. SQLite parses
// every statement it is not given prepared: Batch prepares each query once
// per batch (the statements close with the transaction).
type Batch struct {
	Ctx   context.Context
	Tx    *sql.Tx
	stmts map[string]*sql.Stmt
}

// NewBatch wraps tx.
func NewBatch(ctx context.Context, tx *sql.Tx) *Batch {
	return &Batch{Ctx: ctx, Tx: tx, stmts: map[string]*sql.Stmt{}}
}

// Stmt is q prepared in the batch's transaction.
func (b *Batch) Stmt(q string) (*sql.Stmt, error) {
	if st, ok := b.stmts[q]; ok {
		return st, nil
	}
	st, err := b.Tx.PrepareContext(b.Ctx, q)
	if err != nil {
		return nil, err
	}
	b.stmts[q] = st
	return st, nil
}

// Exec runs q, prepared.
func (b *Batch) Exec(q string, args ...any) error {
	st, err := b.Stmt(q)
	if err != nil {
		return err
	}
	_, err = st.ExecContext(b.Ctx, args...)
	return err
}

// QueryRow runs q, prepared.
func (b *Batch) QueryRow(q string, args ...any) *sql.Row {
	st, err := b.Stmt(q)
	if err != nil {
		return b.Tx.QueryRowContext(b.Ctx, q, args...) // reports the error
	}
	return st.QueryRowContext(b.Ctx, args...)
}

// SaveCheckpoint records pos as the checkpoint, unless the stored one is
// further (a batch delivered again).
func (b *Batch) SaveCheckpoint(pos eventstore.Position) error {
	_, err := b.Tx.ExecContext(b.Ctx, `INSERT INTO checkpoint (id, commit_pos, prepare_pos) VALUES (1, ?, ?)
		ON CONFLICT(id) DO UPDATE SET commit_pos = excluded.commit_pos, prepare_pos = excluded.prepare_pos
		WHERE excluded.commit_pos > checkpoint.commit_pos OR (excluded.commit_pos = checkpoint.commit_pos AND excluded.prepare_pos > checkpoint.prepare_pos)`,
		pos.Commit, pos.Prepare)
	return err
}

// Migrate brings db to schema version (kept in SQLite's user_version):
// when db is older, up runs in one transaction with the version's change,
// given the version db had (0 for a new file); a newer db is refused, in
// what's name.
func Migrate(ctx context.Context, db *sql.DB, what string, version int, up func(tx *sql.Tx, from int) error) error {
	var v int
	if err := db.QueryRowContext(ctx, `PRAGMA user_version`).Scan(&v); err != nil {
		return err
	}
	if v == version {
		return nil
	}
	if v > version {
		return fmt.Errorf("%s has schema version %d, newer than this linkd's %d", what, v, version)
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := up(tx, v); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, fmt.Sprintf(`PRAGMA user_version = %d`, version)); err != nil {
		return err
	}
	return tx.Commit()
}

// Empty deletes every row of tables in one transaction (a replay starts
// from an empty read model).
func Empty(ctx context.Context, db *sql.DB, tables []string) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	for _, t := range tables {
		if _, err := tx.ExecContext(ctx, "DELETE FROM "+t); err != nil {
			return err
		}
	}
	return tx.Commit()
}
