package queries

import (
	"context"
	"time"

	"github.com/linkd/linkd/domain"
)

// DailyLinkStats asks for the daily records of a link (spec 2.7) over a
// range of days.
type DailyLinkStats struct {
	LinkID string
	UserID string
	Range  DateRange
}

// LinkStatsReadModel is what the statistics of one link read: the link
// (core projection) and its clicks (statistics store).
type LinkStatsReadModel interface {
	Link(ctx context.Context, id string) (Link, bool, error)
	Roles
	LinkClicked(ctx context.Context, linkID string) (bool, error)
	LinkDaily(ctx context.Context, linkID string, from, to time.Time) ([]DailyStats, error)
}

// DailyLinkStatsHandler answers DailyLinkStats: 404 `Link not found`, 403
// `Access denied to this link` for a link of another workspace without
// public statistics, 404 `No stats found for this link` for a link never
// clicked.
type DailyLinkStatsHandler struct {
	ReadModel LinkStatsReadModel
	Clock     interface{ Now() time.Time }
}

// Handle answers the query.
func (h DailyLinkStatsHandler) Handle(ctx context.Context, q DailyLinkStats) ([]DailyStats, error) {
	days, err := linkStats(ctx, h.ReadModel, q.LinkID, q.UserID, q.Range, h.Clock.Now())
	return days.Records, err
}

// rangeRecords are the records of a link or workspace over the days a query
// resolved to.
type rangeRecords struct {
	Days    Days
	Records []DailyStats
}

func linkStats(ctx context.Context, rm LinkStatsReadModel, linkID, userID string, r DateRange, now time.Time) (rangeRecords, error) {
	days, err := r.Resolve(now)
	if err != nil {
		return rangeRecords{}, err
	}
	l, ok, err := rm.Link(ctx, linkID)
	if err != nil {
		return rangeRecords{}, err
	}
	if !ok {
		return rangeRecords{}, domain.NotFound(msgLinkNotFound)
	}
	if !l.HasPublicStat {
		if _, err := requireMember(ctx, rm, l.WorkspaceID, userID, domain.Forbidden(msgAccessDeniedLink)); err != nil {
			return rangeRecords{}, err
		}
	}
	clicked, err := rm.LinkClicked(ctx, linkID)
	if err != nil {
		return rangeRecords{}, err
	}
	if !clicked {
		return rangeRecords{}, domain.NotFound(msgNoStats)
	}
	records, err := rm.LinkDaily(ctx, linkID, days.From, days.To)
	for i := range records {
		if records[i].WorkspaceID == "" {
			records[i].WorkspaceID = l.WorkspaceID // a day with conversions and no click
		}
	}
	return rangeRecords{Days: days, Records: records}, err
}
