package commands

import (
	"context"

	"github.com/linkd/linkd/domain"
	"github.com/linkd/linkd/domain/reservation"
	"github.com/linkd/linkd/domain/workspace"
)

// Contents lists what a workspace or project holds, from the read model.
// Only cascades use it: deleting a workspace deletes what it holds,
// deleting a custom domain deletes its links, and deleting a project
// detaches its links. Uniqueness never asks it.
type Contents interface {
	WorkspaceLinkIDs(ctx context.Context, workspaceID string) ([]string, error)
	WorkspaceProjectIDs(ctx context.Context, workspaceID string) ([]string, error)
	WorkspaceDomainIDs(ctx context.Context, workspaceID string) ([]string, error)
	DomainLinkIDs(ctx context.Context, domainID string) ([]string, error)
	ProjectLinkIDs(ctx context.Context, projectID string) ([]string, error)
	// OwnWorkspaceIDs lists the live workspaces a user created, oldest
	// first.
	OwnWorkspaceIDs(ctx context.Context, userID string) ([]string, error)
}

// DeleteWorkspace removes a workspace with its links, projects, domains and
// member access; admins only.
type DeleteWorkspace struct {
	Actor       Actor
	WorkspaceID string
}

type DeleteWorkspaceHandler struct {
	*Deps
	Contents Contents
}

func (h DeleteWorkspaceHandler) Handle(ctx context.Context, c DeleteWorkspace) (Result, error) {
	var w *workspace.Workspace
	res, err := retry(ctx, func() (Result, error) {
		var err error
		w, err = memberWorkspace(ctx, h.Store, c.Actor, c.WorkspaceID)
		if err != nil {
			return Result{}, err
		}
		if err := w.Delete(c.Actor.UserID, h.now()); err != nil {
			return Result{}, err
		}
		return save(ctx, h.Store, workspace.Stream(w.ID), w, metaOf(c.Actor))
	})
	if err != nil {
		return Result{}, err
	}
	a := c.Actor
	if r, err := release(ctx, h.Deps, a, reservation.KindWorkspaceName, workspaceNameKey(w.OwnerID, w.Name), w.ID); err == nil {
		res.merge(r)
	}
	if r, err := h.moveDefault(ctx, a, w); err == nil {
		res.merge(r)
	}
	linkIDs, err := h.Contents.WorkspaceLinkIDs(ctx, w.ID)
	if err != nil {
		return res, err
	}
	for _, id := range linkIDs {
		r, err := deleteLink(ctx, h.Deps, a, id)
		if err != nil && domain.KindOf(err) != domain.KindNotFound {
			return res, err
		}
		res.merge(r)
	}
	projectIDs, err := h.Contents.WorkspaceProjectIDs(ctx, w.ID)
	if err != nil {
		return res, err
	}
	for _, id := range projectIDs {
		r, err := deleteProject(ctx, h.Deps, a, id)
		if err != nil && domain.KindOf(err) != domain.KindNotFound {
			return res, err
		}
		res.merge(r)
	}
	domainIDs, err := h.Contents.WorkspaceDomainIDs(ctx, w.ID)
	if err != nil {
		return res, err
	}
	for _, id := range domainIDs {
		r, err := deleteDomain(ctx, h.Deps, a, id)
		if err != nil && domain.KindOf(err) != domain.KindNotFound {
			return res, err
		}
		res.merge(r)
	}
	return res, nil
}

// moveDefault passes the owner's default workspace on when the deleted
// workspace was it: to the owner's oldest remaining own workspace, so that
// links, projects and domains created without workspace_id go there rather
// than into a surprise new "Default workspace" (docs/decisions.md). With no
// own workspace left, the next such creation makes a new default one.
func (h DeleteWorkspaceHandler) moveDefault(ctx context.Context, a Actor, w *workspace.Workspace) (Result, error) {
	var res Result
	r, err := loadReservation(ctx, h.Store, reservation.KindDefaultSpace, w.OwnerID)
	if err != nil {
		return res, err
	}
	if !r.Holding || r.Owner != w.ID {
		return res, nil
	}
	rel, err := release(ctx, h.Deps, a, reservation.KindDefaultSpace, w.OwnerID, w.ID)
	if err != nil {
		return res, err
	}
	res.merge(rel)
	ids, err := h.Contents.OwnWorkspaceIDs(ctx, w.OwnerID)
	if err != nil {
		return res, err
	}
	for _, id := range ids {
		if id == w.ID {
			continue
		}
		next, err := loadWorkspace(ctx, h.Store, id)
		if err != nil {
			return res, err
		}
		if !next.Exists() || next.OwnerID != w.OwnerID {
			continue
		}
		got, _, err := reserve(ctx, h.Deps, a, reservation.KindDefaultSpace, w.OwnerID, "default", id, "", workspaceAlive(h.Deps))
		if err != nil {
			return res, err
		}
		res.merge(got)
		break
	}
	return res, nil
}
