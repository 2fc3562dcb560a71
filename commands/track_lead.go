package commands

import (
	"context"

	"github.com/linkd/linkd/domain/conversion"
)

// TrackLead records a lead for the click of the body's trackingId; Payload
// is the body as conversion.ParseLead returns it.
type TrackLead struct {
	Actor   Actor
	Payload conversion.Payload
}

type TrackLeadHandler struct {
	*Deps
	Clicks Clicks
}

// Handle upserts the customer and records the lead, once per eventId: a
// repeat answers without error and records nothing (Tracked.Recorded is
// false). Errors: 404 conversion.MsgClickNotFound for an unknown or expired
// click, 403 conversion.MsgClickNotYours when the actor is not a member of
// the click's workspace.
func (h TrackLeadHandler) Handle(ctx context.Context, c TrackLead) (Tracked, Result, error) {
	return trackConversion(ctx, h.Deps, h.Clicks, c.Actor, c.Payload,
		func(cust *conversion.Customer, cv conversion.Conversion) error { return cust.TrackLead(cv) })
}
