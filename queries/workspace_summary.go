package queries

import (
	"context"
	"time"
)

// WorkspaceSummary asks for the summary of a whole workspace (spec 2.8)
// over a range of days. Access and errors are those of
// DailyWorkspaceStats.
type WorkspaceSummary struct {
	WorkspaceID string // "" for the user's default workspace
	UserID      string
	Range       DateRange
}

// WorkspaceSummaryHandler answers WorkspaceSummary.
type WorkspaceSummaryHandler struct {
	ReadModel WorkspaceStatsReadModel
	Clock     interface{ Now() time.Time }
}

// Handle answers the query.
func (h WorkspaceSummaryHandler) Handle(ctx context.Context, q WorkspaceSummary) (Summary, error) {
	d, err := workspaceStats(ctx, h.ReadModel, q.WorkspaceID, q.UserID, q.Range, h.Clock.Now())
	if err != nil {
		return Summary{}, err
	}
	return summarize(d.Records, d.Days), nil
}
