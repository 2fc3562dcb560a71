package commands

import (
	"context"

	"github.com/linkd/linkd/domain"
)

// DeleteLink removes a link and frees its code.
type DeleteLink struct {
	Actor  Actor
	LinkID string
}

type DeleteLinkHandler struct{ *Deps }

func (h DeleteLinkHandler) Handle(ctx context.Context, c DeleteLink) (Result, error) {
	l, err := loadLink(ctx, h.Store, c.LinkID)
	if err != nil {
		return Result{}, err
	}
	if !l.Exists() {
		return Result{}, domain.NotFound("Link not found")
	}
	w, err := loadWorkspace(ctx, h.Store, l.WorkspaceID)
	if err != nil {
		return Result{}, err
	}
	if err := canEditLink(w, l, c.Actor); err != nil {
		return Result{}, err
	}
	return deleteLink(ctx, h.Deps, c.Actor, c.LinkID)
}
