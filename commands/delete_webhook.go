package commands

import (
	"context"

	"github.com/linkd/linkd/domain/webhook"
)

// DeleteWebhook removes a webhook: nothing more is delivered to it.
type DeleteWebhook struct {
	Actor Actor
	ID    string
}

type DeleteWebhookHandler struct{ *Deps }

func (h DeleteWebhookHandler) Handle(ctx context.Context, c DeleteWebhook) (Result, error) {
	return retry(ctx, func() (Result, error) {
		w, err := webhookForAdmin(ctx, h.Deps, c.Actor, c.ID)
		if err != nil {
			return Result{}, err
		}
		if err := w.Delete(h.now()); err != nil {
			return Result{}, err
		}
		return save(ctx, h.Store, webhook.Stream(w.ID), w, metaOf(c.Actor))
	})
}
