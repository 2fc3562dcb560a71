package commands

import (
	"context"
	"time"

	"github.com/linkd/linkd/domain/conversion"
)

// TrackLead records a lead for a click. The click is resolved from the
// body's trackingId by the caller (the click-id lookup); Payload is the
// body as conversion.ParseLead returns it.
type TrackLead struct {
	Actor Actor
	Click conversion.Click
	// ClickExpiresAt is when the click's tracking id stops being valid;
	// zero for never.
	ClickExpiresAt time.Time
	Payload        conversion.Payload
}

type TrackLeadHandler struct{ *Deps }

// Handle upserts the customer and records the lead, once per eventId: a
// repeat answers without error and records nothing (Tracked.Recorded is
// false). Errors: 404 conversion.MsgClickNotFound for an unknown or expired
// click, 403 conversion.MsgClickNotYours when the actor is not a member of
// the click's workspace.
func (h TrackLeadHandler) Handle(ctx context.Context, c TrackLead) (Tracked, Result, error) {
	return trackConversion(ctx, h.Deps, c.Actor, c.Click, c.ClickExpiresAt, c.Payload,
		func(cust *conversion.Customer, cv conversion.Conversion) error { return cust.TrackLead(cv) })
}
