package queries

import "context"

// WorkspaceMembers asks for the members of a workspace the user is in.
type WorkspaceMembers struct {
	WorkspaceID string
	UserID      string
}

// WorkspaceMembersReadModel is what WorkspaceMembers reads.
type WorkspaceMembersReadModel interface {
	Workspaces
	Roles
	Members(ctx context.Context, workspaceID string) ([]Member, error)
}

// WorkspaceMembersHandler answers WorkspaceMembers: 404 or 403 as
// WorkspaceByID.
type WorkspaceMembersHandler struct {
	ReadModel WorkspaceMembersReadModel
}

// Handle answers the query.
func (h WorkspaceMembersHandler) Handle(ctx context.Context, q WorkspaceMembers) ([]Member, error) {
	if _, _, err := memberWorkspace(ctx, h.ReadModel, h.ReadModel, q.WorkspaceID, q.UserID); err != nil {
		return nil, err
	}
	return h.ReadModel.Members(ctx, q.WorkspaceID)
}
