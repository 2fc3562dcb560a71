package app

import (
	"context"
	"errors"
	"github.com/linkd/linkd/eventstore"
	"github.com/linkd/linkd/projections"
	"log/slog"
)

func openClickHouse(ctx context.Context, cfg Config, log *slog.Logger) (statsProjection, error) {
	return nil, errors.New("ClickHouse support is being wired")
}

func newKafkaRunner(cfg Config, store eventstore.Store, projs []projections.Projector, log *slog.Logger, m *metrics) (runner, error) {
	return nil, errors.New("Kafka support is being wired")
}
