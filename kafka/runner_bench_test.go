package kafka_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/linkd/linkd/eventstore"
	"github.com/linkd/linkd/kafka"
	"github.com/linkd/linkd/kafka/kafkatest"
	"github.com/linkd/linkd/projections"
)

// BenchmarkKafkaRunner measures how fast one runner instance applies a
// backlog from Kafka (kfake in process, 12 partitions), into a projector
// whose Apply costs a fixed time per call (a transaction's commit) plus
// nothing per event. One op is one event. The backlog is in single-event
// messages, as older relays published, or with events-per-message=k in
// batch messages of k events of one stream, as the relay publishes a
// stream's events it has at hand. Run:
//
//	go test ./kafka -run '^$' -bench KafkaRunner -benchtime 10000x
func BenchmarkKafkaRunner(b *testing.B) {
	for _, c := range []struct {
		linger time.Duration
		commit time.Duration
		per    int // events per message
	}{
		{-1, 0, 1},
		{time.Millisecond, 0, 1},
		{-1, time.Millisecond, 1},
		{time.Millisecond, time.Millisecond, 1},
		{-1, 5 * time.Millisecond, 1},
		{time.Millisecond, 5 * time.Millisecond, 1},
		{time.Millisecond, 0, 10},
		{time.Millisecond, time.Millisecond, 10},
		{time.Millisecond, 5 * time.Millisecond, 10},
	} {
		name := fmt.Sprintf("linger=%s/commit=%s", c.linger, c.commit)
		if c.per > 1 {
			name += fmt.Sprintf("/events-per-message=%d", c.per)
		}
		b.Run(name, func(b *testing.B) {
			kafkatest.Deadline(b, 5*time.Minute)
			cfg := kafkatest.Start(b, 12)
			backlog(b, cfg, b.N, c.per)
			m := kafkatest.NewModel()
			p := &slowProjector{Projector: kafkatest.NewProjector("bench", m, "clicks"), commit: c.commit}
			r, err := kafka.NewRunner(cfg, []projections.Projector{p}, kafka.RunnerOptions{Linger: c.linger, Logger: quiet})
			if err != nil {
				b.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			b.ResetTimer()
			start := time.Now()
			go func() { done <- r.Run(ctx) }()
			for {
				if a, _ := m.Counts(); a >= b.N {
					break
				}
				time.Sleep(time.Millisecond)
			}
			elapsed := time.Since(start)
			b.StopTimer()
			cancel()
			if err := <-done; err != nil {
				b.Fatal(err)
			}
			s := r.Stats("bench")
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "events/s")
			b.ReportMetric(float64(s.Events)/float64(s.Batches), "events/batch")
		})
	}
}

type slowProjector struct {
	*kafkatest.Projector
	commit time.Duration
}

func (p *slowProjector) Apply(ctx context.Context, evs []projections.Event) error {
	time.Sleep(p.commit)
	return p.Projector.Apply(ctx, evs)
}

// backlog publishes n events in 1,000 streams of category clicks, per
// events of a stream per message (single-event messages if per is 1).
func backlog(b *testing.B, cfg kafka.Config, n, per int) {
	b.Helper()
	pub, err := kafka.NewPublisher(cfg, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer pub.Close()
	const workers, streams = 64, 1000
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if per == 1 { // streams in turn, version by version
				for i := range n {
					s := i % streams
					if s%workers != w { // each stream has one publisher: in order
						continue
					}
					e := kafkatest.Event(fmt.Sprintf("clicks-%04d", s), uint64(i/streams), uint64(i+1))
					if err := pub.Publish("linkd.clicks", kafka.EncodeEvent(e)); err != nil {
						b.Error(err)
						return
					}
				}
				return
			}
			for s := w; s < streams; s += workers {
				var evs []eventstore.RecordedEvent
				for i := s; i < n; i += streams {
					evs = append(evs, kafkatest.Event(fmt.Sprintf("clicks-%04d", s), uint64(i/streams), uint64(i+1)))
				}
				for len(evs) > 0 {
					k := min(per, len(evs))
					if err := pub.Publish("linkd.clicks", kafka.EncodeBatch(evs[:k])); err != nil {
						b.Error(err)
						return
					}
					evs = evs[k:]
				}
			}
		}()
	}
	wg.Wait()
}
