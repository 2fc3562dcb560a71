package queries

import "context"

// DomainsPage asks for one page of the custom domains a user may see: of
// one workspace, or of all of theirs.
type DomainsPage struct {
	UserID      string
	WorkspaceID string // "" for all of the user's workspaces
	Page        Page
}

// DomainsPageReadModel is what DomainsPage reads.
type DomainsPageReadModel interface {
	visibleWorkspacesReadModel
	Domains(ctx context.Context, workspaceIDs []string, p Page) (PageResult[Domain], error)
}

// DomainsPageHandler answers DomainsPage.
type DomainsPageHandler struct {
	ReadModel DomainsPageReadModel
}

// Handle answers the query.
func (h DomainsPageHandler) Handle(ctx context.Context, q DomainsPage) (PageResult[Domain], error) {
	ws, err := visibleWorkspaces(ctx, h.ReadModel, q.WorkspaceID, q.UserID)
	if err != nil {
		return PageResult[Domain]{}, err
	}
	return h.ReadModel.Domains(ctx, ws, q.Page)
}
