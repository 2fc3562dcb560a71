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

// projectForAdmin loads a project of a workspace the actor administers.
func projectForAdmin(ctx context.Context, d *Deps, a Actor, id string) (*project.Project, error) {
	p, err := loadProject(ctx, d.Store, id)
	if err != nil {
		return nil, err
	}
	if !p.Exists() {
		return nil, domain.NotFound("Project not found")
	}
	if err := adminOf(ctx, d, a, p.WorkspaceID); err != nil {
		if domain.KindOf(err) == domain.KindNotFound {
			return nil, domain.NotFound("Project not found")
		}
		return nil, err
	}
	return p, nil
}

// UpdateProject changes the given fields.
type UpdateProject struct {
	Actor       Actor
	ProjectID   string
	Name        domain.Opt[string]
	Description domain.Opt[string]
	Color       domain.Opt[string]
}

type UpdateProjectHandler struct{ *Deps }

func (h UpdateProjectHandler) Handle(ctx context.Context, c UpdateProject) (*project.Project, Result, error) {
	var res Result
	var p *project.Project
	var oldName string
	r, err := retry(ctx, func() (Result, error) {
		var err error
		p, err = projectForAdmin(ctx, h.Deps, c.Actor, c.ProjectID)
		if err != nil {
			return Result{}, err
		}
		oldName = p.Name
		if err := p.Update(c.Name, c.Description, c.Color, h.now()); err != nil {
			return Result{}, err
		}
		if reservation.FoldName(p.Name) != reservation.FoldName(oldName) {
			r, held, err := reserve(ctx, h.Deps, c.Actor, reservation.KindProjectName, projectNameKey(p.WorkspaceID, p.Name), p.Name, p.ID, p.WorkspaceID, projectAlive(h.Deps))
			if err != nil {
				return Result{}, err
			}
			if held != nil {
				return Result{}, domain.Conflict("Project name already exists in this workspace")
			}
			res.merge(r)
		}
		return save(ctx, h.Store, project.Stream(p.ID), p, metaOf(c.Actor))
	})
	if err != nil {
		return nil, res, err
	}
	res.merge(r)
	if reservation.FoldName(p.Name) != reservation.FoldName(oldName) {
		r, err := release(ctx, h.Deps, c.Actor, reservation.KindProjectName, projectNameKey(p.WorkspaceID, oldName), p.ID)
		if err != nil {
			return nil, res, err
		}
		res.merge(r)
	}
	return p, res, nil
}

// DeleteProject removes a project; its links stay, without project.
type DeleteProject struct {
	Actor     Actor
	ProjectID string
}

type DeleteProjectHandler struct {
	*Deps
	Contents Contents
}

func (h DeleteProjectHandler) Handle(ctx context.Context, c DeleteProject) (Result, error) {
	p, err := projectForAdmin(ctx, h.Deps, c.Actor, c.ProjectID)
	if err != nil {
		return Result{}, err
	}
	res, err := deleteProject(ctx, h.Deps, c.Actor, p.ID)
	if err != nil {
		return res, err
	}
	ids, err := h.Contents.ProjectLinkIDs(ctx, p.ID)
	if err != nil {
		return res, err
	}
	r, err := detachLinks(ctx, h.Deps, c.Actor, p.ID, ids)
	res.merge(r)
	return res, err
}
