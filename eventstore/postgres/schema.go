package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Advisory lock keys (pg_advisory_lock's bigint space is shared by every
// application of a database: these are "linkd" in ASCII, and two more).
const (
	// appendLock is held, transaction-scoped, by every appending
	// transaction from before it reads the head until it commits.
	appendLock int64 = 0x6c696e6b64_01
	// migrateLock is held while the schema is checked and migrated, so
	// that instances starting together migrate once.
	migrateLock int64 = 0x6c696e6b64_02
	// leaseClass is the first key of the two-key advisory locks that are
	// leases (the second is hashtext of the lease's name).
	leaseClass int32 = 0x6c696e6b
)

// notifyChannel is the LISTEN/NOTIFY channel every appending transaction
// notifies.
const notifyChannel = "linkd_events"

// migrations are the schema's versions, in order: migration i brings the
// schema to version i+1. Never change one that has shipped: add another.
var migrations = []string{
	// 1: the log. position is the global order (given under appendLock,
	// with no holes); (stream, version) is unique, which is how no two
	// appends can both take a stream's next version.
	`CREATE TABLE linkd_events (
		position bigint PRIMARY KEY,
		stream   text NOT NULL,
		version  bigint NOT NULL,
		id       uuid NOT NULL,
		type     text NOT NULL,
		data     bytea NOT NULL,
		metadata bytea,
		created  timestamptz NOT NULL,
		CONSTRAINT linkd_events_stream_version UNIQUE (stream, version),
		CONSTRAINT linkd_events_version_check CHECK (version >= 0),
		CONSTRAINT linkd_events_position_check CHECK (position > 0)
	)`,
	// 2: what many instances share besides the log (ADR 0106): the
	// position of the last event of each category (the part of a stream's
	// name before its first "-"), written by every append, and named
	// checkpoints (the relay's).
	`CREATE TABLE linkd_heads (
		category text PRIMARY KEY,
		position bigint NOT NULL
	);
	INSERT INTO linkd_heads (category, position)
		SELECT split_part(stream, '-', 1), max(position) FROM linkd_events GROUP BY 1;
	CREATE TABLE linkd_checkpoints (
		name     text PRIMARY KEY,
		position bigint NOT NULL
	)`,
	// 3: the request rate limits every instance shares
	// (internal/ratelimit/pglimit): one row per key, its GCRA theoretical
	// arrival time in Unix nanoseconds (the key's quota is whole again
	// then; a row whose tat has passed is the same as no row). Unlogged:
	// counters need no WAL and no commit flush; a server crash empties
	// them (limits start afresh). No index on tat, so that updates stay HOT.
	`CREATE UNLOGGED TABLE linkd_rate_limits (
		key text PRIMARY KEY,
		tat bigint NOT NULL
	) WITH (fillfactor = 70)`,
	// 4: the wrong passwords every instance shares (pglimit): one row per
	// target (a link, a dashboard account), the clients and Unix
	// nanoseconds of its wrong attempts in the window, in two parallel
	// arrays; expires is when the last of them leaves the window.
	`CREATE UNLOGGED TABLE linkd_password_attempts (
		target   text PRIMARY KEY,
		clients  text[] NOT NULL,
		attempts bigint[] NOT NULL,
		expires  bigint NOT NULL
	) WITH (fillfactor = 70)`,
	// 5: the webhook queue every instance shares (projections/webhooks,
	// ADR 0108): one row per message (its id is the webhook-id, the same
	// whichever instance projected the event first), claimed by one
	// deliverer at a time until claimed_until (Unix ms); the attempts; the
	// start of each webhook's run of failures; and how far finished
	// messages were pruned (a message older than that is not queued again
	// by an instance that reads the log from its start); and the live
	// deliverers, which share each webhook's concurrency.
	`CREATE TABLE linkd_webhook_messages (
		id              text PRIMARY KEY,
		webhook_id      text NOT NULL,
		event_id        text NOT NULL,
		event_type      text NOT NULL,
		body            bytea NOT NULL,
		created_at      bigint NOT NULL,
		attempts        integer NOT NULL DEFAULT 0,
		status          text NOT NULL,
		next_attempt_at bigint,
		round           bigint NOT NULL DEFAULT 0,
		claimed_until   bigint,
		claimed_by      text
	);
	CREATE INDEX linkd_webhook_messages_queue ON linkd_webhook_messages (webhook_id, next_attempt_at, id) WHERE status = 'pending';
	CREATE INDEX linkd_webhook_messages_pending ON linkd_webhook_messages (next_attempt_at) WHERE status = 'pending';
	CREATE INDEX linkd_webhook_messages_created ON linkd_webhook_messages (created_at);
	CREATE TABLE linkd_webhook_attempts (
		seq             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
		message_id      text NOT NULL,
		webhook_id      text NOT NULL,
		event_type      text NOT NULL,
		attempt         integer NOT NULL,
		status          text NOT NULL,
		response_status integer,
		response_body   text,
		duration_ms     bigint NOT NULL,
		created_at      bigint NOT NULL,
		next_attempt_at bigint
	);
	CREATE INDEX linkd_webhook_attempts_webhook ON linkd_webhook_attempts (webhook_id, seq);
	CREATE INDEX linkd_webhook_attempts_created ON linkd_webhook_attempts (created_at);
	CREATE TABLE linkd_webhook_health (
		webhook_id    text PRIMARY KEY,
		failing_since bigint NOT NULL
	);
	CREATE TABLE linkd_webhook_pruned (
		id     integer PRIMARY KEY CHECK (id = 1),
		before bigint NOT NULL
	);
	CREATE UNLOGGED TABLE linkd_webhook_deliverers (
		owner text PRIMARY KEY,
		seen  bigint NOT NULL
	)`,
	// 6: the processes that have the store open, each saying so every
	// second (presence.go): a process alone on the store needs no read of
	// the others' heads before its reads.
	`CREATE UNLOGGED TABLE linkd_instances (
		id   text PRIMARY KEY,
		seen bigint NOT NULL
	)`,
	// 7: an append in one statement (ADR 0118): the append lock, the
	// head, the rows, the categories' heads and the notification, which
	// were seven statements a group. Unqualified names resolve as the
	// caller's do (search_path), as the statements did.
	appendFunction,
	// 8: what the instances of a deployment must agree on, written once
	// by the first that says it (Store.Agree): the fingerprint of the
	// server secret (LINKD_SECRET).
	`CREATE TABLE linkd_deployment (
		name  text PRIMARY KEY,
		value text NOT NULL
	)`,
}

// appendFunction is linkd_append: the group's rows after the log's head,
// read under the append lock (p_versions NULL: each stream's events
// follow its last version), the heads of p_cats, a notification on
// p_channel, synchronous_commit off for the transaction when p_relaxed.
// It returns the head before the group, then, with versions given by
// the database, the rows' versions in position order. VOLATILE (the
// default), so that each statement in it sees what committed before it
// ran: the head is read after the lock is held.
var appendFunction = fmt.Sprintf(`CREATE OR REPLACE FUNCTION linkd_append(
	p_streams text[], p_versions bigint[], p_ids uuid[], p_types text[],
	p_datas bytea[], p_metas bytea[], p_created timestamptz, p_cats text[],
	p_channel text, p_instance text, p_relaxed boolean) RETURNS bigint[]
LANGUAGE plpgsql AS $f$
DECLARE
	h bigint;
	n bigint := coalesce(cardinality(p_streams), 0);
	vs bigint[];
BEGIN
	PERFORM pg_advisory_xact_lock(%d);
	IF p_relaxed THEN
		PERFORM set_config('synchronous_commit', 'off', true);
	END IF;
	SELECT coalesce(max(position), 0) INTO h FROM linkd_events;
	IF p_versions IS NULL THEN
		WITH ins AS (
			INSERT INTO linkd_events (position, stream, version, id, type, data, metadata, created)
			SELECT h + u.o, u.s,
				coalesce((SELECT max(e.version) FROM linkd_events e WHERE e.stream = u.s), -1)
					+ row_number() OVER (PARTITION BY u.s ORDER BY u.o),
				u.i, u.t, u.d, u.m, p_created
			FROM unnest(p_streams, p_ids, p_types, p_datas, p_metas) WITH ORDINALITY AS u(s, i, t, d, m, o)
			RETURNING position, version)
		SELECT array_agg(ins.version ORDER BY ins.position) INTO vs FROM ins;
	ELSE
		INSERT INTO linkd_events (position, stream, version, id, type, data, metadata, created)
		SELECT h + u.o, u.s, u.v, u.i, u.t, u.d, u.m, p_created
		FROM unnest(p_streams, p_versions, p_ids, p_types, p_datas, p_metas) WITH ORDINALITY AS u(s, v, i, t, d, m, o);
	END IF;
	IF n > 0 THEN
		INSERT INTO linkd_heads (category, position)
		SELECT c, h + n FROM unnest(p_cats) AS u(c)
		ON CONFLICT (category) DO UPDATE SET position = excluded.position;
	END IF;
	PERFORM pg_notify(p_channel, p_instance || ' ' || (h + n)::text);
	RETURN array_prepend(h, coalesce(vs, '{}'));
END
$f$`, appendLock)

// SchemaVersion is the version of the schema this package writes.
var SchemaVersion = len(migrations)

// Migrate creates or migrates the schema of the database connString names,
// as Open does, without opening a store: for the packages that share the
// schema (internal/ratelimit/pglimit) and their tests.
func Migrate(ctx context.Context, connString string) error {
	cfg, err := pgxpool.ParseConfig(connString)
	if err != nil {
		return fmt.Errorf("postgres: bad connection string: %w", redact(err))
	}
	cfg.MaxConns = 1
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return fmt.Errorf("postgres: %w", redact(err))
	}
	defer pool.Close()
	return migrate(ctx, pool)
}

// migrate creates the schema or brings it to SchemaVersion, under
// migrateLock. It refuses a schema newer than it knows.
func migrate(ctx context.Context, pool *pgxpool.Pool) error {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("postgres: connect: %w", err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", migrateLock); err != nil {
		return fmt.Errorf("postgres: schema lock: %w", err)
	}
	defer conn.Exec(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock($1)", migrateLock) //nolint:errcheck
	// Asked first: a role without CREATE on the schema may run a linkd
	// whose schema is in place (CREATE TABLE IF NOT EXISTS would need it).
	var exists bool
	if err := conn.QueryRow(ctx, "SELECT to_regclass('linkd_schema_version') IS NOT NULL").Scan(&exists); err != nil {
		return fmt.Errorf("postgres: read schema version: %w", err)
	}
	if !exists {
		if _, err := conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS linkd_schema_version (
			version integer PRIMARY KEY,
			applied timestamptz NOT NULL DEFAULT now()
		)`); err != nil {
			return fmt.Errorf("postgres: create linkd_schema_version: %w", err)
		}
	}
	var current int
	if err := conn.QueryRow(ctx, "SELECT coalesce(max(version), 0) FROM linkd_schema_version").Scan(&current); err != nil {
		return fmt.Errorf("postgres: read schema version: %w", err)
	}
	if current > len(migrations) {
		return fmt.Errorf("postgres: the database's schema is at version %d, newer than this linkd knows (%d): run a newer linkd", current, len(migrations))
	}
	for v := current + 1; v <= len(migrations); v++ {
		err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, migrations[v-1]); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, "INSERT INTO linkd_schema_version (version) VALUES ($1)", v)
			return err
		})
		if err != nil {
			return fmt.Errorf("postgres: migrate the schema to version %d: %w", v, err)
		}
	}
	return nil
}
