package api

import (
	"context"
	"net/http"
	"time"

	"github.com/gorilla/mux"

	"github.com/linkd/linkd/commands"
	"github.com/linkd/linkd/domain"
	"github.com/linkd/linkd/domain/link"
	"github.com/linkd/linkd/domain/webhook"
	"github.com/linkd/linkd/queries"
)

// Webhooks (an extension: /v1/webhooks): a workspace's admins subscribe
// URLs to its events; projections/webhooks delivers them.

// WebhookReplayer queues the events of a time range again for a webhook.
type WebhookReplayer interface {
	Replay(ctx context.Context, webhookID string, start, end time.Time) (int, error)
}

type webhookBody struct {
	URL         domain.Opt[string]   `json:"url"`
	Events      domain.Opt[[]string] `json:"events"`
	WorkspaceID domain.Opt[string]   `json:"workspace_id"`
	LinkIDs     domain.Opt[[]string] `json:"link_ids"`
	Description domain.Opt[string]   `json:"description"`
	IsActive    domain.Opt[bool]     `json:"is_active"`
}

func webhookJSON(w queries.Webhook) map[string]any {
	events, ids := w.Events, w.LinkIDs
	if events == nil {
		events = []string{}
	}
	if ids == nil {
		ids = []string{}
	}
	return map[string]any{
		"id": w.ID, "url": w.URL, "events": events, "workspace_id": w.WorkspaceID, "link_ids": ids,
		"description": w.Description, "is_active": w.IsActive,
		"created_at": formatTime(w.CreatedAt), "updated_at": formatTime(w.UpdatedAt),
	}
}

func deliveryJSON(d queries.WebhookDelivery) map[string]any {
	var next any
	if d.NextAttemptAt != nil {
		next = formatTime(*d.NextAttemptAt)
	}
	return map[string]any{
		"id": d.ID, "message_id": d.MessageID, "event_type": d.EventType, "attempt": d.Attempt, "status": d.Status,
		"response_status": d.ResponseStatus, "response_body": d.ResponseBody, "duration_ms": d.DurationMS,
		"created_at": formatTime(d.CreatedAt), "next_attempt_at": next,
	}
}

// webhookWrite refuses keys without write access to workspaces: managing
// webhooks, reading them included, needs it (DECISIONS.md).
func webhookWrite(p principal) error {
	if !permitted(p.key, resWorkspaces, http.MethodPost) {
		return domain.ErrInsufficientPermissions()
	}
	return nil
}

// webhookRead reads a webhook once both the webhook projection and the
// core one (the caller's role in its workspace) show every write so far.
func (s *Server) webhookRead(r *http.Request, p principal, id string) (queries.Webhook, error) {
	s.barrier(r.Context(), s.core, s.webhooksWM)
	return s.q.WebhookByID.Handle(r.Context(), queries.WebhookByID{ID: id, UserID: p.key.UserID})
}

// waitWebhooks waits until the webhook projection and the core one (a
// default workspace made on the way) show a command's events.
func (s *Server) waitWebhooks(ctx context.Context, res commands.Result) {
	s.WaitCore(ctx, res)
	if res.Wrote && s.webhooksWM != nil {
		s.wait(ctx, s.webhooksWM, res.Position)
	}
}

func (s *Server) createWebhook(w http.ResponseWriter, r *http.Request, p principal) error {
	if err := webhookWrite(p); err != nil {
		return err
	}
	var b webhookBody
	if err := decodeBody(r, &b); err != nil {
		return err
	}
	if !b.URL.Set || b.URL.Null {
		return domain.Invalid("Webhook url is required")
	}
	made, res, err := s.cmd.CreateWebhook.Handle(r.Context(), commands.CreateWebhook{
		Actor: p.actor(), WorkspaceID: b.WorkspaceID.V, URL: b.URL.V, Events: b.Events.V, LinkIDs: b.LinkIDs.V, Description: b.Description.V,
	})
	if err != nil {
		return err
	}
	s.waitWebhooks(r.Context(), res)
	v, err := s.webhookRead(r, p, made.Webhook.ID)
	if err != nil {
		return err
	}
	out := webhookJSON(v)
	out["secret"] = made.Secret
	writeJSON(w, http.StatusCreated, out)
	return nil
}

// webhookPage begins both webhook lists (the webhooks, a webhook's
// deliveries): the key's write access, the page asked for, and the wait
// until the webhook and core projections show every write so far.
func (s *Server) webhookPage(r *http.Request, p principal) (queries.Page, error) {
	if err := webhookWrite(p); err != nil {
		return queries.Page{}, err
	}
	page, err := pageParams(r)
	if err != nil {
		return queries.Page{}, err
	}
	s.barrier(r.Context(), s.core, s.webhooksWM)
	return page, nil
}

func (s *Server) listWebhooks(w http.ResponseWriter, r *http.Request, p principal) error {
	page, err := s.webhookPage(r, p)
	if err != nil {
		return err
	}
	res, err := s.q.WebhooksPage.Handle(r.Context(), queries.WebhooksPage{UserID: p.key.UserID, WorkspaceID: r.URL.Query().Get("workspace_id"), Page: page})
	if err != nil {
		return err
	}
	items := make([]any, 0, len(res.Items))
	for _, x := range res.Items {
		items = append(items, webhookJSON(x))
	}
	writeJSON(w, http.StatusOK, envelope(res, items))
	return nil
}

func (s *Server) getWebhook(w http.ResponseWriter, r *http.Request, p principal) error {
	if err := webhookWrite(p); err != nil {
		return err
	}
	x, err := s.webhookRead(r, p, mux.Vars(r)["webhook_id"])
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, webhookJSON(x))
	return nil
}

func (s *Server) updateWebhook(w http.ResponseWriter, r *http.Request, p principal) error {
	if err := webhookWrite(p); err != nil {
		return err
	}
	var b webhookBody
	if err := decodeBody(r, &b); err != nil {
		return err
	}
	id := mux.Vars(r)["webhook_id"]
	if _, err := s.webhookRead(r, p, id); err != nil {
		return err
	}
	if b.WorkspaceID.Set && !b.WorkspaceID.Null {
		cur, _ := s.webhookRead(r, p, id)
		if b.WorkspaceID.V != cur.WorkspaceID {
			return domain.Invalid("A webhook cannot move to another workspace")
		}
	}
	_, res, err := s.cmd.UpdateWebhook.Handle(r.Context(), commands.UpdateWebhook{
		Actor: p.actor(), ID: id, Patch: webhook.Patch{URL: b.URL, Events: b.Events, LinkIDs: b.LinkIDs, Description: b.Description, IsActive: b.IsActive},
	})
	if err != nil {
		return err
	}
	s.waitWebhooks(r.Context(), res)
	v, err := s.webhookRead(r, p, id)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, webhookJSON(v))
	return nil
}

func (s *Server) deleteWebhook(w http.ResponseWriter, r *http.Request, p principal) error {
	if err := webhookWrite(p); err != nil {
		return err
	}
	id := mux.Vars(r)["webhook_id"]
	if _, err := s.webhookRead(r, p, id); err != nil {
		return err
	}
	res, err := s.cmd.DeleteWebhook.Handle(r.Context(), commands.DeleteWebhook{Actor: p.actor(), ID: id})
	if err != nil {
		return err
	}
	s.waitWebhooks(r.Context(), res)
	writeJSON(w, http.StatusOK, map[string]string{"message": "Webhook deleted successfully"})
	return nil
}

func (s *Server) webhookDeliveries(w http.ResponseWriter, r *http.Request, p principal) error {
	page, err := s.webhookPage(r, p)
	if err != nil {
		return err
	}
	res, err := s.q.WebhookDeliveries.Handle(r.Context(), queries.WebhookDeliveries{ID: mux.Vars(r)["webhook_id"], UserID: p.key.UserID, Page: page})
	if err != nil {
		return err
	}
	items := make([]any, 0, len(res.Items))
	for _, x := range res.Items {
		items = append(items, deliveryJSON(x))
	}
	writeJSON(w, http.StatusOK, envelope(res, items))
	return nil
}

type replayBody struct {
	Start domain.Opt[string] `json:"start"`
	End   domain.Opt[string] `json:"end"`
}

func (s *Server) replayWebhook(w http.ResponseWriter, r *http.Request, p principal) error {
	if err := webhookWrite(p); err != nil {
		return err
	}
	var b replayBody
	if err := decodeBody(r, &b); err != nil {
		return err
	}
	start, err := replayTime("start", b.Start)
	if err != nil {
		return err
	}
	end, err := replayTime("end", b.End)
	if err != nil {
		return err
	}
	if end.Before(start) {
		return domain.Invalid("start must be before end")
	}
	id := mux.Vars(r)["webhook_id"]
	if _, err := s.webhookRead(r, p, id); err != nil {
		return err
	}
	if s.webhooks == nil {
		return domain.Invalid("Webhook deliveries are not running")
	}
	n, err := s.webhooks.Replay(r.Context(), id, start, end)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"message": "Replay queued", "queued": n})
	return nil
}

// replayTime reads an RFC 3339 time (a date alone is its midnight UTC).
func replayTime(name string, o domain.Opt[string]) (time.Time, error) {
	if !o.Set || o.Null || o.V == "" {
		return time.Time{}, domain.Invalid("%s is required", name)
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02"} {
		if t, err := time.Parse(layout, o.V); err == nil {
			return t.UTC(), nil
		}
	}
	return time.Time{}, domain.Invalid("%s must be an ISO 8601 date-time", name)
}

// RenderLinkJSON is a link as GET /v1/links/{id} shows it, from its write
// model: what webhook payloads carry.
func (s *Server) RenderLinkJSON(ctx context.Context, l *link.Link, clicks int64) (map[string]any, error) {
	q := queries.Link{ID: l.ID, Code: l.Code, CreatedBy: l.CreatedBy, CreatedAt: l.CreatedAt, UpdatedAt: l.UpdatedAt,
		IsArchived: l.Archived, Clicks: clicks, Attributes: l.Attributes}
	return s.renderLink(ctx, q, false, nil)
}
