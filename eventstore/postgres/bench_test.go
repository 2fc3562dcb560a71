package postgres

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/linkd/linkd/eventstore"
	"github.com/linkd/linkd/eventstore/embedded"
	"github.com/linkd/linkd/internal/testsupport/cpu"
	"github.com/linkd/linkd/internal/testsupport/pgtest"
)

// benchCluster is a durable cluster (fsync and synchronous_commit on, as
// users run it) for the benchmarks that claim durability, shared by the
// benchmarks of one run.
var (
	benchOnce sync.Once
	benchC    *pgtest.Cluster
	benchErr  error
)

func benchDSN(b *testing.B) string {
	b.Helper()
	if !pgtest.Available() {
		b.Skip(pgtest.SkipMessage)
	}
	if pgtest.EnvDSNSet() {
		return pgtest.DSN(b)
	}
	benchOnce.Do(func() {
		benchC, benchErr = pgtest.StartCluster(pgtest.Options{TestSettings: os.Getenv("X_FAST") != ""})
	})
	if benchErr != nil {
		b.Fatal(benchErr)
	}
	return benchC.NewDatabase(b)
}

// smallClick is about the size of a ClickRecorded without enrichment.
var smallClick = []byte(`{"link_id":"lnk_01HZX3J6W5Q2V8","click_id":"01HZX3J6W5Q2V8ABCDEFGH","timestamp":"2026-11-28T14:00:00Z","country":"DE","device":"desktop","browser":"Chrome"}`)

// appendLoad runs writers goroutines appending one small event each to
// streams of their own, n events in all, and returns events/s and the
// latencies of the appends.
func appendLoad(b *testing.B, s eventstore.Store, writers, n int) (float64, []time.Duration) {
	ctx := context.Background()
	var next atomic.Int64
	lat := make([][]time.Duration, writers)
	var wg sync.WaitGroup
	start := time.Now()
	for w := range writers {
		wg.Go(func() {
			stream := fmt.Sprintf("click-bench%d", w)
			for next.Add(1) <= int64(n) {
				t0 := time.Now()
				if _, err := s.Append(ctx, stream, eventstore.Any(), eventstore.EventData{Type: "ClickRecorded", Data: smallClick}); err != nil {
					b.Error(err)
					return
				}
				lat[w] = append(lat[w], time.Since(t0))
			}
		})
	}
	wg.Wait()
	el := time.Since(start)
	var all []time.Duration
	for _, l := range lat {
		all = append(all, l...)
	}
	slices.Sort(all)
	return float64(len(all)) / el.Seconds(), all
}

func pct(l []time.Duration, p float64) time.Duration {
	if len(l) == 0 {
		return 0
	}
	return l[min(len(l)-1, int(float64(len(l))*p))]
}

// BenchmarkAppend64Writers: 64 goroutines append small events, one per
// append, to a durable local cluster (fsync on). Reported: events/s and the
// p50/p99 latency of an append. The target is 20,000 events/s with p99
// under 20 ms. BenchmarkAppend64WritersEmbedded is the same load on the
// embedded store (SyncAlways), the same-run baseline.
func BenchmarkAppend64Writers(b *testing.B) {
	w, _ := strconv.Atoi(os.Getenv("X_WRITERS"))
	linger, _ := time.ParseDuration(os.Getenv("X_LINGER"))
	s := openT(b, benchDSN(b), Options{Writers: w, Linger: linger})
	appendLoad(b, s, 64, 2000) // warm up
	b.ResetTimer()
	rate, lat := appendLoad(b, s, 64, max(b.N, 50000))
	b.ReportMetric(rate, "events/s")
	b.ReportMetric(float64(pct(lat, 0.5).Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(pct(lat, 0.99).Microseconds())/1000, "p99-ms")
}

func BenchmarkAppend64WritersEmbedded(b *testing.B) {
	s, err := embedded.Open(embedded.Options{Dir: b.TempDir(), Durability: embedded.SyncAlways})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	appendLoad(b, s, 64, 2000)
	b.ResetTimer()
	rate, lat := appendLoad(b, s, 64, max(b.N, 50000))
	b.ReportMetric(rate, "events/s")
	b.ReportMetric(float64(pct(lat, 0.5).Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(pct(lat, 0.99).Microseconds())/1000, "p99-ms")
}

// fill appends n small events in appends of 500.
func fill(b *testing.B, s eventstore.Store, n int) {
	ctx := context.Background()
	evs := make([]eventstore.EventData, 500)
	for i := range evs {
		evs[i] = eventstore.EventData{Type: "ClickRecorded", Data: smallClick}
	}
	for i := 0; i < n; i += len(evs) {
		if _, err := s.Append(ctx, fmt.Sprintf("click-fill%d", i%97), eventstore.Any(), evs...); err != nil {
			b.Fatal(err)
		}
	}
}

// replayRate reads the whole log once as a replay does: through a
// subscription from the start, and by ReadAll pages of 1000.
func replayRate(b *testing.B, s eventstore.Store, n int) (sub, pages float64) {
	ctx := context.Background()
	start := time.Now()
	sb, err := s.SubscribeAll(ctx, eventstore.Start, eventstore.Filter{})
	if err != nil {
		b.Fatal(err)
	}
	for range n {
		if _, err := sb.Recv(ctx); err != nil {
			b.Fatal(err)
		}
	}
	sb.Close()
	sub = float64(n) / time.Since(start).Seconds()
	start = time.Now()
	got, after := 0, eventstore.Start
	for got < n {
		evs, err := s.ReadAll(ctx, after, 1000)
		if err != nil || len(evs) == 0 {
			b.Fatal(err, len(evs))
		}
		got += len(evs)
		after = evs[len(evs)-1].Position
	}
	return sub, float64(n) / time.Since(start).Seconds()
}

// BenchmarkReplay reads 200,000 small events from the start of the log
// (target: 100,000 events/s); BenchmarkReplayEmbedded is the same-run
// baseline.
func BenchmarkReplay(b *testing.B) {
	const n = 200000
	s := openT(b, benchDSN(b), Options{})
	fill(b, s, n)
	b.ResetTimer()
	sub, pages := replayRate(b, s, n)
	b.ReportMetric(sub, "sub-events/s")
	b.ReportMetric(pages, "readall-events/s")
}

func BenchmarkReplayEmbedded(b *testing.B) {
	const n = 200000
	s, err := embedded.Open(embedded.Options{Dir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	fill(b, s, n)
	b.ResetTimer()
	sub, pages := replayRate(b, s, n)
	b.ReportMetric(sub, "sub-events/s")
	b.ReportMetric(pages, "readall-events/s")
}

// BenchmarkAppendOneWriter: one goroutine appending one small event at a
// time to the durable cluster: the latency of one grouped transaction with
// nothing to group (a commit, a WAL flush and the round trips).
func BenchmarkAppendOneWriter(b *testing.B) {
	s := openT(b, benchDSN(b), Options{})
	appendLoad(b, s, 1, 200)
	b.ResetTimer()
	rate, lat := appendLoad(b, s, 1, max(b.N, 2000))
	b.ReportMetric(rate, "events/s")
	b.ReportMetric(float64(pct(lat, 0.5).Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(pct(lat, 0.99).Microseconds())/1000, "p99-ms")
}

// appendShared runs writers goroutines, spread over stores, appending one
// small event each to one of streams click streams shared by all (the
// clicks of a deployment's busy links, arriving at every instance), n
// events in all; it returns events/s.
func appendShared(b *testing.B, stores []*Store, writers, streams, n int) float64 {
	ctx := context.Background()
	var next atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for w := range writers {
		s := stores[w%len(stores)]
		wg.Go(func() {
			for i := next.Add(1); i <= int64(n); i = next.Add(1) {
				stream := fmt.Sprintf("click-shared%d", (i*7919+int64(w))%int64(streams))
				if _, err := s.Append(ctx, stream, eventstore.Any(), eventstore.EventData{Type: "ClickRecorded", Data: smallClick}); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	return float64(n) / time.Since(start).Seconds()
}

// BenchmarkAppendSharedStreams: 64 goroutines append clicks to 200 shared
// streams through three stores on one database (three instances), and,
// the same-run baseline, through one. Reported: both rates and their
// ratio (the target of many instances is at least 0.9).
func BenchmarkAppendSharedStreams(b *testing.B) {
	dsn := benchDSN(b)
	one := []*Store{openT(b, dsn, Options{})}
	three := []*Store{openT(b, dsn, Options{}), openT(b, dsn, Options{}), openT(b, dsn, Options{})}
	n := max(b.N, 30000)
	appendShared(b, one, 64, 200, 2000) // warm up
	appendShared(b, three, 64, 200, 2000)
	b.ResetTimer()
	r1 := appendShared(b, one, 64, 200, n)
	r3 := appendShared(b, three, 64, 200, n)
	b.ReportMetric(r1, "one-events/s")
	b.ReportMetric(r3, "three-events/s")
	b.ReportMetric(r3/r1, "ratio")
}

// BenchmarkFollowThreeStores: three stores on one database (three
// instances), each followed by five subscriptions read as the in-process
// feeders read them (a waiting Recv, then what more is there at once),
// while 64 goroutines spread over the stores append n small events. Every
// subscription of every store gets every event. Reported: the rate, and
// this process's CPU (the stores, their subscriptions and the appenders;
// not PostgreSQL's) per event appended.
func BenchmarkFollowThreeStores(b *testing.B) {
	dsn := benchDSN(b)
	stores := []*Store{openT(b, dsn, Options{}), openT(b, dsn, Options{}), openT(b, dsn, Options{})}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done, cancelDone := context.WithCancel(ctx)
	cancelDone()
	var got atomic.Int64
	var wg sync.WaitGroup
	for _, s := range stores {
		for range 5 {
			sub, err := s.SubscribeAll(ctx, eventstore.Start, eventstore.Filter{})
			if err != nil {
				b.Fatal(err)
			}
			wg.Go(func() {
				defer sub.Close()
				for {
					if _, err := sub.Recv(ctx); err != nil {
						return
					}
					n := int64(1)
					for ; ; n++ {
						if _, err := sub.Recv(done); err != nil {
							break
						}
					}
					got.Add(n)
				}
			})
		}
	}
	run := func(n int) (float64, float64) {
		want := got.Load() + int64(15*n)
		cpu0 := cpu.Process()
		start := time.Now()
		appendShared(b, stores, 64, 1000, n)
		for got.Load() < want {
			time.Sleep(time.Millisecond)
		}
		return float64(n) / time.Since(start).Seconds(), float64((cpu.Process() - cpu0).Microseconds()) / float64(n)
	}
	run(2000) // warm up
	b.ResetTimer()
	rate, perEvent := run(max(b.N, 30000))
	b.ReportMetric(rate, "events/s")
	b.ReportMetric(perEvent, "cpu-µs/event")
	cancel()
	wg.Wait()
}
