package queries

import (
	"context"
	"time"

	"github.com/linkd/linkd/domain"
	"github.com/linkd/linkd/domain/webhook"
)

// The webhooks of workspaces (an extension: /v1/webhooks) and their
// deliveries, read from the webhook delivery projection
// (projections/webhooks). Only a workspace's admins manage them.

// Webhook is the read model of a webhook (never its secret).
type Webhook struct {
	ID          string
	WorkspaceID string
	URL         string
	Events      []string
	LinkIDs     []string
	Description string
	IsActive    bool
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

// WebhookDelivery is one attempt to deliver a message, or the next one
// when it is pending.
type WebhookDelivery struct {
	ID             string
	MessageID      string
	EventType      string
	Attempt        int
	Status         string // succeeded, failed, pending
	ResponseStatus *int
	ResponseBody   *string
	DurationMS     *int64
	CreatedAt      time.Time
	NextAttemptAt  *time.Time
}

// WebhooksReadModel is what the webhook queries read.
type WebhooksReadModel interface {
	Webhook(ctx context.Context, id string) (Webhook, bool, error)
	Webhooks(ctx context.Context, workspaceIDs []string, p Page) (PageResult[Webhook], error)
	WebhookDeliveries(ctx context.Context, webhookID string, p Page) (PageResult[WebhookDelivery], error)
}

// webhookAdminRead reads a webhook for one of its workspace's admins: 404
// when it does not exist, 403 (insufficient permissions) for anyone else.
func webhookAdminRead(ctx context.Context, rm WebhooksReadModel, roles Roles, id, userID string) (Webhook, error) {
	w, ok, err := rm.Webhook(ctx, id)
	if err != nil {
		return w, err
	}
	if !ok {
		return w, domain.NotFound(webhook.MsgNotFound)
	}
	role, err := roles.Role(ctx, w.WorkspaceID, userID)
	if err != nil {
		return w, err
	}
	if role != "admin" {
		return w, domain.ErrInsufficientPermissions()
	}
	return w, nil
}

// WebhookByID asks for a webhook of a workspace the user administers.
type WebhookByID struct {
	ID     string
	UserID string
}

// WebhookByIDHandler answers WebhookByID.
type WebhookByIDHandler struct {
	ReadModel WebhooksReadModel
	Roles     Roles
}

// Handle answers the query.
func (h WebhookByIDHandler) Handle(ctx context.Context, q WebhookByID) (Webhook, error) {
	return webhookAdminRead(ctx, h.ReadModel, h.Roles, q.ID, q.UserID)
}

// WebhooksPage asks for one page of the webhooks of the workspaces a user
// administers (of one of them when WorkspaceID is given).
type WebhooksPage struct {
	UserID      string
	WorkspaceID string
	Page        Page
}

// WebhooksPageReadModel is what WebhooksPage reads besides the webhooks.
type WebhooksPageReadModel interface {
	visibleWorkspacesReadModel
}

// WebhooksPageHandler answers WebhooksPage.
type WebhooksPageHandler struct {
	ReadModel WebhooksReadModel
	Core      WebhooksPageReadModel
}

// Handle answers the query.
func (h WebhooksPageHandler) Handle(ctx context.Context, q WebhooksPage) (PageResult[Webhook], error) {
	ws, err := visibleWorkspaces(ctx, h.Core, q.WorkspaceID, q.UserID)
	if err != nil {
		return PageResult[Webhook]{}, err
	}
	admin := ws[:0:0]
	for _, id := range ws {
		role, err := h.Core.Role(ctx, id, q.UserID)
		if err != nil {
			return PageResult[Webhook]{}, err
		}
		if role == "admin" {
			admin = append(admin, id)
		}
	}
	if q.WorkspaceID != "" && len(admin) == 0 {
		return PageResult[Webhook]{}, domain.ErrInsufficientPermissions()
	}
	return h.ReadModel.Webhooks(ctx, admin, q.Page)
}

// WebhookDeliveries asks for one page of a webhook's delivery attempts,
// newest first.
type WebhookDeliveries struct {
	ID     string
	UserID string
	Page   Page
}

// WebhookDeliveriesHandler answers WebhookDeliveries.
type WebhookDeliveriesHandler struct {
	ReadModel WebhooksReadModel
	Roles     Roles
}

// Handle answers the query.
func (h WebhookDeliveriesHandler) Handle(ctx context.Context, q WebhookDeliveries) (PageResult[WebhookDelivery], error) {
	if _, err := webhookAdminRead(ctx, h.ReadModel, h.Roles, q.ID, q.UserID); err != nil {
		return PageResult[WebhookDelivery]{}, err
	}
	return h.ReadModel.WebhookDeliveries(ctx, q.ID, q.Page)
}
