// Package chtest gives each test a ClickHouse database of its own on a test
// server.
//
// DSN(t) finds the server in this order:
//
//  1. LINKD_TEST_CLICKHOUSE_DSN, as printed by scripts/clickhouse-test-server.sh
//     (CI starts one server that way for every package);
//  2. otherwise, when /usr/sbin/clickhouse-server is installed, a server that
//     chtest starts itself, once per test binary, in a temporary directory on
//     free ports;
//  3. otherwise the test is skipped with a message that says how to get one.
//
// A server chtest started is stopped by Main (use it from TestMain:
// `func TestMain(m *testing.M) { chtest.Main(m) }`), which also removes its
// directory. Without Main the server still dies with the test binary (it gets
// SIGTERM when its parent exits), but its directory under os.TempDir() stays.
//
// Every DSN names a fresh database (created by whoever opens it first, for
// example projections/clickhouse.Open), dropped when the test ends, so tests
// never see each other's data and may run in parallel.
package chtest

import (
	"context"
	"crypto/rand"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"

	"github.com/linkd/linkd/internal/testsupport/ports"
)

// EnvDSN names the environment variable holding the test server's DSN.
const EnvDSN = "LINKD_TEST_CLICKHOUSE_DSN"

// ServerBin is where Debian installs the server.
const ServerBin = "/usr/sbin/clickhouse-server"

// SkipMessage is why a test is skipped when there is no server at all.
const SkipMessage = "ClickHouse tests need a server: run scripts/clickhouse-test-server.sh and export LINKD_TEST_CLICKHOUSE_DSN, or apt-get install clickhouse-server"

//go:embed config.xml.tmpl
var configTemplate string

//go:embed users.xml
var usersXML string

var (
	once       sync.Once
	started    *server // the server this binary started, if any
	baseDSN    string
	baseErr    error
	baseSkip   bool
	startedMu  sync.Mutex
	defaultDB  = "linkd_test"
	dropTimout = 30 * time.Second
)

// DSN returns a DSN naming a database that no other test uses, on the test
// server (see the package comment), and drops that database when t ends.
func DSN(t testing.TB) string {
	t.Helper()
	base := chdbBaseDSN
	if OnChDB() {
		if err := chdbErr(); err != nil {
			t.Fatalf("chtest: %v", err)
		}
	} else {
		once.Do(findServer)
		if baseSkip {
			t.Skip(SkipMessage)
		}
		if baseErr != nil {
			t.Fatalf("chtest: %v", baseErr)
		}
		base = baseDSN
	}
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("chtest: %s: %v", EnvDSN, err)
	}
	prefix := strings.Trim(u.Path, "/")
	if prefix == "" {
		prefix = defaultDB
	}
	name := prefix + "_" + sanitize(t.Name()) + "_" + randomHex(4)
	u.Path = "/" + name
	dsn := u.String()
	t.Cleanup(func() {
		if err := DropDatabase(base, name); err != nil {
			t.Logf("chtest: drop database %s: %v", name, err)
		}
	})
	return dsn
}

// Main runs the tests of a package, then stops the server that DSN started
// (if any) and exits with the tests' status. Call it from TestMain.
func Main(m *testing.M) {
	code := m.Run()
	Stop()
	os.Exit(code)
}

// Stop stops the server this test binary started, if any, and removes its
// directory. DSN must not be called afterwards.
func Stop() {
	stopChDB()
	startedMu.Lock()
	defer startedMu.Unlock()
	if started != nil {
		started.stop()
		started = nil
	}
}

// DropDatabase drops database name on the server of dsn.
func DropDatabase(dsn, name string) error {
	opts, err := clickhouse.ParseDSN(dsn)
	if err != nil {
		return err
	}
	opts.Auth.Database = ""
	conn, err := Open(opts)
	if err != nil {
		return err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), dropTimout)
	defer cancel()
	return conn.Exec(ctx, "DROP DATABASE IF EXISTS `"+name+"`")
}

func findServer() {
	if dsn := os.Getenv(EnvDSN); dsn != "" {
		baseDSN = dsn
		return
	}
	if _, err := os.Stat(ServerBin); err != nil {
		baseSkip = true
		return
	}
	s, err := startServer()
	if err != nil {
		baseErr = fmt.Errorf("starting %s: %w", ServerBin, err)
		return
	}
	startedMu.Lock()
	started = s
	startedMu.Unlock()
	baseDSN = fmt.Sprintf("clickhouse://default:@127.0.0.1:%d/%s", s.tcpPort, defaultDB)
}

type server struct {
	dir      string
	cmd      *exec.Cmd
	exited   chan struct{}
	tcpPort  int
	httpPort int
}

func startServer() (*server, error) {
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		s, err := tryStart()
		if err == nil {
			return s, nil
		}
		lastErr = err
	}
	return nil, lastErr
}

func tryStart() (*server, error) {
	dir, err := os.MkdirTemp("", "linkd-chtest-")
	if err != nil {
		return nil, err
	}
	for _, sub := range []string{"data", "tmp", "user_files", "format_schemas", "log"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			return nil, err
		}
	}
	ps, err := freePorts(2)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	s := &server{dir: dir, tcpPort: ps[0], httpPort: ps[1], exited: make(chan struct{})}
	cfg := strings.NewReplacer(
		"@DIR@", dir,
		"@TCP_PORT@", strconv.Itoa(s.tcpPort),
		"@HTTP_PORT@", strconv.Itoa(s.httpPort),
	).Replace(configTemplate)
	if err := os.WriteFile(filepath.Join(dir, "config.xml"), []byte(cfg), 0o644); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "users.xml"), []byte(usersXML), 0o644); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	out, err := os.Create(filepath.Join(dir, "log", "stdout.log"))
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	defer out.Close()
	s.cmd = exec.Command(ServerBin, "--config-file="+filepath.Join(dir, "config.xml"))
	s.cmd.Stdout, s.cmd.Stderr = out, out
	// Pdeathsig: the server dies with the test binary even without Main.
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	if err := s.cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	go func() {
		_ = s.cmd.Wait()
		close(s.exited)
	}()
	deadline := time.Now().Add(30 * time.Second)
	client := &http.Client{Timeout: time.Second}
	for time.Now().Before(deadline) {
		select {
		case <-s.exited:
			log, _ := os.ReadFile(filepath.Join(dir, "log", "clickhouse-server.err.log"))
			os.RemoveAll(dir)
			return nil, fmt.Errorf("server exited: %s", tail(string(log), 800))
		default:
		}
		resp, err := client.Get(fmt.Sprintf("http://127.0.0.1:%d/ping", s.httpPort))
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return s, nil
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	s.stop()
	return nil, errors.New("server did not answer /ping within 30s")
}

func (s *server) stop() {
	if s.cmd.Process != nil {
		_ = s.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-s.exited:
		case <-time.After(15 * time.Second):
			_ = s.cmd.Process.Kill()
			<-s.exited
		}
	}
	os.RemoveAll(s.dir)
}

// freePorts returns n distinct ports that were free a moment ago.
func freePorts(n int) ([]int, error) {
	var ps []int
	for range n {
		p, err := ports.Free()
		if err != nil {
			return nil, err
		}
		ps = append(ps, p)
	}
	return ps, nil
}

// sanitize keeps a test name usable inside a database name.
func sanitize(name string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(name) {
		if b.Len() >= 40 {
			break
		}
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	return b.String()
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}
