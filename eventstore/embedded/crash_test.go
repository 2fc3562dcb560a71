package embedded

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/linkd/linkd/eventstore"
)

// The crash test runs a child process (this test binary again) that appends
// concurrently and prints every acknowledged append; the parent kills it
// with SIGKILL in the middle and checks, after reopening, that every
// acknowledged append is there exactly once, that appends are all or
// nothing, and that versions have no gap.

const (
	crashDirEnv        = "EMBEDDED_CRASH_DIR"
	crashDurabilityEnv = "EMBEDDED_CRASH_DURABILITY"
	crashRoundEnv      = "EMBEDDED_CRASH_ROUND"
	crashSegment       = 256 << 10 // small segments: kills also land around rolls
)

// crashBody is the data of the child's events.
type crashBody struct {
	Append string `json:"append"` // unique per append
	Index  int    `json:"index"`
	Count  int    `json:"count"`
	Pad    string `json:"pad"`
}

// TestCrashChild is the child's side; it does nothing in a normal run.
func TestCrashChild(t *testing.T) {
	dir := os.Getenv(crashDirEnv)
	if dir == "" {
		t.Skip("run by TestCrashRecovery")
	}
	d, _ := strconv.Atoi(os.Getenv(crashDurabilityEnv))
	round := os.Getenv(crashRoundEnv)
	s, err := Open(Options{Dir: dir, Durability: Durability(d), segmentSize: crashSegment, FlushInterval: 20 * time.Millisecond, Logger: discardLogger()})
	if err != nil {
		fmt.Printf("open failed: %v\n", err)
		os.Exit(2)
	}
	out := make(chan string, 4096)
	go func() {
		w := bufio.NewWriter(os.Stdout)
		for line := range out {
			w.WriteString(line)
			if len(out) == 0 {
				w.Flush()
			}
		}
	}()
	ctx := context.Background()
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			own := fmt.Sprintf("own-%d", g)
			v, exists, err := s.StreamVersion(ctx, own)
			if err != nil {
				fmt.Printf("version failed: %v\n", err)
				os.Exit(2)
			}
			for i := 0; ; i++ {
				stream, exp := own, eventstore.NoStream()
				if exists {
					exp = eventstore.Exact(v)
				}
				if i%3 == 1 {
					stream, exp = fmt.Sprintf("shared-%d", i%5), eventstore.Any()
				}
				n := 1 + (i*7+g)%5
				if i%50 == 49 {
					n = 300 // a big append: large writes tear more easily
				}
				id := fmt.Sprintf("r%s-g%d-%d", round, g, i)
				evs := make([]eventstore.EventData, n)
				for k := range evs {
					data, _ := json.Marshal(crashBody{Append: id, Index: k, Count: n, Pad: strings.Repeat("p", 100+k%64)})
					evs[k] = eventstore.EventData{Type: "Crashed", Data: data}
				}
				res, err := s.Append(ctx, stream, exp, evs...)
				if err != nil {
					fmt.Printf("append failed: %v\n", err)
					os.Exit(2)
				}
				if stream == own {
					v, exists = res.NextExpectedVersion, true
				}
				out <- fmt.Sprintf("ack %s %s %d %d end\n", id, stream, res.NextExpectedVersion+1-uint64(n), n)
			}
		}()
	}
	wg.Wait()
}

type ackedAppend struct {
	id     string
	stream string
	first  uint64
	n      int
}

func TestCrashRecovery(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	for _, d := range []Durability{SyncInterval, SyncAlways} {
		t.Run(d.String(), func(t *testing.T) {
			dir := t.TempDir()
			var acked []ackedAppend
			for round := range 4 {
				minAcks := 500 + round*700
				if raceEnabled {
					minAcks = 200 + round*200
				}
				acked = append(acked, runCrashChild(t, dir, d, round, minAcks)...)
				verifyCrash(t, dir, acked)
			}
		})
	}
}

// runCrashChild starts the child, kills it after it acknowledged minAcks
// appends, and returns the appends it acknowledged.
func runCrashChild(t *testing.T, dir string, d Durability, round, minAcks int) []ackedAppend {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), crashDirEnv+"="+dir, crashDurabilityEnv+"="+strconv.Itoa(int(d)), crashRoundEnv+"="+strconv.Itoa(round))
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 1024)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	var acked []ackedAppend
	parse := func(line string) {
		f := strings.Fields(line)
		if len(f) != 6 || f[0] != "ack" || f[5] != "end" {
			if strings.HasPrefix(line, "ack ") {
				return // cut off by the kill
			}
			t.Errorf("child: %s", line)
			return
		}
		first, _ := strconv.ParseUint(f[3], 10, 64)
		n, _ := strconv.Atoi(f[4])
		acked = append(acked, ackedAppend{id: f[1], stream: f[2], first: first, n: n})
	}
	timeout := time.After(time.Minute)
wait:
	for len(acked) < minAcks {
		select {
		case line, ok := <-lines:
			if !ok {
				break wait
			}
			parse(line)
		case <-timeout:
			cmd.Process.Kill()
			t.Fatalf("child acknowledged only %d appends in a minute", len(acked))
		}
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatalf("kill: %v", err)
	}
	for line := range lines {
		parse(line)
	}
	err = cmd.Wait()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("child ended with %v, not by SIGKILL (acks: %d)", err, len(acked))
	}
	t.Logf("round %d: killed the child after %d acknowledged appends", round, len(acked))
	return acked
}

func verifyCrash(t *testing.T, dir string, acked []ackedAppend) {
	t.Helper()
	s := openT(t, Options{Dir: dir, segmentSize: crashSegment, Logger: slog.New(slog.NewTextHandler(tWriter{t}, nil))})
	defer closeT(t, s)
	all := checkConsistent(t, s) // gapless versions, index agrees with the log
	type seen struct {
		stream string
		first  uint64
		n      int
	}
	appends := map[string]*seen{}
	for i := 0; i < len(all); {
		var b crashBody
		if err := json.Unmarshal(all[i].Data, &b); err != nil {
			t.Fatal(err)
		}
		if appends[b.Append] != nil {
			t.Fatalf("append %s appears twice", b.Append)
		}
		if b.Index != 0 || i+b.Count > len(all) {
			t.Fatalf("append %s: event %d of %d at the start of a run", b.Append, b.Index, b.Count)
		}
		// An append's events are together, complete and in order.
		for k := range b.Count {
			var bk crashBody
			json.Unmarshal(all[i+k].Data, &bk)
			if bk.Append != b.Append || bk.Index != k || all[i+k].Stream != all[i].Stream || all[i+k].Version != all[i].Version+uint64(k) {
				t.Fatalf("append %s is not whole at event %d", b.Append, k)
			}
		}
		appends[b.Append] = &seen{stream: all[i].Stream, first: all[i].Version, n: b.Count}
		i += b.Count
	}
	for _, a := range acked {
		got := appends[a.id]
		if got == nil {
			t.Fatalf("acknowledged append %s (%s@%d, %d events) is lost", a.id, a.stream, a.first, a.n)
		}
		if got.stream != a.stream || got.first != a.first || got.n != a.n {
			t.Fatalf("acknowledged append %s: %s@%d (%d events), stored as %s@%d (%d)", a.id, a.stream, a.first, a.n, got.stream, got.first, got.n)
		}
	}
	t.Logf("%d appends (%d events) in the store, %d acknowledged", len(appends), len(all), len(acked))
}

// tWriter sends log lines to t.Log.
type tWriter struct{ t testing.TB }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}
