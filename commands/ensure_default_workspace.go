package commands

import (
	"context"
	"errors"

	"github.com/linkd/linkd/domain"
	"github.com/linkd/linkd/domain/reservation"
	"github.com/linkd/linkd/domain/workspace"
	"github.com/linkd/linkd/eventstore"
)

// defaultWorkspaceName is the name of a user's first workspace.
const defaultWorkspaceName = "Default workspace"

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
