package queries

import "context"

// WorkspaceByID asks for a workspace its user is a member of.
type WorkspaceByID struct {
	ID     string
	UserID string
}

// WorkspaceByIDReadModel is what WorkspaceByID reads.
type WorkspaceByIDReadModel interface {
	Workspaces
	Roles
}

// MemberWorkspace is a workspace with the user's role in it.
type MemberWorkspace struct {
	Workspace
	Role string
}

// WorkspaceByIDHandler answers WorkspaceByID: 404 when the workspace does
// not exist, 403 when the user is not a member.
type WorkspaceByIDHandler struct {
	ReadModel WorkspaceByIDReadModel
}

// Handle answers the query.
func (h WorkspaceByIDHandler) Handle(ctx context.Context, q WorkspaceByID) (MemberWorkspace, error) {
	ws, role, err := memberWorkspace(ctx, h.ReadModel, h.ReadModel, q.ID, q.UserID)
	return MemberWorkspace{Workspace: ws, Role: role}, err
}
