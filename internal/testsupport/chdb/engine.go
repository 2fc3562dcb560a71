package chdb

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
)

// EnvLib names the environment variable that holds the path of libchdb.so.
const EnvLib = "LINKD_TEST_CHDB"

// SkipMessage is why a test is skipped when LibPath is "".
const SkipMessage = "set LINKD_TEST_CHDB to the path of libchdb.so (npm @chdb/lib-linux-x64-gnu)"

// LibPath returns the path of libchdb.so: $LINKD_TEST_CHDB when it names a
// file, else "" (the tests then skip).
func LibPath() string {
	p := os.Getenv(EnvLib)
	if p == "" {
		return ""
	}
	if fi, err := os.Stat(p); err != nil || !fi.Mode().IsRegular() {
		return ""
	}
	return p
}

// ErrClosed is returned by the queries of a closed Engine (and of its
// Conns).
var ErrClosed = errors.New("chdb: engine closed")

// errNoCgo is what Open returns in a build without cgo: the library is
// loaded with dlopen from C.
var errNoCgo = errors.New("chdb: this build has no cgo (CGO_ENABLED=0): chDB is loaded through cgo and dlopen; build the tests with CGO_ENABLED=1 and a C compiler")

// The process's library and session.
var process struct {
	mu      sync.Mutex
	libPath string // the library loaded ("" before the first Open)
	core    *core  // the open session; nil when none is
}

// core is the process's one chDB session.
type core struct {
	mu      sync.Mutex // serializes the queries; guards sess
	sess    *session   // nil once closed
	current string     // the session's current database ("" until a USE)
	dataDir string
	refs    int // open Engines (process.mu)
}

// Engine is a handle on the process's chDB session. Open may hand out
// several; the session closes with the last of them.
type Engine struct {
	core   *core
	closed atomic.Bool
}

// Open loads the library (once per process) and opens a session with its
// data under dataDir (created when missing). chDB allows one session per
// process: while one is open, Open with the same dataDir returns another
// handle on it, and Open with another dataDir fails. A process loads one
// library: Open with another libPath fails.
func Open(libPath, dataDir string) (*Engine, error) {
	if libPath == "" {
		return nil, errors.New("chdb: no library path (" + SkipMessage + ")")
	}
	lib, err := filepath.Abs(libPath)
	if err != nil {
		return nil, fmt.Errorf("chdb: %w", err)
	}
	dir, err := filepath.Abs(dataDir)
	if err != nil {
		return nil, fmt.Errorf("chdb: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("chdb: %w", err)
	}

	process.mu.Lock()
	defer process.mu.Unlock()
	switch process.libPath {
	case "":
		if err := loadLibrary(lib); err != nil {
			return nil, err
		}
		process.libPath = lib
	case lib:
	default:
		return nil, fmt.Errorf("chdb: %s is loaded in this process already; it cannot load %s too", process.libPath, lib)
	}
	if c := process.core; c != nil {
		if c.dataDir != dir {
			return nil, fmt.Errorf("chdb: a session is open already with its data in %s, and chDB allows one session per process (asked for %s)", c.dataDir, dir)
		}
		c.refs++
		return &Engine{core: c}, nil
	}
	sess, err := connect([]string{
		"clickhouse",
		"--path=" + dir,
		// Dates and times as the tests (and the server in CI) see them.
		"--session_timezone=UTC",
		// The profiler signals threads with SIGUSR1/SIGUSR2, Go's included.
		"--query_profiler_real_time_period_ns=0",
		"--query_profiler_cpu_time_period_ns=0",
	})
	if err != nil {
		return nil, err
	}
	c := &core{sess: sess, dataDir: dir, refs: 1}
	process.core = c
	return &Engine{core: c}, nil
}

// Close releases the handle; the session closes with the last handle.
// Closing twice is a no-op.
func (e *Engine) Close() error {
	if !e.closed.CompareAndSwap(false, true) {
		return nil
	}
	process.mu.Lock()
	defer process.mu.Unlock()
	c := e.core
	if c.refs--; c.refs > 0 {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sess != nil {
		c.sess.close()
		c.sess = nil
	}
	if process.core == c {
		process.core = nil
	}
	return nil
}

// Query runs sql and returns its output in the given ClickHouse format
// (TabSeparated, JSONEachRow, ...): raw access, for tests.
func (e *Engine) Query(sql, format string) (string, error) {
	out, err := e.run(context.Background(), "", sql, format)
	return string(out), err
}

// Conn returns a driver.Conn over the session. Conns share the engine:
// closing one does nothing, closing the Engine ends them all.
func (e *Engine) Conn() driver.Conn {
	return &conn{e: e}
}

// ConnTo is Conn with database as the current database of its queries (the
// database of a DSN: unqualified table names are its tables).
func (e *Engine) ConnTo(database string) driver.Conn {
	return &conn{e: e, db: database}
}

// run runs one query in database db ("": default), after the ones before
// it, unless ctx is done first.
func (e *Engine) run(ctx context.Context, db, sql, format string) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if e.closed.Load() {
		return nil, ErrClosed
	}
	c := e.core
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if c.sess == nil {
		return nil, ErrClosed
	}
	if db == "" {
		db = "default"
	}
	if c.current != db {
		// The session's current database is the one of the last USE.
		if _, err := c.sess.query("USE `"+strings.ReplaceAll(db, "`", "``")+"`", "TabSeparated"); err != nil {
			return nil, err
		}
		c.current = db
	}
	out, err := c.sess.query(sql, format)
	if useStmt.MatchString(sql) {
		c.current = "" // a USE of the caller's: the next query sets its own
	}
	return out, err
}

var useStmt = regexp.MustCompile(`(?i)^\s*USE\s`)

// exceptionText matches chDB's error text: "Code: 60. DB::Exception:
// message. (UNKNOWN_TABLE)".
var exceptionText = regexp.MustCompile(`(?s)^Code: (\d+)\. (DB::Exception): (.*?)(?: \(([A-Z0-9_]+)\))?(?: \(version [^)]*\))?$`)

// queryError turns chDB's error text into a *clickhouse.Exception (as
// clickhouse-go returns a server's) whose message is ClickHouse's, or a
// plain error when the text has another form.
func queryError(text string) error {
	text = strings.TrimSpace(text)
	m := exceptionText.FindStringSubmatch(text)
	if m == nil {
		return errors.New("chdb: " + text)
	}
	code, err := strconv.ParseInt(m[1], 10, 32)
	if err != nil {
		return errors.New("chdb: " + text)
	}
	msg := m[3]
	if m[4] != "" {
		msg += " (" + m[4] + ")"
	}
	return &clickhouse.Exception{Code: int32(code), Name: m[2], CodeName: m[4], Message: msg}
}
