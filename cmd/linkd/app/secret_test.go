package app_test

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"

	"github.com/linkd/linkd/cmd/linkd/app"
	"github.com/linkd/linkd/internal/testsupport/pgtest"
)

// An instance opened on a PostgreSQL event store with another server
// secret than the first instance's says so at error level; one with the
// same secret (LINKD_SECRET given to both) says nothing of it.
func TestSecretComparedWithTheDeployment(t *testing.T) {
	dsn := pgtest.DSN(t)
	open := func(secret string) string {
		t.Helper()
		cfg := app.Defaults()
		cfg.DataDir = t.TempDir()
		cfg.EventStore = dsn
		cfg.Secret = secret
		cfg.LogFormat = "text"
		var logs bytes.Buffer
		a, err := app.Open(context.Background(), cfg, app.NewLogger(cfg, &logs), io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		a.Close()
		return logs.String()
	}
	const shared = "6c696e6b642074657374207365637265742c2073686172656420627920616c6c"
	if logs := open(shared); strings.Contains(logs, "server secret") {
		t.Fatalf("the first instance complains of its secret:\n%s", logs)
	}
	if logs := open(shared); strings.Contains(logs, "server secret") {
		t.Fatalf("an instance with the deployment's secret complains of it:\n%s", logs)
	}
	logs := open("") // a secret.key of its own
	if !strings.Contains(logs, "level=ERROR") || !strings.Contains(logs, "server secret is not the one of the other instances") ||
		!strings.Contains(logs, "LINKD_SECRET is not set") {
		t.Fatalf("an instance with a secret of its own does not say so:\n%s", logs)
	}
}
