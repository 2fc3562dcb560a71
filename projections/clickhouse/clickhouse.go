// Package clickhouse is the ClickHouse projection of linkd: it writes every
// counted click, daily aggregates and the link dimension into ClickHouse
// tables that analysts query directly (docs/analytics.md), and answers the
// statistics queries (queries.StatsReadModel) from the aggregates.
//
// # Tables
//
// clicks holds one row per counted click. Materialized views fill the daily
// tables (link_clicks_daily, workspace_clicks_daily: counters, exact unique
// visitors, first and last click) from each INSERT into clicks. The breakdowns
// (os, city, country, ...) are counted by the projector per batch and go,
// each through a Null table <table>_input and its view, into
// link_clicks_daily_breakdown and workspace_clicks_daily_breakdown. links is
// the link dimension (ReplacingMergeTree by stream version).
//
// # Exactly-once counting on at-least-once delivery
//
// Dedup: a link's click stream numbers its clicks 0, 1, 2, ... and delivers
// them in that order, so the projector keeps, per link, the highest click_seq
// applied and skips anything at or below it. The mark is stored with the
// data (max_click_seq, an aggregate state in link_clicks_daily), loaded
// lazily per link and cached in memory (bounded).
//
// Atomicity: ClickHouse has no transactions, so every INSERT carries an
// insert_id (increasing) that each target table keeps as an aggregate
// (max_insert_id). Each INSERT covers one month (partition) and so makes one
// part per table, committed atomically; INSERTs run one at a time, each only
// after the one before completed everywhere. A crash (or a failed INSERT)
// can therefore leave at most the last insert_id in clicks but missing from
// some target: recovery, run at Open and after any failed Apply, finds it
// (max(insert_id) of clicks against each target's max_insert_id) and rebuilds
// exactly that INSERT's contribution to the targets that lack it, from
// clicks. See docs/analytics.md, "How a click is counted once".
package clickhouse

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"sync"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/linkd/linkd/eventstore"
	"github.com/linkd/linkd/projections"
	"github.com/linkd/linkd/queries"
)

// ProjectionName is the name of the projection (replay --projection).
const ProjectionName = "clickhouse"

// DefaultDatabase is used when the DSN names no database.
const DefaultDatabase = "linkd"

// Options tune the projection. The zero value gives the defaults.
type Options struct {
	// QueryTimeout bounds each statistics query (default 10s).
	QueryTimeout time.Duration
	// InsertTimeout bounds each INSERT (default 60s).
	InsertTimeout time.Duration
	// DDLTimeout bounds schema creation, migration and Reset (default 2m).
	DDLTimeout time.Duration
	// RecoveryTimeout bounds the recovery after a crash or a failed Apply
	// (default 10m).
	RecoveryTimeout time.Duration
	// MaxInsertRows bounds the rows of one INSERT into clicks (default
	// 100000); larger batches are split.
	MaxInsertRows int
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
	// Logger receives warnings (undecodable events); default slog.Default().
	Logger *slog.Logger
}

func (o *Options) withDefaults() (Options, error) {
	var errs []error
	if o.QueryTimeout < 0 {
		errs = append(errs, errors.New("QueryTimeout must not be negative"))
	}
	if o.InsertTimeout < 0 {
		errs = append(errs, errors.New("InsertTimeout must not be negative"))
	}
	if o.DDLTimeout < 0 {
		errs = append(errs, errors.New("DDLTimeout must not be negative"))
	}
	if o.RecoveryTimeout < 0 {
		errs = append(errs, errors.New("RecoveryTimeout must not be negative"))
	}
	if o.MaxInsertRows < 0 {
		errs = append(errs, errors.New("MaxInsertRows must not be negative"))
	}
	if o.CachedLinks < 0 {
		errs = append(errs, errors.New("CachedLinks must not be negative"))
	}
	if len(errs) > 0 {
		return Options{}, fmt.Errorf("clickhouse: options: %w", errors.Join(errs...))
	}
	out := *o
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	def(&out.QueryTimeout, 10*time.Second)
	def(&out.InsertTimeout, 60*time.Second)
	def(&out.DDLTimeout, 2*time.Minute)
	def(&out.RecoveryTimeout, 10*time.Minute)
	def(&out.CheckpointEvery, time.Second)
	if out.MaxInsertRows == 0 {
		out.MaxInsertRows = 100_000
	}
	if out.CachedLinks == 0 {
		out.CachedLinks = 1 << 20
	}
	if out.Logger == nil {
		out.Logger = slog.Default()
	}
	return out, nil
}

// Projection is the ClickHouse projection and read model.
type Projection struct {
	conn driver.Conn
	db   string
	opts Options
	log  *slog.Logger
	run  string // random, in query ids of this process

	mu           sync.Mutex // serializes Apply, Reset and recovery
	closed       bool
	needRecovery bool
	pending      []string // query ids of the INSERTs of the Apply in progress
	nextInsertID uint64
	checkpoint   eventstore.Position // applied (in memory)
	saved        eventstore.Position // in projection_checkpoint
	savedAt      time.Time
	clickMarks   *genCache[int64]    // link id -> highest click_seq applied, -1: none
	links        *genCache[*linkRow] // link id -> latest row of links, nil: none
}

var (
	_ projections.Projector     = (*Projection)(nil)
	_ projections.Flusher       = (*Projection)(nil)
	_ projections.StreamTracker = (*Projection)(nil)
	_ queries.StatsReadModel    = (*Projection)(nil)
)

var identRe = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// Open connects to ClickHouse over the native protocol, creates the
// database the DSN names (DefaultDatabase when none) and the schema if
// missing, migrates an older schema, and recovers from an interrupted
// Apply. The DSN is clickhouse-go's: clickhouse://user:password@host:9000/db.
func Open(ctx context.Context, dsn string, opts Options) (*Projection, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	chOpts, err := clickhouse.ParseDSN(dsn)
	if err != nil {
		return nil, fmt.Errorf("clickhouse: dsn: %w", err)
	}
	db := chOpts.Auth.Database
	if db == "" {
		db = DefaultDatabase
	}
	if !identRe.MatchString(db) {
		return nil, fmt.Errorf("clickhouse: database name %q: use letters, digits and _", db)
	}
	// Connect without a database: it may not exist yet. Every statement
	// names its tables with the database.
	chOpts.Auth.Database = ""
	if chOpts.Compression == nil {
		chOpts.Compression = &clickhouse.Compression{Method: clickhouse.CompressionLZ4}
	}
	if chOpts.DialTimeout == 0 {
		chOpts.DialTimeout = 10 * time.Second
	}
	conn, err := clickhouse.Open(chOpts)
	if err != nil {
		return nil, fmt.Errorf("clickhouse: open: %w", err)
	}
	pctx, cancel := context.WithTimeout(ctx, o.QueryTimeout)
	err = conn.Ping(pctx)
	cancel()
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("clickhouse: ping: %w", err)
	}
	run := make([]byte, 4)
	_, _ = rand.Read(run)
	p := &Projection{
		conn:       conn,
		db:         db,
		opts:       o,
		log:        o.Logger,
		run:        hex.EncodeToString(run),
		clickMarks: newGenCache[int64](o.CachedLinks),
		links:      newGenCache[*linkRow](o.CachedLinks),
	}
	if err := p.ensureSchema(ctx); err != nil {
		conn.Close()
		return nil, fmt.Errorf("clickhouse: schema: %w", err)
	}
	if err := p.recoverLocked(ctx); err != nil {
		conn.Close()
		return nil, fmt.Errorf("clickhouse: recover: %w", err)
	}
	return p, nil
}

// Database is the database the projection writes.
func (p *Projection) Database() string { return p.db }

// Name is "clickhouse".
func (p *Projection) Name() string { return ProjectionName }

// Categories are the click streams and the link streams.
func (p *Projection) Categories() []string { return []string{"clicks", "link"} }

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

// Reset drops every table and view of the projection and creates them
// again, empty.
func (p *Projection) Reset(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return errClosed
	}
	if err := p.dropSchema(ctx); err != nil {
		p.needRecovery = true
		return fmt.Errorf("clickhouse: reset: %w", err)
	}
	if err := p.ensureSchema(ctx); err != nil {
		p.needRecovery = true
		return fmt.Errorf("clickhouse: reset: %w", err)
	}
	p.clickMarks.clear()
	p.links.clear()
	p.checkpoint, p.saved = eventstore.Start, eventstore.Start
	p.nextInsertID = 1
	p.needRecovery = false
	return nil
}

// Flush stores the checkpoint if it moved since it was last stored. The data
// itself is never buffered: it is in ClickHouse when Apply returns.
func (p *Projection) Flush(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return errClosed
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

// Close stores the checkpoint (if it can within a few seconds) and releases
// the connections. Apply in progress finishes first.
func (p *Projection) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	err := p.saveCheckpoint(ctx)
	cancel()
	p.closed = true
	return errors.Join(err, p.conn.Close())
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
