package clickhouse

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"

	"github.com/linkd/linkd/internal/testsupport/chtest"
)

// TestMain runs the tests on the ClickHouse server of chtest, or on current
// ClickHouse in process when LINKD_TEST_CHDB names libchdb.so (`make test`
// does both).
func TestMain(m *testing.M) {
	chtest.UseChDB()
	chtest.Main(m)
}

func openTest(t testing.TB, ctx context.Context, dsn string) *DB {
	t.Helper()
	db, err := Open(ctx, dsn, Options{Dial: chtest.Open})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func TestAllLoopback(t *testing.T) {
	for addrs, want := range map[string]bool{
		"127.0.0.1:9000":                true,
		"localhost:9000":                true,
		"[::1]:9000":                    true,
		"127.0.0.1:9000,localhost:9001": true,
		"127.0.0.1:9000,10.0.0.5:9000":  false,
		"clickhouse.internal:9000":      false,
		"192.168.1.20:9000":             false,
		"":                              false,
	} {
		var list []string
		if addrs != "" {
			list = strings.Split(addrs, ",")
		}
		if got := allLoopback(list); got != want {
			t.Errorf("allLoopback(%q) = %v, want %v", addrs, got, want)
		}
	}
}

func TestLostConnection(t *testing.T) {
	closed := fmt.Errorf("query processing: failed to read first block packet: %w",
		&net.OpError{Op: "read", Net: "tcp", Err: net.ErrClosed})
	for err, want := range map[error]bool{
		closed:                      true,
		fmt.Errorf("x: %w", io.EOF): true,
		errors.New("Code: 60, table does not exist"): false,
		context.Canceled: false,
	} {
		if got := lostConnection(err); got != want {
			t.Errorf("lostConnection(%v) = %v, want %v", err, got, want)
		}
	}
}

func TestOptionsSayEveryProblem(t *testing.T) {
	_, err := Options{QueryTimeout: -1, DDLTimeout: -1}.WithDefaults()
	if err == nil || !strings.Contains(err.Error(), "QueryTimeout") || !strings.Contains(err.Error(), "DDLTimeout") {
		t.Errorf("WithDefaults: %v, want both problems", err)
	}
}
