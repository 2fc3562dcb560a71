package bus_test

import (
	"sync"
	"testing"
	"time"
	"fmt"

	"github.com/IBM/sarama"
	"github.com/ThreeDotsLabs/watermill-kafka/v3/pkg/kafka"

	"github.com/linkd/linkd/internal/bus"
	"github.com/linkd/linkd/internal/bus/bustest"
)

func BenchmarkZZPublish(b *testing.B) {
	for _, idem := range []bool{true, false} {
		for _, g := range []int{1, 32} {
			b.Run(fmt.Sprintf("idem=%v/g=%d", idem, g), func(b *testing.B) {
				cfg := bustest.Kafka(b, 12).WithDefaults()
				bus.EnsureTopics(cfg, "linkd.clicks")
				sc := cfg.SaramaProducerConfig()
				if !idem {
					sc.Producer.Idempotent = false
					sc.Net.MaxOpenRequests = 5
				}
				pub, err := kafka.NewPublisher(kafka.PublisherConfig{Brokers: cfg.Brokers, Marshaler: bus.KafkaMarshaler(), OverwriteSaramaConfig: sc}, nil)
				if err != nil {
					b.Fatal(err)
				}
				defer pub.Close()
				_ = sarama.WaitForAll
				start := time.Now()
				var wg sync.WaitGroup
				per := b.N / g
				for w := range g {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for i := range per {
							e := bustest.Event(fmt.Sprintf("clicks-%d-%d", w, i%50), uint64(i), uint64(i))
							if err := pub.Publish("linkd.clicks", bus.EncodeEvent(e)); err != nil {
								b.Error(err)
								return
							}
						}
					}()
				}
				wg.Wait()
				b.ReportMetric(float64(per*g)/time.Since(start).Seconds(), "msg/s")
			})
		}
	}
}
