package webhooks

import (
	"cmp"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/linkd/linkd/internal/storage/sqlitedb"
	"github.com/linkd/linkd/queries"
)

// pgQueue keeps the queue in the PostgreSQL database of the event store,
// shared by every instance of a deployment (ADR 0108; the tables are the
// store's migration 5). Every instance's projection queues every message,
// by its id, once; a deliverer claims the messages it sends (FOR UPDATE
// SKIP LOCKED) until a deadline, or until it stops saying it is alive,
// after which any other takes them; a result ends only the round and the
// claim it was sent under.
type pgQueue struct {
	pool *pgxpool.Pool
	// owner names this deliverer's claims.
	owner string
	// claimFor is how long a claim holds unless extended
	// (DeliveryOptions.ClaimTimeout: NewDeliverer sets it).
	claimFor time.Duration
	// aliveFor is how long a deliverer that said it was alive counts as
	// such (it says so every second): its claims end with it.
	aliveFor time.Duration

	mu sync.Mutex
	// prunedBefore is linkd_webhook_pruned, as read at prunedRead.
	prunedBefore int64
	prunedRead   time.Time
}

// prunedMargin: an event recorded less than this after the last prune's
// horizon may have had its message pruned, and is not queued again by an
// instance that reads the log from its start (it was queued when it was
// new). Prunes move the horizon by an hour at a time.
const prunedMargin = 24 * time.Hour

func openPGQueue(dsn string) (*pgQueue, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, errors.New("webhooks: bad PostgreSQL connection string")
	}
	cfg.MaxConns = 8
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		return nil, fmt.Errorf("webhooks: %w", err)
	}
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return &pgQueue{pool: pool, owner: hex.EncodeToString(b), claimFor: DefaultClaimTimeout, aliveFor: aliveFor}, nil
}

func (q *pgQueue) close() error {
	q.pool.Close()
	return nil
}

// pruned is the horizon of the last prune, read at most once a minute.
func (q *pgQueue) pruned(ctx context.Context) (int64, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if time.Since(q.prunedRead) < time.Minute {
		return q.prunedBefore, nil
	}
	var before int64
	err := q.pool.QueryRow(ctx, `SELECT before FROM linkd_webhook_pruned WHERE id = 1`).Scan(&before)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return 0, err
	}
	q.prunedBefore, q.prunedRead = before, time.Now()
	return before, nil
}

const (
	insertMessages = `INSERT INTO linkd_webhook_messages (id, webhook_id, event_id, event_type, body, created_at, status, next_attempt_at)
		SELECT u.id, u.w, u.e, u.t, u.b, $6, 'pending', $6 FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::bytea[]) AS u(id, w, e, t, b)`
	queueMessages  = insertMessages + ` ON CONFLICT (id) DO NOTHING`
	replayMessages = insertMessages + ` ON CONFLICT (id) DO UPDATE SET status = 'pending', attempts = 0, body = excluded.body,
		next_attempt_at = excluded.next_attempt_at, created_at = excluded.created_at, round = linkd_webhook_messages.round + 1,
		claimed_until = NULL, claimed_by = NULL`
)

func (q *pgQueue) write(ctx context.Context, _ *sqlitedb.Batch, c *changes) error {
	if c.empty() {
		return nil
	}
	var horizon int64
	if !c.replay && len(c.msgs) > 0 {
		before, err := q.pruned(ctx)
		if err != nil {
			return err
		}
		if before > 0 {
			horizon = before + prunedMargin.Milliseconds()
		}
	}
	var ids, hooks, events, types []string
	var bodies [][]byte
	seen := map[string]bool{}
	for i := range c.msgs {
		m := &c.msgs[i]
		id := m.id()
		if seen[id] || m.eventTime.UnixMilli() < horizon {
			continue
		}
		seen[id] = true
		ids, hooks, events, types, bodies = append(ids, id), append(hooks, m.webhookID), append(events, m.eventID), append(types, m.eventType), append(bodies, m.body)
	}
	var reIDs []string
	var reAt []int64
	for id, at := range c.reenabled {
		reIDs, reAt = append(reIDs, id), append(reAt, at)
	}
	if len(ids) == 0 && len(c.dropped) == 0 && len(reIDs) == 0 {
		return nil // every message was older than the horizon
	}
	return pgx.BeginFunc(ctx, q.pool, func(tx pgx.Tx) error {
		if len(ids) > 0 {
			ins := queueMessages
			if c.replay {
				ins = replayMessages
			}
			if _, err := tx.Exec(ctx, ins, ids, hooks, events, types, bodies, c.now); err != nil {
				return err
			}
		}
		if len(c.dropped) > 0 {
			if _, err := tx.Exec(ctx, `UPDATE linkd_webhook_messages SET status = 'failed', next_attempt_at = NULL
				WHERE webhook_id = ANY($1) AND status = 'pending'`, c.dropped); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `DELETE FROM linkd_webhook_health WHERE webhook_id = ANY($1)`, c.dropped); err != nil {
				return err
			}
		}
		if len(reIDs) > 0 {
			// Only a run of failures that began before the webhook was
			// turned on again ends: an instance applying an old event does
			// not end today's.
			if _, err := tx.Exec(ctx, `DELETE FROM linkd_webhook_health h USING unnest($1::text[], $2::bigint[]) AS u(id, at)
				WHERE h.webhook_id = u.id AND h.failing_since < u.at`, reIDs, reAt); err != nil {
				return err
			}
		}
		return nil
	})
}

// take claims due messages that no deliverer holds, or whose claim ended
// or whose deliverer is not alive (it died: SIGKILL leaves its claims; not
// this one, late to say it is alive, whose runners hold them), in due
// order. A runner holds up to eight times its
// share of the concurrency (256 alone; fewer each when many share a
// webhook, so that a burst is spread over them), its claims extended while
// it does.
func (q *pgQueue) take(ctx context.Context, webhookID string, now time.Time, concurrency, busy int) ([]message, time.Duration, error) {
	limit := 8*concurrency - busy
	if limit <= 0 {
		return nil, time.Second, nil
	}
	ms := now.UnixMilli()
	rows, err := q.pool.Query(ctx, `UPDATE linkd_webhook_messages m SET claimed_until = $3, claimed_by = $4
		FROM (SELECT id FROM linkd_webhook_messages
			WHERE webhook_id = $1 AND status = 'pending' AND next_attempt_at <= $2 AND (claimed_until IS NULL OR claimed_until < $2
				OR (claimed_by <> $4 AND NOT EXISTS (SELECT 1 FROM linkd_webhook_deliverers d WHERE d.owner = claimed_by AND d.seen > $6)))
			ORDER BY next_attempt_at, id LIMIT $5 FOR UPDATE SKIP LOCKED) AS c
		WHERE m.id = c.id
		RETURNING m.next_attempt_at, m.id, m.event_type, m.body, m.attempts, m.created_at, m.round`,
		webhookID, ms, ms+q.claimFor.Milliseconds(), q.owner, limit, ms-q.aliveFor.Milliseconds())
	if err != nil {
		return nil, 0, err
	}
	out, err := scanMessages(pgRows{rows})
	if err != nil || len(out) > 0 {
		slices.SortFunc(out, func(a, b message) int { return cmp.Or(cmp.Compare(a.next, b.next), strings.Compare(a.id, b.id)) })
		return out, 0, err
	}
	var next sql.NullInt64
	if err := q.pool.QueryRow(ctx, `SELECT MIN(next_attempt_at) FROM linkd_webhook_messages WHERE webhook_id = $1 AND status = 'pending'`, webhookID).Scan(&next); err != nil {
		return nil, 0, err
	}
	return nil, untilNext(next, now), nil
}

// pgRows adapts pgx.Rows to scanMessages and scanDeliveries.
type pgRows struct{ pgx.Rows }

func (r pgRows) Close() error {
	r.Rows.Close()
	return r.Rows.Err()
}

func (q *pgQueue) record(ctx context.Context, outs []outcome, failing map[string]int64, healthy []string) (map[string]int64, error) {
	var (
		aMsg, aHook, aType, aResult, aBody []string
		aAttempt                           []int32
		aStatus                            []*int32
		aDur, aAt                          []int64
		aNext                              []*int64
		uID, uStatus                       []string
		uRound                             []int64
		uAttempts                          []int32
		uNext                              []*int64
		uAbandon                           []bool
	)
	for i := range outs {
		o := &outs[i]
		var next *int64
		if o.next.Valid {
			next = &o.next.Int64
		}
		uID, uRound, uStatus, uAttempts, uNext, uAbandon = append(uID, o.msg.id), append(uRound, o.msg.round), append(uStatus, o.status),
			append(uAttempts, int32(o.attempt)), append(uNext, next), append(uAbandon, o.abandon)
		if o.abandon {
			continue
		}
		var rs *int32
		if o.respStatus.Valid {
			v := int32(o.respStatus.Int64)
			rs = &v
		}
		aMsg, aHook, aType, aAttempt, aResult = append(aMsg, o.msg.id), append(aHook, o.webhookID), append(aType, o.msg.eventType), append(aAttempt, int32(o.attempt)), append(aResult, o.result)
		aStatus, aBody, aDur, aAt, aNext = append(aStatus, rs), append(aBody, o.respBody), append(aDur, o.durMS), append(aAt, o.at), append(aNext, next)
	}
	// Health rows in one order on every instance: no deadlock between two
	// batches that fail the same webhooks.
	fIDs := make([]string, 0, len(failing))
	for id := range failing {
		fIDs = append(fIDs, id)
	}
	slices.Sort(fIDs)
	fAt := make([]int64, len(fIDs))
	for i, id := range fIDs {
		fAt[i] = failing[id]
	}
	healthy = slices.Sorted(slices.Values(healthy))
	since := make(map[string]int64, len(failing))
	err := pgx.BeginFunc(ctx, q.pool, func(tx pgx.Tx) error {
		if len(aMsg) > 0 {
			if _, err := tx.Exec(ctx, `INSERT INTO linkd_webhook_attempts (message_id, webhook_id, event_type, attempt, status, response_status, response_body, duration_ms, created_at, next_attempt_at)
				SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::int[], $5::text[], $6::int[], $7::text[], $8::bigint[], $9::bigint[], $10::bigint[])`,
				aMsg, aHook, aType, aAttempt, aResult, aStatus, aBody, aDur, aAt, aNext); err != nil {
				return err
			}
		}
		// A result ends its own round, under this deliverer's claim: not a
		// replay's next round, nor a message another deliverer took over.
		// A message done with keeps no body.
		if len(uID) > 0 {
			if _, err := tx.Exec(ctx, `UPDATE linkd_webhook_messages m SET status = u.status,
					attempts = CASE WHEN u.abandon THEN m.attempts ELSE u.attempts END, next_attempt_at = u.next,
					body = CASE WHEN u.status = 'pending' THEN m.body ELSE ''::bytea END, claimed_until = NULL, claimed_by = NULL
				FROM unnest($1::text[], $2::bigint[], $3::text[], $4::int[], $5::bigint[], $6::bool[]) AS u(id, round, status, attempts, next, abandon)
				WHERE m.id = u.id AND m.round = u.round AND m.claimed_by = $7 AND (NOT u.abandon OR m.status = 'pending')`,
				uID, uRound, uStatus, uAttempts, uNext, uAbandon, q.owner); err != nil {
				return err
			}
		}
		if len(fIDs) > 0 {
			rows, err := tx.Query(ctx, `INSERT INTO linkd_webhook_health AS h (webhook_id, failing_since) SELECT * FROM unnest($1::text[], $2::bigint[])
				ON CONFLICT (webhook_id) DO UPDATE SET failing_since = h.failing_since RETURNING webhook_id, failing_since`, fIDs, fAt)
			if err != nil {
				return err
			}
			for rows.Next() {
				var id string
				var s int64
				if err := rows.Scan(&id, &s); err != nil {
					rows.Close()
					return err
				}
				since[id] = s
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				return err
			}
		}
		if len(healthy) > 0 {
			if _, err := tx.Exec(ctx, `DELETE FROM linkd_webhook_health WHERE webhook_id = ANY($1)`, healthy); err != nil {
				return err
			}
		}
		return nil
	})
	return since, err
}

func (q *pgQueue) extend(ctx context.Context, held []string, now time.Time) error {
	if len(held) == 0 {
		return nil
	}
	_, err := q.pool.Exec(ctx, `UPDATE linkd_webhook_messages SET claimed_until = $2
		WHERE id = ANY($1) AND claimed_by = $3 AND status = 'pending'`, held, now.Add(q.claimFor).UnixMilli(), q.owner)
	return err
}

// release gives up this deliverer's claims (it stops): another takes them
// at once rather than after the deadline; and it is no longer counted.
func (q *pgQueue) release(ctx context.Context) error { return q.releaseOwner(ctx, q.owner) }

// releaseOwner gives up owner's claims, and forgets that it was alive.
func (q *pgQueue) releaseOwner(ctx context.Context, owner string) error {
	_, err := q.pool.Exec(ctx, `UPDATE linkd_webhook_messages SET claimed_until = NULL, claimed_by = NULL
		WHERE claimed_by = $1 AND status = 'pending'`, owner)
	if err != nil {
		return err
	}
	_, err = q.pool.Exec(ctx, `DELETE FROM linkd_webhook_deliverers WHERE owner = $1`, owner)
	return err
}

// succeed makes this queue the deliverer of the read model w, after the
// one named there before: a process of the same data directory, so dead
// (SIGKILL, a crash), whose claims are given up at once rather than when
// it stops counting as alive.
func (q *pgQueue) succeed(ctx context.Context, w *sql.DB) error {
	var prev string
	err := w.QueryRowContext(ctx, `SELECT owner FROM deliverer WHERE id = 1`).Scan(&prev)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return err
	}
	if prev != "" && prev != q.owner {
		if err := q.releaseOwner(ctx, prev); err != nil {
			return err
		}
	}
	_, err = w.ExecContext(ctx, `INSERT INTO deliverer (id, owner) VALUES (1, ?) ON CONFLICT (id) DO UPDATE SET owner = excluded.owner`, q.owner)
	return err
}

// aliveFor is pgQueue.aliveFor's default: a deliverer says it is alive
// every second.
const aliveFor = 10 * time.Second

func (q *pgQueue) alive(ctx context.Context, now int64) (int, error) {
	var n int
	err := pgx.BeginFunc(ctx, q.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO linkd_webhook_deliverers (owner, seen) VALUES ($1, $2)
			ON CONFLICT (owner) DO UPDATE SET seen = excluded.seen`, q.owner, now); err != nil {
			return err
		}
		// Deliverers that died are forgotten after a while.
		if _, err := tx.Exec(ctx, `DELETE FROM linkd_webhook_deliverers WHERE seen < $1`, now-time.Hour.Milliseconds()); err != nil {
			return err
		}
		return tx.QueryRow(ctx, `SELECT count(*) FROM linkd_webhook_deliverers WHERE seen > $1`, now-q.aliveFor.Milliseconds()).Scan(&n)
	})
	return max(n, 1), err
}

func (q *pgQueue) oldestDue(ctx context.Context, now int64) (oldest sql.NullInt64, err error) {
	err = q.pool.QueryRow(ctx, `SELECT MIN(next_attempt_at) FROM linkd_webhook_messages WHERE status = 'pending' AND next_attempt_at <= $1`, now).Scan(&oldest)
	return oldest, err
}

func (q *pgQueue) dueCount(ctx context.Context, now int64) (n int64, err error) {
	err = q.pool.QueryRow(ctx, `SELECT COUNT(*) FROM linkd_webhook_messages WHERE status = 'pending' AND next_attempt_at <= $1`, now).Scan(&n)
	return n, err
}

// prune moves the horizon first (see prunedMargin), then deletes; any
// instance may prune, at any time.
func (q *pgQueue) prune(ctx context.Context, before int64) error {
	return pgx.BeginFunc(ctx, q.pool, func(tx pgx.Tx) error {
		for _, s := range []string{
			`INSERT INTO linkd_webhook_pruned (id, before) VALUES (1, $1)
				ON CONFLICT (id) DO UPDATE SET before = GREATEST(linkd_webhook_pruned.before, excluded.before)`,
			`DELETE FROM linkd_webhook_attempts WHERE created_at < $1`,
			`DELETE FROM linkd_webhook_messages WHERE status != 'pending' AND created_at < $1`,
		} {
			if _, err := tx.Exec(ctx, s, before); err != nil {
				return err
			}
		}
		return nil
	})
}

func (q *pgQueue) deliveries(ctx context.Context, webhookID string, limit, offset int) ([]queries.WebhookDelivery, error) {
	rows, err := q.pool.Query(ctx, deliveriesSQL("linkd_webhook_messages", "linkd_webhook_attempts", func(n int) string { return "$" + strconv.Itoa(n) }), webhookID, limit, offset)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	return scanDeliveries(rows)
}
