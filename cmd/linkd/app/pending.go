package app

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/linkd/linkd/api"
	"github.com/linkd/linkd/domain/customdomain"
	"github.com/linkd/linkd/eventstore"
	"github.com/linkd/linkd/projections"
)

func openClickHouse(ctx context.Context, cfg Config, log *slog.Logger) (statsProjection, error) {
	return nil, errors.New("ClickHouse support is being wired")
}

func newKafkaRunner(cfg Config, store eventstore.Store, projs []projections.Projector, log *slog.Logger, m *metrics) (runner, error) {
	return nil, errors.New("Kafka support is being wired")
}

type dnsChecker struct{}

func newDNSChecker(server string) dnsChecker { return dnsChecker{} }

func (dnsChecker) Check(ctx context.Context, name, expected string) customdomain.CheckResult {
	return customdomain.CheckResult{CNAMERecord: name, ExpectedValue: expected, Status: "pending"}
}

type limiter struct{}

func newLimiter() limiter { return limiter{} }

func (limiter) Allow(key string, limit int, per time.Duration, now time.Time) api.RateDecision {
	return api.RateDecision{Allowed: true, Limit: limit, Remaining: limit, Reset: now.Add(per)}
}
