package relay_test

import (
	"context"
	"fmt"
	"hash/fnv"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/linkd/linkd/eventstore"
	"github.com/linkd/linkd/internal/bus"
	"github.com/linkd/linkd/internal/bus/bustest"
	"github.com/linkd/linkd/internal/relay"
)

// BenchmarkRelayKafka measures how fast a relay publishes a log it is
// behind on to Kafka (kfake, in process, 12 partitions): one op is one
// event of about 200 bytes, in 2,000 streams. Run:
//
//	go test ./internal/relay -run '^$' -bench RelayKafka -benchtime 50000x -count 3
func BenchmarkRelayKafka(b *testing.B) {
	cases := []struct {
		name      string
		workers   int
		producers int // Kafka producers: 1 shared by all workers, or one per worker
	}{
		{"workers=1", 1, 1},
		{"workers=8", 8, 1},
		{"workers=32", 32, 1},
		{"workers=128", 128, 1},
		{"workers=32/producer-each", 32, 32},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			benchRelay(b, c.workers, c.producers)
		})
	}
}

func benchRelay(b *testing.B, workers, producers int) {
	bustest.Deadline(b, 10*time.Minute)
	cfg := bustest.Kafka(b, 12)
	store := openStore(b)
	fill(b, store, b.N)
	if err := bus.EnsureTopics(cfg, "linkd.clicks"); err != nil {
		b.Fatal(err)
	}
	var pubs []message.Publisher
	for range producers {
		p, err := bus.NewKafkaPublisher(cfg, quiet)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = p.Close() })
		pubs = append(pubs, p)
	}
	var pub message.Publisher = pubs[0]
	if producers > 1 {
		pub = sharded(pubs)
	}
	r := relay.New(store, pub, &relay.MemoryCheckpoint{}, relay.Options{Workers: workers, Logger: quiet})
	head, err := store.Head(context.Background())
	if err != nil {
		b.Fatal(err)
	}

	b.ResetTimer()
	start := time.Now()
	stop := runRelay(b, r)
	for r.Acked().Less(head) {
		time.Sleep(time.Millisecond)
	}
	elapsed := time.Since(start)
	b.StopTimer()
	if err := stop(); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "events/s")
}

// fill appends n click-like events in 2,000 streams, 100 per append.
func fill(b *testing.B, s eventstore.Store, n int) {
	b.Helper()
	data := []byte(`{"link_id":"lnk_01HZX3Q8V7","country":"DE","city":"Berlin","device":"mobile","browser":"Safari","os":"iOS","referrer":"https://news.example.com/article/123456","bot":false,"qr":false}`)
	const streams, per = 2000, 100
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
	h.Write([]byte(msgs[0].Metadata.Get(bus.MetaStream)))
	return s[h.Sum32()%uint32(len(s))].Publish(topic, msgs...)
}

func (s shardedPublisher) Close() error { return nil }
