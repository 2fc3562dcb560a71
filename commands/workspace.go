package commands

import (
	"context"
	"errors"
	"strings"

	"github.com/linkd/linkd/domain"
	"github.com/linkd/linkd/domain/reservation"
	"github.com/linkd/linkd/domain/workspace"
	"github.com/linkd/linkd/eventstore"
)

// defaultWorkspaceName is the name of a user's first workspace.
const defaultWorkspaceName = "Default workspace"

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

// EnsureDefaultWorkspace returns the user's default workspace, creating it
// on first use. The claim on "defaultworkspace-<user>" makes creation
// happen once even under concurrent calls.
type EnsureDefaultWorkspace struct{ Actor Actor }

type EnsureDefaultWorkspaceHandler struct{ *Deps }

func (h EnsureDefaultWorkspaceHandler) Handle(ctx context.Context, c EnsureDefaultWorkspace) (*workspace.Workspace, Result, error) {
	a := c.Actor
	r, err := loadReservation(ctx, h.Store, reservation.KindDefaultSpace, a.UserID)
	if err != nil {
		return nil, Result{}, err
	}
	var res Result
	id := r.Owner
	if !r.Holding {
		id = h.newID()
		var held *reservation.HeldByOther
		res, held, err = reserve(ctx, h.Deps, a, reservation.KindDefaultSpace, a.UserID, "default", id, "", nil)
		if err != nil {
			return nil, Result{}, err
		}
		if held != nil {
			id = held.Owner
		}
	}
	w, err := loadWorkspace(ctx, h.Store, id)
	if err != nil {
		return nil, Result{}, err
	}
	if w.ID != "" {
		return w, res, nil
	}
	// Claimed but not yet created (first use, or a crash in between).
	names := []string{defaultWorkspaceName, defaultWorkspaceName + " (" + a.UserID + ")", defaultWorkspaceName + " " + id}
	for _, name := range names {
		w, r2, err := CreateWorkspaceHandler(h).create(ctx, a, id, name, "", true)
		if errors.Is(err, eventstore.ErrWrongExpectedVersion) {
			// A concurrent call created it.
			w, err := loadWorkspace(ctx, h.Store, id)
			return w, res, err
		}
		if domain.KindOf(err) == domain.KindConflict {
			continue // the user already has a workspace of that name
		}
		if err != nil {
			return nil, Result{}, err
		}
		res.merge(r2)
		return w, res, nil
	}
	return nil, Result{}, domain.Conflict("Workspace name already exists")
}

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
