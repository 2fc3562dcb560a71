// Package stats is the statistics projection of linkd in ClickHouse: it
// writes every counted click, daily aggregates and the link dimension into
// ClickHouse tables that analysts query directly (docs/analytics.md), and
// answers the statistics queries (queries.StatsReadModel) from the
// aggregates. The connection and the schema (SQL migrations) are package
// projections/clickhouse's; Radar, on the same connection, is
// projections/clickhouse/radar's.
//
// # Tables
//
// clicks holds one row per counted click, inserted by Apply. The aggregates
// derived from clicks are written at most every Options.FlushInterval, for
// all the Applies of that interval (pending.go): the daily tables
// (link_clicks_daily, workspace_clicks_daily: counters, unique visitors,
// first and last click) through the Null table clicks_daily_input and its
// materialized views, and the breakdowns (os, city, country, ...), counted
// by the projector, as one map per link (or workspace) and day in
// link_clicks_daily_breakdown_v2 and workspace_clicks_daily_breakdown_v2,
// whose keys breakdown_values names. The records of days that are over are
// kept in *_daily_final (uniques.go), breakdowns aside. links is the link
// dimension (ReplacingMergeTree by stream version).
//
// # Exactly-once counting on at-least-once delivery
//
// Dedup: a link's click stream numbers its clicks 0, 1, 2, ... and delivers
// them in that order, so the projector keeps, per link, the highest click_seq
// applied and skips anything at or below it. The mark is stored with the
// data (max_click_seq, an aggregate state in link_clicks_daily), loaded
// lazily per link and cached in memory (bounded); the marks of pending
// clicks are kept until they are flushed.
//
// Atomicity: ClickHouse has no transactions, so every INSERT into clicks
// carries an insert_id (increasing) that each target table keeps as an
// aggregate (max_insert_id). Each INSERT covers one month (partition) and so
// makes one part per table, committed atomically; INSERTs into clicks run
// one at a time, and every flush writes one INSERT per target covering all
// the pending units, of one month, in order. Every target therefore holds a
// prefix of the units of clicks; a crash or a failed INSERT leaves at most
// the last units of clicks missing from some targets. Recovery, run at Open
// and after any failure, finds them (max_insert_id of the last units' keys)
// and rebuilds exactly their contribution to the targets that lack them,
// from clicks. See docs/analytics.md, "How a click is counted once".
package stats

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/linkd/linkd/domain/conversion"
	"github.com/linkd/linkd/eventstore"
	"github.com/linkd/linkd/projections"
	ch "github.com/linkd/linkd/projections/clickhouse"
	"github.com/linkd/linkd/queries"
)

// ProjectionName is the name of the projection (replay --projection).
const ProjectionName = "clickhouse"

// Options tune the projection. The zero value gives the defaults.
type Options struct {
	// QueryTimeout bounds each statistics query (default 10s).
	QueryTimeout time.Duration
	// InsertTimeout bounds each INSERT (default 60s).
	InsertTimeout time.Duration
	// DDLTimeout bounds the migrations and Reset (default 2m).
	DDLTimeout time.Duration
	// RecoveryTimeout bounds the recovery after a crash or a failed Apply
	// (default 10m).
	RecoveryTimeout time.Duration
	// MaxInsertRows bounds the rows of one INSERT into clicks (default
	// 100000); larger batches are split.
	MaxInsertRows int
	// FlushInterval is how long the aggregates of applied clicks may wait
	// before they are written to the aggregate tables (default 1s; see
	// pending.go). The clicks themselves are written by Apply. Reads
	// through this Projection see every applied click at once (they flush
	// first when they need to); other readers of the tables (analysts, a
	// second linkd) see them after at most this long, plus the time of the
	// flush. Negative: with every Apply.
	FlushInterval time.Duration
	// MaxPendingClicks flushes the pending aggregates earlier when they
	// cover this many clicks (default 262144, about 40 MB).
	MaxPendingClicks int
	// CheckpointEvery spaces the writes of the checkpoint (default 1s): the
	// data of every Apply is in ClickHouse when it returns, but the
	// checkpoint row is written at most this often (and by Flush and
	// Close), saving a round trip per batch. After a crash the stored
	// checkpoint may be this far behind: what comes again is skipped.
	// Negative: after every Apply.
	CheckpointEvery time.Duration
	// CachedLinks bounds the links whose dedup mark (and dimension row) are
	// kept in memory (default 1<<20, about 100 MB at most). A link not in
	// the cache is looked up in ClickHouse.
	CachedLinks int
	// Standby opens the projection without recovering what a crash left:
	// another process may be writing the tables (the instances of a
	// deployment take turns, ADR 0125). It reads until its first Apply,
	// which recovers first; Reload starts and ends each turn.
	Standby bool
	// Logger receives warnings (undecodable events); default slog.Default().
	Logger *slog.Logger
	// Dial opens the connection pool (see projections/clickhouse.Options).
	Dial func(*clickhouse.Options) (driver.Conn, error)
}

// connection is the part of o that projections/clickhouse takes.
func (o *Options) connection() ch.Options {
	return ch.Options{
		QueryTimeout: o.QueryTimeout, InsertTimeout: o.InsertTimeout, DDLTimeout: o.DDLTimeout,
		RecoveryTimeout: o.RecoveryTimeout, Logger: o.Logger, Dial: o.Dial,
	}
}

func (o *Options) withDefaults() (Options, error) {
	errs := o.connection().Problems()
	if o.MaxInsertRows < 0 {
		errs = append(errs, errors.New("MaxInsertRows must not be negative"))
	}
	if o.CachedLinks < 0 {
		errs = append(errs, errors.New("CachedLinks must not be negative"))
	}
	if o.MaxPendingClicks < 0 {
		errs = append(errs, errors.New("MaxPendingClicks must not be negative"))
	}
	if len(errs) > 0 {
		return Options{}, fmt.Errorf("clickhouse: options: %w", errors.Join(errs...))
	}
	c, err := o.connection().WithDefaults()
	if err != nil {
		return Options{}, err
	}
	out := *o
	out.QueryTimeout, out.InsertTimeout, out.DDLTimeout, out.RecoveryTimeout = c.QueryTimeout, c.InsertTimeout, c.DDLTimeout, c.RecoveryTimeout
	out.Logger, out.Dial = c.Logger, c.Dial
	if out.CheckpointEvery == 0 {
		out.CheckpointEvery = time.Second
	}
	if out.FlushInterval == 0 {
		out.FlushInterval = time.Second
	}
	if out.MaxPendingClicks == 0 {
		out.MaxPendingClicks = 1 << 18
	}
	if out.MaxInsertRows == 0 {
		out.MaxInsertRows = 100_000
	}
	if out.CachedLinks == 0 {
		out.CachedLinks = 1 << 20
	}
	return out, nil
}

// Projection is the ClickHouse projection and read model.
type Projection struct {
	db   *ch.DB
	conn driver.Conn // db's
	opts Options
	log  *slog.Logger
	run  string // random, in query ids of this process

	mu           sync.Mutex // serializes Apply, flushes, Reset and recovery
	closed       bool
	needRecovery bool
	pending      []string // query ids of the INSERTs since the last success
	nextInsertID uint64
	checkpoint   eventstore.Position // applied (in memory)
	saved        eventstore.Position // in projection_checkpoint
	savedAt      time.Time
	clickMarks   *genCache[int64]    // link id -> highest click_seq applied, -1: none
	links        *genCache[*linkRow] // link id -> latest row of links, nil: none

	pmu  sync.RWMutex // guards pend (the pointer) and its marks and workspaces for reads
	pend *pending     // aggregates not yet flushed
	// flushing is the flush in flight (guarded by pmu as well, for reads),
	// or one that failed, until recovery; flight is the one in flight
	// (pending.go).
	flushing *flight
	flight   *flight
	keyer    *keyer // value keys of the breakdowns
	flushes  uint64
	maxDay   int32 // latest day with clicks (days since 1970-01-01)
	// Days up to these have final records (uniques.go), links and
	// workspaces.
	finalLink, finalWorkspace atomic.Int32

	values *valueCache // breakdown_values, for reads

	noFinalize bool // tests: flushes write no final records (as if they crashed before)
	// beforeFinalize, when set (tests), runs in the flush in flight before
	// it makes final records.
	beforeFinalize func()

	bgStop, bgDone chan struct{}
}

var (
	_ projections.Projector     = (*Projection)(nil)
	_ projections.Flusher       = (*Projection)(nil)
	_ projections.StreamTracker = (*Projection)(nil)
	_ projections.Reloader      = (*Projection)(nil)
	_ queries.StatsReadModel    = (*Projection)(nil)
)

// Open connects to ClickHouse (projections/clickhouse.Open: the database
// the DSN names, its schema migrated) and recovers from an interrupted
// Apply. The DSN is clickhouse-go's: clickhouse://user:password@host:9000/db.
func Open(ctx context.Context, dsn string, opts Options) (*Projection, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	db, err := ch.Open(ctx, dsn, o.connection())
	if err != nil {
		return nil, err
	}
	run := make([]byte, 4)
	_, _ = rand.Read(run)
	p := &Projection{
		db:         db,
		conn:       db.Conn(),
		opts:       o,
		log:        o.Logger,
		run:        hex.EncodeToString(run),
		clickMarks: newGenCache[int64](o.CachedLinks),
		links:      newGenCache[*linkRow](o.CachedLinks),
		pend:       newPending(),
		values:     newValueCache(o.CachedLinks),
		bgStop:     make(chan struct{}),
		bgDone:     make(chan struct{}),
	}
	p.keyer = newKeyer(func(a, b dictEntry) {
		p.log.Error("clickhouse projection: two breakdown values have the same key: their counts are merged",
			"key", a.key, "first", dimensions[a.dim].name+":"+a.value, "second", dimensions[b.dim].name+":"+b.value)
	})
	// The start-up steps are idempotent: retried when the connection is
	// lost under them.
	if err := db.Retry(ctx, p.start); err != nil {
		db.Close()
		return nil, err
	}
	tick := max(o.FlushInterval/4, 10*time.Millisecond)
	if o.FlushInterval < 0 {
		tick = time.Second // flushes happen in Apply; this only finalizes days
	}
	go p.background(tick)
	return p, nil
}

// start recovers what a crash left (unless on standby: then the first
// Apply does) and loads the days made final.
func (p *Projection) start(ctx context.Context) error {
	if p.opts.Standby {
		p.needRecovery = true
	} else if err := p.recoverLocked(ctx); err != nil {
		return fmt.Errorf("clickhouse: recover: %w", err)
	}
	if err := p.loadDays(ctx); err != nil {
		return fmt.Errorf("clickhouse: %w", err)
	}
	return nil
}

// Database is the database the projection writes.
func (p *Projection) Database() string { return p.db.Name() }

// DB is the connection the projection writes through, which Radar
// (projections/clickhouse/radar) shares. Close the projection after Radar.
func (p *Projection) DB() *ch.DB { return p.db }

// Name is "clickhouse".
func (p *Projection) Name() string { return ProjectionName }

// MaxBatch asks the in-process runner for deliveries of up to 32,768
// events (projections.Batcher): each Apply writes a part of clicks, and on
// 18.16 a part of 4,096 rows costs the server about three times the CPU per
// click of one of 32,768 (ADR 0011).
func (p *Projection) MaxBatch() int { return 32768 }

// Categories are the click streams and the link streams.
func (p *Projection) Categories() []string {
	return []string{"clicks", "link", conversion.CustomerCategory}
}

// Checkpoint is the global position of the last event applied. It is
// stored in projection_checkpoint after the data (see
// Options.CheckpointEvery), so after a crash it may be a little behind the
// data: what comes again is skipped.
func (p *Projection) Checkpoint(ctx context.Context) (eventstore.Position, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return eventstore.Start, errClosed
	}
	if p.needRecovery {
		if err := p.recoverLocked(ctx); err != nil {
			return eventstore.Start, fmt.Errorf("clickhouse: recover: %w", err)
		}
	}
	return p.checkpoint, nil
}

// Reset empties every table of the projection (the schema stays as the
// migrations made it), and drops the breakdown tables of schema version 1,
// which nothing writes.
func (p *Projection) Reset(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return errClosed
	}
	_ = p.waitFlushLocked(ctx) // whatever it did is dropped
	p.pending = p.pending[:0]
	if err := p.emptyTables(ctx); err != nil {
		p.needRecovery = true
		return fmt.Errorf("clickhouse: reset: %w", err)
	}
	p.clickMarks.clear()
	p.links.clear()
	p.resetPending()
	p.maxDay = 0
	p.finalLink.Store(0)
	p.finalWorkspace.Store(0)
	p.checkpoint, p.saved = eventstore.Start, eventstore.Start
	p.nextInsertID = 1
	p.needRecovery = false
	return nil
}

// Reload implements projections.Reloader. The aggregates pending are
// written with the checkpoint; if they cannot be (or an Apply failed), the
// INSERTs of this process still running are stopped and the pending
// aggregates dropped: the next writer's recovery rebuilds them from clicks.
// The next Apply recovers: checkpoint, insert_id, marks and links are read
// again from the tables.
func (p *Projection) Reload(ctx context.Context) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	if !p.needRecovery {
		err := p.flushLocked(ctx)
		if err == nil {
			err = p.saveCheckpoint(ctx)
		}
		if err != nil {
			p.log.Warn("clickhouse projection: pending aggregates not written before another process writes; its recovery rebuilds them", "err", err)
			p.needRecovery = true
		}
	}
	if p.needRecovery {
		_ = p.waitFlushLocked(ctx)
		if err := p.killPending(ctx); err != nil {
			p.log.Warn("clickhouse projection: INSERTs of this process may still run", "err", err)
		}
		p.pending = p.pending[:0]
		p.resetPending()
	}
	p.needRecovery = true
}

// resetPending drops the pending aggregates, and the record of which
// breakdown values were written (after a failure it is not known).
func (p *Projection) resetPending() {
	p.pmu.Lock()
	p.pend = newPending()
	p.flushing = nil
	p.pmu.Unlock()
	p.keyer.forget()
}

// Flush writes the pending aggregates, and stores the checkpoint if it
// moved since it was last stored. The clicks themselves are in ClickHouse
// when Apply returns.
func (p *Projection) Flush(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return errClosed
	}
	if err := p.flushOrRecoverLocked(ctx); err != nil {
		return err
	}
	return p.saveCheckpoint(ctx)
}

func (p *Projection) saveCheckpoint(ctx context.Context) error {
	if p.saved == p.checkpoint || p.needRecovery {
		return nil
	}
	if err := p.writeCheckpoint(ctx, p.checkpoint); err != nil {
		return err
	}
	p.saved, p.savedAt = p.checkpoint, time.Now()
	return nil
}

// Close writes the pending aggregates and stores the checkpoint (if it can
// within a few seconds; if not, the next Open recovers), and releases the
// connections. Apply in progress finishes first.
func (p *Projection) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	p.mu.Unlock()
	close(p.bgStop)
	<-p.bgDone
	p.mu.Lock()
	defer p.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	var err error
	if err = p.waitFlushLocked(ctx); err != nil {
		p.needRecovery = true
	}
	if !p.needRecovery {
		if err = p.flushLocked(ctx); err != nil {
			p.needRecovery = true
		}
	}
	if err == nil {
		err = p.saveCheckpoint(ctx)
	}
	cancel()
	return errors.Join(err, p.db.Close())
}

var errClosed = errors.New("clickhouse: projection closed")

// genCache is a map bounded to about max entries: two generations, the
// older dropped whole when the newer fills up.
type genCache[V any] struct {
	max      int
	cur, old map[string]V
}

func newGenCache[V any](max int) *genCache[V] {
	if max < 2 {
		max = 2
	}
	return &genCache[V]{max: max, cur: map[string]V{}, old: map[string]V{}}
}

func (c *genCache[V]) get(k string) (V, bool) {
	if v, ok := c.cur[k]; ok {
		return v, true
	}
	if v, ok := c.old[k]; ok {
		c.put(k, v)
		return v, true
	}
	var zero V
	return zero, false
}

func (c *genCache[V]) put(k string, v V) {
	if _, ok := c.cur[k]; !ok && len(c.cur) >= c.max/2 {
		c.old = c.cur
		c.cur = make(map[string]V, c.max/2)
	}
	c.cur[k] = v
}

func (c *genCache[V]) clear() {
	c.cur = map[string]V{}
	c.old = map[string]V{}
}

// valueCache holds entries of breakdown_values for reads: key -> value,
// bounded like genCache, safe for concurrent use.
type valueCache struct {
	mu       sync.Mutex
	max      int
	cur, old map[uint64]dictEntry
}

func newValueCache(max int) *valueCache {
	return &valueCache{max: max, cur: map[uint64]dictEntry{}, old: map[uint64]dictEntry{}}
}

func (c *valueCache) putLocked(e dictEntry) {
	if _, ok := c.cur[e.key]; !ok && len(c.cur) >= c.max/2 {
		c.old = c.cur
		c.cur = make(map[uint64]dictEntry, c.max/2)
	}
	c.cur[e.key] = e
}

func (c *valueCache) putAll(entries []dictEntry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, e := range entries {
		c.putLocked(e)
	}
}

// get returns the entries of keys it holds, and the keys it does not.
func (c *valueCache) get(keys []uint64, out map[uint64]dictEntry) (missing []uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, k := range keys {
		if _, ok := out[k]; ok {
			continue
		}
		if e, ok := c.cur[k]; ok {
			out[k] = e
			continue
		}
		if e, ok := c.old[k]; ok {
			c.putLocked(e)
			out[k] = e
			continue
		}
		missing = append(missing, k)
	}
	return missing
}

func (c *valueCache) clear() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cur, c.old = map[uint64]dictEntry{}, map[uint64]dictEntry{}
}
