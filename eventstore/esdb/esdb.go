// Package esdb is the EventStoreDB (KurrentDB) adapter of the event store
// port, built on the v4 gRPC client.
//
// How the port maps to EventStoreDB:
//   - streams, versions and ExpectedVersion map one to one (versions are
//     stream revisions; Any, NoStream, StreamExists and Exact(v) are the
//     client's expected revisions);
//   - a Position is EventStoreDB's transaction-log position, commit and
//     prepare;
//   - the global log is $all without the system streams (names starting
//     with "$"), which are skipped on reads and filtered out on the server
//     for subscriptions;
//   - driver errors become the port's errors in errors.go.
package esdb

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/EventStore/EventStore-Client-Go/v4/esdb"

	"github.com/linkd/linkd/eventstore"
)

// Options tune the adapter. The zero value is ready to use.
type Options struct {
	// ConnectTimeout bounds the connection check of Open. Zero means 10s.
	ConnectTimeout time.Duration
	// Logger receives the client library's log lines. Nil drops them.
	Logger *slog.Logger
}

const defaultConnectTimeout = 10 * time.Second

// Store is an eventstore.Store on an EventStoreDB server. It is safe for
// concurrent use.
type Store struct {
	conf *esdb.Configuration
	// shared keeps leases and checkpoints (shared.go).
	shared *eventstore.Shared

	mu     sync.Mutex
	db     *esdb.Client
	closed bool
}

var _ eventstore.Store = (*Store)(nil)

// Open connects to the server named by connString (esdb://, esdb+discover://,
// kurrentdb:// or kurrentdb+discover://, with the client's usual settings
// such as ?tls=false) and checks, within opts.ConnectTimeout, that it can
// read the global log.
func Open(ctx context.Context, connString string, opts Options) (*Store, error) {
	cs, err := clientConnString(connString)
	if err != nil {
		return nil, err
	}
	conf, err := esdb.ParseConnectionString(cs)
	if err != nil {
		var uerr *url.Error // it quotes the string, password included
		if errors.As(err, &uerr) {
			err = uerr.Err
		}
		return nil, fmt.Errorf("esdb: bad connection string: %w", err)
	}
	conf.Logger = clientLogger(opts.Logger)
	db, err := esdb.NewClient(conf)
	if err != nil {
		return nil, fmt.Errorf("esdb: %w", err)
	}
	timeout := opts.ConnectTimeout
	if timeout <= 0 {
		timeout = defaultConnectTimeout
	}
	if err := ping(ctx, db, timeout); err != nil {
		db.Close()
		return nil, err
	}
	s := &Store{conf: conf, db: db}
	s.shared = newShared(s, opts)
	return s, nil
}

// ping reads the last event of $all. The client discovers the node on the
// first call without looking at any context, so the call runs aside and
// Open stops waiting for it at the deadline.
func ping(ctx context.Context, db *esdb.Client, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		rs, err := db.ReadAll(ctx, esdb.ReadAllOptions{Direction: esdb.Backwards, From: esdb.End{}}, 1)
		if err == nil {
			_, err = rs.Recv()
			rs.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || errors.Is(err, io.EOF) {
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("esdb: no answer from EventStoreDB within %s: %w", timeout, ctx.Err())
		}
		return translate("connect", err)
	case <-ctx.Done():
		return fmt.Errorf("esdb: no answer from EventStoreDB within %s: %w", timeout, ctx.Err())
	}
}

// clientConnString maps the KurrentDB schemes to the ones the v4 client
// parses; the rest of the string is kept as it is.
func clientConnString(s string) (string, error) {
	scheme, rest, ok := strings.Cut(s, "://")
	if !ok {
		return "", errors.New("esdb: connection string needs a scheme: esdb://, esdb+discover://, kurrentdb:// or kurrentdb+discover://")
	}
	switch strings.ToLower(scheme) {
	case "esdb", "kurrentdb", "kurrent":
		return "esdb://" + rest, nil
	case "esdb+discover", "kurrentdb+discover", "kurrent+discover":
		return "esdb+discover://" + rest, nil
	}
	return "", fmt.Errorf("esdb: unsupported scheme %q: want esdb://, esdb+discover://, kurrentdb:// or kurrentdb+discover://", scheme)
}

// clientLogger adapts the client's logging to slog, one level down: the
// client logs as errors what it also returns to the caller, and as
// information each step of its node discovery.
func clientLogger(l *slog.Logger) esdb.LoggingFunc {
	if l == nil {
		return esdb.NoopLogging()
	}
	return func(level esdb.LogLevel, format string, args ...any) {
		lv := slog.LevelDebug
		if level == esdb.LogWarn || level == esdb.LogError {
			lv = slog.LevelWarn
		}
		l.Log(context.Background(), lv, fmt.Sprintf(format, args...), "component", "esdb")
	}
}

// client returns the current client, or ErrClosed after Close.
func (s *Store) client() (*esdb.Client, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, fmt.Errorf("esdb: %w", eventstore.ErrClosed)
	}
	return s.db, nil
}

// fail turns err from an operation on db into the error to return. The v4
// client closes itself for good when it cannot rediscover the node after a
// connection loss; the store then replaces it, so the next call reconnects
// instead of failing for ever.
func (s *Store) fail(ctx context.Context, db *esdb.Client, op string, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("esdb: %s: %w", op, ctx.Err())
	}
	if errorCode(err) == esdb.ErrorCodeConnectionClosed {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.closed {
			return fmt.Errorf("esdb: %s: %w", op, eventstore.ErrClosed)
		}
		if s.db == db {
			if fresh, nerr := esdb.NewClient(s.conf); nerr == nil {
				db.Close()
				s.db = fresh
			}
		}
		return fmt.Errorf("esdb: %s: connection to EventStoreDB lost, reconnecting: %v", op, err)
	}
	return translate(op, err)
}

// Close writes the checkpoints saved and not written yet, then closes the
// connection. Calls in flight fail; subscriptions end with ErrClosed.
func (s *Store) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), flushTimeout)
	defer cancel()
	var flushErr error
	if _, err := s.client(); err == nil && s.shared != nil {
		flushErr = s.shared.Flush(ctx)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	return errors.Join(flushErr, s.db.Close())
}
