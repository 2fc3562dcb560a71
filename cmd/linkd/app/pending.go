package app

import (
	"context"
	"errors"
	"log/slog"
)

func openClickHouse(ctx context.Context, cfg Config, log *slog.Logger) (statsProjection, error) {
	return nil, errors.New("ClickHouse support is being wired")
}
