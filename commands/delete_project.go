package commands

import "context"

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
