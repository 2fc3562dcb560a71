package chtest

import (
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/linkd/linkd/internal/testsupport/chdb"
)

// Current ClickHouse in process.
//
// CI installs Debian's ClickHouse, 18.16, while users run current versions
// (deploy/ starts 25.8). A package whose TestMain calls UseChDB runs its
// ClickHouse tests on ClickHouse 26.7 inside the test binary (chDB, through
// internal/testsupport/chdb) when LINKD_TEST_CHDB names libchdb.so
// (scripts/chdb-lib.sh fetches it): DSN then names a database of that
// engine, and Open and DropDatabase reach it. `make test` runs such packages
// twice, on the server and on chDB.

var onChDB struct {
	mu  sync.Mutex
	on  bool
	e   *chdb.Engine
	dir string
	err error
}

// UseChDB switches DSN, Open and DropDatabase to chDB when LINKD_TEST_CHDB
// names the library, and reports whether it did. Call it from TestMain,
// before the tests run.
func UseChDB() bool {
	lib := chdb.LibPath()
	if lib == "" {
		return false
	}
	onChDB.mu.Lock()
	defer onChDB.mu.Unlock()
	onChDB.on = true
	dir, err := os.MkdirTemp("", "linkd-chdb-")
	if err != nil {
		onChDB.err = err
		return true
	}
	e, err := chdb.Open(lib, dir)
	if err != nil {
		os.RemoveAll(dir)
		onChDB.err = fmt.Errorf("chdb (%s=%s): %w", chdb.EnvLib, lib, err)
		return true
	}
	onChDB.e, onChDB.dir = e, dir
	fmt.Fprintf(os.Stderr, "chtest: ClickHouse tests run on chDB (%s), not on a server\n", lib)
	return true
}

// OnChDB reports whether the tests run on chDB (UseChDB).
func OnChDB() bool {
	onChDB.mu.Lock()
	defer onChDB.mu.Unlock()
	return onChDB.on
}

// SkipOnChDB skips a test that needs a server process (a connection to
// break, a server to stop): chDB runs inside the test binary.
func SkipOnChDB(t testing.TB, why string) {
	t.Helper()
	if OnChDB() {
		t.Skip("not on chDB: " + why)
	}
}

// Open opens a connection pool for opts: clickhouse-go's, or on chDB one
// whose current database is opts' (addresses and the rest are ignored).
func Open(opts *clickhouse.Options) (driver.Conn, error) {
	onChDB.mu.Lock()
	on, e, err := onChDB.on, onChDB.e, onChDB.err
	onChDB.mu.Unlock()
	if !on {
		return clickhouse.Open(opts)
	}
	if err != nil {
		return nil, err
	}
	return e.ConnTo(opts.Auth.Database), nil
}

// chdbBaseDSN is the DSN that DSN derives the test's from on chDB: an
// address nothing listens on (Open ignores it).
const chdbBaseDSN = "clickhouse://default@chdb.invalid:9000/"

// chdbErr is why chDB could not be opened, if it could not.
func chdbErr() error {
	onChDB.mu.Lock()
	defer onChDB.mu.Unlock()
	return onChDB.err
}

// stopChDB closes the engine and removes its data.
func stopChDB() {
	onChDB.mu.Lock()
	defer onChDB.mu.Unlock()
	if onChDB.e != nil {
		onChDB.e.Close()
		onChDB.e = nil
	}
	if onChDB.dir != "" {
		os.RemoveAll(onChDB.dir)
		onChDB.dir = ""
	}
}
