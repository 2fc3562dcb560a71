package webhooks

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/linkd/linkd/eventstore"
	"github.com/linkd/linkd/internal/storage/sqlitedb"
	"github.com/linkd/linkd/queries"
)

// queue is where messages wait for their attempts, and where the attempts
// and each webhook's run of failures are recorded. Two backends share the
// projection and the delivery logic: the instance's own SQLite database
// (sqliteQueue, one process) and PostgreSQL, shared by every instance of a
// deployment whose event store it is (pgQueue, ADR 0108).
type queue interface {
	// write applies what a batch of the projection (or a replay) changes.
	// b is the projection's SQLite transaction (nil for a replay): the
	// SQLite queue writes in it, with the checkpoint; PostgreSQL commits a
	// transaction of its own first, so that a crash between the two applies
	// the batch again, which changes nothing.
	write(ctx context.Context, b *sqlitedb.Batch, c *changes) error
	// take gives messages of a webhook due at now, up to a backend's
	// bound with the busy ones its runner holds, which no other
	// deliverer is given until their result is recorded (or, in
	// PostgreSQL, their claim ends); when none is due, how long until the
	// next is.
	take(ctx context.Context, webhookID string, now time.Time, concurrency, busy int) ([]message, time.Duration, error)
	// extend keeps this deliverer's claims of the messages held, from now.
	extend(ctx context.Context, held []string, now time.Time) error
	// record writes the outcomes of attempts; failing are the webhooks
	// whose attempts in the batch all failed (with the first failure's
	// time), healthy those with a success. It returns, for each failing
	// webhook, since when it has failed without a success in between.
	record(ctx context.Context, outs []outcome, failing map[string]int64, healthy []string) (map[string]int64, error)
	// release lets other deliverers take the messages this one holds.
	release(ctx context.Context) error
	// alive says this deliverer is alive at now (Unix ms) and counts the
	// deliverers that are, itself included: each webhook's concurrency is
	// shared between them.
	alive(ctx context.Context, now int64) (int, error)
	// oldestDue is the due time of the oldest message due at now: one
	// step in an index.
	oldestDue(ctx context.Context, now int64) (sql.NullInt64, error)
	// dueCount counts the messages due at now: a scan of the pending
	// ones, which measure paces by its cost.
	dueCount(ctx context.Context, now int64) (int64, error)
	// prune forgets attempts and finished messages made before before.
	prune(ctx context.Context, before int64) error
	// deliveries lists a webhook's attempts and pending messages, newest
	// first.
	deliveries(ctx context.Context, webhookID string, limit, offset int) ([]queries.WebhookDelivery, error)
	close() error
}

// changes is what a batch of the projection, or a replay, writes to the
// queue.
type changes struct {
	msgs []queued
	// replay sends the messages again: a new round of those that exist.
	replay bool
	// dropped are webhooks deleted: their pending messages fail.
	dropped []string
	// reenabled are webhooks turned on again, and when (Unix ms): a run of
	// failures that started before ends.
	reenabled map[string]int64
	// now is when the messages are due (Unix ms).
	now int64
}

func (c *changes) empty() bool {
	return len(c.msgs) == 0 && len(c.dropped) == 0 && len(c.reenabled) == 0
}

// queued is a message to queue.
type queued struct {
	webhookID, eventID, eventType string
	body                          []byte
	// eventTime is when the event was recorded.
	eventTime time.Time
	// before is the position of the event the projection applied before
	// this one's (hot.go).
	before eventstore.Position
	// durable: made again after a crash, it is written to the table.
	durable bool
	// attempts and next: made again by a takeover (progress.go), it waits
	// for its next attempt, due at next, after attempts made by another
	// instance.
	attempts int
	next     sql.NullInt64
}

func (m *queued) id() string { return MessageID(m.eventID, m.webhookID) }

// outcome is what the result of an attempt writes: an attempt (unless
// abandoned) and the message's new state, in its round only.
type outcome struct {
	msg       message
	webhookID string
	// abandon: the webhook is off or gone, no attempt was made: the
	// message fails.
	abandon bool
	attempt int
	// result is the attempt's status, succeeded or failed; status the
	// message's after it: succeeded, failed or pending.
	result, status string
	respStatus     sql.NullInt64
	respBody       string
	durMS, at      int64
	next           sql.NullInt64
}

// finished: the message keeps no body (a replay builds it again).
func (o *outcome) finished() bool { return o.status != "pending" }

// deliveriesSQL lists a webhook's attempts and the next attempt of each of
// its pending messages, newest first (in one order on every instance);
// bind names the n-th parameter.
func deliveriesSQL(messages, attempts string, bind func(n int) string) string {
	return fmt.Sprintf(`SELECT * FROM (
		SELECT 'att_' || seq AS id, message_id, event_type, attempt, status, response_status, response_body, duration_ms, created_at, next_attempt_at, seq AS o
			FROM %[2]s WHERE webhook_id = %[3]s
		UNION ALL
		SELECT 'pend_' || id || '_' || (attempts + 1), id, event_type, attempts + 1, 'pending', NULL, NULL, NULL, COALESCE(next_attempt_at, created_at), next_attempt_at, 9223372036854775807
			FROM %[1]s WHERE webhook_id = %[3]s AND status = 'pending') AS d
		ORDER BY created_at DESC, o DESC, id DESC LIMIT %[4]s OFFSET %[5]s`, messages, attempts, bind(1), bind(2), bind(3))
}

// scanDeliveries reads the rows of deliveriesSQL.
func scanDeliveries(rows interface {
	Next() bool
	Scan(...any) error
	Err() error
}) ([]queries.WebhookDelivery, error) {
	var out []queries.WebhookDelivery
	for rows.Next() {
		var d queries.WebhookDelivery
		var rs, dur, next sql.NullInt64
		var body sql.NullString
		var ca, o int64
		if err := rows.Scan(&d.ID, &d.MessageID, &d.EventType, &d.Attempt, &d.Status, &rs, &body, &dur, &ca, &next, &o); err != nil {
			return nil, err
		}
		if rs.Valid {
			v := int(rs.Int64)
			d.ResponseStatus = &v
		}
		if body.Valid {
			v := body.String
			d.ResponseBody = &v
		}
		if dur.Valid {
			v := dur.Int64
			d.DurationMS = &v
		}
		if next.Valid {
			t := time.UnixMilli(next.Int64).UTC()
			d.NextAttemptAt = &t
		}
		d.CreatedAt = time.UnixMilli(ca).UTC()
		out = append(out, d)
	}
	return out, rows.Err()
}

// cleanText makes a receiver's answer storable as text: valid UTF-8
// without NUL (PostgreSQL's text refuses both).
func cleanText(s string) string {
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "\uFFFD")
}
