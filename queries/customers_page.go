package queries

import "context"

// CustomersPage asks for one page of the customers a user may see: of one
// workspace, or of all of theirs, optionally those whose externalId or
// email starts with Search.
type CustomersPage struct {
	UserID      string
	WorkspaceID string // "" for all of the user's workspaces
	Search      string
	Page        Page
}

// CustomersPageReadModel is what CustomersPage reads.
type CustomersPageReadModel interface {
	visibleWorkspacesReadModel
	Customers(ctx context.Context, workspaceIDs []string, search string, p Page) (PageResult[Customer], error)
}

// CustomersPageHandler answers CustomersPage.
type CustomersPageHandler struct {
	ReadModel CustomersPageReadModel
}

// Handle answers the query.
func (h CustomersPageHandler) Handle(ctx context.Context, q CustomersPage) (PageResult[Customer], error) {
	ws, err := visibleWorkspaces(ctx, h.ReadModel, q.WorkspaceID, q.UserID)
	if err != nil {
		return PageResult[Customer]{}, err
	}
	return h.ReadModel.Customers(ctx, ws, q.Search, q.Page)
}
