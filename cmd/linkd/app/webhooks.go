package app

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"path/filepath"
	"sync"
	"time"

	"github.com/linkd/linkd/api"
	"github.com/linkd/linkd/commands"
	"github.com/linkd/linkd/domain"
	"github.com/linkd/linkd/domain/link"
	"github.com/linkd/linkd/domain/webhook"
	"github.com/linkd/linkd/eventstore"
	"github.com/linkd/linkd/eventstore/postgres"
	"github.com/linkd/linkd/internal/secrets"
	"github.com/linkd/linkd/internal/ssrf"
	"github.com/linkd/linkd/projections/webhooks"
)

// webhookGuard is the guard of webhook destinations.
func webhookGuard(cfg Config) *ssrf.Guard {
	nets, _ := ssrf.ParseNetworks(cfg.WebhookAllowedNetworks) // Validate checked them
	return ssrf.New(nets, nil)
}

// openWebhooks opens the webhook projection; render is called once the
// API exists (links in payloads are rendered as the API shows them). On a
// PostgreSQL event store the queue and the attempts are there, shared by
// the instances of the deployment (ADR 0108). On another store shared by
// processes (EventStoreDB: raw has leases and checkpoints) one instance at
// a time delivers (ADR 0114): replays asked of any instance, and the
// attempts for the others' deliveries logs, are recorded in the log by
// commands; replay opens the projection without raw.
func openWebhooks(cfg Config, store, raw eventstore.Store, render *func() *api.Server, commandDeps func() *commands.Deps, log *slog.Logger) (*webhooks.Store, error) {
	o := webhooks.Options{Events: store, Logger: log}
	if postgres.IsDSN(cfg.EventStore) {
		o.Postgres = cfg.EventStore
	} else if c, ok := raw.(webhooks.Coordination); ok {
		deps := sync.OnceValue(commandDeps)
		o.Coordinate = c
		o.RequestReplay = func(ctx context.Context, id, workspaceID string, start, end time.Time) error {
			_, err := commands.RequestWebhookReplayHandler{Deps: deps()}.Handle(ctx, commands.RequestWebhookReplay{
				ID: id, WorkspaceID: workspaceID, Start: start, End: end})
			return err
		}
		o.PublishAttempts = func(ctx context.Context, e *webhook.AttemptsRecorded) error {
			_, err := commands.RecordWebhookAttemptsHandler{Deps: deps()}.Handle(ctx, commands.RecordWebhookAttempts{Attempts: e})
			return err
		}
	}
	o.RenderLink = func(ctx context.Context, l *link.Link, clicks int64) (map[string]any, error) {
		s := (*render)()
		if s == nil {
			return nil, fmt.Errorf("webhooks: the API is not ready")
		}
		return s.RenderLinkJSON(ctx, l, clicks)
	}
	return webhooks.Open(filepath.Join(cfg.DataDir, "webhooks.db"), o)
}

// newDeliverer prepares the deliveries of the webhook projection's
// messages.
func newDeliverer(cfg Config, w *webhooks.Store, deps *commands.Deps, cipher *secrets.Cipher) *webhooks.Deliverer {
	o := webhooks.DeliveryOptions{
		Timeout: cfg.WebhookTimeout, Concurrency: cfg.WebhookConcurrency, ClaimTimeout: cfg.WebhookClaimTimeout, Guard: webhookGuard(cfg), Decrypt: cipher.Decrypt,
		Disable: func(ctx context.Context, id, reason string) error {
			_, err := commands.DisableWebhookHandler{Deps: deps}.Handle(ctx, commands.DisableWebhook{ID: id, Reason: reason})
			return err
		},
	}
	if cfg.WebhookRetrySchedule != "" {
		o.Schedule, _ = webhooks.ParseSchedule(cfg.WebhookRetrySchedule) // Validate checked it
	}
	return w.NewDeliverer(o)
}

// webhookURLs checks webhook destinations when they are created or
// changed: a host that resolves to a forbidden address is refused.
type webhookURLs struct{ g *ssrf.Guard }

func (c webhookURLs) CheckWebhookURL(ctx context.Context, raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return domain.Invalid("Invalid URL format")
	}
	res, _ := c.g.CheckHost(ctx, u.Hostname())
	if res == ssrf.Refused {
		return domain.Invalid("Webhook url must not resolve to a loopback, private, link-local or unspecified address")
	}
	return nil
}
