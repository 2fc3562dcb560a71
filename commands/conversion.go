package commands

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/linkd/linkd/domain"
	"github.com/linkd/linkd/domain/conversion"
	"github.com/linkd/linkd/domain/reservation"
	"github.com/linkd/linkd/eventstore"
)

// What TrackLead and TrackSale share: the click check, the eventId
// reservation, and the append to the customer's stream.

// Tracked tells what a TrackLead or TrackSale did.
type Tracked struct {
	// ConversionID is the conversion's id: the one first given to the
	// eventId when this call repeats it.
	ConversionID string
	// CustomerID is the customer's id; "" for a repeat that named another
	// customer than the first call.
	CustomerID string
	// Recorded is true when this call recorded the conversion; false for a
	// repeat of an eventId whose conversion was recorded by another call.
	Recorded bool
	// First is true when this call recorded the customer's first lead (for
	// TrackLead) or first sale (for TrackSale).
	First bool
}

func loadCustomer(ctx context.Context, s EventStore, stream string) (*conversion.Customer, error) {
	events, err := readAll(ctx, s, stream)
	if err != nil {
		return nil, err
	}
	return conversion.LoadCustomer(events)
}

// checkClick refuses a click that is unknown or expired (404) or that
// belongs to a workspace the actor is not a member of (403).
func checkClick(ctx context.Context, d *Deps, a Actor, click conversion.Click, expiresAt, now time.Time) error {
	if click.ClickID == "" || click.WorkspaceID == "" {
		return domain.NotFound(conversion.MsgClickNotFound)
	}
	if !expiresAt.IsZero() && !now.Before(expiresAt) {
		return domain.NotFound(conversion.MsgClickNotFound)
	}
	w, err := loadWorkspace(ctx, d.Store, click.WorkspaceID)
	if err != nil {
		return err
	}
	if !w.Exists() {
		return domain.NotFound(conversion.MsgClickNotFound)
	}
	if !w.IsMember(a.UserID) {
		return domain.Forbidden(conversion.MsgClickNotYours)
	}
	return nil
}

// trackConversion records one lead or sale (record calls the customer's
// TrackLead or TrackSale) for the customer of p in the click's workspace.
//
// With an eventId, the eventId is reserved first, owned by a new
// conversion id and scoped to the customer's stream. A call that finds it
// held repeats the first call: it takes over the first call's conversion id
// and makes sure that conversion is in the customer's stream, recording it
// itself when it is not (the first call crashed or is still in flight).
// The customer's stream never holds a conversion id twice, and its appends
// check the version, so however many calls race, the conversion is
// recorded once. A repeat that names another customer than the first call
// records nothing.
func trackConversion(ctx context.Context, d *Deps, a Actor, click conversion.Click, expiresAt time.Time, p conversion.Payload,
	record func(*conversion.Customer, conversion.Conversion) error) (Tracked, Result, error) {
	now := d.now()
	if p.ExternalID == "" {
		return Tracked{}, Result{}, &conversion.PayloadError{Message: conversion.MsgMissingExternalID}
	}
	if err := checkClick(ctx, d, a, click, expiresAt, now); err != nil {
		return Tracked{}, Result{}, err
	}
	ws := click.WorkspaceID
	stream := conversion.CustomerStream(ws, p.ExternalID)
	out := Tracked{ConversionID: d.newID()}
	// fresh: the conversion id is this call's own, in no stream yet, so a
	// cached customer that knows no conversion ids may record it.
	fresh := true
	var res Result
	if p.EventID != "" {
		r, held, err := reserve(ctx, d, a, reservation.KindConversionEvent, conversion.EventIDKey(ws, p.EventID),
			p.EventID, out.ConversionID, stream, nil)
		if err != nil {
			return Tracked{}, res, err
		}
		res.merge(r)
		if held != nil {
			fresh = false
			out.ConversionID = held.Owner
			if held.Scope != stream {
				return out, res, nil
			}
		}
	}
	customerID := d.newID()
	r, err := retryCustomer(ctx, func() (Result, error) {
		out.Recorded, out.First = false, false
		c, cached := (*conversion.Customer)(nil), false
		if fresh {
			c, cached = d.Customers.get(stream)
		}
		if !cached {
			var err error
			if c, err = loadCustomer(ctx, d.Store, stream); err != nil {
				return Result{}, err
			}
		}
		if c.Has(out.ConversionID) {
			out.CustomerID = c.ID
			return Result{}, nil
		}
		if err := c.Upsert(customerID, ws, p.ExternalID, p.Profile, now); err != nil {
			return Result{}, err
		}
		cv := conversion.Conversion{ConversionID: out.ConversionID, EventID: p.EventID, EventName: p.EventName,
			Click: click, Metadata: p.Metadata, At: now}
		if err := record(c, cv); err != nil {
			return Result{}, err
		}
		switch e := c.Pending()[len(c.Pending())-1].(type) {
		case *conversion.LeadTracked:
			out.First = e.First
		case *conversion.SaleTracked:
			out.First = e.First
		}
		out.CustomerID, out.Recorded = c.ID, true
		r, err := save(ctx, d.Store, stream, c, metaOf(a))
		switch {
		case err == nil:
			d.Customers.saved(stream, c)
		case errors.Is(err, eventstore.ErrWrongExpectedVersion):
			d.Customers.conflicted(stream)
		}
		return r, err
	})
	if err != nil {
		return Tracked{}, res, err
	}
	res.merge(r)
	return out, res, nil
}

// retryCustomer is retry for a customer's stream, which takes bursts of
// concurrent conversions (a shop reporting a customer's order lines, a
// retrying client): every round one append wins, so it allows more rounds
// than retry, with jitter so that the losers do not collide again in step.
func retryCustomer(ctx context.Context, f func() (Result, error)) (Result, error) {
	for attempt := 0; ; attempt++ {
		res, err := f()
		if !errors.Is(err, eventstore.ErrWrongExpectedVersion) {
			return res, err
		}
		if attempt == 100 {
			return res, ErrConcurrency
		}
		wait := time.Duration(min(attempt+1, 10)) * time.Millisecond
		t := time.NewTimer(wait/2 + rand.N(wait))
		select {
		case <-ctx.Done():
			t.Stop()
			return res, ctx.Err()
		case <-t.C:
		}
	}
}
