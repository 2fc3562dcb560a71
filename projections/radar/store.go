// Package radar is the embedded projection of Radar (domain/radar) into
// SQLite (modernc.org/sqlite, WAL): one row per page view or custom event
// (hits), the visits cut from them (sessions: SessionTimeout without
// activity ends one), one row per visitor, and the leads and sales of the
// clicks that visitors came through (conversions, in a Pebble database
// beside the SQLite file: conversions.go), from the customer streams.
// Queries join a visitor to its click's conversions when they run, so a
// sale recorded before or after the visit counts alike.
//
// Idempotence: a Radar stream is one visitor of one project, and the
// visitor's row keeps the last version of that stream it reflects, written
// with the data and the checkpoint in one transaction. Customer events need
// none: a conversion is a key written once with the same value, and
// a customer's profile is the last one applied, which a redelivery (always
// of a stream's events in order, from where it left off) does not change.
// Not tracking them keeps a sale's cost here to one key in Pebble.
package radar

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"time"
	"unique"

	"github.com/cockroachdb/pebble/v2"

	"github.com/linkd/linkd/domain"
	"github.com/linkd/linkd/domain/conversion"
	"github.com/linkd/linkd/domain/radar"
	"github.com/linkd/linkd/eventstore"
	"github.com/linkd/linkd/internal/hll"
	"github.com/linkd/linkd/internal/storage/sidedb"
	"github.com/linkd/linkd/internal/storage/sqlitedb"
	"github.com/linkd/linkd/projections"
)

// Name is the projection's name.
const Name = "radar"

// Store is the Radar read model.
type Store struct {
	w    *sql.DB // the projector's one connection
	r    *sql.DB // readers
	conv *pebble.DB
	hits *pebble.DB // hits.go
	roll *rollups
	// visitors is the projector's copy of the visitors' rows it applied
	// events to lately (at most maxVisitors): a visit's next hit need not
	// read its visitor's row. Forgotten when a batch fails.
	visitors *visitorCache
	// applied is the checkpoint committed last (the projector's copy): an
	// event above it was not applied, so the first event of a visitor's
	// stream above it is a visitor without a row, and costs no read.
	applied eventstore.Position
	// noRollups computes every report from the hits and sessions (tests
	// compare the rollups with it).
	noRollups bool
}

var schema = []string{
	sqlitedb.CheckpointTable,
	sessionsTable,
	`CREATE INDEX IF NOT EXISTS sessions_start ON sessions (project_id, start)`,
	`CREATE TABLE IF NOT EXISTS visitors (
		project_id TEXT NOT NULL,
		visitor_id TEXT NOT NULL,
		name TEXT NOT NULL,
		email TEXT NOT NULL,
		country TEXT NOT NULL,
		source TEXT NOT NULL,
		browser TEXT NOT NULL,
		os TEXT NOT NULL,
		device TEXT NOT NULL,
		click_id TEXT NOT NULL,
		first_seen INTEGER NOT NULL,
		last_seen INTEGER NOT NULL,
		sessions INTEGER NOT NULL,
		last_session TEXT NOT NULL,
		last_start INTEGER NOT NULL DEFAULT 0,
		version INTEGER NOT NULL DEFAULT -1,
		PRIMARY KEY (project_id, visitor_id)) WITHOUT ROWID`,
	// The visitors who came through a click, by project: sales are read
	// from them (a partial index: most visitors came without one).
	`CREATE INDEX IF NOT EXISTS visitors_clicked ON visitors (project_id, click_id) WHERE click_id <> ''`,
	`CREATE TABLE IF NOT EXISTS customers (
		stream TEXT PRIMARY KEY,
		name TEXT NOT NULL,
		email TEXT NOT NULL) WITHOUT ROWID`,
	rollupSchema,
}

// sessionsTable is keyed by visitor and start: a visit is read by its
// visitor (the next hit, the visitor's details) and written in the
// visitor's place in the B-tree, which the visitor's row was just read
// from.
const sessionsTable = `CREATE TABLE IF NOT EXISTS sessions (
		project_id TEXT NOT NULL,
		session_id TEXT NOT NULL,
		visitor_id TEXT NOT NULL,
		start INTEGER NOT NULL,
		end INTEGER NOT NULL,
		pageviews INTEGER NOT NULL,
		events INTEGER NOT NULL,
		source TEXT NOT NULL,
		referrer TEXT NOT NULL,
		device TEXT NOT NULL,
		browser TEXT NOT NULL,
		os TEXT NOT NULL,
		country TEXT NOT NULL,
		entry_page TEXT NOT NULL,
		version INTEGER NOT NULL DEFAULT -1,
		PRIMARY KEY (project_id, visitor_id, start)) WITHOUT ROWID`

// conversionsTable is version 2's table of conversions, keyed by click,
// which is how queries read it (a visitor's click): one B-tree, where
// version 1 had the conversion id as key and an index by click. Version 3
// moved them to Pebble (conversions.go); opening an older file moves its
// rows.
const conversionsTable = `CREATE TABLE IF NOT EXISTS conversions (
		click_id TEXT NOT NULL,
		conversion_id TEXT NOT NULL,
		kind TEXT NOT NULL,
		customer TEXT NOT NULL,
		amount_minor INTEGER NOT NULL,
		currency TEXT NOT NULL,
		at INTEGER NOT NULL,
		PRIMARY KEY (click_id, conversion_id)) WITHOUT ROWID`

// schemaVersion is the version of the tables above, kept in SQLite's
// user_version (0: the first version).
//
//   - 2: conversions keyed by (click_id, conversion_id); the version of a
//     visitor's stream kept in its row (the applied table is gone); daily
//     rollups (rollup.go), computed for version 1's days when migrating;
//     sessions keyed by visitor and start, the visitor's row naming its
//     last one's start; no index of hits by visitor (a hit writes one
//     B-tree in random order, its visitor's, instead of three).
//   - 3: conversions in Pebble (conversions.go), not in SQLite.
//   - 4: a visit's row keeps the version of its visitor's stream too (the
//     next page of a visit writes the visit alone, not its visitor).
//   - 5: hits in Pebble (hits.go), not in SQLite.
const schemaVersion = 5

var tables = []string{"checkpoint", "rollup_days", "rollup_dims", "rollup_dirty", "sessions", "visitors", "customers"}

// Open opens (creating if needed) the database file at path, and the
// Pebble directories of the conversions and the hits beside it (path
// without ".db", then "-conversions" and "-hits").
func Open(path string) (*Store, error) {
	w, r, err := sqlitedb.Open(path)
	if err != nil {
		return nil, err
	}
	conv, err := openConversions(conversionsDir(path))
	if err != nil {
		return nil, errors.Join(fmt.Errorf("radar: conversions: %w", err), r.Close(), w.Close())
	}
	hits, err := openHits(hitsDir(path))
	if err != nil {
		return nil, errors.Join(fmt.Errorf("radar: hits: %w", err), sidedb.Close(conv), r.Close(), w.Close())
	}
	s := &Store{w: w, r: r, conv: conv, hits: hits, roll: newRollups(), visitors: newVisitorCache()}
	if err := s.migrate(context.Background()); err != nil {
		s.Close()
		return nil, fmt.Errorf("radar: schema: %w", err)
	}
	if err := moveConversions(context.Background(), s.w, s.conv); err != nil {
		s.Close()
		return nil, fmt.Errorf("radar: conversions: %w", err)
	}
	if err := moveHits(context.Background(), s.w, s.hits); err != nil {
		s.Close()
		return nil, fmt.Errorf("radar: hits: %w", err)
	}
	if err := s.recover(context.Background()); err != nil {
		s.Close()
		return nil, fmt.Errorf("radar: rollups: %w", err)
	}
	if s.applied, err = sqlitedb.Checkpoint(context.Background(), s.w); err != nil {
		s.Close()
		return nil, fmt.Errorf("radar: checkpoint: %w", err)
	}
	return s, nil
}

// recover recomputes the rollups of the days changed since they were last
// written, which a crash (or an Apply that failed) left marked dirty.
func (s *Store) recover(ctx context.Context) error {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := recompute(ctx, tx, s.hits); err != nil {
		return err
	}
	return tx.Commit()
}

// migrate creates what is missing and brings a version 1 database to
// schemaVersion in place, keeping its rows and checkpoint (with Kafka, the
// log would not feed a rebuilt read model again).
func (s *Store) migrate(ctx context.Context) error {
	return sqlitedb.Migrate(ctx, s.w, "the Radar read model", schemaVersion, func(tx *sql.Tx, _ int) error {
		var old int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name = 'conversions_click'`).Scan(&old); err != nil {
			return err
		}
		if old > 0 {
			for _, stmt := range []string{
				`DROP INDEX conversions_click`,
				`ALTER TABLE conversions RENAME TO conversions_v1`,
				conversionsTable,
				`INSERT INTO conversions (click_id, conversion_id, kind, customer, amount_minor, currency, at)
					SELECT click_id, conversion_id, kind, customer, amount_minor, currency, at FROM conversions_v1`,
				`DROP TABLE conversions_v1`,
				`ALTER TABLE visitors ADD COLUMN version INTEGER NOT NULL DEFAULT -1`,
				`DROP INDEX IF EXISTS visitors_click`,
				`DROP INDEX IF EXISTS hits_visitor`,
				`DROP INDEX IF EXISTS sessions_visitor`,
				`DROP INDEX IF EXISTS sessions_start`,
				`ALTER TABLE sessions RENAME TO sessions_v1`,
				sessionsTable,
				`INSERT INTO sessions (project_id, session_id, visitor_id, start, end, pageviews, events, source, referrer, device, browser, os, country, entry_page)
					SELECT project_id, session_id, visitor_id, start, end, pageviews, events, source, referrer, device, browser, os, country, entry_page FROM sessions_v1`,
				`DROP TABLE sessions_v1`,
				`ALTER TABLE visitors ADD COLUMN last_start INTEGER NOT NULL DEFAULT 0`,
				`UPDATE visitors SET last_start = coalesce((SELECT s.start FROM sessions s
					WHERE s.project_id = visitors.project_id AND s.visitor_id = visitors.visitor_id AND s.session_id = visitors.last_session), 0)
					WHERE last_session <> ''`,
			} {
				if _, err := tx.ExecContext(ctx, stmt); err != nil {
					return err
				}
			}
			if err := versionsIntoVisitors(ctx, tx); err != nil {
				return err
			}
		}
		for _, stmt := range schema {
			if _, err := tx.ExecContext(ctx, stmt); err != nil {
				return err
			}
		}
		// Columns added since the tables first were (by version 2, 4): a file
		// written between them gains what it lacks.
		for _, c := range []struct{ table, column, def string }{
			{"visitors", "version", "INTEGER NOT NULL DEFAULT -1"},
			{"visitors", "last_start", "INTEGER NOT NULL DEFAULT 0"},
			{"sessions", "version", "INTEGER NOT NULL DEFAULT -1"},
		} {
			var has int
			if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM pragma_table_info(?) WHERE name = ?`, c.table, c.column).Scan(&has); err != nil {
				return err
			}
			if has == 0 {
				if _, err := tx.ExecContext(ctx, `ALTER TABLE `+c.table+` ADD COLUMN `+c.column+` `+c.def); err != nil {
					return err
				}
			}
		}
		if old > 0 {
			// Every day of version 1's hits and sessions gets its rollup when
			// Open recovers (recover).
			if _, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO rollup_dirty (project_id, day)
				SELECT DISTINCT project_id, ts / ? FROM hits UNION SELECT DISTINCT project_id, start / ? FROM sessions`, dayMS, dayMS); err != nil {
				return err
			}
		}
		return nil
	})
}

// versionsIntoVisitors moves the versions of version 1's applied table
// (by stream name: a hash of the visitor) into the visitors' rows.
func versionsIntoVisitors(ctx context.Context, tx *sql.Tx) error {
	applied := map[string]int64{}
	rows, err := tx.QueryContext(ctx, `SELECT stream, version FROM applied WHERE stream LIKE '`+radar.StreamPrefix+`%'`)
	if err != nil {
		return err
	}
	for rows.Next() {
		var stream string
		var v int64
		if err := rows.Scan(&stream, &v); err != nil {
			rows.Close()
			return err
		}
		applied[stream] = v
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	type visitor struct{ project, id string }
	var vs []visitor
	rows, err = tx.QueryContext(ctx, `SELECT project_id, visitor_id FROM visitors`)
	if err != nil {
		return err
	}
	for rows.Next() {
		var v visitor
		if err := rows.Scan(&v.project, &v.id); err != nil {
			rows.Close()
			return err
		}
		vs = append(vs, v)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for _, v := range vs {
		if version, ok := applied[radar.Stream(v.project, v.id)]; ok {
			if _, err := tx.ExecContext(ctx, `UPDATE visitors SET version = ? WHERE project_id = ? AND visitor_id = ?`, version, v.project, v.id); err != nil {
				return err
			}
		}
	}
	_, err = tx.ExecContext(ctx, `DROP TABLE applied`)
	return err
}

// Close writes the days the projector changed since it last wrote them
// (after a crash, Open recomputes them instead) and closes the database.
func (s *Store) Close() error {
	var err error
	if len(s.roll.dirty) > 0 {
		err = s.writeRollups(context.Background())
	}
	return errors.Join(err, s.r.Close(), s.w.Close(), sidedb.Close(s.conv), sidedb.Close(s.hits))
}

func (s *Store) writeRollups(ctx context.Context) error {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := s.roll.flush(ctx, tx, true); err != nil {
		return err
	}
	return tx.Commit()
}

// Name implements projections.Projector.
func (s *Store) Name() string { return Name }

// MaxBatch implements projections.Batcher, and Linger projections.Lingerer:
// under load, the projector waits up to 20 ms for more events, up to
// 4,096, to apply in one transaction. The pages of the visits going on are
// written once per batch rather than once per page view: with the hits
// still in SQLite, a hit cost about 25 µs to apply in batches of 4,096
// against 31 in batches of 1,024 and 38 in batches of 128
// (BenchmarkApplyHits). Longer (60 ms, 8,192) gained little more on
// collect and raised the p99 of sales (32-39 ms to 35-63), whose
// conversions this projector applies too. Reads wait for the batch (reads
// follow writes): up to this much longer under load, not at all when it is
// light.
func (s *Store) MaxBatch() int { return 4096 }

// yieldEvery is how many events the projector applies (about a
// millisecond of work) before it lets the goroutines waiting for its processor run: a
// batch of thousands would otherwise hold it for the scheduler's whole
// time slice (10 ms), and the requests queued behind it would wait as long.
const yieldEvery = 64

// Linger: see MaxBatch.
func (s *Store) Linger() time.Duration { return 20 * time.Millisecond }

// Categories implements projections.Projector.
func (s *Store) Categories() []string { return []string{radar.Category, conversion.CustomerCategory} }

// Checkpoint implements projections.Projector.
func (s *Store) Checkpoint(ctx context.Context) (eventstore.Position, error) {
	return sqlitedb.Checkpoint(ctx, s.w)
}

// Reset implements projections.Projector.
func (s *Store) Reset(ctx context.Context) error {
	s.roll.reset()
	s.visitors.clear()
	s.applied = eventstore.Start
	if err := sidedb.Reset(s.conv); err != nil {
		return fmt.Errorf("radar: reset: %w", err)
	}
	if err := sidedb.Reset(s.hits); err != nil {
		return fmt.Errorf("radar: reset: %w", err)
	}
	return sqlitedb.Empty(ctx, s.w, tables)
}

// Apply implements projections.Projector.
func (s *Store) Apply(ctx context.Context, events []projections.Event) error {
	if len(events) == 0 {
		return nil
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	s.roll.begin()
	if err := s.apply(ctx, tx, events); err != nil {
		tx.Rollback()
		s.visitors.clear() // they may hold what the failed batch did
		s.roll.reset()
		return errors.Join(err, s.recover(ctx))
	}
	return nil
}

func (s *Store) apply(ctx context.Context, tx *sql.Tx, events []projections.Event) error {
	conv := s.conv.NewBatch()
	defer conv.Close()
	hits := s.hits.NewBatch()
	defer hits.Close()
	a := &applier{Batch: sqlitedb.NewBatch(ctx, tx), visitors: s.visitors, roll: s.roll, tx: tx, conv: conv, hits: hits, applied: s.applied}
	maxPos := eventstore.Start
	for i := range events {
		re := &events[i]
		if maxPos.Less(re.Position) {
			maxPos = re.Position
		}
		if i%yieldEvery == yieldEvery-1 {
			runtime.Gosched()
		}
		if err := a.apply(re); err != nil {
			return fmt.Errorf("radar: %s@%d (%s): %w", re.Stream, re.Version, re.Type, err)
		}
	}
	if err := s.roll.flush(ctx, tx, false); err != nil {
		return err
	}
	if err := a.SaveCheckpoint(maxPos); err != nil {
		return err
	}
	// Durable before the checkpoint commits: idempotent writes
	// (conversions.go, hits.go).
	if err := sidedb.Commit(conv, hits); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	if s.applied.Less(maxPos) {
		s.applied = maxPos
	}
	return nil
}

type applier struct {
	*sqlitedb.Batch
	visitors *visitorCache // the Store's
	roll     *rollups
	tx       *sql.Tx
	conv     *pebble.Batch
	hits     *pebble.Batch
	key, val []byte
	applied  eventstore.Position // the Store's
}

type visitorKey struct{ project, visitor string }

// maxVisitors bounds the visitors' rows the projector keeps: about 200
// bytes each (the project's id is shared), 40 MB in all: the visitors of
// up to 200,000 visits going on stay, and only those gone quiet the
// longest have their row and last visit read again (a tenth of what a hit
// costs to apply; 100,000 with a project id each took 23 MB and missed
// half the hits of the collect bench's 100,000 visitors).
const maxVisitors = 200_000

// visitorCache keeps the rows of the visitors the projector applied events
// to lately, in two generations of at most maxVisitors/2: when the current
// one is full it becomes the old one and the old one is dropped, and a
// visitor found in the old one moves to the current one. The visitors of
// the visits going on stay; those gone quiet the longest go first.
type visitorCache struct {
	cur, old map[visitorKey]*visitorState
}

func newVisitorCache() *visitorCache {
	return &visitorCache{cur: map[visitorKey]*visitorState{}}
}

func (c *visitorCache) get(k visitorKey) (*visitorState, bool) {
	if st, ok := c.cur[k]; ok {
		return st, true
	}
	st, ok := c.old[k]
	if ok {
		c.put(k, st)
	}
	return st, ok
}

func (c *visitorCache) put(k visitorKey, st *visitorState) {
	if len(c.cur) >= maxVisitors/2 {
		c.old, c.cur = c.cur, make(map[visitorKey]*visitorState, maxVisitors/2)
	}
	c.cur[k] = st
}

func (c *visitorCache) clear() { c.cur, c.old = map[visitorKey]*visitorState{}, nil }

// visitorState is what applying a visitor's next event needs of its row.
type visitorState struct {
	known   bool // the row exists
	last    int64
	session string
	visit   visit // the last session's state
	version int64 // of the visitor's stream; -1 before its first event
	// The row's source and click are set (they are only ever set once).
	sourced, clicked bool
}

// withLastVisit joins a visitor's row (v) to its last visit's (s): a
// visit's next pages write the visit alone, so the visitor's last activity
// is the later of v.last_seen and s.end, and its stream's version the
// higher of v.version and s.version.
const withLastVisit = `LEFT JOIN sessions s ON s.project_id = v.project_id AND s.visitor_id = v.visitor_id AND s.start = v.last_start
	AND v.last_session <> ''`

// appliedVersion is the last version of a visitor's stream that its rows
// hold, from v.version and s.version read with withLastVisit: the higher
// of the two, -1 when neither is there (no row: nothing applied).
func appliedVersion(visitor, visit sql.NullInt64) int64 {
	last := int64(-1)
	for _, x := range []sql.NullInt64{visitor, visit} {
		if x.Valid {
			last = max(last, x.Int64)
		}
	}
	return last
}

// visitor returns the state of the row of re's visitor.
func (a *applier) visitor(re eventstore.RecordedEvent, project, visitor string) (*visitorState, error) {
	k := visitorKey{project, visitor}
	if st, ok := a.visitors.get(k); ok {
		return st, nil
	}
	k.project = unique.Make(project).Value() // one copy for all its visitors
	if re.Version == 0 && a.applied.Less(re.Position) {
		// The first event of the visitor's stream, not applied yet: only
		// that stream's events write the visitor's row, so it has none.
		st := &visitorState{version: -1}
		a.visitors.put(k, st)
		return st, nil
	}
	st := &visitorState{known: true}
	var vv, pv, ev, start, end, sv sql.NullInt64
	err := a.QueryRow(`SELECT v.last_seen, v.last_session, v.version, v.source <> '', v.click_id <> '', s.pageviews, s.events, s.start, s.end, s.version
		FROM visitors v `+withLastVisit+`
		WHERE v.project_id = ? AND v.visitor_id = ?`, project, visitor).
		Scan(&st.last, &st.session, &vv, &st.sourced, &st.clicked, &pv, &ev, &start, &end, &sv)
	st.visit = visit{pv.Int64, ev.Int64, start.Int64, end.Int64}
	// A visit's next pages write the visit's row alone (hit): its end and
	// version may be ahead of the visitor's.
	st.last, st.version = max(st.last, end.Int64), appliedVersion(vv, sv)
	if errors.Is(err, sql.ErrNoRows) {
		st = &visitorState{version: -1}
	} else if err != nil {
		return nil, err
	}
	a.visitors.put(k, st)
	return st, nil
}

func (a *applier) apply(ev *projections.Event) error {
	re := ev.RecordedEvent
	if !strings.HasPrefix(re.Stream, radar.StreamPrefix) && !strings.HasPrefix(re.Stream, conversion.CustomerStreamPrefix) {
		return nil
	}
	e, err := ev.Decode()
	if errors.Is(err, domain.ErrUnknownEvent) {
		return nil
	}
	if err != nil {
		return err
	}
	switch e := e.(type) {
	case *radar.PageviewRecorded:
		return a.hit(re, &e.Hit, 0, "", nil)
	case *radar.EventRecorded:
		return a.hit(re, &e.Hit, 1, e.Name, e.Props)
	case *radar.VisitorIdentified:
		return a.identify(re, e)
	case *conversion.CustomerCreated:
		return a.customer(re.Stream, e.Profile)
	case *conversion.CustomerUpdated:
		return a.customer(re.Stream, e.Profile)
	case *conversion.LeadTracked:
		return a.conversion(e.ConversionID, "lead", e.ClickID, re.Stream, 0, "", e.Timestamp.UnixMilli())
	case *conversion.SaleTracked:
		// A sale's customer identifies no one (a lead's does): not kept.
		return a.conversion(e.ConversionID, "sale", e.ClickID, "", e.AmountMinor, e.Currency, e.Timestamp.UnixMilli())
	}
	return nil
}

// sessionID names the visit of a visitor that starts at ms.
func sessionID(project, visitor string, ms int64) string {
	sum := sha256.Sum256([]byte(project + "\x00" + visitor + "\x00" + strconv.FormatInt(ms, 10)))
	return hex.EncodeToString(sum[:12])
}

func (a *applier) hit(re eventstore.RecordedEvent, h *radar.Hit, kind int, name string, props map[string]string) error {
	ms := h.At.UnixMilli()
	st, err := a.visitor(re, h.ProjectID, h.VisitorID)
	if err != nil || int64(re.Version) <= st.version {
		return err // or applied already
	}
	known, last, session := st.known, st.last, st.session
	pv, ev := 1-kind, kind
	vh := hll.Hash(h.VisitorID)
	if err := a.roll.update(a.Ctx, a.tx, dayKey{h.ProjectID, dayOf(ms)}, func(d *agg) {
		d.hit(hitRow{visitor: vh, kind: kind, name: name, pathname: h.Pathname, hostname: h.Hostname, country: h.Country, browser: h.Browser, osys: h.OS})
	}); err != nil {
		return err
	}
	if !known || session == "" || ms-last > radar.SessionTimeout.Milliseconds() {
		session = sessionID(h.ProjectID, h.VisitorID, ms)
		v := visit{int64(pv), int64(ev), ms, ms}
		if err := a.roll.update(a.Ctx, a.tx, dayKey{h.ProjectID, dayOf(ms)}, func(d *agg) { d.started(v, h.Source, vh) }); err != nil {
			return err
		}
		st.visit = v
		if err := a.Exec(`INSERT INTO sessions (project_id, session_id, visitor_id, start, end, pageviews, events, source, referrer, device, browser, os, country, entry_page, version)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`,
			h.ProjectID, session, h.VisitorID, ms, ms, pv, ev, h.Source, h.Referrer, h.Device, h.Browser, h.OS, h.Country, h.Pathname, re.Version); err != nil {
			return err
		}
		var err error
		if known {
			err = a.Exec(`UPDATE visitors SET last_seen = max(last_seen, ?), sessions = sessions + 1, last_session = ?, last_start = ?,
				country = CASE WHEN ? <> '' THEN ? ELSE country END, browser = ?, os = ?, device = ?,
				source = CASE WHEN source = '' THEN ? ELSE source END,
				click_id = CASE WHEN click_id = '' THEN ? ELSE click_id END, version = ?
				WHERE project_id = ? AND visitor_id = ?`,
				ms, session, ms, h.Country, h.Country, h.Browser, h.OS, h.Device, h.Source, h.ClickID, re.Version, h.ProjectID, h.VisitorID)
		} else {
			err = a.Exec(`INSERT INTO visitors (project_id, visitor_id, name, email, country, source, browser, os, device, click_id, first_seen, last_seen, sessions, last_session, last_start, version)
				VALUES (?, ?, '', '', ?, ?, ?, ?, ?, ?, ?, ?, 1, ?, ?, ?)`,
				h.ProjectID, h.VisitorID, h.Country, h.Source, h.Browser, h.OS, h.Device, h.ClickID, ms, ms, session, ms, re.Version)
		}
		if err != nil {
			return err
		}
		st.sourced, st.clicked = st.sourced || h.Source != "", st.clicked || h.ClickID != ""
	} else {
		// A visit's source is its first page's, as its rollup counted it.
		old := st.visit
		v := visit{old.pageviews + int64(pv), old.events + int64(ev), old.start, max(old.end, ms)}
		if err := a.roll.update(a.Ctx, a.tx, dayKey{h.ProjectID, dayOf(old.start)}, func(d *agg) { d.changed(old, v) }); err != nil {
			return err
		}
		st.visit = v
		// The visit's row carries its end (the visitor's last activity) and
		// the stream's version; the visitor's row is written only when it
		// gains its source or click.
		if err := a.Exec(`UPDATE sessions SET end = max(end, ?), pageviews = pageviews + ?, events = events + ?, version = ?
			WHERE project_id = ? AND visitor_id = ? AND start = ?`, ms, pv, ev, re.Version, h.ProjectID, h.VisitorID, old.start); err != nil {
			return err
		}
		if h.Source != "" && !st.sourced || h.ClickID != "" && !st.clicked {
			if err := a.Exec(`UPDATE visitors SET last_seen = max(last_seen, ?),
				source = CASE WHEN source = '' THEN ? ELSE source END,
				click_id = CASE WHEN click_id = '' THEN ? ELSE click_id END, version = ?
				WHERE project_id = ? AND visitor_id = ?`, ms, h.Source, h.ClickID, re.Version, h.ProjectID, h.VisitorID); err != nil {
				return err
			}
			st.sourced, st.clicked = st.sourced || h.Source != "", st.clicked || h.ClickID != ""
		}
	}
	st.known, st.last, st.session, st.version = true, max(last, ms), session, int64(re.Version)
	var propsJSON []byte
	if len(props) > 0 {
		propsJSON, _ = json.Marshal(props)
	}
	r := hit{ts: ms, visitor: h.VisitorID, seq: int64(re.Version), session: session, kind: kind, name: name, pathname: h.Pathname, hostname: h.Hostname,
		source: h.Source, country: h.Country, browser: h.Browser, os: h.OS, device: h.Device, clickID: h.ClickID, props: string(propsJSON)}
	a.key, a.val = hitKey(a.key[:0], h.ProjectID, &r), encodeHit(a.val[:0], &r)
	return a.hits.Set(a.key, a.val, nil)
}

func (a *applier) identify(re eventstore.RecordedEvent, e *radar.VisitorIdentified) error {
	ms := e.At.UnixMilli()
	st, err := a.visitor(re, e.ProjectID, e.VisitorID)
	if err != nil || int64(re.Version) <= st.version {
		return err // or applied already
	}
	if err := a.Exec(`INSERT INTO visitors (project_id, visitor_id, name, email, country, source, browser, os, device, click_id, first_seen, last_seen, sessions, last_session, version)
		VALUES (?, ?, ?, ?, '', '', '', '', '', ?, ?, ?, 0, '', ?)
		ON CONFLICT (project_id, visitor_id) DO UPDATE SET
			name = CASE WHEN excluded.name <> '' THEN excluded.name ELSE name END,
			email = CASE WHEN excluded.email <> '' THEN excluded.email ELSE email END,
			click_id = CASE WHEN click_id = '' THEN excluded.click_id ELSE click_id END,
			version = excluded.version`,
		e.ProjectID, e.VisitorID, e.Name, e.Email, e.ClickID, ms, ms, re.Version); err != nil {
		return err
	}
	if !st.known {
		st.known, st.last, st.session = true, ms, ""
	}
	st.clicked = st.clicked || e.ClickID != ""
	st.version = int64(re.Version)
	return nil
}

// customer keeps the name and email of a customer that has any: what a
// lead on a visitor's click identifies the visitor with. Customers known
// by their externalId alone (most of a shop's) cost no row.
func (a *applier) customer(stream string, p conversion.Profile) error {
	name := strings.TrimSpace(p.Firstname + " " + p.Lastname)
	if name == "" && p.Email == "" {
		return nil
	}
	return a.Exec(`INSERT INTO customers (stream, name, email) VALUES (?, ?, ?)
		ON CONFLICT (stream) DO UPDATE SET
			name = CASE WHEN excluded.name <> '' THEN excluded.name ELSE name END,
			email = CASE WHEN excluded.email <> '' THEN excluded.email ELSE email END`, stream, name, p.Email)
}

func (a *applier) conversion(id, kind, clickID, customer string, amount int64, currency string, ms int64) error {
	a.key = conversionKey(a.key[:0], clickID, id)
	a.val = encodeConversion(a.val[:0], conversionRow{id: id, kind: kind, at: ms, amount: amount, currency: currency, customer: customer})
	return a.conv.Set(a.key, a.val, nil)
}
