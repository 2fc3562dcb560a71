package commands

import (
	"context"
	"strings"

	"github.com/linkd/linkd/domain"
	"github.com/linkd/linkd/domain/reservation"
	"github.com/linkd/linkd/domain/workspace"
)

func workspaceNameKey(owner, name string) string { return owner + "/" + reservation.FoldName(name) }

// CreateWorkspace makes a workspace whose creator is its admin. Names are
// unique per creating user.
type CreateWorkspace struct {
	Actor       Actor
	Name        string
	Description string
}

type CreateWorkspaceHandler struct{ *Deps }

// Handle creates the workspace. A user's first own workspace becomes their
// default one: links, projects and domains created without workspace_id go
// there, and GET /v1/stats/workspaces reports on it.
func (h CreateWorkspaceHandler) Handle(ctx context.Context, c CreateWorkspace) (*workspace.Workspace, Result, error) {
	if err := workspace.ValidateName(strings.TrimSpace(c.Name)); err != nil {
		return nil, Result{}, err
	}
	id := h.newID()
	a := c.Actor
	res, held, err := reserve(ctx, h.Deps, a, reservation.KindDefaultSpace, a.UserID, "default", id, "", workspaceAlive(h.Deps))
	if err != nil {
		return nil, Result{}, err
	}
	isDefault := held == nil
	w, r, err := h.create(ctx, a, id, c.Name, c.Description, isDefault)
	if err != nil {
		if isDefault {
			_, _ = release(ctx, h.Deps, a, reservation.KindDefaultSpace, a.UserID, id)
		}
		return nil, Result{}, err
	}
	res.merge(r)
	return w, res, nil
}

func (h CreateWorkspaceHandler) create(ctx context.Context, a Actor, id, name, description string, isDefault bool) (*workspace.Workspace, Result, error) {
	w, err := workspace.Create(id, name, description, a.UserID, h.DefaultPlan, isDefault, h.now())
	if err != nil {
		return nil, Result{}, err
	}
	res, held, err := reserve(ctx, h.Deps, a, reservation.KindWorkspaceName, workspaceNameKey(a.UserID, w.Name), w.Name, id, a.UserID, workspaceAlive(h.Deps))
	if err != nil {
		return nil, Result{}, err
	}
	if held != nil {
		return nil, Result{}, domain.Conflict("Workspace name already exists")
	}
	r, err := save(ctx, h.Store, workspace.Stream(id), w, metaOf(a))
	if err != nil {
		return nil, Result{}, err
	}
	res.merge(r)
	return w, res, nil
}
