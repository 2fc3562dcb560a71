package app

import (
	"context"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/linkd/linkd/domain"
	"github.com/linkd/linkd/domain/click"
	"github.com/linkd/linkd/domain/conversion"
	"github.com/linkd/linkd/domain/customdomain"
	"github.com/linkd/linkd/internal/dnscheck"

	"github.com/linkd/linkd/eventstore"
	"github.com/linkd/linkd/internal/clock"
	"github.com/linkd/linkd/projections"
	"github.com/linkd/linkd/projections/analytics"
	chstats "github.com/linkd/linkd/projections/clickhouse/stats"
	"github.com/linkd/linkd/projections/clickindex"
	radarstore "github.com/linkd/linkd/projections/radar"
	"github.com/linkd/linkd/queries"
)

// openStats opens the statistics projection: ClickHouse when configured,
// else the embedded analytics store.
func openStats(ctx context.Context, cfg Config, log *slog.Logger) (statsProjection, error) {
	if cfg.ClickHouseDSN != "" {
		return openClickHouse(ctx, cfg, log)
	}
	// The embedded store is fed in process, from the event store, in both
	// modes (ADR 0106): the feeder resumes after the checkpoint, which is
	// written in the same batch as the data, so a batch lost with the
	// process is simply fed again: no fsync per batch is needed, and the
	// deltas may wait in memory five seconds, added up (Options.FlushEvery).
	opts := analytics.Options{Logger: log, NoSync: true, FlushEvery: 5 * time.Second}
	return analytics.Open(filepath.Join(cfg.DataDir, "analytics"), opts)
}

// writeVersionsBehind tells the projectors that write their stream
// versions behind (versioncache.Behind: the statistics, the click index)
// that they are fed in log order: by the in-process runner, or by a replay.
func writeVersionsBehind(projs ...projections.Projector) {
	for _, p := range projs {
		if vb, ok := p.(interface{ WriteVersionsBehind() }); ok {
			vb.WriteVersionsBehind()
		}
	}
}

// newRunner feeds the projections: every one in process when no brokers
// are configured; with Kafka, the instance's own (local) in process and
// the shared ones (ClickHouse) from Kafka (ADR 0106).
func newRunner(cfg Config, store, raw eventstore.Store, local, shared []projections.Projector, log *slog.Logger, m *metrics) (runner, error) {
	if cfg.KafkaBrokers != "" {
		return newKafkaRunner(cfg, store, raw, local, shared, log, m)
	}
	return projections.NewLocalRunner(store, append(local, shared...), projections.LocalOptions{Logger: log}), nil
}

// dnsChecker adapts internal/dnscheck to the verify command.
type dnsChecker struct{ r *dnscheck.Resolver }

func newDNSChecker(server string) dnsChecker { return dnsChecker{dnscheck.New(server)} }

func (d dnsChecker) Check(ctx context.Context, name, expected string) customdomain.CheckResult {
	r := d.r.Check(ctx, name, expected)
	return customdomain.CheckResult{
		CNAMERecord: r.CNAMERecord, ExpectedValue: r.ExpectedValue, ActualValue: r.ActualValue, Status: r.Status,
		DNSConfigured: r.DNSConfigured, CNAMEAdded: r.CNAMEAdded, Valid: r.Valid,
	}
}

// openClickHouse opens the ClickHouse statistics projection.
//
// With Kafka the projection is shared by the instances of a deployment
// (ADR 0106), which write it one at a time (ADR 0125): it opens on
// standby, recovering only when this instance's turn begins, and each
// Apply writes the aggregates of its clicks before Kafka hears it was
// applied, so that a killed writer leaves nothing behind but what
// recovery of a cut Apply covers.
func openClickHouse(ctx context.Context, cfg Config, log *slog.Logger) (statsProjection, error) {
	o := chstats.Options{Logger: log}
	if cfg.KafkaBrokers != "" {
		o.FlushInterval, o.Standby = -1, true
	}
	return chstats.Open(ctx, cfg.ClickHouseDSN, o)
}

// openClickIndex opens the click-id index that conversions are attributed
// through. Its expiry reads the application's clock. In process the
// feeder resumes after the checkpoint, so batches need no fsync (as the
// analytics store); it is fed in process in both modes (ADR 0106).
func openClickIndex(cfg Config, clk clock.Clock, log *slog.Logger) (*clickindex.Store, error) {
	return clickindex.Open(filepath.Join(cfg.DataDir, "clickindex"), clickindex.Options{
		NoSync: true, Now: clk.Now, Logger: log,
	})
}

// openRadar opens the embedded Radar projection.
func openRadar(cfg Config) (*radarstore.Store, error) {
	return radarstore.Open(filepath.Join(cfg.DataDir, "radar.db"))
}

// clickIndexReader serves the ClickByTrackingID query from the click
// index.
type clickIndexReader struct{ s *clickindex.Store }

func (r clickIndexReader) TrackedClick(ctx context.Context, id string) (queries.TrackedClick, bool, error) {
	c, ok, err := r.s.Click(ctx, id)
	if err != nil || !ok {
		return queries.TrackedClick{}, false, err
	}
	return queries.TrackedClick{
		ClickID: c.ClickID, LinkID: c.LinkID, WorkspaceID: c.WorkspaceID, ProjectID: c.ProjectID, DomainID: c.DomainID,
		ClickedAt: c.Timestamp, Country: c.Country, DeviceType: c.DeviceType, Browser: c.Browser, OS: c.OS,
		Referrer: c.Referrer, QR: c.QR, Version: c.Version, HasVersion: c.HasVersion,
	}, true, nil
}

// conversionClicks resolves the clicks that leads and sales name
// (commands.Clicks): the ClickByTrackingID query over the click index. A
// miss waits until the index has applied the log as it stands and asks
// again, so that a lead sent right after its redirect finds its click
// (reads follow writes); a known click costs no wait.
type conversionClicks struct {
	query queries.ClickByTrackingIDHandler
	head  eventstore.HeadReader
	index *eventstore.Watermark
	wait  time.Duration
}

func (c conversionClicks) ClickByTrackingID(ctx context.Context, trackingID string) (conversion.Click, time.Time, error) {
	q := queries.ClickByTrackingID{TrackingID: trackingID}
	tc, err := c.query.Handle(ctx, q)
	if domain.KindOf(err) == domain.KindNotFound && c.index != nil {
		_ = eventstore.CatchUp(ctx, c.head, c.wait, c.index) // behind in time: answer what the index has
		tc, err = c.query.Handle(ctx, q)
	}
	if err != nil {
		return conversion.Click{}, time.Time{}, err
	}
	cc := conversion.Click{ClickID: tc.ClickID, LinkID: tc.LinkID, WorkspaceID: tc.WorkspaceID, ProjectID: tc.ProjectID,
		ClickedAt: tc.ClickedAt, Country: tc.Country, DeviceType: tc.DeviceType, Browser: tc.Browser, OS: tc.OS,
		Referrer: tc.Referrer, QR: tc.QR}
	if tc.HasVersion {
		cc.Seq = tc.Version + 1
	}
	return cc, tc.ClickedAt.Add(click.TrackingTTL), nil
}
