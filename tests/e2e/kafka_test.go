package e2e

import (
	"strings"
	"testing"

	"github.com/linkd/linkd/kafka/kafkatest"
)

// The crash and replay tests again, with linkd relaying events over Kafka
// (kfake: an in-process cluster speaking the real protocol over TCP).

func TestKafkaCrashKeepsAcknowledgedWritesAndClicks(t *testing.T) {
	cfg := kafkatest.Start(t, 6)
	crashScenario(t, "LINKD_KAFKA_BROKERS="+strings.Join(cfg.Brokers, ","), "LINKD_KAFKA_PARTITIONS=6")
}

func TestKafkaReplayGivesSameReadModels(t *testing.T) {
	cfg := kafkatest.Start(t, 6)
	replayScenario(t, "LINKD_KAFKA_BROKERS="+strings.Join(cfg.Brokers, ","), "LINKD_KAFKA_PARTITIONS=6")
}
