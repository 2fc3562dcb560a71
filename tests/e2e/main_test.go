// Package e2e runs the real linkd binary as a child process: crash tests
// (SIGKILL in the middle of writes and clicks) and replay equality.
package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/linkd/linkd/eventstore/postgres"
	"github.com/linkd/linkd/internal/testsupport/chtest"
	"github.com/linkd/linkd/internal/testsupport/pgtest"
	"github.com/linkd/linkd/internal/testsupport/ports"
)

var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "linkd-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "linkd")
	build := exec.Command("go", "build", "-o", binary, "github.com/linkd/linkd/cmd/linkd")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build linkd:", err)
		os.Exit(1)
	}
	code := m.Run()
	dropDatabases()
	chtest.Stop()
	pgtest.Stop()
	os.RemoveAll(dir)
	os.Exit(code)
}

const operatorKey = "svc_sk_e2e_operator_key_0123456789abcd"

// proc is a running linkd serve.
type proc struct {
	t    testing.TB
	cmd  *exec.Cmd
	url  string
	addr string
	out  *syncBuffer
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func freeAddr(t testing.TB) string {
	addr, err := ports.Addr()
	if err != nil {
		t.Fatal(err)
	}
	return addr
}

// env is the environment of a child linkd.
func env(dataDir, addr string, extra ...string) []string {
	e := append(os.Environ(),
		"LINKD_DATA_DIR="+dataDir, "LINKD_ADDR="+addr, "LINKD_INITIAL_API_KEY="+operatorKey,
		"LINKD_LOG_FORMAT=text", "LINKD_LOG_LEVEL=warn", "GOMAXPROCS=2",
		// The load of these tests comes from one address: it is a flood
		// for the click limit (tested in tests/redirect), and every access
		// must count here.
		"LINKD_CLICK_LIMIT=0", "LINKD_CLICK_LIMIT_NETWORK=0")
	if base := os.Getenv("LINKD_EVENTSTORE"); postgres.IsDSN(base) {
		e = append(e, "LINKD_EVENTSTORE="+databaseFor(base, dataDir))
	}
	return append(e, extra...) // a later LINKD_EVENTSTORE wins
}

// With LINKD_EVENTSTORE naming a PostgreSQL server, the suite runs on it:
// every data directory gets an empty database of its own there (as apptest
// gives every server), the same for every process started on it; a test
// whose processes share a log sets LINKD_EVENTSTORE itself.
var (
	dbMu      sync.Mutex
	databases = map[string]string{} // by data directory
	dbBase    string
)

func databaseFor(base, dataDir string) string {
	dbMu.Lock()
	defer dbMu.Unlock()
	if dsn, ok := databases[dataDir]; ok {
		return dsn
	}
	dsn, err := pgtest.CreateDatabase(base, fmt.Sprintf("linkd_e2e_%d_%d", len(databases), os.Getpid()))
	if err != nil {
		panic(fmt.Sprintf("LINKD_EVENTSTORE: %v", err))
	}
	databases[dataDir], dbBase = dsn, base
	return dsn
}

func dropDatabases() {
	dbMu.Lock()
	defer dbMu.Unlock()
	for _, dsn := range databases {
		if err := pgtest.DropDatabase(dbBase, dsn); err != nil {
			fmt.Fprintln(os.Stderr, "drop database:", err)
		}
	}
}

// start runs linkd serve and waits until it answers /healthz.
func start(t testing.TB, dataDir, addr string, extra ...string) *proc {
	t.Helper()
	p, _ := startSeen(t, dataDir, addr, extra...)
	return p
}

// startSeen is start, also returning the statuses /healthz answered before
// its 200.
func startSeen(t testing.TB, dataDir, addr string, extra ...string) (*proc, []int) {
	t.Helper()
	var seen []int
	p := &proc{t: t, url: "http://" + addr, addr: addr, out: &syncBuffer{}}
	p.cmd = exec.Command(binary, "serve")
	p.cmd.Env = env(dataDir, addr, extra...)
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get(p.url + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return p, seen
			}
			seen = append(seen, resp.StatusCode)
		}
		if time.Now().After(deadline) {
			p.kill()
			t.Fatalf("linkd did not start: %v\n%s", err, p.out.String())
		}
		time.Sleep(25 * time.Millisecond)
	}
}

func (p *proc) kill() {
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	_ = p.cmd.Wait()
}

func (p *proc) stop() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			p.t.Errorf("linkd exited with %v\n%s", err, p.out.String())
		}
	case <-time.After(30 * time.Second):
		p.kill()
		p.t.Errorf("linkd did not stop on SIGTERM\n%s", p.out.String())
	}
}

var client = &http.Client{
	Timeout:       20 * time.Second,
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	Transport:     &http.Transport{MaxIdleConnsPerHost: 64},
}

func do(method, url, key string, body any, header ...string) (int, []byte, http.Header, error) {
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		return 0, nil, nil, err
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, resp.Header, err
}

// allLinks walks the link list with cursors and returns id -> clicks.
func allLinks(t testing.TB, url string, archived bool) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	path := fmt.Sprintf("%s/v1/links?page_size=100&archived=%v", url, archived)
	next := path
	for next != "" {
		st, b, _, err := do("GET", next, operatorKey, nil)
		if err != nil || st != 200 {
			t.Fatalf("list links: %d %v %s", st, err, b)
		}
		var page struct {
			Items []struct {
				ID     string  `json:"id"`
				Clicks float64 `json:"clicks"`
			} `json:"items"`
			NextCursor *string `json:"next_cursor"`
		}
		if err := json.Unmarshal(b, &page); err != nil {
			t.Fatal(err)
		}
		for _, it := range page.Items {
			if _, dup := out[it.ID]; dup {
				t.Fatalf("link %s listed twice", it.ID)
			}
			out[it.ID] = it.Clicks
		}
		next = ""
		if page.NextCursor != nil {
			next = path + "&cursor=" + *page.NextCursor
		}
	}
	return out
}

func lines(s string) []string {
	var out []string
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		out = append(out, sc.Text())
	}
	return out
}
