package commands

import (
	"context"

	"github.com/linkd/linkd/domain/utmtemplate"
)

// DeleteUTMTemplate removes a template. Links that name it keep working,
// without its values; they keep the id, which names nothing any more.
type DeleteUTMTemplate struct {
	Actor      Actor
	TemplateID string
}

type DeleteUTMTemplateHandler struct{ *Deps }

func (h DeleteUTMTemplateHandler) Handle(ctx context.Context, c DeleteUTMTemplate) (Result, error) {
	return retry(ctx, func() (Result, error) {
		t, err := templateForAdmin(ctx, h.Deps, c.Actor, c.TemplateID, "")
		if err != nil {
			return Result{}, err
		}
		if err := t.Delete(h.now()); err != nil {
			return Result{}, err
		}
		return save(ctx, h.Store, utmtemplate.Stream(t.ID), t, metaOf(c.Actor))
	})
}
