// Package pgtest gives each test a PostgreSQL database of its own.
//
// DSN(t) finds the server in this order:
//
//  1. LINKD_TEST_POSTGRES_DSN (for example
//     postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable), a server
//     someone else runs; its role must be allowed to create databases;
//  2. otherwise, when Debian's PostgreSQL binaries are installed
//     (/usr/lib/postgresql/NN/bin), a throwaway cluster that pgtest starts
//     itself, once per test binary: initdb into a temporary directory owned
//     by the postgres OS user, a free port on 127.0.0.1, fsync off (tests
//     only: never in what users run, never in a benchmark of durability);
//  3. otherwise the test is skipped with a message that says how to get one.
//
// A cluster pgtest started is stopped by Main (use it from TestMain:
// `func TestMain(m *testing.M) { pgtest.Main(m) }`), which also removes its
// directory. Without Main the server still dies with the test binary
// (Pdeathsig), but its directory under os.TempDir() stays.
//
// Every DSN names a fresh database, dropped when the test ends, so tests
// never see each other's data and may run in parallel. Start gives a test a
// cluster of its own, which it may restart or stop.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/linkd/linkd/internal/testsupport/ports"
)

// EnvDSN names the environment variable holding an existing server's DSN.
const EnvDSN = "LINKD_TEST_POSTGRES_DSN"

// SkipMessage is why a test is skipped when there is no server at all.
const SkipMessage = "PostgreSQL tests need a server: apt-get install postgresql (pgtest starts a throwaway cluster), or export LINKD_TEST_POSTGRES_DSN=postgres://USER@HOST:PORT/DB?sslmode=disable"

var (
	once      sync.Once
	shared    *Cluster
	baseDSN   string
	baseErr   error
	baseSkip  bool
	sharedMu  sync.Mutex
	dropLimit = 30 * time.Second
)

// Available reports whether DSN can give a database (an existing server is
// configured, or the binaries to start one are installed).
func Available() bool {
	if os.Getenv(EnvDSN) != "" {
		return true
	}
	_, err := BinDir()
	return err == nil
}

// DSN returns a DSN naming a database that no other test uses, on the test
// server (see the package comment), and drops that database when t ends.
func DSN(t testing.TB) string {
	t.Helper()
	once.Do(findServer)
	if baseSkip {
		t.Skip(SkipMessage)
	}
	if baseErr != nil {
		t.Fatalf("pgtest: %v", baseErr)
	}
	dsn, err := CreateDatabase(baseDSN, "linkd_"+sanitize(t.Name())+"_"+randomHex(4))
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	t.Cleanup(func() {
		if err := DropDatabase(baseDSN, dsn); err != nil {
			t.Logf("pgtest: drop database: %v", err)
		}
	})
	return dsn
}

// Main runs the tests of a package, then stops the cluster that DSN
// started (if any) and exits with the tests' status. Call it from TestMain.
func Main(m *testing.M) {
	code := m.Run()
	Stop()
	os.Exit(code)
}

// Stop stops the cluster this test binary started for DSN, if any, and
// removes its directory. DSN must not be called afterwards.
func Stop() {
	sharedMu.Lock()
	defer sharedMu.Unlock()
	if shared != nil {
		shared.Remove()
		shared = nil
	}
}

func findServer() {
	if dsn := os.Getenv(EnvDSN); dsn != "" {
		baseDSN = dsn
		return
	}
	if _, err := BinDir(); err != nil {
		baseSkip = true
		return
	}
	c, err := StartCluster(Options{TestSettings: true})
	if err != nil {
		baseErr = err
		return
	}
	sharedMu.Lock()
	shared = c
	sharedMu.Unlock()
	baseDSN = c.DSN("postgres")
}

// CreateDatabase creates database name on the server of base and returns
// base with its database replaced by name.
func CreateDatabase(base, name string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), dropLimit)
	defer cancel()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		return "", fmt.Errorf("connect: %w", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		return "", fmt.Errorf("create database %s: %w", name, err)
	}
	return withDatabase(base, name)
}

// DropDatabase drops the database dsn names, on the server of base.
func DropDatabase(base, dsn string) error {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), dropLimit)
	defer cancel()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{cfg.Database}.Sanitize()+" WITH (FORCE)")
	return err
}

func withDatabase(dsn, name string) (string, error) {
	u, err := url.Parse(dsn)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return "", fmt.Errorf("%s: want a postgres://... URL", EnvDSN)
	}
	u.Path = "/" + name
	return u.String(), nil
}

// BinDir finds Debian's PostgreSQL binaries (the newest version installed).
func BinDir() (string, error) {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return version(dirs[i]) > version(dirs[j]) })
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "postgres")); err == nil {
			if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
				return d, nil
			}
		}
	}
	return "", errors.New("no /usr/lib/postgresql/*/bin/postgres: apt-get install postgresql")
}

func version(binDir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return n
}

// Options tune StartCluster.
type Options struct {
	// TestSettings turns fsync and synchronous_commit off: faster, and fit
	// for tests only. Benchmarks that claim durability leave it false.
	TestSettings bool
	// Settings are more "name=value" server settings (-c).
	Settings []string
}

// Cluster is a throwaway PostgreSQL cluster: a data directory and a
// server process on 127.0.0.1.
type Cluster struct {
	Dir  string
	Port int
	bin  string
	opts Options
	uid  uint32
	gid  uint32

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
}

// Start starts a cluster of t's own, removed when t ends, or skips t when
// PostgreSQL is not installed. Unlike DSN it ignores LINKD_TEST_POSTGRES_DSN:
// tests that restart or kill the server need one they own.
func Start(t testing.TB, opts Options) *Cluster {
	t.Helper()
	if _, err := BinDir(); err != nil {
		t.Skip("this test starts and stops a PostgreSQL cluster of its own: apt-get install postgresql")
	}
	c, err := StartCluster(opts)
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	t.Cleanup(c.Remove)
	return c
}

// StartCluster makes and starts a new cluster.
func StartCluster(opts Options) (*Cluster, error) {
	bin, err := BinDir()
	if err != nil {
		return nil, err
	}
	c := &Cluster{bin: bin, opts: opts}
	if os.Geteuid() == 0 {
		// initdb and postgres refuse to run as root: run them as the
		// postgres OS user that the package creates.
		u, err := user.Lookup("postgres")
		if err != nil {
			return nil, fmt.Errorf("running as root needs the postgres OS user: %w", err)
		}
		uid, _ := strconv.ParseUint(u.Uid, 10, 32)
		gid, _ := strconv.ParseUint(u.Gid, 10, 32)
		c.uid, c.gid = uint32(uid), uint32(gid)
	}
	// os.TempDir() is world-writable; the directory must not be inside a
	// folder the postgres user cannot enter.
	c.Dir, err = os.MkdirTemp("", "linkd-pgtest-")
	if err != nil {
		return nil, err
	}
	if err := c.chown(c.Dir); err != nil {
		os.RemoveAll(c.Dir)
		return nil, err
	}
	data := filepath.Join(c.Dir, "data")
	out, err := c.command(filepath.Join(bin, "initdb"), "-D", data, "-U", "postgres", "-A", "trust",
		"-E", "UTF8", "--locale=C", "--no-sync").CombinedOutput()
	if err != nil {
		os.RemoveAll(c.Dir)
		return nil, fmt.Errorf("initdb: %w: %s", err, tail(string(out), 800))
	}
	var lastErr error
	for range 3 {
		port, err := ports.Free()
		if err != nil {
			return nil, err
		}
		c.Port = port
		if lastErr = c.Start(); lastErr == nil {
			return c, nil
		}
	}
	os.RemoveAll(c.Dir)
	return nil, lastErr
}

// DSN is the URL of database db on the cluster, as the postgres superuser.
func (c *Cluster) DSN(db string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", c.Port, db)
}

// NewDatabase creates a database on the cluster and returns its DSN.
func (c *Cluster) NewDatabase(t testing.TB) string {
	t.Helper()
	dsn, err := CreateDatabase(c.DSN("postgres"), "linkd_"+sanitize(t.Name())+"_"+randomHex(4))
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	return dsn
}

func (c *Cluster) chown(path string) error {
	if c.uid == 0 {
		return nil
	}
	return os.Chown(path, int(c.uid), int(c.gid))
}

func (c *Cluster) command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(name, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if c.uid != 0 {
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: c.uid, Gid: c.gid}
	}
	cmd.Dir = c.Dir
	return cmd
}

// Start starts the server of a stopped cluster on its port and waits until
// it accepts connections.
func (c *Cluster) Start() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cmd != nil {
		return errors.New("pgtest: cluster already running")
	}
	args := []string{"-D", filepath.Join(c.Dir, "data"), "-p", strconv.Itoa(c.Port), "-k", c.Dir,
		"-c", "listen_addresses=127.0.0.1", "-c", "max_connections=200", "-c", "shared_buffers=128MB"}
	if c.opts.TestSettings {
		args = append(args, "-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off")
	}
	for _, s := range c.opts.Settings {
		args = append(args, "-c", s)
	}
	logf, err := os.OpenFile(filepath.Join(c.Dir, "log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close()
	cmd := c.command(filepath.Join(c.bin, "postgres"), args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return err
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			log, _ := os.ReadFile(filepath.Join(c.Dir, "log"))
			return fmt.Errorf("postgres exited: %s", tail(string(log), 800))
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		conn, err := pgx.Connect(ctx, c.DSN("postgres"))
		if err == nil {
			conn.Close(ctx)
			cancel()
			c.cmd, c.exited = cmd, exited
			return nil
		}
		cancel()
		time.Sleep(50 * time.Millisecond)
	}
	_ = cmd.Process.Kill()
	<-exited
	return errors.New("postgres did not accept connections within 60s")
}

// Stop stops the server: a fast shutdown (SIGINT: open transactions roll
// back, connections are cut), or with immediate an immediate one (SIGQUIT:
// like a crash, recovery at the next start).
func (c *Cluster) Stop(immediate bool) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cmd == nil {
		return nil
	}
	sig := syscall.SIGINT
	if immediate {
		sig = syscall.SIGQUIT
	}
	_ = c.cmd.Process.Signal(sig)
	select {
	case <-c.exited:
	case <-time.After(60 * time.Second):
		_ = c.cmd.Process.Kill()
		<-c.exited
	}
	c.cmd = nil
	return nil
}

// Restart stops the server (fast shutdown) and starts it again on the same
// port.
func (c *Cluster) Restart() error {
	if err := c.Stop(false); err != nil {
		return err
	}
	return c.Start()
}

// Remove stops the server and removes the cluster's directory.
func (c *Cluster) Remove() {
	_ = c.Stop(true)
	os.RemoveAll(c.Dir)
}

func sanitize(name string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(name) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	s := b.String()
	if len(s) > 40 {
		s = s[len(s)-40:]
	}
	return s
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

// EnvDSNSet reports whether LINKD_TEST_POSTGRES_DSN names a server.
func EnvDSNSet() bool { return os.Getenv(EnvDSN) != "" }
