package app

import (
	"context"
	"log/slog"
	"path/filepath"

	"github.com/linkd/linkd/eventstore"
	"github.com/linkd/linkd/projections"
	"github.com/linkd/linkd/projections/analytics"
)

// openStats opens the statistics projection: ClickHouse when configured,
// else the embedded analytics store.
func openStats(ctx context.Context, cfg Config, log *slog.Logger) (statsProjection, error) {
	if cfg.ClickHouseDSN != "" {
		return openClickHouse(ctx, cfg, log)
	}
	return analytics.Open(filepath.Join(cfg.DataDir, "analytics"), analytics.Options{})
}

// newRunner feeds the projections in process, or through Kafka when
// brokers are configured.
func newRunner(cfg Config, store eventstore.Store, projs []projections.Projector, log *slog.Logger, m *metrics) (runner, error) {
	if cfg.KafkaBrokers != "" {
		return newKafkaRunner(cfg, store, projs, log, m)
	}
	return projections.NewLocalRunner(store, projs, projections.LocalOptions{Logger: log}), nil
}
