package commands

import (
	"context"

	"github.com/linkd/linkd/domain/pixel"
)

// CreatePixel makes a tracking pixel in a workspace (the caller's default
// one when none is given).
type CreatePixel struct {
	Actor       Actor
	WorkspaceID string
	Name        string
	Type        string
	PixelID     string // the platform's id
}

type CreatePixelHandler struct{ *Deps }

func (h CreatePixelHandler) Handle(ctx context.Context, c CreatePixel) (*pixel.Pixel, Result, error) {
	if err := pixel.ValidateName(c.Name); err != nil {
		return nil, Result{}, err
	}
	if _, err := pixel.NormalizeType(c.Type); err != nil {
		return nil, Result{}, err
	}
	if _, err := pixel.NormalizeTagID(c.PixelID); err != nil {
		return nil, Result{}, err
	}
	w, res, err := extensionWorkspace(ctx, h.Deps, c.Actor, c.WorkspaceID, featurePixel)
	if err != nil {
		return nil, res, err
	}
	p, err := pixel.Create(h.newID(), w.ID, c.Name, c.Type, c.PixelID, c.Actor.UserID, h.now())
	if err != nil {
		return nil, res, err
	}
	r, err := save(ctx, h.Store, pixel.Stream(p.ID), p, metaOf(c.Actor))
	if err != nil {
		return nil, res, err
	}
	res.merge(r)
	return p, res, nil
}
