// Package clickhouse is what linkd's ClickHouse projections share: the
// connection to the database, its schema and the helpers of their writes.
// The projections are packages of their own, on one connection:
//
//   - projections/clickhouse/stats: the statistics (clicks, daily
//     aggregates and breakdowns, links, leads and sales) and their reads;
//   - projections/clickhouse/radar: Radar (page views, custom events and
//     visits) and its reports.
//
// # Schema
//
// The schema of the database, both projections' tables and views, is the
// numbered SQL files of migrations/, embedded in the binary. Open applies the
// ones a database has not had yet, in order, and records each in
// schema_migrations (migrate.go); every start also makes again what went
// missing. Analysts query the tables directly: they
// are a stable interface (docs/analytics.md), so a migration only ever adds
// (ADR 0105).
package clickhouse

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"regexp"
	"syscall"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
)

// DefaultDatabase is used when the DSN names no database.
const DefaultDatabase = "linkd"

// Options tune the connection, and bound what the projections do on it.
// The zero value gives the defaults.
type Options struct {
	// QueryTimeout bounds each query (default 10s).
	QueryTimeout time.Duration
	// InsertTimeout bounds each INSERT (default 60s).
	InsertTimeout time.Duration
	// DDLTimeout bounds the migrations and a projection's Reset (default
	// 2m).
	DDLTimeout time.Duration
	// RecoveryTimeout bounds a projection's recovery after a crash or a
	// failed write (default 10m).
	RecoveryTimeout time.Duration
	// Logger receives warnings; default slog.Default().
	Logger *slog.Logger
	// Dial opens the connection pool; default clickhouse-go's
	// clickhouse.Open, over the native protocol. The tests may run on
	// current ClickHouse in process instead (internal/testsupport/chtest).
	Dial func(*clickhouse.Options) (driver.Conn, error)
}

// Problems lists what is wrong with o, all of it.
func (o Options) Problems() []error {
	var errs []error
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"QueryTimeout", o.QueryTimeout}, {"InsertTimeout", o.InsertTimeout}, {"DDLTimeout", o.DDLTimeout}, {"RecoveryTimeout", o.RecoveryTimeout}} {
		if d.v < 0 {
			errs = append(errs, errors.New(d.name+" must not be negative"))
		}
	}
	return errs
}

// WithDefaults returns o with the defaults in place of zero values.
func (o Options) WithDefaults() (Options, error) {
	if errs := o.Problems(); len(errs) > 0 {
		return Options{}, fmt.Errorf("clickhouse: options: %w", errors.Join(errs...))
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	def(&o.QueryTimeout, 10*time.Second)
	def(&o.InsertTimeout, 60*time.Second)
	def(&o.DDLTimeout, 2*time.Minute)
	def(&o.RecoveryTimeout, 10*time.Minute)
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Dial == nil {
		o.Dial = clickhouse.Open
	}
	return o, nil
}

// DB is a connection pool to linkd's database, its schema up to date.
type DB struct {
	conn driver.Conn
	name string
	opts Options
}

var identRe = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// Open connects to ClickHouse over the native protocol, creates the
// database the DSN names (DefaultDatabase when none) if missing, and applies
// the migrations it lacks. The DSN is clickhouse-go's:
// clickhouse://user:password@host:9000/db.
func Open(ctx context.Context, dsn string, opts Options) (*DB, error) {
	o, err := opts.WithDefaults()
	if err != nil {
		return nil, err
	}
	chOpts, err := clickhouse.ParseDSN(dsn)
	if err != nil {
		return nil, fmt.Errorf("clickhouse: dsn: %w", err)
	}
	name := chOpts.Auth.Database
	if name == "" {
		name = DefaultDatabase
	}
	if !identRe.MatchString(name) {
		return nil, fmt.Errorf("clickhouse: database name %q: use letters, digits and _", name)
	}
	// Connect without a database: it may not exist yet. Every statement
	// names its tables with the database.
	chOpts.Auth.Database = ""
	if chOpts.Compression == nil {
		// LZ4 unless the DSN says otherwise, and unless ClickHouse is on
		// this host, where compressing costs CPU on both sides and saves
		// nothing (about 15% of the projection's speed, ADR 0011).
		method := clickhouse.CompressionLZ4
		if allLoopback(chOpts.Addr) {
			method = clickhouse.CompressionNone
		}
		chOpts.Compression = &clickhouse.Compression{Method: method}
	}
	if chOpts.DialTimeout == 0 {
		chOpts.DialTimeout = 10 * time.Second
	}
	boundWrites(chOpts, o.InsertTimeout)
	conn, err := o.Dial(chOpts)
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
	db := &DB{conn: conn, name: name, opts: o}
	if err := db.Migrate(ctx); err != nil {
		conn.Close()
		return nil, fmt.Errorf("clickhouse: schema: %w", err)
	}
	return db, nil
}

// Retry runs f, again on a fresh connection of the pool when the one it
// used was lost (the server restarting, a connection the driver closed),
// up to three times. f must be idempotent.
func (db *DB) Retry(ctx context.Context, f func(context.Context) error) error {
	for attempt := 1; ; attempt++ {
		err := f(ctx)
		if err == nil || attempt == 3 || !lostConnection(err) || ctx.Err() != nil {
			return err
		}
		db.opts.Logger.Warn("clickhouse: connection lost; retrying", "attempt", attempt, "err", err)
		select {
		case <-ctx.Done():
		case <-time.After(time.Duration(attempt) * 100 * time.Millisecond):
		}
	}
}

// lostConnection reports whether err is a connection that broke (rather
// than an answer of the server).
func lostConnection(err error) bool {
	var ne net.Error
	return errors.Is(err, net.ErrClosed) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) || errors.As(err, &ne)
}

// Conn is the connection pool.
func (db *DB) Conn() driver.Conn { return db.conn }

// Name is the database's name.
func (db *DB) Name() string { return db.name }

// Options are the options db was opened with, defaults in place.
func (db *DB) Options() Options { return db.opts }

// Table is the name of a table of the database, as a statement names it.
func (db *DB) Table(name string) string { return "`" + db.name + "`." + name }

// Close releases the connections.
func (db *DB) Close() error { return db.conn.Close() }

// allLoopback reports whether every address names this host (localhost or
// a loopback IP).
func allLoopback(addrs []string) bool {
	if len(addrs) == 0 {
		return false
	}
	for _, a := range addrs {
		host, _, err := net.SplitHostPort(a)
		if err != nil {
			host = a
		}
		if host == "localhost" {
			continue
		}
		ip, err := netip.ParseAddr(host)
		if err != nil || !ip.IsLoopback() {
			return false
		}
	}
	return true
}
