package queries

import "context"

// ProjectByID asks for a project of a workspace the user is in.
type ProjectByID struct {
	ID     string
	UserID string
}

// ProjectByIDReadModel is what ProjectByID reads.
type ProjectByIDReadModel interface {
	Project(ctx context.Context, id string) (Project, bool, error)
	Roles
}

// ProjectByIDHandler answers ProjectByID: 404 when the project does not
// exist, 403 (insufficient permissions) when the user is not in its
// workspace.
type ProjectByIDHandler struct {
	ReadModel ProjectByIDReadModel
}

// Handle answers the query.
func (h ProjectByIDHandler) Handle(ctx context.Context, q ProjectByID) (Project, error) {
	return memberRead(ctx, h.ReadModel, q.UserID, func() (Project, bool, error) { return h.ReadModel.Project(ctx, q.ID) },
		func(p Project) string { return p.WorkspaceID }, msgProjectNotFound)
}
