package commands

import (
	"context"

	"github.com/linkd/linkd/domain/pixel"
)

// DeletePixel removes a pixel. Links that name it keep working, without it.
type DeletePixel struct {
	Actor Actor
	ID    string
}

type DeletePixelHandler struct{ *Deps }

func (h DeletePixelHandler) Handle(ctx context.Context, c DeletePixel) (Result, error) {
	return retry(ctx, func() (Result, error) {
		p, err := pixelForAdmin(ctx, h.Deps, c.Actor, c.ID, "")
		if err != nil {
			return Result{}, err
		}
		if err := p.Delete(h.now()); err != nil {
			return Result{}, err
		}
		return save(ctx, h.Store, pixel.Stream(p.ID), p, metaOf(c.Actor))
	})
}
