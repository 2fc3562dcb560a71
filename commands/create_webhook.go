package commands

import (
	"context"

	"github.com/linkd/linkd/domain/webhook"
	"github.com/linkd/linkd/internal/stdwebhooks"
)

// CreateWebhook subscribes a URL to events of a workspace (the caller's
// default one when none is given).
type CreateWebhook struct {
	Actor       Actor
	WorkspaceID string
	URL         string
	Events      []string
	LinkIDs     []string
	Description string
}

type CreateWebhookHandler struct{ *Deps }

// Handle creates the webhook and returns it with its secret, which is
// stored encrypted and shown this once.
func (h CreateWebhookHandler) Handle(ctx context.Context, c CreateWebhook) (*webhook.Webhook, string, Result, error) {
	u, err := webhook.NormalizeURL(c.URL)
	if err != nil {
		return nil, "", Result{}, err
	}
	events, err := webhook.NormalizeEvents(c.Events)
	if err != nil {
		return nil, "", Result{}, err
	}
	linkIDs, err := webhook.NormalizeLinkIDs(c.LinkIDs)
	if err != nil {
		return nil, "", Result{}, err
	}
	if err := webhook.ValidateDescription(c.Description); err != nil {
		return nil, "", Result{}, err
	}
	if err := checkWebhookURL(ctx, h.Deps, u); err != nil {
		return nil, "", Result{}, err
	}
	w, res, err := extensionWorkspace(ctx, h.Deps, c.Actor, c.WorkspaceID, "") // every plan has webhooks
	if err != nil {
		return nil, "", res, err
	}
	if err := checkWebhookLinks(ctx, h.Deps, w.ID, linkIDs); err != nil {
		return nil, "", res, err
	}
	secret := stdwebhooks.NewSecret()
	enc, err := h.Cipher.Encrypt(secret)
	if err != nil {
		return nil, "", res, err
	}
	wh, err := webhook.Create(h.newID(), w.ID, u, events, linkIDs, c.Description, enc, c.Actor.UserID, h.now())
	if err != nil {
		return nil, "", res, err
	}
	r, err := save(ctx, h.Store, webhook.Stream(wh.ID), wh, metaOf(c.Actor))
	if err != nil {
		return nil, "", res, err
	}
	res.merge(r)
	return wh, secret, res, nil
}
