package commands

import (
	"context"

	"github.com/linkd/linkd/domain/webhook"
)

// UpdateWebhook changes the given fields of a webhook; is_active true
// turns a disabled one on again.
type UpdateWebhook struct {
	Actor Actor
	ID    string
	Patch webhook.Patch
}

type UpdateWebhookHandler struct{ *Deps }

func (h UpdateWebhookHandler) Handle(ctx context.Context, c UpdateWebhook) (*webhook.Webhook, Result, error) {
	if v, ok := c.Patch.URL.Value(); ok {
		u, err := webhook.NormalizeURL(v)
		if err != nil {
			return nil, Result{}, err
		}
		if err := checkWebhookURL(ctx, h.Deps, u); err != nil {
			return nil, Result{}, err
		}
	}
	var w *webhook.Webhook
	res, err := retry(ctx, func() (Result, error) {
		var err error
		if w, err = webhookForAdmin(ctx, h.Deps, c.Actor, c.ID); err != nil {
			return Result{}, err
		}
		if ids, ok := c.Patch.LinkIDs.Value(); ok {
			ids, err := webhook.NormalizeLinkIDs(ids)
			if err != nil {
				return Result{}, err
			}
			if err := checkWebhookLinks(ctx, h.Deps, w.WorkspaceID, ids); err != nil {
				return Result{}, err
			}
		}
		if err := w.Update(c.Patch, h.now()); err != nil {
			return Result{}, err
		}
		return save(ctx, h.Store, webhook.Stream(w.ID), w, metaOf(c.Actor))
	})
	if err != nil {
		return nil, res, err
	}
	return w, res, nil
}
