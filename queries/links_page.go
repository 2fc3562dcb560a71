package queries

import "context"

// LinksPage asks for one page of the links a user may see: of one
// workspace, or of all of theirs.
type LinksPage struct {
	UserID      string
	WorkspaceID string // "" for all of the user's workspaces
	ProjectID   string
	Archived    bool
	Ascending   bool
	Page        Page
}

// LinksPageReadModel is what LinksPage reads.
type LinksPageReadModel interface {
	visibleWorkspacesReadModel
	Links(ctx context.Context, f LinkFilter, p Page) (PageResult[Link], error)
}

// LinksPageHandler answers LinksPage.
type LinksPageHandler struct {
	ReadModel LinksPageReadModel
}

// Handle answers the query.
func (h LinksPageHandler) Handle(ctx context.Context, q LinksPage) (PageResult[Link], error) {
	ws, err := visibleWorkspaces(ctx, h.ReadModel, q.WorkspaceID, q.UserID)
	if err != nil {
		return PageResult[Link]{}, err
	}
	return h.ReadModel.Links(ctx, LinkFilter{WorkspaceIDs: ws, ProjectID: q.ProjectID, Archived: q.Archived, Ascending: q.Ascending}, q.Page)
}
