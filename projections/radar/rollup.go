package radar

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/linkd/linkd/internal/hll"
)

// Daily rollups: what overview, breakdowns and custom-events are computed
// from, so that a 30-day range reads 30 days of totals instead of every hit
// (10 million hits take seconds to count distinct visitors in; their rollups
// a few milliseconds). A day (UTC) of a project holds its page views,
// events, visits, bounces and visit durations, its unique visitors (an
// internal/hll sketch: exact up to 512 visitors, then within about 1.6%),
// and per page, source, country, browser, OS, custom event and hostname a
// count and the unique visitors. Visits, bounces, durations and sources
// belong to the day a visit started, as the reports read sessions.
//
// The projector keeps the days it changes in memory (readers see them at
// once) and writes them every flushEvery, in the transaction of the batch
// it applies. A day changed since it was last written is marked dirty in
// the transaction that changed it; after a crash, Open recomputes the dirty
// days from the hits and sessions, which are written with every batch.
// A range's partial days at either end are computed from the hits and
// sessions too.

const dayMS = int64(24 * time.Hour / time.Millisecond)

// flushEvery is how often the projector writes the days it changed.
const flushEvery = 2 * time.Second

func dayOf(ms int64) int64 {
	d := ms / dayMS
	if ms%dayMS < 0 {
		d--
	}
	return d
}

type dim uint8

const (
	dimPage dim = iota + 1
	dimSource
	dimCountry
	dimBrowser
	dimOS
	dimEvent
	dimHost
)

type dimKey struct {
	dim   dim
	value string
}

// counter is a dimension value's count (page views of a page, visits of a
// source, events of an event, hits otherwise) and its unique visitors.
type counter struct {
	n      int64
	people hll.Sketch
}

// agg is the rollup of a day, or of a range once days are merged.
type agg struct {
	pageviews, events, visits, bounces, durationMS int64
	people                                         hll.Sketch
	dims                                           map[dimKey]*counter
}

func newAgg() *agg { return &agg{dims: map[dimKey]*counter{}} }

func (a *agg) dim(k dimKey) *counter {
	c := a.dims[k]
	if c == nil {
		c = &counter{}
		a.dims[k] = c
	}
	return c
}

func (a *agg) count(k dimKey, n int64, visitor uint64) {
	c := a.dim(k)
	c.n += n
	c.people.Add(visitor)
}

func (a *agg) merge(o *agg) { a.add(o, true) }

// add merges o's totals into a, and its dimensions when dims.
func (a *agg) add(o *agg, dims bool) {
	a.pageviews += o.pageviews
	a.events += o.events
	a.visits += o.visits
	a.bounces += o.bounces
	a.durationMS += o.durationMS
	a.people.Merge(&o.people)
	if !dims {
		return
	}
	for k, c := range o.dims {
		d := a.dim(k)
		d.n += c.n
		d.people.Merge(&c.people)
	}
}

// hitRow is what a hit adds to its day.
type hitRow struct {
	visitor                                          uint64 // hll.Hash of the visitor id
	kind                                             int    // 0 page view, 1 event
	name, pathname, hostname, country, browser, osys string
}

func (a *agg) hit(h hitRow) {
	a.people.Add(h.visitor)
	if h.kind == 0 {
		a.pageviews++
		a.count(dimKey{dimPage, h.pathname}, 1, h.visitor)
	} else {
		a.events++
		a.count(dimKey{dimEvent, h.name}, 1, h.visitor)
	}
	for _, k := range []dimKey{{dimCountry, h.country}, {dimBrowser, h.browser}, {dimOS, h.osys}} {
		if k.value != "" {
			a.count(k, 1, h.visitor)
		}
	}
	a.dim(dimKey{dimHost, h.hostname}).n++
}

// visit is a session's state: what its bounce and duration depend on.
type visit struct{ pageviews, events, start, end int64 }

func (v visit) bounce() int64 {
	if v.pageviews == 1 && v.events == 0 {
		return 1
	}
	return 0
}

func (v visit) duration() int64 {
	if v.bounce() == 1 {
		return 0
	}
	return v.end - v.start
}

// started adds a visit that started on a's day, from source.
func (a *agg) started(v visit, source string, visitor uint64) {
	a.visits++
	a.bounces += v.bounce()
	a.durationMS += v.duration()
	a.count(dimKey{dimSource, source}, 1, visitor)
}

// changed moves a visit that started on a's day from one state to another.
func (a *agg) changed(from, to visit) {
	a.bounces += to.bounce() - from.bounce()
	a.durationMS += to.duration() - from.duration()
}

type dayKey struct {
	project string
	day     int64
}

// rollups are the days in memory: those the projector changed (newer than
// their rows until written), and clean days readers loaded.
type rollups struct {
	mu      sync.RWMutex
	days    map[dayKey]*agg   // the projector's: authoritative
	loaded  map[dayKey]*agg   // read from the rows by readers, clean
	bytes   int64             // of the loaded days' sketches, at most maxLoadedBytes
	dirty   map[dayKey]bool   // changed since written
	marked  map[dayKey]bool   // marked dirty on disk since written
	written map[dayKey]bool   // written by the last Apply: dropped at the next
	gens    map[dayKey]uint64 // how often the projector took a day: a reader's load is stale if it changed
	last    time.Time         // of the last write
	now     func() time.Time  // for tests
}

func newRollups() *rollups {
	return &rollups{days: map[dayKey]*agg{}, loaded: map[dayKey]*agg{}, dirty: map[dayKey]bool{},
		marked: map[dayKey]bool{}, written: map[dayKey]bool{}, gens: map[dayKey]uint64{}, now: time.Now}
}

const rollupSchema = `CREATE TABLE IF NOT EXISTS rollup_days (
		project_id TEXT NOT NULL,
		day INTEGER NOT NULL,
		pageviews INTEGER NOT NULL,
		events INTEGER NOT NULL,
		visits INTEGER NOT NULL,
		bounces INTEGER NOT NULL,
		duration_ms INTEGER NOT NULL,
		people BLOB NOT NULL,
		PRIMARY KEY (project_id, day)) WITHOUT ROWID;
	CREATE TABLE IF NOT EXISTS rollup_dims (
		project_id TEXT NOT NULL,
		day INTEGER NOT NULL,
		dim INTEGER NOT NULL,
		value TEXT NOT NULL,
		n INTEGER NOT NULL,
		people BLOB NOT NULL,
		PRIMARY KEY (project_id, day, dim, value)) WITHOUT ROWID;
	CREATE TABLE IF NOT EXISTS rollup_dirty (
		project_id TEXT NOT NULL,
		day INTEGER NOT NULL,
		PRIMARY KEY (project_id, day)) WITHOUT ROWID`

type querier interface {
	QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row
}

type execer interface {
	querier
	ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error)
}

// readDay reads a day's rows; a day without rows is empty.
func readDay(ctx context.Context, db querier, k dayKey) (*agg, error) {
	a := newAgg()
	var people []byte
	err := db.QueryRowContext(ctx, `SELECT pageviews, events, visits, bounces, duration_ms, people FROM rollup_days WHERE project_id = ? AND day = ?`,
		k.project, k.day).Scan(&a.pageviews, &a.events, &a.visits, &a.bounces, &a.durationMS, &people)
	if err == sql.ErrNoRows {
		return a, nil
	}
	if err != nil {
		return nil, err
	}
	if err := a.people.UnmarshalBinary(people); err != nil {
		return nil, fmt.Errorf("radar: rollup of %s day %d: %w", k.project, k.day, err)
	}
	rows, err := db.QueryContext(ctx, `SELECT dim, value, n, people FROM rollup_dims WHERE project_id = ? AND day = ?`, k.project, k.day)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var d dim
		var v string
		c := &counter{}
		if err := rows.Scan(&d, &v, &c.n, &people); err != nil {
			return nil, err
		}
		if err := c.people.UnmarshalBinary(people); err != nil {
			return nil, fmt.Errorf("radar: rollup of %s day %d: %w", k.project, k.day, err)
		}
		a.dims[dimKey{d, v}] = c
	}
	return a, rows.Err()
}

// writeDay replaces a day's rows.
func writeDay(ctx context.Context, db execer, k dayKey, a *agg) error {
	if _, err := db.ExecContext(ctx, `DELETE FROM rollup_dims WHERE project_id = ? AND day = ?`, k.project, k.day); err != nil {
		return err
	}
	people, _ := a.people.MarshalBinary()
	if _, err := db.ExecContext(ctx, `INSERT OR REPLACE INTO rollup_days (project_id, day, pageviews, events, visits, bounces, duration_ms, people)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, k.project, k.day, a.pageviews, a.events, a.visits, a.bounces, a.durationMS, people); err != nil {
		return err
	}
	for dk, c := range a.dims {
		p, _ := c.people.MarshalBinary()
		if _, err := db.ExecContext(ctx, `INSERT INTO rollup_dims (project_id, day, dim, value, n, people) VALUES (?, ?, ?, ?, ?, ?)`,
			k.project, k.day, dk.dim, dk.value, c.n, p); err != nil {
			return err
		}
	}
	_, err := db.ExecContext(ctx, `DELETE FROM rollup_dirty WHERE project_id = ? AND day = ?`, k.project, k.day)
	return err
}

// raw computes the rollup of [lo, hi] from the hits and sessions, day by
// day and merged, as the days' rollups are. With applied, a hit counts only
// when its version is at most applied(its visitor) (recompute).
func raw(ctx context.Context, db querier, hits pebble.Reader, project string, lo, hi int64, applied func(visitor string) (int64, error)) (*agg, error) {
	days := map[int64]*agg{}
	day := func(ms int64) *agg {
		d := dayOf(ms)
		a := days[d]
		if a == nil {
			a = newAgg()
			days[d] = a
		}
		return a
	}
	hashes := map[string]uint64{}
	hash := func(v string) uint64 {
		h, ok := hashes[v]
		if !ok {
			h = hll.Hash(v)
			hashes[v] = h
		}
		return h
	}
	err := scanHits(hits, project, lo, hi, false, func(x *hit) (bool, error) {
		if applied != nil {
			v, err := applied(x.visitor)
			if err != nil || x.seq > v {
				return err == nil, err
			}
		}
		day(x.ts).hit(hitRow{visitor: hash(x.visitor), kind: x.kind, name: x.name, pathname: x.pathname, hostname: x.hostname,
			country: x.country, browser: x.browser, osys: x.os})
		return true, nil
	})
	if err != nil {
		return nil, err
	}
	rows, err := db.QueryContext(ctx, `SELECT visitor_id, source, start, end, pageviews, events FROM sessions
		WHERE project_id = ? AND start BETWEEN ? AND ?`, project, lo, hi)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var v, source string
		var x visit
		if err := rows.Scan(&v, &source, &x.start, &x.end, &x.pageviews, &x.events); err != nil {
			return nil, err
		}
		day(x.start).started(x, source, hash(v))
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	out := newAgg()
	for _, a := range days {
		out.merge(a)
	}
	return out, nil
}

// recompute rebuilds the days marked dirty (after a crash) from the hits and
// sessions: the hits their visitors' rows have applied (a crash may leave
// in Pebble the hits of a transaction that did not commit: hits.go).
func recompute(ctx context.Context, tx *sql.Tx, hits pebble.Reader) error {
	rows, err := tx.QueryContext(ctx, `SELECT project_id, day FROM rollup_dirty`)
	if err != nil {
		return err
	}
	var keys []dayKey
	for rows.Next() {
		var k dayKey
		if err := rows.Scan(&k.project, &k.day); err != nil {
			rows.Close()
			return err
		}
		keys = append(keys, k)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for _, k := range keys {
		versions := map[string]int64{}
		applied := func(visitor string) (int64, error) {
			if v, ok := versions[visitor]; ok {
				return v, nil
			}
			var v, sv sql.NullInt64
			err := tx.QueryRowContext(ctx, `SELECT v.version, s.version FROM visitors v `+withLastVisit+`
				WHERE v.project_id = ? AND v.visitor_id = ?`, k.project, visitor).Scan(&v, &sv)
			if err != nil && !errors.Is(err, sql.ErrNoRows) {
				return 0, err
			}
			versions[visitor] = appliedVersion(v, sv)
			return versions[visitor], nil
		}
		a, err := raw(ctx, tx, hits, k.project, k.day*dayMS, (k.day+1)*dayMS-1, applied)
		if err != nil {
			return err
		}
		if err := writeDay(ctx, tx, k, a); err != nil {
			return err
		}
	}
	return nil
}

// update changes the projector's day k with f, under the lock readers take,
// marking it dirty on disk when it was not since written.
func (r *rollups) update(ctx context.Context, tx *sql.Tx, k dayKey, f func(*agg)) error {
	a, err := r.touch(ctx, tx, k)
	if err != nil {
		return err
	}
	r.mu.Lock()
	f(a)
	r.mu.Unlock()
	return nil
}

func (r *rollups) touch(ctx context.Context, tx *sql.Tx, k dayKey) (*agg, error) {
	r.mu.RLock()
	a := r.days[k]
	r.mu.RUnlock()
	if a == nil {
		var err error
		if a, err = readDay(ctx, tx, k); err != nil {
			return nil, err
		}
		r.mu.Lock()
		r.days[k] = a
		if o := r.loaded[k]; o != nil {
			r.bytes -= o.size()
			delete(r.loaded, k)
		}
		r.gens[k]++
		r.mu.Unlock()
	}
	if !r.marked[k] {
		if _, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO rollup_dirty (project_id, day) VALUES (?, ?)`, k.project, k.day); err != nil {
			return nil, err
		}
		r.marked[k] = true
	}
	r.dirty[k] = true
	return a, nil
}

// begin drops the days the previous Apply wrote (committed now: readers
// find them in their rows) unless they changed since.
func (r *rollups) begin() {
	if len(r.written) == 0 {
		return
	}
	r.mu.Lock()
	for k := range r.written {
		if !r.dirty[k] {
			delete(r.days, k)
		}
	}
	r.mu.Unlock()
	clear(r.written)
}

// flush writes the dirty days in tx when flushEvery has passed, or always
// when force.
func (r *rollups) flush(ctx context.Context, tx *sql.Tx, force bool) error {
	if len(r.dirty) == 0 || !force && r.now().Sub(r.last) < flushEvery {
		return nil
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	for k := range r.dirty {
		if err := writeDay(ctx, tx, k, r.days[k]); err != nil {
			return err
		}
		r.written[k] = true
	}
	clear(r.dirty)
	clear(r.marked)
	r.last = r.now()
	return nil
}

// reset forgets every day in memory: after a Reset, or after an Apply that
// rolled back (then the days its transaction had changed are read again
// from their rows, once Store.recover has recomputed those that committed
// transactions marked dirty).
func (r *rollups) reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for k := range r.days {
		r.gens[k]++
	}
	clear(r.days)
	clear(r.loaded)
	r.bytes = 0
	clear(r.dirty)
	clear(r.marked)
	clear(r.written)
}

// maxLoadedBytes bounds the sketches of the clean days readers keep
// decoded: a month of a site with a million visitors is about 70 MB.
var maxLoadedBytes int64 = 256 << 20

// size is about what a's sketches take in memory.
func (a *agg) size() int64 {
	n := a.people.Size()
	for _, c := range a.dims {
		n += c.people.Size() + 64
	}
	return n
}

// mergeDay merges day k into out (its dimensions too when dims): from
// memory when the projector has it or a reader loaded it, else from its
// rows (then kept: clean days never change in place).
func (s *Store) mergeDay(ctx context.Context, out *agg, k dayKey, dims bool) error {
	r := s.roll
	r.mu.RLock()
	a := r.days[k]
	if a == nil {
		a = r.loaded[k]
	}
	if a != nil {
		out.add(a, dims)
	}
	gen := r.gens[k]
	r.mu.RUnlock()
	if a != nil {
		return nil
	}
	a, err := readDay(ctx, s.r, k)
	if err != nil {
		return err
	}
	r.mu.Lock()
	if r.days[k] == nil && r.gens[k] == gen {
		size := a.size()
		for old, o := range r.loaded { // arbitrary ones, until a fits
			if r.bytes+size <= maxLoadedBytes {
				break
			}
			r.bytes -= o.size()
			delete(r.loaded, old)
		}
		r.loaded[k] = a
		r.bytes += size
	}
	r.mu.Unlock()
	out.add(a, dims) // a is this reader's own, or kept unchanged
	return nil
}

// aggregate is the rollup of a range: its whole days from their rollups,
// the partial days at either end from the hits and sessions.
func (s *Store) aggregate(ctx context.Context, project string, lo, hi int64, dims bool) (*agg, error) {
	out := newAgg()
	if lo > hi {
		return out, nil
	}
	if s.noRollups {
		return raw(ctx, s.r, s.hits, project, lo, hi, nil)
	}
	first, last := dayOf(lo), dayOf(hi)
	if lo != math.MinInt64 && lo != first*dayMS {
		end := min(hi, (first+1)*dayMS-1)
		a, err := raw(ctx, s.r, s.hits, project, lo, end, nil)
		if err != nil {
			return nil, err
		}
		out.merge(a)
		first++
	}
	if hi != math.MaxInt64 && hi != (last+1)*dayMS-1 && last >= first {
		a, err := raw(ctx, s.r, s.hits, project, max(lo, last*dayMS), hi, nil)
		if err != nil {
			return nil, err
		}
		out.merge(a)
		last--
	}
	if first > last {
		return out, nil
	}
	days, err := s.daysWithData(ctx, project, first, last)
	if err != nil {
		return nil, err
	}
	for _, d := range days {
		if err := s.mergeDay(ctx, out, dayKey{project, d}, dims); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// daysWithData lists the days in [first, last] that have rollups, written
// or in memory.
func (s *Store) daysWithData(ctx context.Context, project string, first, last int64) ([]int64, error) {
	seen := map[int64]bool{}
	rows, err := s.r.QueryContext(ctx, `SELECT day FROM rollup_days WHERE project_id = ? AND day BETWEEN ? AND ?`, project, first, last)
	if err != nil {
		return nil, err
	}
	var days []int64
	for rows.Next() {
		var d int64
		if err := rows.Scan(&d); err != nil {
			rows.Close()
			return nil, err
		}
		seen[d] = true
		days = append(days, d)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	s.roll.mu.RLock()
	for k := range s.roll.days {
		if k.project == project && k.day >= first && k.day <= last && !seen[k.day] {
			days = append(days, k.day)
		}
	}
	s.roll.mu.RUnlock()
	return days, nil
}
