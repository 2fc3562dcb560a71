package queries

import "context"

// UserWorkspaces asks for every workspace a user is a member of.
type UserWorkspaces struct {
	UserID string
}

// UserWorkspacesReadModel is what UserWorkspaces reads.
type UserWorkspacesReadModel interface {
	WorkspacesOf(ctx context.Context, userID string) ([]Workspace, error)
}

// UserWorkspacesHandler answers UserWorkspaces.
type UserWorkspacesHandler struct {
	ReadModel UserWorkspacesReadModel
}

// Handle answers the query.
func (h UserWorkspacesHandler) Handle(ctx context.Context, q UserWorkspaces) ([]Workspace, error) {
	return h.ReadModel.WorkspacesOf(ctx, q.UserID)
}
