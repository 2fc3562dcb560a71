package clickindex

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"github.com/linkd/linkd/projections"
	"math/rand/v2"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestMemoryFlat measures what a server holding the index uses with 10,000
// and with 1,000,000 ids (10,000,000 too with LINKD_BENCH_10M=1), and fails
// when the larger store costs 200 MB of RSS more. It takes minutes, so it
// runs only with LINKD_MEMTEST=1:
//
//	LINKD_MEMTEST=1 go test -run TestMemoryFlat -v -timeout 60m ./projections/clickindex/
//
// Each size takes two fresh processes (this test binary again): one loads
// the ids through Apply (its peak RSS is reported too), the other opens
// the loaded store as a restarted server would, then serves 200,000
// lookups of random ids and applies 20,000 new clicks in batches of 64
// meanwhile, and measures: RSS (resident set, Go and Pebble's C
// allocations alike), the Go heap after a GC, Pebble's block cache and
// memtables.
func TestMemoryFlat(t *testing.T) {
	if os.Getenv("LINKD_MEMTEST") != "1" {
		t.Skip("set LINKD_MEMTEST=1 to measure memory (takes minutes)")
	}
	sizes := []int{10_000, 1_000_000}
	if os.Getenv("LINKD_BENCH_10M") == "1" {
		sizes = append(sizes, 10_000_000)
	}
	if env := os.Getenv("LINKD_MEMTEST_SIZES"); env != "" { // "10000,10000000"
		sizes = nil
		for f := range strings.SplitSeq(env, ",") {
			n, err := strconv.Atoi(f)
			if err != nil || n <= 0 {
				t.Fatalf("LINKD_MEMTEST_SIZES: %q", f)
			}
			sizes = append(sizes, n)
		}
	}
	var results []memResult
	for _, n := range sizes {
		dir := t.TempDir()
		load := runMemChild(t, "load", dir, n)
		serve := runMemChild(t, "serve", dir, n)
		t.Logf("%s ids: load %.0f clicks/s, peak RSS %.0f MiB while loading; disk %.0f MiB, %d tables",
			label(n), load.ClicksPerSec, mib(load.PeakRSS), mib(serve.Disk), serve.Tables)
		t.Logf("%s ids serving: RSS %.0f MiB (peak %.0f), Go heap in use %.1f MiB, block cache %.1f MiB, memtables %.1f MiB; lookups p50 %.1f us p99 %.1f us",
			label(n), mib(serve.RSS), mib(serve.PeakRSS), mib(serve.HeapInuse), mib(serve.BlockCache),
			mib(serve.MemTables), serve.P50us, serve.P99us)
		results = append(results, serve)
	}
	base := results[0]
	for i, r := range results[1:] {
		d := r.RSS - base.RSS
		t.Logf("%s ids vs %s: RSS %+.0f MiB, Go heap %+.1f MiB", label(sizes[i+1]), label(sizes[0]),
			float64(d)/(1<<20), float64(r.HeapInuse-base.HeapInuse)/(1<<20))
		if d > 200<<20 {
			t.Errorf("%s ids take %.0f MiB more RSS than %s", label(sizes[i+1]), float64(d)/(1<<20), label(sizes[0]))
		}
	}
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }

const (
	memChildEnv = "LINKD_CLICKINDEX_MEMCHILD"
	memDirEnv   = "LINKD_CLICKINDEX_MEMDIR"
	memNEnv     = "LINKD_CLICKINDEX_MEMN"
)

type memResult struct {
	ClicksPerSec               float64
	RSS, PeakRSS               int64
	HeapInuse                  int64
	BlockCache, MemTables      int64
	Disk                       int64
	Tables                     int64
	P50us, P99us               float64
	LookupsPerSec, ApplyPerSec float64
}

func runMemChild(t *testing.T, phase, dir string, n int) memResult {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), memChildEnv+"="+phase, memDirEnv+"="+dir, memNEnv+"="+strconv.Itoa(n))
	var stdout bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %d: %v", phase, n, err)
	}
	for sc := bufio.NewScanner(&stdout); sc.Scan(); {
		if line, ok := strings.CutPrefix(sc.Text(), "MEMRESULT "); ok {
			var r memResult
			if err := json.Unmarshal([]byte(line), &r); err != nil {
				t.Fatal(err)
			}
			return r
		}
	}
	t.Fatalf("%s %d: no result in %q", phase, n, stdout.String())
	return memResult{}
}

// memChild is the child process of TestMemoryFlat (TestMain runs it).
func memChild() int {
	n, _ := strconv.Atoi(os.Getenv(memNEnv))
	r, err := memPhase(os.Getenv(memChildEnv), os.Getenv(memDirEnv), n)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	b, _ := json.Marshal(r)
	fmt.Printf("MEMRESULT %s\n", b)
	return 0
}

func memPhase(phase, dir string, n int) (memResult, error) {
	var r memResult
	ctx := context.Background()
	s, err := Open(dir, Options{Logger: quiet, Now: benchNow, ExpireEvery: -1})
	if err != nil {
		return r, err
	}
	defer s.Close()
	switch phase {
	case "load":
		g := newBenchGen(n, 2)
		var applying time.Duration
		for g.n < n {
			batch := g.batch(benchBatch)
			t0 := time.Now()
			if err := s.Apply(ctx, projections.Envelopes(batch)); err != nil {
				return r, err
			}
			applying += time.Since(t0)
		}
		r.ClicksPerSec = float64(n) / applying.Seconds()
	case "serve":
		// New clicks on links of their own (kind 5), so that the stream
		// versions start afresh, with ids never handed out before.
		g := newBenchGen(20_000, 3)
		g.linkKind, g.idOffset = 5, 1<<41
		rng := rand.New(rand.NewPCG(5, 5))
		lat := make([]time.Duration, 0, 200_000)
		var applying time.Duration
		for i := range 200_000 {
			if i%640 == 0 && g.n < g.total {
				batch := g.batch(64)
				t0 := time.Now()
				if err := s.Apply(ctx, projections.Envelopes(batch)); err != nil {
					return r, err
				}
				applying += time.Since(t0)
			}
			j := rng.IntN(n)
			t0 := time.Now()
			_, ok, err := s.Click(ctx, benchClickID(j, n))
			lat = append(lat, time.Since(t0))
			if err != nil || !ok {
				return r, fmt.Errorf("Click(%d of %d) = %v, %v", j, n, ok, err)
			}
		}
		var total time.Duration
		for _, d := range lat {
			total += d
		}
		slices.Sort(lat)
		r.P50us = float64(lat[len(lat)/2].Nanoseconds()) / 1000
		r.P99us = float64(lat[len(lat)*99/100].Nanoseconds()) / 1000
		r.LookupsPerSec = float64(len(lat)) / total.Seconds()
		r.ApplyPerSec = float64(g.n) / applying.Seconds()
		m := s.db.Metrics()
		if os.Getenv("LINKD_MEMTEST_PEBBLE") == "1" {
			fmt.Fprintf(os.Stderr, "%d ids:\n%s\n", n, m)
		}
		r.BlockCache, r.MemTables = m.BlockCache.Size, int64(m.MemTable.Size)
		r.Disk, r.Tables = int64(m.DiskSpaceUsage()), m.Total().TablesCount
	default:
		return r, fmt.Errorf("unknown phase %q", phase)
	}
	runtime.GC()
	debug.FreeOSMemory()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	r.HeapInuse = int64(ms.HeapInuse)
	r.RSS, r.PeakRSS = procStatus("VmRSS"), procStatus("VmHWM")
	return r, nil
}

// procStatus reads a size in kB from /proc/self/status, in bytes (0 where
// there is no /proc).
func procStatus(field string) int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			f := strings.Fields(rest)
			if len(f) > 0 {
				kb, _ := strconv.ParseInt(f[0], 10, 64)
				return kb << 10
			}
		}
	}
	return 0
}
