// Package postgres is the PostgreSQL adapter of the event store port, on
// pgx. It keeps the whole log in one table, linkd_events, created and
// migrated by Open (schema.go).
//
// How the port maps to PostgreSQL:
//   - a Position is the event's row position (Commit == Prepare), one global
//     order with no holes: positions are handed out under a transaction-scoped
//     advisory lock that every appending transaction, of any process, takes
//     first and holds until it commits, so transactions commit in the order
//     of their positions and a reader that sees position N sees everything
//     before N (ADR 0100: the alternative, sequence positions with a
//     pg_snapshot_xmin horizon, lets a reader skip nothing only by waiting on
//     the oldest open writer anyway);
//   - expected versions are checked under that lock against the stream's last
//     version, and a UNIQUE (stream, version) constraint refuses any row that
//     would break a stream's run whatever wrote it;
//   - appends are grouped: one writer goroutine per Store takes every append
//     waiting (clicks, mostly) into one transaction, and each caller is
//     answered once the commit holding its events is done (writer.go);
//   - AppendMulti writes its parts in one transaction;
//   - subscriptions read the table from their position, woken by the store's
//     own commits, by LISTEN/NOTIFY for other processes' commits, and by a
//     poll as a fallback; they survive a server restart, resuming after the
//     last position they delivered (subscribe.go).
package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/linkd/linkd/eventstore"
)

// Options tune the adapter. The zero value is ready to use.
type Options struct {
	// ConnectTimeout bounds the connection check and the migration of
	// Open. Zero means 30s.
	ConnectTimeout time.Duration
	// WriteTimeout bounds one group's transaction: a server that does not
	// answer fails its appends with eventstore.ErrUnavailable. Zero means
	// 5s.
	WriteTimeout time.Duration
	// MaxConns is the pool size when the connection string does not set
	// pool_max_conns. Zero means 16. The store also holds one connection
	// of its own for LISTEN.
	MaxConns int32
	// PollInterval is how often a waiting subscription looks for events it
	// was not told about (LISTEN/NOTIFY lost while reconnecting). Zero
	// means 1s.
	PollInterval time.Duration
	// Writers is how many grouped transactions may be on their way at
	// once (they take the append lock in turn). Zero means 1: two halved
	// the appends per second of 64 writers here (smaller groups, the same
	// commit each), see docs/adr/0100-postgres-event-store.md. One
	// writer without Linger pipelines its groups (ADR 0124).
	Writers int
	// Linger is how long the writer may wait for more appends to join a
	// group when the last group held several (as many as the last group
	// at most). Zero means none: 1ms gave 13-43% more appends/s from 64
	// writers here, with a lower p50 and a higher p99
	// (docs/performance.md and ADR 0100), too mixed to make it the default.
	Linger time.Duration
	// MaxGroupEvents bounds the events of one grouped transaction (an
	// append larger than that goes alone). Zero means 4096.
	MaxGroupEvents int
	// Relaxed are categories whose appends, while the store is alone on
	// the database, commit without waiting for the server's WAL flush
	// (synchronous_commit off): they survive a crash of the process at
	// once, and one of the server after the next flush, which the store
	// forces every FlushInterval. Their events reach subscriptions once
	// flushed, so no read model holds an event a crash of the server could
	// take back. linkd's LINKD_DURABILITY=interval relaxes clicks and
	// Radar (ADR 0115). Other appends, and all while other processes
	// append too, wait for the flush.
	Relaxed []string
	// FlushInterval is how long a relaxed commit waits for its flush at
	// most. Zero means 100ms.
	FlushInterval time.Duration
	// LeaseStale is how long the session holding a lease may stay silent
	// before a process waiting for the lease ends it (pg_terminate_backend,
	// which needs the same role or pg_signal_backend): its holder is frozen
	// rather than dead (SIGSTOP, a hung host), and would keep the lease
	// forever. A holder checks its session every second. Zero means 10 s.
	LeaseStale time.Duration
	// Logger receives warnings (reconnects). Nil drops them.
	Logger *slog.Logger

	// leaseSilent, when set (tests only), makes held leases' sessions
	// silent while it is true, as a frozen holder's are.
	leaseSilent *atomic.Bool

	// beforeCommit, when set (tests only), runs in every appending
	// transaction just before its commit.
	beforeCommit func()
}

const (
	defaultConnectTimeout = 30 * time.Second
	defaultMaxConns       = 16
	defaultPoll           = time.Second
	defaultGroupEvents    = 4096
	// lingerAfter is how many appends the last group must have held for
	// the writer to linger.
	lingerAfter = 8
	// groupBytes bounds the data of one grouped transaction.
	groupBytes = 16 << 20
	// MaxEventSize is the largest event (data and metadata) accepted.
	MaxEventSize = 64 << 20
)

// Store is an eventstore.Store on a PostgreSQL database. It is safe for
// concurrent use.
type Store struct {
	pool *pgxpool.Pool
	opts Options
	log  *slog.Logger
	dsn  string

	// mu guards closed; operations hold it shared while they run, so
	// that Close waits for them.
	mu     sync.RWMutex
	closed bool

	queue     chan *appendReq
	closing   chan struct{} // closed by Close
	writerEnd chan struct{} // closed when the writers return

	ctx    context.Context // ends at Close: subscriptions and the listener
	cancel context.CancelFunc
	bg     sync.WaitGroup

	wake notifier
	// recent holds the events of the store's last commits, for its
	// subscriptions.
	recent recentLog
	fillMu sync.Mutex // one fill of recent at a time
	// foreign counts signs that another process committed: a notification
	// of a commit past ownHead, a commit of this store's that did not
	// follow recent's last event, a (re)started LISTEN. A fill reads the
	// table only when it moved since the last fill began (filled), or
	// PollInterval after the last read; otherwise the events after recent
	// are the store's own, which it adds itself (ADR 0100).
	foreign  atomic.Uint64
	filled   uint64    // foreign when the last fill began; fillMu
	lastFill time.Time // when it began (zero: the first fill reads); fillMu
	// fillsBegun counts the fills that began; freshFill is the number of
	// the last one that read to the log's end (fillMu): a fill that began
	// after a call to CategoryHead and reached the end has seen every
	// commit answered before that call.
	fillsBegun atomic.Uint64
	freshFill  uint64
	// fillReads counts the fills that read the table, subReads the
	// subscriptions' own reads of it (tests).
	fillReads, subReads atomic.Int64
	seedReads           atomic.Int64 // reads of linkd_heads (tests)
	// ownHead is the position of the store's last commit.
	ownHead atomic.Int64
	// Relaxed commits (Options.Relaxed; relaxed.go): relaxedHead is the
	// position of the last, flushedHead one up to which the WAL is known
	// flushed, relaxing counts the relaxed groups on their way (their
	// commit may be visible before relaxedHead moves); flushNeeded wakes
	// the flusher.
	relaxedHead, flushedHead atomic.Int64
	relaxing                 atomic.Int64
	flushNeeded              chan struct{}
	// instance names this process in linkd_instances; others counts the
	// other processes seen there lately (presence.go).
	instance string
	others   atomic.Int32
	joinAt   time.Time // appends wait until then (presence.go, joined)
	// shared is when (Unix ns) an insert at the versions the writer knew
	// last met another process's append (writer.go, sharing).
	shared atomic.Int64
	// overlapped counts the groups the pipelined writer sent while the
	// group before was on its way (pipeline.go).
	overlapped atomic.Int64
	// vmu guards versions and inflight; flight signals the end of a
	// group's claim.
	vmu    sync.Mutex
	flight *sync.Cond
	// versions are streams' last versions as the writers last wrote or
	// read them.
	versions map[string]uint64
	// inflight are the streams of the groups being written.
	inflight map[string]bool
	writers  sync.WaitGroup
}

// maxKnownVersions bounds the writer's map of stream versions.
const maxKnownVersions = 1 << 18

var (
	_ eventstore.Store         = (*Store)(nil)
	_ eventstore.MultiAppender = (*Store)(nil)
)

// IsDSN reports whether s names a PostgreSQL server (postgres:// or
// postgresql://).
func IsDSN(s string) bool {
	l := strings.ToLower(s)
	return strings.HasPrefix(l, "postgres://") || strings.HasPrefix(l, "postgresql://")
}

// Open connects to the database named by connString (postgres:// or
// postgresql://, with libpq's settings such as ?sslmode=disable and pgx's
// pool_max_conns), creates or migrates the schema, and starts the writer
// and the listener.
func Open(ctx context.Context, connString string, opts Options) (*Store, error) {
	if opts.ConnectTimeout <= 0 {
		opts.ConnectTimeout = defaultConnectTimeout
	}
	if opts.WriteTimeout <= 0 {
		opts.WriteTimeout = 5 * time.Second
	}
	if opts.PollInterval <= 0 {
		opts.PollInterval = defaultPoll
	}
	if opts.Writers <= 0 {
		opts.Writers = 1
	}
	if opts.MaxGroupEvents <= 0 {
		opts.MaxGroupEvents = defaultGroupEvents
	}
	if opts.FlushInterval <= 0 {
		opts.FlushInterval = 100 * time.Millisecond
	}
	if opts.LeaseStale <= 0 {
		opts.LeaseStale = 10 * time.Second
	}
	cfg, err := pgxpool.ParseConfig(connString)
	if err != nil {
		return nil, fmt.Errorf("postgres: bad connection string: %w", redact(err))
	}
	if !strings.Contains(connString, "pool_max_conns") {
		cfg.MaxConns = defaultMaxConns
		if opts.MaxConns > 0 {
			cfg.MaxConns = opts.MaxConns
		}
	}
	cfg.AfterConnect = genericPlans
	cctx, cancel := context.WithTimeout(ctx, opts.ConnectTimeout)
	defer cancel()
	pool, err := pgxpool.NewWithConfig(cctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", redact(err))
	}
	if err := migrate(cctx, pool); err != nil {
		pool.Close()
		return nil, err
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Store{
		pool: pool, opts: opts, log: log, dsn: connString,
		queue:     make(chan *appendReq, 1024),
		closing:   make(chan struct{}),
		writerEnd: make(chan struct{}),
	}
	s.wake.init()
	s.versions = map[string]uint64{}
	s.inflight = map[string]bool{}
	s.flight = sync.NewCond(&s.vmu)
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.instance = newInstanceID()
	if opts.Writers == 1 && opts.Linger == 0 {
		s.writers.Add(1)
		go s.runPipelined()
	} else {
		for range opts.Writers {
			s.writers.Add(1)
			go s.runWriter()
		}
	}
	go func() { s.writers.Wait(); close(s.writerEnd) }()
	s.bg.Add(1)
	go s.listen()
	if len(opts.Relaxed) > 0 {
		s.flushNeeded = make(chan struct{}, 1)
		s.bg.Add(1)
		go s.flusher()
	}
	if err := s.announce(cctx); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// genericPlans makes each statement of a connection planned once, when
// first prepared, rather than at every execution. Left to itself,
// PostgreSQL plans a fill of the log (position > $1 ORDER BY position
// LIMIT $2) again each time: with the value known, a position past the
// end of the table's statistics sends the planner into the index for
// the real end, 75 µs against 13 µs to run the fill. With three
// instances a tenth of the server's CPU went there (ADR 0126). Each
// statement of the store has one right plan whatever its parameters.
func genericPlans(ctx context.Context, c *pgx.Conn) error {
	if _, err := c.Exec(ctx, "SET plan_cache_mode = force_generic_plan"); err != nil {
		return fmt.Errorf("postgres: set plan_cache_mode: %w", err)
	}
	return nil
}

// redact drops a connection string (and its password) from pgx's parse
// errors.
func redact(err error) error {
	var perr *pgconn.ParseConfigError
	if errors.As(err, &perr) {
		return errors.New(perr.Error()[strings.LastIndex(perr.Error(), ":")+1:])
	}
	return err
}

// enter admits an operation unless the store is closed; exit ends it.
func (s *Store) enter(ctx context.Context) error {
	s.mu.RLock()
	if s.closed {
		s.mu.RUnlock()
		return eventstore.ErrClosed
	}
	if err := ctx.Err(); err != nil {
		s.mu.RUnlock()
		return err
	}
	return nil
}

func (s *Store) exit() { s.mu.RUnlock() }

// Close stops the writer (appends waiting are refused with ErrClosed),
// ends the subscriptions, and closes the pool.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	close(s.closing)
	s.mu.Unlock()
	<-s.writerEnd
	s.cancel()
	s.bg.Wait()
	s.leave()
	s.pool.Close()
	return nil
}

// dbErr turns a driver error into the port's: ctx's error when ctx ended,
// ErrClosed when the store closed meanwhile.
func (s *Store) dbErr(ctx context.Context, what string, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("postgres: %s: %w", what, ctx.Err())
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "23505" {
		return fmt.Errorf("postgres: %s: %w (%s)", what, eventstore.ErrWrongExpectedVersion, pgErr.ConstraintName)
	}
	if unreachable(err) {
		return fmt.Errorf("postgres: %s: %w: %w", what, eventstore.ErrUnavailable, err)
	}
	return fmt.Errorf("postgres: %s: %w", what, err)
}

// unreachable tells an error of reaching the server (refused, reset,
// timed out, the server shutting down, a connection pgx closed after one
// of these) from one of the statement.
func unreachable(err error) bool {
	var ce *pgconn.ConnectError
	var ne net.Error
	var pgErr *pgconn.PgError
	switch {
	case errors.As(err, &ce), errors.As(err, &ne), pgconn.Timeout(err), errors.Is(err, context.DeadlineExceeded),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, pgconn.ErrConnClosed):
		return true
	case errors.As(err, &pgErr):
		// Class 08: connection exception; 57P01-57P03: the server is
		// shutting down, crashed, or cannot accept connections now.
		return strings.HasPrefix(pgErr.Code, "08") || pgErr.Code == "57P01" || pgErr.Code == "57P02" || pgErr.Code == "57P03"
	}
	return false
}

const eventColumns = "position, stream, version, id, type, data, metadata, created"

// scanEvents reads rows of eventColumns.
func scanEvents(rows pgx.Rows, capacity int) ([]eventstore.RecordedEvent, error) {
	defer rows.Close()
	out := make([]eventstore.RecordedEvent, 0, capacity)
	for rows.Next() {
		var (
			ev       eventstore.RecordedEvent
			pos, ver int64
		)
		if err := rows.Scan(&pos, &ev.Stream, &ver, (*[16]byte)(&ev.ID), &ev.Type, &ev.Data, &ev.Metadata, &ev.Time); err != nil {
			return nil, err
		}
		ev.Position = position(pos)
		ev.Version = uint64(ver)
		ev.Time = ev.Time.UTC()
		out = append(out, ev)
	}
	return out, rows.Err()
}

func position(p int64) eventstore.Position {
	return eventstore.Position{Commit: uint64(p), Prepare: uint64(p)}
}

// pos is the row position of p (a position of this store has Commit ==
// Prepare); positions past the int64 range are clamped.
func pos(p eventstore.Position) int64 {
	if p.Commit > 1<<62 {
		return 1 << 62
	}
	return int64(p.Commit)
}

// ReadStream implements eventstore.Store.
func (s *Store) ReadStream(ctx context.Context, stream string, from uint64, max int) ([]eventstore.RecordedEvent, error) {
	if err := s.enter(ctx); err != nil {
		return nil, err
	}
	defer s.exit()
	if from > 1<<62 {
		from = 1 << 62
	}
	if max <= 0 {
		return nil, nil
	}
	rows, err := s.pool.Query(ctx, "SELECT "+eventColumns+" FROM linkd_events WHERE stream = $1 AND version >= $2 ORDER BY version LIMIT $3",
		stream, int64(from), max)
	if err != nil {
		return nil, s.dbErr(ctx, "read stream", err)
	}
	evs, err := scanEvents(rows, min(max, 256))
	if err != nil {
		return nil, s.dbErr(ctx, "read stream", err)
	}
	if len(evs) == 0 {
		var exists bool
		if err := s.pool.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM linkd_events WHERE stream = $1)", stream).Scan(&exists); err != nil {
			return nil, s.dbErr(ctx, "read stream", err)
		}
		if !exists {
			return nil, fmt.Errorf("%w: %q", eventstore.ErrStreamNotFound, stream)
		}
	}
	return evs, nil
}

// StreamVersion implements eventstore.Store.
func (s *Store) StreamVersion(ctx context.Context, stream string) (uint64, bool, error) {
	if err := s.enter(ctx); err != nil {
		return 0, false, err
	}
	defer s.exit()
	var v *int64
	if err := s.pool.QueryRow(ctx, "SELECT max(version) FROM linkd_events WHERE stream = $1", stream).Scan(&v); err != nil {
		return 0, false, s.dbErr(ctx, "stream version", err)
	}
	if v == nil {
		return 0, false, nil
	}
	return uint64(*v), true, nil
}

// ReadAll implements eventstore.Store.
func (s *Store) ReadAll(ctx context.Context, after eventstore.Position, max int) ([]eventstore.RecordedEvent, error) {
	if err := s.enter(ctx); err != nil {
		return nil, err
	}
	defer s.exit()
	if max <= 0 {
		return nil, nil
	}
	evs, err := s.readAll(ctx, pos(after), max, nil)
	if err != nil {
		return nil, s.dbErr(ctx, "read all", err)
	}
	return evs, nil
}

// The reads of the log by position: every fill, subscription and ReadAll.
const (
	fillSQL         = "SELECT " + eventColumns + " FROM linkd_events WHERE position > $1 ORDER BY position LIMIT $2"
	fillPrefixedSQL = "SELECT " + eventColumns + " FROM linkd_events WHERE position > $1 AND stream LIKE ANY ($3) ORDER BY position LIMIT $2"
)

// readAll reads up to max events after position after, of the streams
// that start with one of prefixes (every stream when there are none).
// System streams cannot be written here, so there are none to skip.
func (s *Store) readAll(ctx context.Context, after int64, max int, prefixes []string) ([]eventstore.RecordedEvent, error) {
	var (
		rows pgx.Rows
		err  error
	)
	if len(prefixes) == 0 {
		rows, err = s.pool.Query(ctx, fillSQL, after, max)
	} else {
		rows, err = s.pool.Query(ctx, fillPrefixedSQL, after, max, likePrefixes(prefixes))
	}
	if err != nil {
		return nil, err
	}
	return scanEvents(rows, min(max, 64)) // mostly a few new events: no page-sized zeroed slice per read
}

// likePrefixes makes LIKE patterns matching names that start with each
// prefix.
func likePrefixes(prefixes []string) []string {
	esc := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)
	out := make([]string, len(prefixes))
	for i, p := range prefixes {
		out[i] = esc.Replace(p) + "%"
	}
	return out
}

// Head implements eventstore.Store.
func (s *Store) Head(ctx context.Context) (eventstore.Position, error) {
	if err := s.enter(ctx); err != nil {
		return eventstore.Start, err
	}
	defer s.exit()
	var p int64
	if err := s.pool.QueryRow(ctx, "SELECT coalesce(max(position), 0) FROM linkd_events").Scan(&p); err != nil {
		return eventstore.Start, s.dbErr(ctx, "head", err)
	}
	return position(p), nil
}
