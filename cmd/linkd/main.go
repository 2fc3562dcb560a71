// Command linkd is a self-hostable service for short links and deep links,
// click analytics and conversion tracking.
//
//	linkd serve                        run everything in one process
//	linkd replay [--projection NAME]   rebuild read models from the event store
//
// Settings come from flags and LINKD_* environment variables (see
// docs/operations.md).
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"syscall"
	"time"

	"github.com/google/uuid"
	"github.com/spf13/cobra"

	"github.com/linkd/linkd/cmd/linkd/app"
	"github.com/linkd/linkd/internal/storage/pebbleheap"
)

// serveGCPercent is linkd serve's garbage collector target unless GOGC is
// set. The live heap is small and short-lived garbage dominates it
// (requests, events, batches), so collecting less often than Go's 100
// saves CPU; at 400 its heap swung to five times the live heap, memory
// a freshly started server touches for the first time under load, a
// page fault each. Replay and generate keep Go's 100: there every page of
// a higher target is a fault too, and faults cost more than collections
// (ADR 0003, ADR 0112).
const serveGCPercent = 200

// setGC applies percent unless GOGC is set.
func setGC(percent int) {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(percent)
	}
}

// governHeap keeps the collector's target off Pebble's buffers in a build
// without cgo, where they are on the Go heap (pebbleheap.Govern: nothing
// with cgo or with GOMEMLIMIT set). Without it, linkd serve built with
// CGO_ENABLED=0 (the container image) grew to 1 GB in its first minute of
// redirects and went on growing; with it, the heap's target stayed under
// twice the live heap (450-470 MB against 260 MB live, 48 s in), at the
// same CPU per redirect in the first 40 s. ADR 0004.
func governHeap(ctx context.Context) { go pebbleheap.Govern(ctx, time.Second) }

// spareProcs is how many processors (Ps) linkd serve runs beyond the
// CPUs it may use, unless GOMAXPROCS is set. Its background work (the
// projectors, the event store's indexer and compactions, Pebble's) runs
// in long stretches; with a P per CPU, a request that lands behind one
// waits in that P's queue for the scheduler's whole time slice (10 ms).
// With spare Ps the kernel interleaves the threads at a finer grain: on 2
// CPUs, the p99 of Radar collect at 64 connections fell from 15-21 ms to
// 11 ms and that of sales from 38-47 ms to 26-27 ms, at the same rate
// (ADR 0002).
const spareProcs = 2

// setProcs applies spareProcs unless GOMAXPROCS is set.
func setProcs() {
	if os.Getenv("GOMAXPROCS") == "" {
		runtime.GOMAXPROCS(runtime.GOMAXPROCS(0) + spareProcs)
	}
}

func main() {
	if path := os.Getenv("LINKD_CPUPROFILE"); path != "" {
		// A CPU profile of the whole command, for diagnosing replays and
		// generators; linkd serve has LINKD_DEBUG_ADDR for live profiles.
		f, err := os.Create(path)
		if err == nil && pprof.StartCPUProfile(f) == nil {
			defer func() { pprof.StopCPUProfile(); f.Close() }()
		}
	}
	// Ids made with google/uuid (events, links, conversions) take their
	// random bits from a pool that crypto/rand refills 256 bytes at a
	// time, rather than a system call and an allocation each. A redirect's
	// two come from internal/ids, which takes no lock.
	uuid.EnableRandPool()
	if err := newRoot().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "linkd:", err)
		pprof.StopCPUProfile()
		os.Exit(1)
	}
}

// config reads defaults, then the environment, then the flags.
func config(cmd *cobra.Command) (app.Config, error) {
	cfg := app.Defaults()
	if err := cfg.FromEnv(os.Getenv); err != nil {
		return cfg, err
	}
	if f := cmd.Flags().Lookup("addr"); f != nil && f.Changed {
		cfg.Addr = f.Value.String()
	}
	if f := cmd.Flags().Lookup("data-dir"); f != nil && f.Changed {
		cfg.DataDir = f.Value.String()
	}
	return cfg, cfg.Validate()
}

func newRoot() *cobra.Command {
	root := &cobra.Command{
		Use:           "linkd",
		Short:         "Short links, deep links, click analytics and conversion tracking",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.PersistentFlags().String("addr", "127.0.0.1:8080", "listen address (LINKD_ADDR)")
	root.PersistentFlags().String("data-dir", "./data", "where the embedded stores keep their files (LINKD_DATA_DIR)")
	root.AddCommand(serveCmd(), replayCmd(), generateCmd(), copyLogCmd())
	return root
}

func serveCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "serve",
		Short: "Serve the API, short links and projections in one process",
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := config(cmd)
			if err != nil {
				return err
			}
			log := app.NewLogger(cfg, os.Stderr)
			setGC(serveGCPercent)
			setProcs()
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			governHeap(ctx)
			a, err := app.Open(ctx, cfg, log, os.Stdout)
			if err != nil {
				return err
			}
			serveErr := a.Serve(ctx)
			closeErr := a.Close()
			if serveErr != nil {
				return serveErr
			}
			if closeErr == nil {
				log.Info("linkd stopped cleanly")
			}
			return closeErr
		},
	}
}
