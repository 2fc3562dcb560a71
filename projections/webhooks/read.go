package webhooks

import (
	"context"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/linkd/linkd/domain"
	"github.com/linkd/linkd/domain/webhook"
	"github.com/linkd/linkd/domain/workspace"
	"github.com/linkd/linkd/eventstore"
	"github.com/linkd/linkd/queries"
)

const webhookCols = `id, workspace_id, url, events, link_ids, description, is_active, created_at, updated_at`

func scanWebhook(rows interface{ Scan(...any) error }) (queries.Webhook, error) {
	var w queries.Webhook
	var ev, ids string
	var ca, ua int64
	if err := rows.Scan(&w.ID, &w.WorkspaceID, &w.URL, &ev, &ids, &w.Description, &w.IsActive, &ca, &ua); err != nil {
		return w, err
	}
	_ = json.Unmarshal([]byte(ev), &w.Events)
	_ = json.Unmarshal([]byte(ids), &w.LinkIDs)
	if w.LinkIDs == nil {
		w.LinkIDs = []string{}
	}
	w.CreatedAt, w.UpdatedAt = time.Unix(0, ca).UTC(), time.Unix(0, ua).UTC()
	return w, nil
}

// Webhook implements queries.WebhooksReadModel.
func (s *Store) Webhook(ctx context.Context, id string) (queries.Webhook, bool, error) {
	w, err := scanWebhook(s.r.QueryRowContext(ctx, `SELECT `+webhookCols+` FROM webhooks WHERE id = ? AND deleted = 0`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return w, false, nil
	}
	return w, err == nil, err
}

// Lists go by offset; a cursor names the page it leads to (webhooks and
// attempts are few per workspace, and new ones come first).
type cursor struct {
	Page int `json:"p"`
}

func (c cursor) encode() string {
	b, _ := json.Marshal(c)
	return base64.RawURLEncoding.EncodeToString(b)
}

func pageBounds(p queries.Page) (size, offset, page int, err error) {
	size, page = p.PageSize, p.Page
	if size <= 0 {
		size = 10
	}
	if p.Cursor != "" {
		var c cursor
		b, derr := base64.RawURLEncoding.DecodeString(p.Cursor)
		if derr != nil || json.Unmarshal(b, &c) != nil || c.Page < 1 {
			return 0, 0, 0, domain.Invalid("Invalid cursor")
		}
		page = c.Page
	}
	if page < 1 {
		page = 1
	}
	return size, (page - 1) * size, page, nil
}

// cursors sets a page's cursors.
func cursors[T any](res *queries.PageResult[T]) {
	if res.HasNext {
		res.NextCursor = cursor{Page: res.Page + 1}.encode()
	}
	if res.HasPrev {
		res.PrevCursor = cursor{Page: res.Page - 1}.encode()
	}
}

// Webhooks implements queries.WebhooksReadModel: newest first.
func (s *Store) Webhooks(ctx context.Context, workspaceIDs []string, p queries.Page) (queries.PageResult[queries.Webhook], error) {
	size, offset, page, err := pageBounds(p)
	if err != nil {
		return queries.PageResult[queries.Webhook]{}, err
	}
	res := queries.PageResult[queries.Webhook]{Items: []queries.Webhook{}, Page: page, PageSize: size, HasPrev: page > 1}
	if len(workspaceIDs) == 0 {
		return res, nil
	}
	args := make([]any, 0, len(workspaceIDs)+2)
	for _, id := range workspaceIDs {
		args = append(args, id)
	}
	args = append(args, size+1, offset)
	rows, err := s.r.QueryContext(ctx, `SELECT `+webhookCols+` FROM webhooks WHERE deleted = 0 AND workspace_id IN (?`+
		strings.Repeat(", ?", len(workspaceIDs)-1)+`) ORDER BY created_at DESC, id DESC LIMIT ? OFFSET ?`, args...)
	if err != nil {
		return res, err
	}
	defer rows.Close()
	for rows.Next() {
		w, err := scanWebhook(rows)
		if err != nil {
			return res, err
		}
		res.Items = append(res.Items, w)
	}
	if len(res.Items) > size {
		res.Items, res.HasNext = res.Items[:size], true
	}
	cursors(&res)
	return res, rows.Err()
}

// WebhookDeliveries implements queries.WebhooksReadModel: the attempts
// made, and the next attempt of each message still pending, newest first.
func (s *Store) WebhookDeliveries(ctx context.Context, webhookID string, p queries.Page) (queries.PageResult[queries.WebhookDelivery], error) {
	size, offset, page, err := pageBounds(p)
	if err != nil {
		return queries.PageResult[queries.WebhookDelivery]{}, err
	}
	res := queries.PageResult[queries.WebhookDelivery]{Items: []queries.WebhookDelivery{}, Page: page, PageSize: size, HasPrev: page > 1}
	items, err := s.q.deliveries(ctx, webhookID, size+1, offset)
	if err != nil {
		return res, err
	}
	res.Items = append(res.Items, items...)
	if len(res.Items) > size {
		res.Items, res.HasNext = res.Items[:size], true
	}
	cursors(&res)
	return res, nil
}

// Replay queues again every event of the log recorded from start to end
// that webhook id subscribes to, with its original webhook-id. It returns
// how many messages it queued. An instance that coordinates with others
// (Options.Coordinate) counts them and records the request in the log:
// the one that delivers queues them (ADR 0114).
func (s *Store) Replay(ctx context.Context, id string, start, end time.Time) (int, error) {
	if s.coord == nil {
		return s.replayRange(ctx, id, start, end, eventstore.Start, true)
	}
	h, ok := s.hook(id)
	if !ok {
		return 0, nil
	}
	n, err := s.replayRange(ctx, id, start, end, eventstore.Start, false)
	if err != nil || n == 0 {
		return n, err
	}
	if s.opts.RequestReplay == nil {
		return 0, errors.New("webhooks: no way to request a replay")
	}
	return n, s.opts.RequestReplay(ctx, id, h.WorkspaceID, start, end)
}

// replayRange finds the events of the log recorded from start to end that
// webhook id subscribes to, and, when write is set, queues their messages
// again (a new round of those that exist), held behind before (progress.go).
func (s *Store) replayRange(ctx context.Context, id string, start, end time.Time, before eventstore.Position, write bool) (int, error) {
	h, ok := s.hook(id)
	if !ok {
		return 0, nil
	}
	byWS := map[string][]*hook{h.WorkspaceID: {&h}}
	cats := s.Categories()
	n := 0
	after := eventstore.Start
	for {
		recs, err := s.opts.Events.ReadAll(ctx, after, 4096)
		if err != nil {
			return n, err
		}
		if len(recs) == 0 {
			break
		}
		after = recs[len(recs)-1].Position
		c := &changes{replay: true, now: s.opts.Now().UnixMilli()}
		stop := false
		for i := range recs {
			re := &recs[i]
			if re.Time.Before(start) || !inCategories(re.Stream, cats) || strings.HasPrefix(re.Stream, webhook.StreamPrefix) || strings.HasPrefix(re.Stream, workspace.StreamPrefix) {
				continue
			}
			if re.Time.After(end) {
				// The log is in append order: well past end, stop.
				if re.Time.After(end.Add(time.Minute)) {
					stop = true
					break
				}
				continue
			}
			m, err := s.match(ctx, re, func() (domain.Event, error) { return domain.DecodeEvent(re.Type, re.Data) }, byWS, false)
			if err != nil {
				return n, err
			}
			if m != nil {
				n++
				if write {
					c.msgs = append(c.msgs, queued{webhookID: id, eventID: re.ID.String(), eventType: m.eventType, body: m.body, eventTime: re.Time, before: before})
				}
			}
		}
		if len(c.msgs) > 0 {
			if err := s.q.write(ctx, nil, c); err != nil {
				return n, err
			}
		}
		if stop {
			break
		}
	}
	if write && n > 0 && s.notify != nil {
		s.notify([]string{id})
	}
	return n, nil
}

func inCategories(stream string, cats []string) bool {
	for _, c := range cats {
		if strings.HasPrefix(stream, c+"-") {
			return true
		}
	}
	return false
}
