package queries

import (
	"context"
	"time"

	"github.com/linkd/linkd/domain"
)

// PublicLinkStats asks, without a key, for the statistics of the link a
// short URL names (Host and Code, as LinkAccess reads them): its summary
// over the range, and its daily records over the range cut to MaxDays. Only
// a link with has_public_stat answers; any other code, known or not, is 404
// `Link not found`, so that the answer tells nothing of links that do not
// publish their statistics (docs/decisions.md, "Public statistics").
type PublicLinkStats struct {
	Host  string
	Code  string
	Range DateRange // MaxDays applies to the daily records only
}

// PublicStats is the answer of PublicLinkStats: a link never clicked has
// a zero summary and no daily record (not the keyed 404 `No stats found`,
// which would only tell the owner what the page shows anyway).
type PublicStats struct {
	Link    *Link // shared, read only
	Summary Summary
	Daily   []DailyStats
}

// PublicLinkStatsReadModel is what PublicLinkStats reads: the link by its
// code (the short URL's read model) and its daily records.
type PublicLinkStatsReadModel interface {
	LinkAccessReadModel
	LinkDaily(ctx context.Context, linkID string, from, to time.Time) ([]DailyStats, error)
}

// PublicLinkStatsHandler answers PublicLinkStats.
type PublicLinkStatsHandler struct {
	ReadModel PublicLinkStatsReadModel
	Clock     interface{ Now() time.Time }
	// DefaultHost is the host of the default short domain, as HostOnly
	// gives it.
	DefaultHost string
}

// Handle answers the query.
func (h PublicLinkStatsHandler) Handle(ctx context.Context, q PublicLinkStats) (PublicStats, error) {
	now := h.Clock.Now()
	all := q.Range
	all.MaxDays = 0
	days, err := all.Resolve(now)
	if err != nil {
		return PublicStats{}, err
	}
	daily, err := q.Range.Resolve(now)
	if err != nil {
		return PublicStats{}, err
	}
	domainID, err := LinkAccessHandler{ReadModel: h.ReadModel, DefaultHost: h.DefaultHost}.domainOf(ctx, q.Host)
	if err != nil {
		return PublicStats{}, err
	}
	l, err := h.ReadModel.LinkByCode(ctx, domainID, q.Code)
	if err != nil {
		return PublicStats{}, err
	}
	if l == nil || !l.HasPublicStat {
		return PublicStats{}, domain.NotFound(msgLinkNotFound)
	}
	records, err := h.ReadModel.LinkDaily(ctx, l.ID, days.From, days.To)
	if err != nil {
		return PublicStats{}, err
	}
	out := PublicStats{Link: l, Summary: summarize(records, days), Daily: []DailyStats{}}
	for _, d := range records {
		day, err := time.Parse(time.DateOnly, d.Date)
		if err == nil && (day.Before(daily.From) || day.After(daily.To)) {
			continue
		}
		if d.TotalClicks == 0 {
			continue // a day with conversions only: public statistics show clicks
		}
		out.Daily = append(out.Daily, d)
	}
	return out, nil
}
