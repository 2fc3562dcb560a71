package commands

import (
	"context"
	"time"

	"github.com/linkd/linkd/domain"
	"github.com/linkd/linkd/domain/webhook"
	"github.com/linkd/linkd/eventstore"
)

// RequestWebhookReplay records a replay of a webhook's events from Start
// to End in the log, for the instance that delivers (ADR 0114). The
// webhook projection asks it once the API has checked the caller's access
// and counted the events.
type RequestWebhookReplay struct {
	ID          string
	WorkspaceID string
	Start, End  time.Time
}

type RequestWebhookReplayHandler struct{ *Deps }

func (h RequestWebhookReplayHandler) Handle(ctx context.Context, c RequestWebhookReplay) (Result, error) {
	return appendEvents(ctx, h.Store, webhook.ReplayStream(c.ID), eventstore.Any(), domain.Metadata{},
		&webhook.ReplayRequested{ID: c.ID, WorkspaceID: c.WorkspaceID, Start: c.Start.UTC(), End: c.End.UTC(), At: h.now()})
}

// RecordWebhookAttempts records in the log the attempts the instance that
// delivers made, for the deliveries log of the others (ADR 0114).
type RecordWebhookAttempts struct {
	Attempts *webhook.AttemptsRecorded
}

type RecordWebhookAttemptsHandler struct{ *Deps }

func (h RecordWebhookAttemptsHandler) Handle(ctx context.Context, c RecordWebhookAttempts) (Result, error) {
	return appendEvents(ctx, h.Store, webhook.AttemptsStream(c.Attempts.ID), eventstore.Any(), domain.Metadata{}, c.Attempts)
}
