package e2e

import (
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/linkd/linkd/kafka/kafkatest"
)

// TestKafkaWriteLatency reports how long a link creation takes when the
// read model is fed over Kafka (the answer waits until it is visible).
func TestKafkaWriteLatency(t *testing.T) {
	cfg := kafkatest.Start(t, 6)
	p := start(t, t.TempDir(), freeAddr(t), "LINKD_KAFKA_BROKERS="+strings.Join(cfg.Brokers, ","), "LINKD_KAFKA_PARTITIONS=6")
	defer p.stop()
	var d []time.Duration
	for i := 0; i < 40; i++ {
		s := time.Now()
		if _, _, err := createLink(p.url, fmt.Sprintf("https://example.com/%d", i)); err != nil {
			t.Fatal(err)
		}
		d = append(d, time.Since(s))
	}
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	t.Logf("create link over Kafka: p50 %v, p90 %v, max %v", d[len(d)/2], d[len(d)*9/10], d[len(d)-1])
	if d[len(d)/2] > 2*time.Second {
		t.Errorf("median create latency %v: reads-follow-writes is waiting out its timeout", d[len(d)/2])
	}
}
