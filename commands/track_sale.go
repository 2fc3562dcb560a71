package commands

import (
	"context"

	"github.com/linkd/linkd/domain/conversion"
)

// TrackSale records a sale for the click of the body's trackingId; Payload
// is the body as conversion.ParseSale returns it, with the amount in minor
// units.
type TrackSale struct {
	Actor   Actor
	Payload conversion.Payload
}

type TrackSaleHandler struct {
	*Deps
	Clicks Clicks
}

// Handle upserts the customer and records the sale, once per eventId, and
// marks it First when it is the customer's first sale (decided in the same
// append as the sale, so concurrent sales of one customer have exactly one
// first). A repeat answers without error and records nothing. Errors are
// those of TrackLeadHandler.Handle.
func (h TrackSaleHandler) Handle(ctx context.Context, c TrackSale) (Tracked, Result, error) {
	p := c.Payload
	// Checked before the eventId is reserved, so that a refused sale holds
	// no eventId.
	if err := conversion.ValidateSaleAmount(p.AmountMinor, p.Currency); err != nil {
		return Tracked{}, Result{}, err
	}
	return trackConversion(ctx, h.Deps, h.Clicks, c.Actor, p,
		func(cust *conversion.Customer, cv conversion.Conversion) error {
			return cust.TrackSale(cv, p.AmountMinor, p.Currency)
		})
}
