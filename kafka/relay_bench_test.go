package kafka_test

import (
	"context"
	"fmt"
	"hash/fnv"
	"syscall"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/linkd/linkd/eventstore"
	"github.com/linkd/linkd/kafka"
	"github.com/linkd/linkd/kafka/kafkatest"
)

// BenchmarkRelayKafka measures how fast a relay publishes a log it is
// behind on to Kafka (kfake, in process, 12 partitions): one op is one
// event of about 200 bytes, in 2,000 streams (5 consecutive events each
// in turn). Run:
//
//	go test ./kafka -run '^$' -bench 'RelayKafka/workers' -benchtime 50000x -count 3
//	go test ./kafka -run '^$' -bench 'RelayKafka/rtt' -benchtime 5000x -count 3
func BenchmarkRelayKafka(b *testing.B) {
	cases := []struct {
		name      string
		workers   int
		producers int           // Kafka producers: 1 shared by all workers, one per worker, or 0: none (the relay's own cost)
		rtt       time.Duration // added before each publish: a broker across a network
	}{
		{"workers=1", 1, 1, 0},
		{"workers=8", 8, 1, 0},
		{"workers=32", 32, 1, 0},
		{"workers=64", 64, 1, 0},
		{"workers=128", 128, 1, 0},
		{"workers=256", 256, 1, 0},
		{"workers=32/producer-each", 32, 32, 0},
		{"workers=1/no-broker", 1, 0, 0},
		{"workers=128/no-broker", 128, 0, 0},
		{"rtt=1ms/workers=1", 1, 1, time.Millisecond},
		{"rtt=1ms/workers=128", 128, 1, time.Millisecond},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			benchRelay(b, c.workers, c.producers, c.rtt)
		})
	}
}

func benchRelay(b *testing.B, workers, producers int, rtt time.Duration) {
	kafkatest.Deadline(b, 10*time.Minute)
	cfg := kafkatest.Start(b, 12)
	store := openStore(b)
	fill(b, store, b.N)
	if err := kafka.EnsureTopics(cfg, "linkd.clicks"); err != nil {
		b.Fatal(err)
	}
	var pubs []message.Publisher
	for range producers {
		p, err := kafka.NewPublisher(cfg, quiet)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = p.Close() })
		pubs = append(pubs, p)
	}
	var pub message.Publisher = nopPublisher{}
	switch {
	case producers == 1:
		pub = pubs[0]
	case producers > 1:
		pub = sharded(pubs)
	}
	if rtt > 0 {
		pub = delayed{pub, rtt}
	}
	r := kafka.NewRelay(store, pub, &kafka.MemoryCheckpoint{}, kafka.RelayOptions{Workers: workers, Logger: quiet})
	head, err := store.Head(context.Background())
	if err != nil {
		b.Fatal(err)
	}

	b.ResetTimer()
	start, cpu0 := time.Now(), cpuTime()
	stop := runRelay(b, r)
	for r.Acked().Less(head) {
		time.Sleep(time.Millisecond)
	}
	elapsed, cpu := time.Since(start), cpuTime()-cpu0
	b.StopTimer()
	if err := stop(); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "events/s")
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/event")
}

// cpuTime is the CPU time (user and system) the test process has used, the
// in-process Kafka included: on a shared machine it says more than the
// wall clock.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// fill appends n click-like events in 2,000 streams, 5 per append, taking
// the streams in turn.
func fill(b *testing.B, s eventstore.Store, n int) {
	b.Helper()
	data := []byte(`{"link_id":"lnk_01HZX3Q8V7","country":"DE","city":"Berlin","device":"mobile","browser":"Safari","os":"iOS","referrer":"https://news.example.com/article/123456","bot":false,"qr":false}`)
	const streams, per = 2000, 5
	batch := make([]eventstore.EventData, per)
	for i := range batch {
		batch[i] = eventstore.EventData{Type: "ClickRecorded", Data: data}
	}
	for done, i := 0, 0; done < n; i++ {
		k := min(per, n-done)
		if _, err := s.Append(context.Background(), fmt.Sprintf("clicks-%04d", i%streams), eventstore.Any(), batch[:k]...); err != nil {
			b.Fatal(err)
		}
		done += k
	}
}

// sharded routes each stream to one of several publishers: one Kafka
// producer per worker instead of one shared.
type shardedPublisher []message.Publisher

func sharded(pubs []message.Publisher) shardedPublisher { return shardedPublisher(pubs) }

func (s shardedPublisher) Publish(topic string, msgs ...*message.Message) error {
	h := fnv.New32a()
	h.Write([]byte(msgs[0].Metadata.Get(kafka.MetaStream)))
	return s[h.Sum32()%uint32(len(s))].Publish(topic, msgs...)
}

func (s shardedPublisher) Close() error { return nil }

// nopPublisher acknowledges every message at once.
type nopPublisher struct{}

func (nopPublisher) Publish(string, ...*message.Message) error { return nil }
func (nopPublisher) Close() error                              { return nil }

// delayed waits a round trip before each message, as watermill-kafka does
// with a broker across a network (kfake in process answers at once).
type delayed struct {
	message.Publisher
	rtt time.Duration
}

func (d delayed) Publish(topic string, msgs ...*message.Message) error {
	for _, m := range msgs {
		time.Sleep(d.rtt)
		if err := d.Publisher.Publish(topic, m); err != nil {
			return err
		}
	}
	return nil
}
