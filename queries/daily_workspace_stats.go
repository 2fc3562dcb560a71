package queries

import (
	"context"
	"time"
)

// DailyWorkspaceStats asks for the daily records of a whole workspace over
// a range of days: of the workspace named, or of the user's default
// workspace when WorkspaceID is empty.
type DailyWorkspaceStats struct {
	WorkspaceID string
	UserID      string
	Range       DateRange
}

// WorkspaceStatsReadModel is what the statistics of a workspace read.
type WorkspaceStatsReadModel interface {
	Workspaces
	Roles
	DefaultWorkspace(ctx context.Context, userID string) (Workspace, bool, error)
	WorkspaceDaily(ctx context.Context, workspaceID string, from, to time.Time) ([]DailyStats, error)
}

// DailyWorkspaceStatsHandler answers DailyWorkspaceStats: 404 `Workspace
// not found`, 403 `Access denied to this workspace`; no records for a
// user without a default workspace.
type DailyWorkspaceStatsHandler struct {
	ReadModel WorkspaceStatsReadModel
	Clock     interface{ Now() time.Time }
}

// Handle answers the query.
func (h DailyWorkspaceStatsHandler) Handle(ctx context.Context, q DailyWorkspaceStats) ([]DailyStats, error) {
	d, err := workspaceStats(ctx, h.ReadModel, q.WorkspaceID, q.UserID, q.Range, h.Clock.Now())
	return d.Records, err
}

func workspaceStats(ctx context.Context, rm WorkspaceStatsReadModel, workspaceID, userID string, r DateRange, now time.Time) (rangeRecords, error) {
	days, err := r.Resolve(now)
	if err != nil {
		return rangeRecords{}, err
	}
	if workspaceID == "" {
		ws, ok, err := rm.DefaultWorkspace(ctx, userID)
		if err != nil || !ok {
			return rangeRecords{Days: days}, err
		}
		workspaceID = ws.ID
	} else if _, _, err := memberWorkspace(ctx, rm, rm, workspaceID, userID); err != nil {
		return rangeRecords{}, err
	}
	records, err := rm.WorkspaceDaily(ctx, workspaceID, days.From, days.To)
	return rangeRecords{Days: days, Records: records}, err
}
