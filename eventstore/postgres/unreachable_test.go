package postgres

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/linkd/linkd/internal/testsupport/pgtest"
)

// TestClosedConnectionIsUnreachable: a statement on a connection that is
// closed (the server went away under it, and pgx closed it) fails as one
// of reaching the server, so an append answers ErrUnavailable (503) and
// not an error of its own (500). Seen under redirects while PostgreSQL
// stopped: "postgres: append: conn closed".
func TestClosedConnectionIsUnreachable(t *testing.T) {
	ctx := context.Background()
	conn, err := pgconn.Connect(ctx, pgtest.DSN(t))
	if err != nil {
		t.Fatal(err)
	}
	conn.Close(ctx)
	_, err = conn.Exec(ctx, "SELECT 1").ReadAll()
	if err == nil {
		t.Fatal("a statement on a closed connection succeeded")
	}
	if !unreachable(err) || !unreachable(fmt.Errorf("append: %w", err)) {
		t.Errorf("%v (%T): not taken for an unreachable server", err, err)
	}
	if unreachable(errors.New("syntax error")) || unreachable(&pgconn.PgError{Code: "42601"}) {
		t.Error("an error of the statement taken for an unreachable server")
	}
}
