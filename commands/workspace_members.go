package commands

import (
	"context"

	"github.com/linkd/linkd/domain/workspace"
)

// Members of workspace commands.
type AddMember struct {
	Actor       Actor
	WorkspaceID string
	UserID      string
	Email       string
	Role        string
}

type ChangeMemberRole struct {
	Actor       Actor
	WorkspaceID string
	UserID      string
	Role        string
}

type RemoveMember struct {
	Actor       Actor
	WorkspaceID string
	UserID      string
}

type MembersHandler struct{ *Deps }

func (h MembersHandler) Add(ctx context.Context, c AddMember) (Result, error) {
	return retry(ctx, func() (Result, error) {
		w, err := memberWorkspace(ctx, h.Store, c.Actor, c.WorkspaceID)
		if err != nil {
			return Result{}, err
		}
		if err := w.AddMember(c.Actor.UserID, c.UserID, c.Email, c.Role, h.now()); err != nil {
			return Result{}, err
		}
		return save(ctx, h.Store, workspace.Stream(w.ID), w, metaOf(c.Actor))
	})
}

func (h MembersHandler) ChangeRole(ctx context.Context, c ChangeMemberRole) (Result, error) {
	return retry(ctx, func() (Result, error) {
		w, err := memberWorkspace(ctx, h.Store, c.Actor, c.WorkspaceID)
		if err != nil {
			return Result{}, err
		}
		if err := w.ChangeRole(c.Actor.UserID, c.UserID, c.Role, h.now()); err != nil {
			return Result{}, err
		}
		return save(ctx, h.Store, workspace.Stream(w.ID), w, metaOf(c.Actor))
	})
}

func (h MembersHandler) Remove(ctx context.Context, c RemoveMember) (Result, error) {
	return retry(ctx, func() (Result, error) {
		w, err := memberWorkspace(ctx, h.Store, c.Actor, c.WorkspaceID)
		if err != nil {
			return Result{}, err
		}
		if err := w.RemoveMember(c.Actor.UserID, c.UserID, h.now()); err != nil {
			return Result{}, err
		}
		return save(ctx, h.Store, workspace.Stream(w.ID), w, metaOf(c.Actor))
	})
}
