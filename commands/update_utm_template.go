package commands

import (
	"context"

	"github.com/linkd/linkd/domain"
	"github.com/linkd/linkd/domain/utmtemplate"
)

// UpdateUTMTemplate changes the given fields of a template. Links that name
// it follow at their next redirect.
type UpdateUTMTemplate struct {
	Actor      Actor
	TemplateID string
	Name       domain.Opt[string]
	Values     utmtemplate.Patch
}

type UpdateUTMTemplateHandler struct{ *Deps }

func (h UpdateUTMTemplateHandler) Handle(ctx context.Context, c UpdateUTMTemplate) (*utmtemplate.Template, Result, error) {
	var t *utmtemplate.Template
	res, err := retry(ctx, func() (Result, error) {
		var err error
		if t, err = templateForAdmin(ctx, h.Deps, c.Actor, c.TemplateID, featureUTMTpl); err != nil {
			return Result{}, err
		}
		if err := t.Update(c.Name, c.Values, h.now()); err != nil {
			return Result{}, err
		}
		return save(ctx, h.Store, utmtemplate.Stream(t.ID), t, metaOf(c.Actor))
	})
	if err != nil {
		return nil, res, err
	}
	return t, res, nil
}

// templateForAdmin loads a template of a workspace the actor administers.
func templateForAdmin(ctx context.Context, d *Deps, a Actor, id, feature string) (*utmtemplate.Template, error) {
	t, err := loadTemplate(ctx, d.Store, id)
	if err != nil {
		return nil, err
	}
	if !t.Exists() {
		return nil, domain.NotFound(utmtemplate.MsgNotFound)
	}
	if err := extensionAdmin(ctx, d, a, t.WorkspaceID, utmtemplate.MsgNotFound, feature); err != nil {
		return nil, err
	}
	return t, nil
}
