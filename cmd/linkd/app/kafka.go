package app

import (
	"fmt"
	"log/slog"
	"path/filepath"

	"github.com/linkd/linkd/eventstore"
	"github.com/linkd/linkd/kafka"
	"github.com/linkd/linkd/projections"
)

// newKafkaRunner wires the Kafka pipeline (ADR 0106): the instance's own
// read models (local) fed in process, the shared ones from Kafka, and the
// relay under the store's lease when it has one, from the checkpoint in
// the store when it keeps one, else in the data directory.
func newKafkaRunner(cfg Config, store, raw eventstore.Store, local, shared []projections.Projector, log *slog.Logger, m *metrics) (runner, error) {
	kc := kafka.Config{Brokers: kafka.ParseBrokers(cfg.KafkaBrokers), Partitions: int32(cfg.KafkaPartitions), ClientID: "linkd"}.WithDefaults()
	if err := kc.Validate(); err != nil {
		return nil, fmt.Errorf("kafka: %w", err)
	}
	o := kafka.PipelineOptions{
		Local: local, Shared: shared, Logger: log, OnLead: m.relayLeading, OnShared: m.sharedWriting,
		Checkpoint: kafka.NewFileCheckpoint(filepath.Join(cfg.DataDir, kafka.CheckpointFile)),
	}
	if cps, ok := raw.(eventstore.Checkpoints); ok {
		o.Checkpoint = kafka.StoreCheckpoint(cps, kafka.RelayLease)
	}
	o.Lease, _ = raw.(eventstore.Leaser)
	p, err := kafka.NewPipeline(kc, store, o)
	if err != nil {
		return nil, fmt.Errorf("kafka: %w", err)
	}
	return p, nil
}
