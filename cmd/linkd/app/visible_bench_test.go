package app

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/linkd/linkd/commands"
	"github.com/linkd/linkd/domain/click"
	"github.com/linkd/linkd/domain/link"
	"github.com/linkd/linkd/eventstore"
	"github.com/linkd/linkd/eventstore/embedded"
	"github.com/linkd/linkd/internal/secrets"
	"github.com/linkd/linkd/projections"
	"github.com/linkd/linkd/projections/analytics"
	"github.com/linkd/linkd/projections/core"
)

// BenchmarkWriteToVisible measures, under 64 concurrent writers of clicks
// (the busiest write path), the time from an append's acknowledgement to
// the moment both local projections (core and analytics) have applied it.
//
//	go test ./cmd/linkd/app -run '^$' -bench WriteToVisible -benchtime 200000x
func BenchmarkWriteToVisible(b *testing.B) {
	for _, mode := range []embedded.Durability{embedded.SyncInterval, embedded.SyncAlways} {
		name := map[embedded.Durability]string{embedded.SyncInterval: "interval", embedded.SyncAlways: "always"}[mode]
		b.Run(name, func(b *testing.B) { benchVisible(b, mode) })
	}
}

func benchVisible(b *testing.B, mode embedded.Durability) {
	dir := b.TempDir()
	store, err := embedded.Open(embedded.Options{Dir: filepath.Join(dir, "events"), Durability: mode})
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close()
	cs, err := core.Open(filepath.Join(dir, "readmodel.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer cs.Close()
	as, err := analytics.Open(filepath.Join(dir, "analytics"), analytics.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer as.Close()
	runner := projections.NewLocalRunner(store, []projections.Projector{cs, as}, projections.LocalOptions{Logger: NewLogger(Config{LogLevel: "error"}, io.Discard)})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = runner.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	secret := secrets.New(make([]byte, 32))
	deps := &commands.Deps{Store: store, Cipher: secret.Cipher(), DefaultPlan: "pro"}
	actor := commands.Actor{UserID: "bench", Operator: true}
	var links []*link.Link
	for i := 0; i < 100; i++ {
		l, _, err := commands.CreateLinkHandler{Deps: deps}.Handle(ctx, commands.CreateLink{Actor: actor, Attributes: link.Attributes{OriginalURL: fmt.Sprintf("https://example.com/%d", i)}})
		if err != nil {
			b.Fatal(err)
		}
		links = append(links, l)
	}
	wms := []*eventstore.Watermark{runner.Watermark(core.Name), runner.Watermark(analytics.Name)}
	rec := commands.RecordClickHandler{Deps: deps}
	const writers = 64
	var next atomic.Int64
	lat := make([][]time.Duration, writers)
	var wg sync.WaitGroup
	b.ResetTimer()
	start := time.Now()
	cpu0 := cpuTime()
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for {
				n := next.Add(1)
				if n > int64(b.N) {
					return
				}
				l := links[n%int64(len(links))]
				_, res, err := rec.Handle(ctx, commands.RecordClick{Click: click.Recorded{
					LinkID: l.ID, WorkspaceID: l.WorkspaceID, Code: l.Code, Source: click.SourceRedirect,
					Visitor: fmt.Sprintf("%032x", n%5000), Browser: "Chrome", OS: "Windows", DeviceType: "desktop", Country: "DE", Continent: "EU",
				}})
				if err != nil {
					b.Error(err)
					return
				}
				acked := time.Now()
				// Sample every 16th write's visibility, so that waiting
				// does not throttle the writers much.
				if n%16 == 0 {
					for _, wm := range wms {
						if err := wm.Wait(ctx, res.Position); err != nil {
							b.Error(err)
							return
						}
					}
					lat[w] = append(lat[w], time.Since(acked))
				}
			}
		}(w)
	}
	wg.Wait()
	// Let the projections finish, so that their work counts too.
	head, _ := store.Head(ctx)
	for _, wm := range wms {
		_ = wm.Wait(ctx, head)
	}
	cpu := cpuTime() - cpu0
	el := time.Since(start)
	b.StopTimer()
	var all []time.Duration
	for _, l := range lat {
		all = append(all, l...)
	}
	sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
	if len(all) > 0 {
		b.ReportMetric(float64(all[len(all)/2].Microseconds())/1000, "p50-visible-ms")
		b.ReportMetric(float64(all[len(all)*99/100].Microseconds())/1000, "p99-visible-ms")
	}
	b.ReportMetric(float64(b.N)/el.Seconds(), "clicks/s")
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-us/click")
}

// cpuTime is the process's user and system time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
