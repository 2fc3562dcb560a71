package postgres

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/linkd/linkd/eventstore"
	"github.com/linkd/linkd/internal/testsupport/pgtest"
)

func exec(t *testing.T, dsn string, sqls ...string) {
	t.Helper()
	ctx := context.Background() // also in cleanups, after t's context ended
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	for _, q := range sqls {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

// Open creates the schema once, opens it again unchanged, and refuses a
// schema newer than it knows.
func TestSchemaMigration(t *testing.T) {
	dsn := pgtest.DSN(t)
	s := openT(t, dsn, Options{})
	if _, err := s.Append(t.Context(), "link-1", eventstore.NoStream(), ev(1)); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s = openT(t, dsn, Options{})
	if v, ok, err := s.StreamVersion(t.Context(), "link-1"); err != nil || !ok || v != 0 {
		t.Fatalf("after reopening: StreamVersion = %d, %v, %v", v, ok, err)
	}
	s.Close()
	var n int
	conn, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	if err := conn.QueryRow(t.Context(), "SELECT count(*) FROM linkd_schema_version").Scan(&n); err != nil || n != SchemaVersion {
		t.Fatalf("%d schema versions recorded (%v), want %d", n, err, SchemaVersion)
	}
	conn.Close(context.Background())
	exec(t, dsn, "INSERT INTO linkd_schema_version (version) VALUES (999)")
	if _, err := Open(t.Context(), dsn, Options{}); err == nil || !strings.Contains(err.Error(), "newer") {
		t.Fatalf("Open on a newer schema: %v, want a refusal", err)
	}
}

// A role with only SELECT and INSERT on linkd's log and schema version
// (and UPDATE on its heads and checkpoints) runs linkd once
// the schema is in place (docs/operations.md, "Role rights").
func TestLeastRights(t *testing.T) {
	dsn := pgtest.DSN(t)
	openT(t, dsn, Options{}).Close()
	role := "linkd_app_" + strings.ReplaceAll(strings.ToLower(t.Name()), "/", "_")
	exec(t, dsn,
		"DROP ROLE IF EXISTS "+role,
		"CREATE ROLE "+role+" LOGIN",
		"REVOKE CREATE ON SCHEMA public FROM PUBLIC",
		"GRANT SELECT, INSERT ON linkd_events, linkd_schema_version TO "+role,
		"GRANT SELECT, INSERT, UPDATE ON linkd_heads, linkd_checkpoints TO "+role,
		"GRANT SELECT, INSERT, UPDATE, DELETE ON linkd_instances TO "+role,
	)
	t.Cleanup(func() {
		exec(t, dsn, "DROP OWNED BY "+role, "DROP ROLE IF EXISTS "+role)
	})
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.User(role)
	s := openT(t, u.String(), Options{})
	ctx := t.Context()
	if _, err := s.Append(ctx, "link-1", eventstore.NoStream(), ev(1)); err != nil {
		t.Fatalf("Append as %s: %v", role, err)
	}
	sub, err := s.SubscribeAll(ctx, eventstore.Start, eventstore.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	if e, err := sub.Recv(ctx); err != nil || e.Stream != "link-1" {
		t.Fatalf("Recv as %s: %v %v", role, e.Stream, err)
	}
}

// A database at version 2 (before the limits) migrates to the limits'
// tables, unlogged, and Migrate alone does the same as Open.
func TestMigrateToLimits(t *testing.T) {
	dsn := pgtest.DSN(t)
	if err := Migrate(t.Context(), dsn); err != nil {
		t.Fatal(err)
	}
	exec(t, dsn,
		"DROP TABLE linkd_rate_limits, linkd_password_attempts, linkd_webhook_messages, linkd_webhook_attempts, linkd_webhook_health, linkd_webhook_pruned, linkd_webhook_deliverers, linkd_instances, linkd_deployment",
		"DELETE FROM linkd_schema_version WHERE version > 2")
	openT(t, dsn, Options{}).Close()
	conn, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	for _, table := range []string{"linkd_rate_limits", "linkd_password_attempts"} {
		var persistence string
		if err := conn.QueryRow(t.Context(), "SELECT relpersistence FROM pg_class WHERE relname = $1", table).Scan(&persistence); err != nil {
			t.Fatalf("%s: %v", table, err)
		}
		if persistence != "u" {
			t.Errorf("%s: relpersistence %q, want unlogged", table, persistence)
		}
	}
	var v int
	if err := conn.QueryRow(t.Context(), "SELECT max(version) FROM linkd_schema_version").Scan(&v); err != nil || v != SchemaVersion {
		t.Errorf("schema version %d (%v), want %d", v, err, SchemaVersion)
	}
}

// Every connection of a store plans a statement once (genericPlans): the
// fill of the log, run again and again just past the log's end, is never
// planned anew. Left to PostgreSQL's choice, its first five executions at
// least would be custom plans.
func TestStatementsPlannedOnce(t *testing.T) {
	s := openT(t, pgtest.DSN(t), Options{})
	for i := range 50 {
		if _, err := s.Append(t.Context(), fmt.Sprintf("link-%d", i), eventstore.NoStream(), ev(i)); err != nil {
			t.Fatal(err)
		}
	}
	conn, err := s.pool.Acquire(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	for after := int64(40); after < 50; after++ {
		rows, err := conn.Query(t.Context(), fillSQL, after, 100)
		if err != nil {
			t.Fatal(err)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
	}
	var generic, custom int64
	if err := conn.QueryRow(t.Context(), "SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE statement = $1", fillSQL).
		Scan(&generic, &custom); err != nil {
		t.Fatalf("the fill's prepared statement: %v", err)
	}
	if custom != 0 || generic != 10 {
		t.Fatalf("the fill was planned %d times with its values and ran %d times on a generic plan; want 0 and 10", custom, generic)
	}
}
