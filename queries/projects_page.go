package queries

import "context"

// ProjectsPage asks for one page of the projects a user may see: of one
// workspace, or of all of theirs.
type ProjectsPage struct {
	UserID      string
	WorkspaceID string // "" for all of the user's workspaces
	Page        Page
}

// ProjectsPageReadModel is what ProjectsPage reads.
type ProjectsPageReadModel interface {
	visibleWorkspacesReadModel
	Projects(ctx context.Context, workspaceIDs []string, p Page) (PageResult[Project], error)
}

// ProjectsPageHandler answers ProjectsPage.
type ProjectsPageHandler struct {
	ReadModel ProjectsPageReadModel
}

// Handle answers the query.
func (h ProjectsPageHandler) Handle(ctx context.Context, q ProjectsPage) (PageResult[Project], error) {
	ws, err := visibleWorkspaces(ctx, h.ReadModel, q.WorkspaceID, q.UserID)
	if err != nil {
		return PageResult[Project]{}, err
	}
	return h.ReadModel.Projects(ctx, ws, q.Page)
}
