package webhooks

import (
	"context"
	"database/sql"
	"errors"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/linkd/linkd/internal/storage/sqlitedb"
	"github.com/linkd/linkd/queries"
)

// sqliteQueue keeps the queue in the instance's webhooks.db, beside the
// webhooks and the checkpoint (one process: the embedded event store).
// Reads do not claim: a runner reads on after the last message it was
// given, and a message whose result was recorded after a read began is not
// given again from that read.
type sqliteQueue struct {
	w, r *sql.DB

	mu    sync.Mutex
	marks map[string]*readMark // by webhook
	// hot is the projection's hand-off: messages not written yet.
	hot *handOff
	// gen counts the transactions that wrote messages. It is moved inside
	// them, on the one writer connection the due reads use too, so a read
	// that starts after the move sees what they wrote.
	gen atomic.Int64
	// reads counts the due reads (tests).
	reads atomic.Int64
}

// readMark is where a webhook's reads go on from, and the messages recorded
// lately (with when).
type readMark struct {
	at       int64
	id       string
	finished map[string]time.Time
	// read is when the table was last read: while the hand-off fills
	// every take, the table is still read every second (retries).
	read time.Time
	// idle: the last read found nothing due, with gen at idleGen, and the
	// first message waiting is due at nextDue (Unix ms): until a write or
	// then, the table is not read again (within a second).
	idle    bool
	idleGen int64
	nextDue int64
}

func newSQLiteQueue(w, r *sql.DB) *sqliteQueue {
	return &sqliteQueue{w: w, r: r, marks: map[string]*readMark{}}
}

func (q *sqliteQueue) close() error { return nil }

// insertPendingSQL inserts a pending message: (id, webhook_id, event_id,
// event_type, body, created_at, attempts, next_attempt_at, before_commit,
// before_prepare). A new message has made no attempt and is due at once.
const insertPendingSQL = `INSERT INTO messages (id, webhook_id, event_id, event_type, body, created_at, attempts, status, next_attempt_at, before_commit, before_prepare)
		VALUES (?, ?, ?, ?, ?, ?, ?, 'pending', ?, ?, ?)`

func (q *sqliteQueue) write(ctx context.Context, b *sqlitedb.Batch, c *changes) error {
	if b == nil {
		tx, err := q.w.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback()
		if err := q.write(ctx, sqlitedb.NewBatch(ctx, tx), c); err != nil {
			return err
		}
		return tx.Commit()
	}
	if len(c.msgs) > 0 || len(c.dropped) > 0 {
		q.gen.Add(1)
	}
	ins := insertPendingSQL + ` ON CONFLICT(id) DO NOTHING`
	if c.replay {
		ins = insertPendingSQL + ` ON CONFLICT(id) DO UPDATE SET status = 'pending', attempts = 0, body = excluded.body,
			next_attempt_at = excluded.next_attempt_at, created_at = excluded.created_at, round = round + 1,
			before_commit = excluded.before_commit, before_prepare = excluded.before_prepare`
	}
	for i := range c.msgs {
		m := &c.msgs[i]
		stmt, next := ins, any(c.now)
		if m.attempts > 0 {
			// Made again by a takeover: it waits for its next attempt.
			stmt, next = insertPendingSQL+` ON CONFLICT(id) DO NOTHING`, m.next
		}
		if err := b.Exec(stmt, m.id(), m.webhookID, m.eventID, m.eventType, m.body, c.now, m.attempts, next, m.before.Commit, m.before.Prepare); err != nil {
			return err
		}
	}
	for _, id := range c.dropped {
		if err := b.Exec(`UPDATE messages SET status = 'failed', next_attempt_at = NULL WHERE webhook_id = ? AND status = 'pending'`, id); err != nil {
			return err
		}
	}
	for id := range c.reenabled {
		if err := b.Exec(`UPDATE webhooks SET failing_since = NULL WHERE id = ?`, id); err != nil {
			return err
		}
	}
	return nil
}

// mark is a webhook's readMark; q.mu is held.
func (q *sqliteQueue) mark(webhookID string) *readMark {
	c := q.marks[webhookID]
	if c == nil {
		c = &readMark{finished: map[string]time.Time{}}
		q.marks[webhookID] = c
	}
	return c
}

// take reads on after the last message it gave (messages in flight are
// not read again and again); a read that finds nothing starts over from
// the oldest once. A read takes up to 256 messages (about 400 KB of bodies
// at most), handed out as workers free up: one read per 256 deliveries.
func (q *sqliteQueue) take(ctx context.Context, webhookID string, now time.Time, concurrency, busy int) ([]message, time.Duration, error) {
	read := time.Now()
	var hot []message
	if q.hot != nil {
		hot = q.hot.take(webhookID, max(256, concurrency))
	}
	q.mu.Lock()
	c := q.mark(webhookID)
	if len(hot) > 0 && read.Sub(c.read) < time.Second {
		q.mu.Unlock()
		return hot, 0, nil
	}
	if len(hot) == 0 && c.idle && c.idleGen == q.gen.Load() && now.UnixMilli() < c.nextDue && read.Sub(c.read) < time.Second {
		q.mu.Unlock()
		return nil, time.Duration(c.nextDue-now.UnixMilli()) * time.Millisecond, nil
	}
	gen := q.gen.Load()
	c.read = read
	for id, at := range c.finished {
		if read.Sub(at) > 10*time.Second {
			delete(c.finished, id)
		}
	}
	at, id := c.at, c.id
	q.mu.Unlock()
	for {
		msgs, next, err := q.due(ctx, webhookID, now, max(256, concurrency)+busy, at, id)
		if err != nil {
			if len(hot) > 0 {
				return hot, 0, nil // taken: they are the runner's now
			}
			return nil, next, err
		}
		if len(msgs) == 0 && (at != 0 || id != "") {
			at, id = 0, ""
			continue
		}
		q.mu.Lock()
		defer q.mu.Unlock()
		out := msgs[:0]
		for _, m := range msgs {
			c.at, c.id = m.next, m.id
			if fin, ok := c.finished[m.id]; ok && !fin.Before(read) {
				continue
			}
			out = append(out, m)
		}
		c.idle = len(msgs) == 0
		if c.idle {
			c.at, c.id = 0, ""
			c.idleGen, c.nextDue = gen, now.Add(next).UnixMilli()
		}
		if len(hot) > 0 {
			return append(hot, out...), 0, nil
		}
		return out, next, nil
	}
}

// due reads up to limit messages of a webhook due at now, after the
// message (afterAt, afterID) in due order, and how long until the next one
// is due when none is. It reads on the writer's connection, whose page
// cache no other connection's write empties (ADR 0101).
func (q *sqliteQueue) due(ctx context.Context, webhookID string, now time.Time, limit int, afterAt int64, afterID string) ([]message, time.Duration, error) {
	q.reads.Add(1)
	rows, err := q.w.QueryContext(ctx, `SELECT next_attempt_at, id, event_type, body, attempts, created_at, round FROM messages
		WHERE webhook_id = ? AND status = 'pending' AND next_attempt_at <= ? AND next_attempt_at >= ? AND (next_attempt_at > ? OR id > ?)
		ORDER BY next_attempt_at, id LIMIT ?`, webhookID, now.UnixMilli(), afterAt, afterAt, afterID, limit)
	if err != nil {
		return nil, 0, err
	}
	out, err := scanMessages(rows)
	if err != nil || len(out) > 0 {
		return out, 0, err
	}
	var next sql.NullInt64
	if err := q.w.QueryRowContext(ctx, `SELECT MIN(next_attempt_at) FROM messages WHERE webhook_id = ? AND status = 'pending'`, webhookID).Scan(&next); err != nil {
		return nil, 0, err
	}
	return nil, untilNext(next, now), nil
}

// scanMessages reads rows of (next_attempt_at, id, event_type, body,
// attempts, created_at, round) and closes them.
func scanMessages(rows interface {
	Next() bool
	Scan(...any) error
	Err() error
	Close() error
}) ([]message, error) {
	defer rows.Close()
	var out []message
	for rows.Next() {
		var m message
		if err := rows.Scan(&m.next, &m.id, &m.eventType, &m.body, &m.attempts, &m.createdAt, &m.round); err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, rows.Err()
}

// untilNext is the wait until next (a due time in Unix ms), a second when
// there is none.
func untilNext(next sql.NullInt64, now time.Time) time.Duration {
	if !next.Valid {
		return time.Second
	}
	return time.Duration(next.Int64-now.UnixMilli()) * time.Millisecond
}

func (q *sqliteQueue) record(ctx context.Context, outs []outcome, failing map[string]int64, healthy []string) (map[string]int64, error) {
	tx, err := q.w.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	b := sqlitedb.NewBatch(ctx, tx)
	var settling map[string]bool
	for i := range outs {
		if o := &outs[i]; !o.msg.hot || o.status != "succeeded" {
			q.gen.Add(1) // a row is written
			break
		}
	}
	for i := range outs {
		o := &outs[i]
		if o.msg.hot {
			if settling == nil {
				settling = map[string]bool{}
			}
			settling[o.msg.id] = true
			if err := q.recordHot(b, o); err != nil {
				return nil, err
			}
			continue
		}
		if o.abandon {
			if err := b.Exec(`UPDATE messages SET status = 'failed', next_attempt_at = NULL WHERE id = ? AND status = 'pending' AND round = ?`, o.msg.id, o.msg.round); err != nil {
				return nil, err
			}
			continue
		}
		if err := insertAttempt(b, o); err != nil {
			return nil, err
		}
		// A message done with keeps no body: a replay builds it again from
		// the log.
		if err := b.Exec(`UPDATE messages SET status = ?, attempts = ?, next_attempt_at = ?,
			body = CASE WHEN ? THEN x'' ELSE body END WHERE id = ? AND round = ?`, o.status, o.attempt, o.next, o.finished(), o.msg.id, o.msg.round); err != nil {
			return nil, err
		}
	}
	since := make(map[string]int64, len(failing))
	for id, at := range failing {
		var s int64
		err := b.QueryRow(`UPDATE webhooks SET failing_since = COALESCE(failing_since, ?) WHERE id = ? RETURNING failing_since`, at, id).Scan(&s)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return nil, err
		}
		if err == nil {
			since[id] = s
		}
	}
	for _, id := range healthy {
		if err := b.Exec(`UPDATE webhooks SET failing_since = NULL WHERE id = ? AND failing_since IS NOT NULL`, id); err != nil {
			return nil, err
		}
	}
	var seq int64
	if settling != nil {
		if err := q.hot.save(b, settling); err != nil {
			return nil, err
		}
		if err := b.QueryRow(`SELECT COALESCE(MAX(seq), 0) FROM attempts`).Scan(&seq); err != nil {
			return nil, err
		}
	}
	if err := tx.Commit(); err != nil {
		return nil, err
	}
	if settling != nil {
		q.hot.settled(settling, seq)
	}
	done := time.Now()
	q.mu.Lock()
	for i := range outs {
		if !outs[i].msg.hot {
			q.mark(outs[i].webhookID).finished[outs[i].msg.id] = done
		}
	}
	q.mu.Unlock()
	return since, nil
}

// insertAttempt logs the attempt of an outcome.
func insertAttempt(b *sqlitedb.Batch, o *outcome) error {
	return b.Exec(`INSERT INTO attempts (message_id, webhook_id, event_type, attempt, status, response_status, response_body, duration_ms, created_at, next_attempt_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, o.msg.id, o.webhookID, o.msg.eventType, o.attempt, o.result, o.respStatus, o.respBody, o.durMS, o.at, o.next)
}

// recordHot writes the outcome of a message handed off in memory: its
// attempt, and its row only when it is not done with (a retry waits in
// the table) or failed for good. A webhook gone or off leaves nothing:
// the message fails, as its pending row would.
func (q *sqliteQueue) recordHot(b *sqlitedb.Batch, o *outcome) error {
	if o.abandon {
		return nil
	}
	if err := insertAttempt(b, o); err != nil {
		return err
	}
	if o.status == "succeeded" {
		return nil
	}
	body := o.msg.body
	if o.finished() {
		body = []byte{}
	}
	return b.Exec(`INSERT INTO messages (id, webhook_id, event_id, event_type, body, created_at, attempts, status, next_attempt_at, before_commit, before_prepare)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(id) DO NOTHING`, o.msg.id, o.webhookID, o.msg.eventID, o.msg.eventType, body, o.msg.createdAt, o.attempt, o.status, o.next,
		o.msg.before.Commit, o.msg.before.Prepare)
}

func (q *sqliteQueue) release(context.Context) error { return nil }

func (q *sqliteQueue) extend(context.Context, []string, time.Time) error { return nil }

func (q *sqliteQueue) alive(context.Context, int64) (int, error) { return 1, nil }

// oldestDue and dueCount read the partial index of pending messages only:
// the oldest due time stands for the oldest message waiting (a first attempt is due when
// its message is made).
func (q *sqliteQueue) oldestDue(ctx context.Context, now int64) (oldest sql.NullInt64, err error) {
	err = q.r.QueryRowContext(ctx, `SELECT MIN(next_attempt_at) FROM messages WHERE status = 'pending' AND next_attempt_at <= ?`, now).Scan(&oldest)
	return oldest, err
}

func (q *sqliteQueue) dueCount(ctx context.Context, now int64) (n int64, err error) {
	err = q.r.QueryRowContext(ctx, `SELECT COUNT(*) FROM messages WHERE status = 'pending' AND next_attempt_at <= ?`, now).Scan(&n)
	return n, err
}

func (q *sqliteQueue) prune(ctx context.Context, before int64) error {
	for _, s := range []string{
		`DELETE FROM attempts WHERE created_at < ?`,
		`DELETE FROM messages WHERE status != 'pending' AND created_at < ?`,
	} {
		if _, err := q.w.ExecContext(ctx, s, before); err != nil {
			return err
		}
	}
	return nil
}

// deliveries lists the table's lines with the messages in memory, pending
// before their first attempt: the newest first, pending ones before the
// attempts made at the same time, as deliveriesSQL orders them.
func (q *sqliteQueue) deliveries(ctx context.Context, webhookID string, limit, offset int) ([]queries.WebhookDelivery, error) {
	var hot []queries.WebhookDelivery
	if q.hot != nil {
		hot = q.hot.pendingOf(webhookID)
	}
	if len(hot) == 0 {
		return q.tableDeliveries(ctx, webhookID, limit, offset)
	}
	rows, err := q.tableDeliveries(ctx, webhookID, limit+offset, 0)
	if err != nil {
		return nil, err
	}
	all := append(rows, hot...)
	pending := func(d *queries.WebhookDelivery) int {
		if d.Status == "pending" {
			return 1
		}
		return 0
	}
	slices.SortStableFunc(all, func(a, b queries.WebhookDelivery) int {
		if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
			return c
		}
		return pending(&b) - pending(&a)
	})
	if offset >= len(all) {
		return nil, nil
	}
	return all[offset:min(len(all), offset+limit)], nil
}

func (q *sqliteQueue) tableDeliveries(ctx context.Context, webhookID string, limit, offset int) ([]queries.WebhookDelivery, error) {
	rows, err := q.r.QueryContext(ctx, deliveriesSQL("messages", "attempts", func(n int) string { return "?" + strconv.Itoa(n) }), webhookID, limit, offset)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	return scanDeliveries(rows)
}
