package commands

import (
	"context"

	"github.com/linkd/linkd/domain"
	"github.com/linkd/linkd/domain/pixel"
)

// UpdatePixel changes the given fields of a pixel.
type UpdatePixel struct {
	Actor   Actor
	ID      string
	Name    domain.Opt[string]
	Type    domain.Opt[string]
	PixelID domain.Opt[string]
}

type UpdatePixelHandler struct{ *Deps }

func (h UpdatePixelHandler) Handle(ctx context.Context, c UpdatePixel) (*pixel.Pixel, Result, error) {
	var p *pixel.Pixel
	res, err := retry(ctx, func() (Result, error) {
		var err error
		if p, err = pixelForAdmin(ctx, h.Deps, c.Actor, c.ID, featurePixel); err != nil {
			return Result{}, err
		}
		if err := p.Update(c.Name, c.Type, c.PixelID, h.now()); err != nil {
			return Result{}, err
		}
		return save(ctx, h.Store, pixel.Stream(p.ID), p, metaOf(c.Actor))
	})
	if err != nil {
		return nil, res, err
	}
	return p, res, nil
}

// pixelForAdmin loads a pixel of a workspace the actor administers.
func pixelForAdmin(ctx context.Context, d *Deps, a Actor, id, feature string) (*pixel.Pixel, error) {
	p, err := loadPixel(ctx, d.Store, id)
	if err != nil {
		return nil, err
	}
	if !p.Exists() {
		return nil, domain.NotFound(pixel.MsgNotFound)
	}
	if err := extensionAdmin(ctx, d, a, p.WorkspaceID, pixel.MsgNotFound, feature); err != nil {
		return nil, err
	}
	return p, nil
}
