package commands

import (
	"context"

	"github.com/linkd/linkd/domain/webhook"
)

// NewWebhook is what CreateWebhook answers: the webhook and its secret,
// shown once.
type NewWebhook struct {
	Webhook *webhook.Webhook
	Secret  string
}

func (c Config) webhookCommands(dec decorator, cmds *Commands) {
	d := c.Deps
	cmds.CreateWebhook = decorate[CreateWebhook, NewWebhook](dec, "CreateWebhook", handlerFunc[CreateWebhook, NewWebhook](
		func(ctx context.Context, w CreateWebhook) (NewWebhook, Result, error) {
			wh, secret, res, err := CreateWebhookHandler{Deps: d}.Handle(ctx, w)
			return NewWebhook{Webhook: wh, Secret: secret}, res, err
		}))
	cmds.UpdateWebhook = decorate[UpdateWebhook, *webhook.Webhook](dec, "UpdateWebhook", UpdateWebhookHandler{Deps: d})
	cmds.DeleteWebhook = decorateDoer[DeleteWebhook](dec, "DeleteWebhook", DeleteWebhookHandler{Deps: d})
	cmds.DisableWebhook = decorateDoer[DisableWebhook](dec, "DisableWebhook", DisableWebhookHandler{Deps: d})
	cmds.RequestWebhookReplay = decorateDoer[RequestWebhookReplay](dec, "RequestWebhookReplay", RequestWebhookReplayHandler{Deps: d})
	cmds.RecordWebhookAttempts = decorateDoer[RecordWebhookAttempts](dec, "RecordWebhookAttempts", RecordWebhookAttemptsHandler{Deps: d})
}
