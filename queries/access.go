package queries

import (
	"context"

	"github.com/linkd/linkd/domain"
)

// Who may read what. A user reads the links, projects, domains and
// statistics of the workspaces they are a member of: a thing that does not
// exist is 404, one in another workspace 403. Statistics of a link with
// public statistics are readable by every key.

// Roles tells a user's role in a workspace ("" for none).
type Roles interface {
	Role(ctx context.Context, workspaceID, userID string) (string, error)
}

// Workspaces finds a workspace by id.
type Workspaces interface {
	Workspace(ctx context.Context, id string) (Workspace, bool, error)
}

// requireMember fails with denied unless userID has a role in workspaceID.
func requireMember(ctx context.Context, roles Roles, workspaceID, userID string, denied error) (string, error) {
	role, err := roles.Role(ctx, workspaceID, userID)
	if err != nil {
		return "", err
	}
	if role == "" {
		return "", denied
	}
	return role, nil
}

// memberRead reads a thing a workspace owns (a project, a UTM template, a
// pixel) for a user: 404 with notFound when it does not exist, 403
// (insufficient permissions) when the user is not in its workspace.
func memberRead[T any](ctx context.Context, roles Roles, userID string, read func() (T, bool, error), workspaceOf func(T) string, notFound string) (T, error) {
	v, ok, err := read()
	if err != nil {
		return v, err
	}
	if !ok {
		return v, domain.NotFound("%s", notFound)
	}
	_, err = requireMember(ctx, roles, workspaceOf(v), userID, domain.ErrInsufficientPermissions())
	return v, err
}

// memberWorkspace loads a workspace the user belongs to: 404 when it does
// not exist, 403 when they are not a member.
func memberWorkspace(ctx context.Context, ws Workspaces, roles Roles, id, userID string) (Workspace, string, error) {
	w, ok, err := ws.Workspace(ctx, id)
	if err != nil {
		return w, "", err
	}
	if !ok {
		return w, "", domain.NotFound(msgWorkspaceNotFound)
	}
	role, err := requireMember(ctx, roles, id, userID, domain.Forbidden(domain.MsgAccessDeniedWorkspace))
	return w, role, err
}

// visibleWorkspaces is what a list covers: the workspace asked for (404
// unless it exists, 403 unless a member), else all of the user's.
func visibleWorkspaces(ctx context.Context, rm visibleWorkspacesReadModel, workspaceID, userID string) ([]string, error) {
	if workspaceID == "" {
		return rm.WorkspaceIDsOf(ctx, userID)
	}
	if _, _, err := memberWorkspace(ctx, rm, rm, workspaceID, userID); err != nil {
		return nil, err
	}
	return []string{workspaceID}, nil
}

type visibleWorkspacesReadModel interface {
	Workspaces
	Roles
	WorkspaceIDsOf(ctx context.Context, userID string) ([]string, error)
}

// Texts of the interface (spec section 7).
const (
	msgLinkNotFound      = "Link not found"
	msgWorkspaceNotFound = "Workspace not found"
	msgProjectNotFound   = "Project not found"
	msgDomainNotFound    = "Domain not found"
	msgNoStats           = "No stats found for this link"
	msgAccessDeniedLink  = "Access denied to this link"
)
