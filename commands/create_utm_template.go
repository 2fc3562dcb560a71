package commands

import (
	"context"

	"github.com/linkd/linkd/domain/utmtemplate"
)

// CreateUTMTemplate makes a UTM template in a workspace (the caller's
// default one when none is given).
type CreateUTMTemplate struct {
	Actor       Actor
	WorkspaceID string
	Name        string
	Values      utmtemplate.Values
}

type CreateUTMTemplateHandler struct{ *Deps }

func (h CreateUTMTemplateHandler) Handle(ctx context.Context, c CreateUTMTemplate) (*utmtemplate.Template, Result, error) {
	if err := utmtemplate.ValidateName(c.Name); err != nil {
		return nil, Result{}, err
	}
	w, res, err := extensionWorkspace(ctx, h.Deps, c.Actor, c.WorkspaceID, featureUTMTpl)
	if err != nil {
		return nil, res, err
	}
	t, err := utmtemplate.Create(h.newID(), w.ID, c.Name, c.Values, c.Actor.UserID, h.now())
	if err != nil {
		return nil, res, err
	}
	r, err := save(ctx, h.Store, utmtemplate.Stream(t.ID), t, metaOf(c.Actor))
	if err != nil {
		return nil, res, err
	}
	res.merge(r)
	return t, res, nil
}
