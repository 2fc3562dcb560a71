package e2e

import (
	"strings"
	"testing"

	"github.com/linkd/linkd/internal/testsupport/chtest"
	"github.com/linkd/linkd/internal/testsupport/pgtest"
	"github.com/linkd/linkd/kafka/kafkatest"
)

// The crash and replay tests again with the event log in PostgreSQL
// (LINKD_EVENTSTORE=postgres://...): SIGKILL of linkd under load loses
// nothing acknowledged, and `linkd replay` from PostgreSQL gives the same
// read models. The database is pgtest's (a throwaway cluster, or
// LINKD_TEST_POSTGRES_DSN); without PostgreSQL they skip.

func TestCrashKeepsAcknowledgedWritesAndClicksPostgres(t *testing.T) {
	crashScenario(t, "LINKD_EVENTSTORE="+pgtest.DSN(t))
}

func TestReplayGivesSameReadModelsPostgres(t *testing.T) {
	replayScenario(t, "LINKD_EVENTSTORE="+pgtest.DSN(t))
}

// The scaled path on PostgreSQL: the relay reads the log from PostgreSQL
// and publishes it to Kafka (kfake), the projections consume from Kafka.
func TestKafkaCrashKeepsAcknowledgedWritesAndClicksPostgres(t *testing.T) {
	cfg := kafkatest.Start(t, 6)
	crashScenario(t, "LINKD_EVENTSTORE="+pgtest.DSN(t), "LINKD_KAFKA_BROKERS="+strings.Join(cfg.Brokers, ","), "LINKD_KAFKA_PARTITIONS=6")
}

// And with the statistics in ClickHouse too (skipped without a ClickHouse).
func TestScaledCrashKeepsClicksPostgres(t *testing.T) {
	ch := chtest.DSN(t)
	cfg := kafkatest.Start(t, 6)
	crashScenario(t, "LINKD_EVENTSTORE="+pgtest.DSN(t), "LINKD_CLICKHOUSE_DSN="+ch,
		"LINKD_KAFKA_BROKERS="+strings.Join(cfg.Brokers, ","), "LINKD_KAFKA_PARTITIONS=6")
}
