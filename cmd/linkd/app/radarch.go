package app

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/linkd/linkd/eventstore"
	chradar "github.com/linkd/linkd/projections/clickhouse/radar"
	chstats "github.com/linkd/linkd/projections/clickhouse/stats"
	radarstore "github.com/linkd/linkd/projections/radar"
	"github.com/linkd/linkd/queries"
)

// openClickHouseRadar opens the Radar projector of ClickHouse on the
// connection of the statistics projection, when that is ClickHouse (nil
// otherwise).
func openClickHouseRadar(ctx context.Context, stats statsProjection) (*chradar.Projection, error) {
	p, ok := stats.(*chstats.Projection)
	if !ok {
		return nil, nil
	}
	return chradar.New(ctx, p.DB())
}

// radarReports serves the Radar reports: overview, breakdowns and custom
// events from ClickHouse, once its Radar projector and the statistics
// projector (which writes the sales) have applied everything appended
// before the request; people and details from the embedded Radar
// projection, always fresh (docs/decisions.md).
type radarReports struct {
	ch     *chradar.Projection
	people *radarstore.Store
	head   eventstore.HeadReader
	marks  []*eventstore.Watermark
	log    *slog.Logger
}

var _ queries.RadarReadModel = radarReports{}

// radarWait bounds how long a report waits for ClickHouse to catch up.
const radarWait = 10 * time.Second

func (r radarReports) wait(ctx context.Context) error {
	err := eventstore.CatchUp(ctx, r.head, radarWait, r.marks...)
	if errors.Is(err, eventstore.ErrBehind) {
		// Answer with what ClickHouse has rather than not at all.
		r.log.Warn("radar: ClickHouse has not applied the latest events; the report may miss them")
		return nil
	}
	return err
}

func (r radarReports) RadarOverview(ctx context.Context, rr queries.RadarRange) (queries.RadarOverview, error) {
	if err := r.wait(ctx); err != nil {
		return queries.RadarOverview{}, err
	}
	return r.ch.RadarOverview(ctx, rr)
}

func (r radarReports) RadarBreakdowns(ctx context.Context, rr queries.RadarRange, limit int) (queries.RadarBreakdowns, error) {
	if err := r.wait(ctx); err != nil {
		return queries.RadarBreakdowns{}, err
	}
	return r.ch.RadarBreakdowns(ctx, rr, limit)
}

func (r radarReports) RadarEvents(ctx context.Context, rr queries.RadarRange, limit int) ([]queries.RadarEventStat, error) {
	if err := r.wait(ctx); err != nil {
		return nil, err
	}
	return r.ch.RadarEvents(ctx, rr, limit)
}

func (r radarReports) RadarPeople(ctx context.Context, rr queries.RadarRange, limit int, cursor string) (queries.RadarPeoplePage, error) {
	return r.people.RadarPeople(ctx, rr, limit, cursor)
}

func (r radarReports) RadarVisitor(ctx context.Context, rr queries.RadarRange, visitorID string) (queries.RadarVisitorDetails, bool, error) {
	return r.people.RadarVisitor(ctx, rr, visitorID)
}
