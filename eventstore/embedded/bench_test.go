package embedded

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/linkd/linkd/eventstore"
)

// Benchmarks: docs/performance.md has the commands and the latest figures.

// appender is what BenchmarkAppend64Writers drives: the store or the
// Pebble-only baseline.
type appender interface {
	Append(ctx context.Context, stream string, expected eventstore.ExpectedVersion, events ...eventstore.EventData) (eventstore.AppendResult, error)
	ReadAll(ctx context.Context, after eventstore.Position, max int) ([]eventstore.RecordedEvent, error)
	Close() error
}

type engine struct {
	name string
	open func(b *testing.B) appender
}

var engines = []engine{
	{"embedded-interval", func(b *testing.B) appender { return openBench(b, SyncInterval) }},
	{"embedded-always", func(b *testing.B) appender { return openBench(b, SyncAlways) }},
	{"pebble-sync", func(b *testing.B) appender { return openBaseline(b, true) }},
	{"pebble-nosync", func(b *testing.B) appender { return openBaseline(b, false) }},
}

func openBench(b *testing.B, d Durability) appender {
	s, err := Open(Options{Dir: b.TempDir(), Durability: d, Logger: discardLogger()})
	if err != nil {
		b.Fatal(err)
	}
	return s
}

func openBaseline(b *testing.B, sync bool) appender {
	p, err := openPebbleStore(b.TempDir(), sync)
	if err != nil {
		b.Fatal(err)
	}
	return p
}

// benchEvent is a small event: about 200 bytes of JSON.
func benchEvent(i int) eventstore.EventData {
	data := fmt.Sprintf(`{"code":"c%07d","url":"https://example.com/some/long/path/%d?utm_source=newsletter&utm_medium=email","workspace":"ws-0b1c2d3e","by":"user-42","pad":"%s"}`, i, i, strings.Repeat("x", 40))
	return eventstore.EventData{ID: uuid.New(), Type: "LinkCreated", Data: []byte(data)}
}

// BenchmarkAppend64Writers: 64 goroutines append one small event each time.
// new-streams: every append creates a stream (NoStream), the link-creation
// workload and the worst case for the version lookup; hot-streams: appends
// go to 1,000 streams shared by all writers (Any), versions come from the
// cache.
func BenchmarkAppend64Writers(b *testing.B) {
	for _, eng := range engines {
		for _, workload := range []string{"new-streams", "hot-streams"} {
			b.Run(eng.name+"/"+workload, func(b *testing.B) {
				s := eng.open(b)
				defer s.Close()
				benchAppend(b, s, 64, workload)
			})
		}
	}
}

func benchAppend(b *testing.B, s appender, writers int, workload string) {
	ctx := context.Background()
	evs := make([]eventstore.EventData, 1024)
	for i := range evs {
		evs[i] = benchEvent(i)
	}
	var next atomic.Int64
	lat := make([][]time.Duration, writers)
	var wg sync.WaitGroup
	b.ResetTimer()
	start := time.Now()
	cpu0 := cpuTime()
	for g := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			mine := make([]time.Duration, 0, b.N/writers+1)
			for {
				i := int(next.Add(1)) - 1
				if i >= b.N {
					break
				}
				stream, exp := fmt.Sprintf("link-%d-%d", g, i), eventstore.NoStream()
				if workload == "hot-streams" {
					stream, exp = fmt.Sprintf("hot-%d", i%1000), eventstore.Any()
				}
				ev := evs[i%len(evs)]
				ev.ID = uuid.Nil
				t0 := time.Now()
				if _, err := s.Append(ctx, stream, exp, ev); err != nil {
					b.Error(err)
					return
				}
				mine = append(mine, time.Since(t0))
			}
			lat[g] = mine
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	cpu := cpuTime() - cpu0
	b.StopTimer()
	reportLatency(b, slices.Concat(lat...), "")
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "events/s")
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/event")
}

// cpuTime is the CPU time (user and system) of the process so far: a cost
// per event that the other jobs on a busy machine disturb much less than
// throughput.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func reportLatency(b *testing.B, all []time.Duration, prefix string) {
	if len(all) == 0 {
		return
	}
	slices.Sort(all)
	b.ReportMetric(float64(all[len(all)/2].Microseconds())/1000, prefix+"p50-ms")
	b.ReportMetric(float64(all[len(all)*99/100].Microseconds())/1000, prefix+"p99-ms")
}

// BenchmarkReadAll: replay 1M events (~200 B of data each) from Start in
// pages of 1,000, with the log in the page cache.
func BenchmarkReadAll(b *testing.B) {
	const total = 1_000_000
	for _, eng := range []engine{engines[0], engines[3]} {
		b.Run(eng.name, func(b *testing.B) {
			s := eng.open(b)
			defer s.Close()
			ctx := context.Background()
			batch := make([]eventstore.EventData, 1000)
			for i := 0; i < total; i += len(batch) {
				for k := range batch {
					batch[k] = benchEvent(i + k)
					batch[k].ID = uuid.Nil
				}
				if _, err := s.Append(ctx, fmt.Sprintf("link-%d", i/len(batch)), eventstore.NoStream(), batch...); err != nil {
					b.Fatal(err)
				}
			}
			runtime.GC()
			read := 0
			for b.Loop() {
				after := eventstore.Start
				n := 0
				for {
					evs, err := s.ReadAll(ctx, after, 1000)
					if err != nil {
						b.Fatal(err)
					}
					n += len(evs)
					if len(evs) < 1000 {
						break
					}
					after = evs[len(evs)-1].Position
				}
				if n != total {
					b.Fatalf("read %d events, want %d", n, total)
				}
				read += n
			}
			b.ReportMetric(float64(read)/b.Elapsed().Seconds(), "events/s")
		})
	}
}

// BenchmarkSubscribeLive: the time from the start of an Append to the
// delivery of its event to a live subscriber. Writers append at a fixed
// total rate (so that the figure is a latency, not the length of a
// backlog): 1 writer at 1,000 events/s, 16 writers at 16,000 events/s.
func BenchmarkSubscribeLive(b *testing.B) {
	for _, d := range []Durability{SyncInterval, SyncAlways} {
		for _, writers := range []int{1, 16} {
			const perWriter = 1000 // events/s
			b.Run(fmt.Sprintf("%s/writers=%d", d, writers), func(b *testing.B) {
				s, err := Open(Options{Dir: b.TempDir(), Durability: d, Logger: discardLogger()})
				if err != nil {
					b.Fatal(err)
				}
				defer s.Close()
				ctx := context.Background()
				sub, err := s.SubscribeAll(ctx, eventstore.Start, eventstore.Filter{})
				if err != nil {
					b.Fatal(err)
				}
				defer sub.Close()
				quota := func(g int) int { // writer g's share of b.N
					q := b.N / writers
					if g < b.N%writers {
						q++
					}
					return q
				}
				sent := make([][]atomic.Int64, writers) // when the append of writer g's event v started
				for g := range sent {
					sent[g] = make([]atomic.Int64, quota(g))
				}
				lat := make([]time.Duration, 0, b.N)
				recvDone := make(chan error, 1)
				b.ResetTimer()
				go func() {
					for range b.N {
						ev, err := sub.Recv(ctx)
						if err != nil {
							recvDone <- err
							return
						}
						var g int
						fmt.Sscanf(ev.Stream, "live-%d", &g)
						lat = append(lat, time.Duration(time.Now().UnixNano()-sent[g][ev.Version].Load()))
					}
					recvDone <- nil
				}()
				var wg sync.WaitGroup
				for g := range writers {
					wg.Add(1)
					go func() {
						defer wg.Done()
						stream := fmt.Sprintf("live-%d", g)
						start := time.Now()
						for v := range quota(g) {
							ev := benchEvent(v)
							if wait := time.Until(start.Add(time.Duration(v) * time.Second / perWriter)); wait > 0 {
								time.Sleep(wait)
							}
							sent[g][v].Store(time.Now().UnixNano())
							if _, err := s.Append(ctx, stream, eventstore.Any(), ev); err != nil {
								b.Error(err)
								return
							}
						}
					}()
				}
				wg.Wait()
				select {
				case err := <-recvDone:
					if err != nil {
						b.Fatal(err)
					}
				case <-time.After(time.Minute):
					b.Fatal("the subscriber did not receive every event")
				}
				b.StopTimer()
				reportLatency(b, lat, "deliver-")
			})
		}
	}
}
