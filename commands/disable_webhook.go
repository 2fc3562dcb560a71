package commands

import (
	"context"

	"github.com/linkd/linkd/domain"
	"github.com/linkd/linkd/domain/webhook"
)

// DisableWebhook turns a webhook off on behalf of its deliveries: its
// receiver answered 410, or failed for five days. No user asks for it, so
// no access is checked; a deleted webhook is left as it is.
type DisableWebhook struct {
	ID     string
	Reason string
}

type DisableWebhookHandler struct{ *Deps }

func (h DisableWebhookHandler) Handle(ctx context.Context, c DisableWebhook) (Result, error) {
	return retry(ctx, func() (Result, error) {
		w, err := loadWebhook(ctx, h.Store, c.ID)
		if err != nil {
			return Result{}, err
		}
		if !w.Exists() {
			return Result{}, nil
		}
		if err := w.Disable(c.Reason, h.now()); err != nil {
			return Result{}, err
		}
		return save(ctx, h.Store, webhook.Stream(w.ID), w, domain.Metadata{})
	})
}
