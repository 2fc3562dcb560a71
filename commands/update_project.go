package commands

import (
	"context"

	"github.com/linkd/linkd/domain"
	"github.com/linkd/linkd/domain/project"
	"github.com/linkd/linkd/domain/reservation"
)

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
