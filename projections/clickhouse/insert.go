package clickhouse

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
)

// Columns is the column list of an INSERT: the names backquoted (a Nested
// column's has a dot, and current ClickHouse parses some plain names as
// keywords).
func Columns(names ...string) string {
	quoted := make([]string, len(names))
	for i, n := range names {
		quoted[i] = "`" + n + "`"
	}
	return strings.Join(quoted, ", ")
}

// RowByRow is an Array(UInt64) column that InsertColumns appends row by
// row: clickhouse-go takes a []uint64 row without reflection, but a
// [][]uint64 column through reflection, element by element.
type RowByRow [][]uint64

// InsertColumns is one INSERT into table, column by column (columns is
// their list, cols their values), under InsertTimeout; queryID names it
// for the server when not empty.
func (db *DB) InsertColumns(ctx context.Context, table, columns string, cols []any, queryID string) error {
	ctx, release := InsertContext(ctx, db.opts.InsertTimeout)
	defer release()
	if queryID != "" {
		ctx = clickhouse.Context(ctx, clickhouse.WithQueryID(queryID))
	}
	b, err := db.conn.PrepareBatch(ctx, "INSERT INTO "+db.Table(table)+" ("+columns+")")
	if err != nil {
		return fmt.Errorf("insert into %s: %w", table, err)
	}
	defer b.Close()
	for i, c := range cols {
		var err error
		if rows, ok := c.(RowByRow); ok {
			col := b.Column(i)
			for _, r := range rows {
				if err = col.AppendRow(r); err != nil {
					break
				}
			}
		} else {
			err = b.Column(i).Append(c)
		}
		if err != nil {
			return fmt.Errorf("insert into %s: column %d: %w", table, i, err)
		}
	}
	if err := b.Send(); err != nil {
		return fmt.Errorf("insert into %s: %w", table, err)
	}
	return nil
}

// ForChunks runs fn for the ids in chunks, each under QueryTimeout, with
// "?, ?, ..." placeholders for an IN list: ClickHouse 18.16 uses the primary
// key for IN with literals, not for has(array, column).
func (db *DB) ForChunks(ctx context.Context, ids []string, fn func(ctx context.Context, in string, args []any) error) error {
	const chunk = 1000
	for len(ids) > 0 {
		n := min(len(ids), chunk)
		args := make([]any, n)
		for i := range n {
			args[i] = ids[i]
		}
		qctx, cancel := context.WithTimeout(ctx, db.opts.QueryTimeout)
		err := fn(qctx, strings.TrimSuffix(strings.Repeat("?, ", n), ", "), args)
		cancel()
		if err != nil {
			return err
		}
		ids = ids[n:]
	}
	return nil
}

// InsertContext bounds an INSERT by timeout, like context.WithTimeout, but
// its release function does not cancel it: Done closes only when the
// timeout passes or the parent ends. clickhouse-go (v2.50) watches the
// context of batch.Send from a goroutine that closes the TCP connection when
// the context is done, and stops that goroutine without waiting for it: a
// context cancelled right after Send could close the connection after it went
// back to the pool, under another query (seen as "use of closed network
// connection" in a concurrent INSERT).
func InsertContext(parent context.Context, timeout time.Duration) (context.Context, func()) {
	c := &deadlineCtx{Context: parent, deadline: time.Now().Add(timeout), done: make(chan struct{})}
	if d, ok := parent.Deadline(); ok && d.Before(c.deadline) {
		c.deadline = d
	}
	timer := time.AfterFunc(time.Until(c.deadline), func() { c.finish(context.DeadlineExceeded) })
	stop := context.AfterFunc(parent, func() { c.finish(parent.Err()) })
	return c, func() {
		timer.Stop()
		stop()
	}
}

type deadlineCtx struct {
	context.Context
	deadline time.Time
	done     chan struct{}
	once     sync.Once
	mu       sync.Mutex
	err      error
}

func (c *deadlineCtx) finish(err error) {
	c.once.Do(func() {
		c.mu.Lock()
		c.err = err
		c.mu.Unlock()
		close(c.done)
	})
}

func (c *deadlineCtx) Deadline() (time.Time, bool) { return c.deadline, true }
func (c *deadlineCtx) Done() <-chan struct{}       { return c.done }
func (c *deadlineCtx) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}
