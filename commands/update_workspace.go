package commands

import (
	"context"

	"github.com/linkd/linkd/domain"
	"github.com/linkd/linkd/domain/reservation"
	"github.com/linkd/linkd/domain/workspace"
)

// UpdateWorkspace changes name or description; admins only.
type UpdateWorkspace struct {
	Actor       Actor
	WorkspaceID string
	Name        domain.Opt[string]
	Description domain.Opt[string]
}

type UpdateWorkspaceHandler struct{ *Deps }

func (h UpdateWorkspaceHandler) Handle(ctx context.Context, c UpdateWorkspace) (*workspace.Workspace, Result, error) {
	w, err := memberWorkspace(ctx, h.Store, c.Actor, c.WorkspaceID)
	if err != nil {
		return nil, Result{}, err
	}
	oldName := w.Name
	if err := w.Update(c.Actor.UserID, c.Name, c.Description, h.now()); err != nil {
		return nil, Result{}, err
	}
	var res Result
	newName := w.Name
	renamed := reservation.FoldName(newName) != reservation.FoldName(oldName)
	if renamed {
		r, held, err := reserve(ctx, h.Deps, c.Actor, reservation.KindWorkspaceName, workspaceNameKey(w.OwnerID, newName), newName, w.ID, w.OwnerID, workspaceAlive(h.Deps))
		if err != nil {
			return nil, Result{}, err
		}
		if held != nil {
			return nil, Result{}, domain.Conflict("Workspace name already exists")
		}
		res.merge(r)
	}
	r, err := save(ctx, h.Store, workspace.Stream(w.ID), w, metaOf(c.Actor))
	if err != nil {
		return nil, Result{}, err
	}
	res.merge(r)
	if renamed {
		if r, err := release(ctx, h.Deps, c.Actor, reservation.KindWorkspaceName, workspaceNameKey(w.OwnerID, oldName), w.ID); err == nil {
			res.merge(r)
		}
	}
	return w, res, nil
}
