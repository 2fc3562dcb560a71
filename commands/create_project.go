package commands

import (
	"context"

	"github.com/linkd/linkd/domain"
	"github.com/linkd/linkd/domain/project"
	"github.com/linkd/linkd/domain/reservation"
)

func projectNameKey(workspaceID, name string) string {
	return workspaceID + "/" + reservation.FoldName(name)
}

// CreateProject makes a project in a workspace (the caller's default one
// when none is given). Names are unique per workspace.
type CreateProject struct {
	Actor       Actor
	WorkspaceID string
	Name        string
	Description string
	Color       string
}

type CreateProjectHandler struct{ *Deps }

func (h CreateProjectHandler) Handle(ctx context.Context, c CreateProject) (*project.Project, Result, error) {
	var res Result
	if err := project.ValidateName(c.Name); err != nil {
		return nil, res, err
	}
	wsID := c.WorkspaceID
	if wsID == "" {
		w, r, err := EnsureDefaultWorkspaceHandler(h).Handle(ctx, EnsureDefaultWorkspace{Actor: c.Actor})
		if err != nil {
			return nil, res, err
		}
		res.merge(r)
		wsID = w.ID
	} else if err := adminOf(ctx, h.Deps, c.Actor, wsID); err != nil {
		return nil, res, err
	}
	id := h.newID()
	p, err := project.Create(id, wsID, c.Name, c.Description, c.Color, c.Actor.UserID, h.now())
	if err != nil {
		return nil, res, err
	}
	r, held, err := reserve(ctx, h.Deps, c.Actor, reservation.KindProjectName, projectNameKey(wsID, p.Name), p.Name, id, wsID, projectAlive(h.Deps))
	if err != nil {
		return nil, res, err
	}
	if held != nil {
		return nil, res, domain.Conflict("Project name already exists in this workspace")
	}
	res.merge(r)
	r, err = save(ctx, h.Store, project.Stream(id), p, metaOf(c.Actor))
	if err != nil {
		return nil, res, err
	}
	res.merge(r)
	return p, res, nil
}
