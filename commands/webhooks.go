package commands

import (
	"context"

	"github.com/linkd/linkd/domain"
	"github.com/linkd/linkd/domain/webhook"
)

// Webhooks (an extension: /v1/webhooks) are managed by a workspace's
// admins, on every plan. Their destinations are checked by a
// WebhookURLChecker: the delivery's guard against calling the machine or
// its private networks.

// WebhookURLChecker refuses a destination whose host resolves to an
// address that may not be called (an invalid error); a host that does not
// resolve is accepted, as every delivery resolves it again.
type WebhookURLChecker interface {
	CheckWebhookURL(ctx context.Context, rawURL string) error
}

func loadWebhook(ctx context.Context, s EventStore, id string) (*webhook.Webhook, error) {
	events, err := readAll(ctx, s, webhook.Stream(id))
	if err != nil {
		return nil, err
	}
	return webhook.Load(events)
}

// webhookForAdmin loads a webhook of a workspace the actor administers.
func webhookForAdmin(ctx context.Context, d *Deps, a Actor, id string) (*webhook.Webhook, error) {
	w, err := loadWebhook(ctx, d.Store, id)
	if err != nil {
		return nil, err
	}
	if !w.Exists() {
		return nil, domain.NotFound(webhook.MsgNotFound)
	}
	if err := extensionAdmin(ctx, d, a, w.WorkspaceID, webhook.MsgNotFound, ""); err != nil {
		return nil, err
	}
	return w, nil
}

// checkWebhookURL asks the configured checker, when there is one.
func checkWebhookURL(ctx context.Context, d *Deps, raw string) error {
	if d.WebhookURLs == nil {
		return nil
	}
	return d.WebhookURLs.CheckWebhookURL(ctx, raw)
}

// checkWebhookLinks checks that every link of a filter exists and belongs
// to the webhook's workspace.
func checkWebhookLinks(ctx context.Context, d *Deps, workspaceID string, ids []string) error {
	for _, id := range ids {
		l, err := loadLink(ctx, d.Store, id)
		if err != nil {
			return err
		}
		if !l.Exists() {
			return domain.NotFound("Link not found")
		}
		if l.WorkspaceID != workspaceID {
			return domain.Forbidden("Access denied to this link")
		}
	}
	return nil
}
