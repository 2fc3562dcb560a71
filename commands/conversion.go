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

// What TrackLead and TrackSale share: the click's resolution and check,
// the eventId reservation, and the append to the customer's stream.

// Clicks resolves the click a conversion's trackingId names: the port
// through which leads and sales are attributed (in linkd, the click index,
// waiting for it to catch up with the log before it answers that a click
// is unknown, so that a lead sent right after its redirect finds it).
type Clicks interface {
	// ClickByTrackingID returns the click and when its tracking id stops
	// being valid (zero for never); a 404 conversion.MsgClickNotFound for
	// an unknown one.
	ClickByTrackingID(ctx context.Context, trackingID string) (conversion.Click, time.Time, error)
}

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
func trackConversion(ctx context.Context, d *Deps, clicks Clicks, a Actor, p conversion.Payload,
	record func(*conversion.Customer, conversion.Conversion) error) (Tracked, Result, error) {
	now := d.now()
	if p.ExternalID == "" {
		return Tracked{}, Result{}, &conversion.PayloadError{Message: conversion.MsgMissingExternalID}
	}
	if clicks == nil {
		return Tracked{}, Result{}, errors.New("commands: conversions need a click resolver (Clicks)")
	}
	click, expiresAt, err := clicks.ClickByTrackingID(ctx, p.TrackingID)
	if err != nil {
		return Tracked{}, Result{}, err
	}
	if err := checkClick(ctx, d, a, click, expiresAt, now); err != nil {
		return Tracked{}, Result{}, err
	}
	ws := click.WorkspaceID
	stream := conversion.CustomerStream(ws, p.ExternalID)
	cs := customerStep{d: d, stream: stream, ws: ws, customerID: d.newID(), p: p, click: click, now: now, record: record}
	out := Tracked{ConversionID: d.newID()}
	var res Result
	if p.EventID != "" {
		key := conversion.EventIDKey(ws, p.EventID)
		if r, done, err := cs.atOnce(ctx, a, reservation.Stream(reservation.KindConversionEvent, key), &out); done {
			return out, r, err
		}
		r, held, err := reserve(ctx, d, a, reservation.KindConversionEvent, key, p.EventID, out.ConversionID, stream, nil)
		if err != nil {
			return Tracked{}, res, err
		}
		res.merge(r)
		if held != nil {
			cs.repeat = true
			out.ConversionID = held.Owner
			if held.Scope != stream {
				return out, res, nil
			}
		}
	}
	r, err := retryCustomer(ctx, func() (Result, error) {
		c, err := cs.load(ctx, &out)
		if err != nil || c == nil {
			return Result{}, err
		}
		r, err := save(ctx, d.Store, stream, c, metaOf(a))
		cs.saved(c, err)
		if err != nil && p.EventID != "" {
			// The customer changed: maybe a repeat of the eventId
			// recorded this very conversion. Ask the store.
			cs.repeat = true
		}
		return r, err
	})
	if err != nil {
		return Tracked{}, res, err
	}
	res.merge(r)
	return out, res, nil
}

// customerStep records a conversion in the customer's stream.
type customerStep struct {
	d          *Deps
	stream, ws string
	customerID string // the id of the customer if this call creates it
	p          conversion.Payload
	click      conversion.Click
	now        time.Time
	record     func(*conversion.Customer, conversion.Conversion) error
	// repeat: the conversion id is the first call's of a repeated eventId,
	// maybe in the stream already. Otherwise it is this call's own, in no
	// stream, so a cached customer, which knows no conversion ids, may
	// record it.
	repeat bool
}

// load returns the customer with out's conversion recorded on it, or nil
// when the stream holds that conversion already; it sets out's customer,
// Recorded and First.
func (cs *customerStep) load(ctx context.Context, out *Tracked) (*conversion.Customer, error) {
	out.Recorded, out.First = false, false
	c, cached := (*conversion.Customer)(nil), false
	if !cs.repeat {
		c, cached = cs.d.Customers.get(cs.stream)
	}
	if !cached {
		var err error
		if c, err = loadCustomer(ctx, cs.d.Store, cs.stream); err != nil {
			return nil, err
		}
	}
	if c.Has(out.ConversionID) {
		out.CustomerID = c.ID
		return nil, nil
	}
	if err := c.Upsert(cs.customerID, cs.ws, cs.p.ExternalID, cs.p.Profile, cs.now); err != nil {
		return nil, err
	}
	cv := conversion.Conversion{ConversionID: out.ConversionID, EventID: cs.p.EventID, EventName: cs.p.EventName,
		Click: cs.click, Metadata: cs.p.Metadata, At: cs.now}
	if err := cs.record(c, cv); err != nil {
		return nil, err
	}
	switch e := c.Pending()[len(c.Pending())-1].(type) {
	case *conversion.LeadTracked:
		out.First = e.First
	case *conversion.SaleTracked:
		out.First = e.First
	}
	out.CustomerID, out.Recorded = c.ID, true
	return c, nil
}

// saved keeps the customer's state after its save, or forgets it after a
// save that lost to another writer.
func (cs *customerStep) saved(c *conversion.Customer, err error) {
	switch {
	case err == nil:
		cs.d.Customers.saved(cs.stream, c)
	case errors.Is(err, eventstore.ErrWrongExpectedVersion):
		cs.d.Customers.conflicted(cs.stream)
	}
}

// atOnce records a conversion with an eventId in one atomic append of the
// eventId's reservation (a new stream) and the customer's events, when the
// store appends to several streams at once (the embedded store). done is
// false when it did not: the store cannot, the eventId is held already (a
// repeat), or the customer changed meanwhile; the caller then takes the
// way that works on every store, one append after the other.
func (cs *customerStep) atOnce(ctx context.Context, a Actor, key string, out *Tracked) (res Result, done bool, err error) {
	m, ok := cs.d.multiAppender(ctx)
	if !ok {
		return Result{}, false, nil
	}
	c, err := cs.load(ctx, out)
	if err != nil {
		return Result{}, true, err
	}
	if c == nil {
		return Result{}, false, nil // not reachable with a new id; the reservation decides
	}
	r, _ := reservation.Load(nil)
	if err := r.Reserve(cs.p.EventID, out.ConversionID, cs.stream, false, cs.now); err != nil {
		return Result{}, true, err
	}
	meta, err := encodeMeta(metaOf(a))
	if err != nil {
		return Result{}, true, err
	}
	reserved, err := encodeEvents(meta, r.Pending())
	if err != nil {
		return Result{}, true, err
	}
	events, err := encodeEvents(meta, c.Pending())
	if err != nil {
		return Result{}, true, err
	}
	expected := eventstore.NoStream()
	if v, ok := c.LoadedVersion(); ok {
		expected = eventstore.Exact(v)
	}
	results, err := m.AppendMulti(ctx,
		eventstore.StreamAppend{Stream: key, Expected: eventstore.NoStream(), Events: reserved},
		eventstore.StreamAppend{Stream: cs.stream, Expected: expected, Events: events})
	if errors.Is(err, errors.ErrUnsupported) || errors.Is(err, eventstore.ErrWrongExpectedVersion) {
		cs.saved(c, err)
		*out = Tracked{ConversionID: out.ConversionID}
		return Result{}, false, nil
	}
	if err != nil {
		return Result{}, true, err
	}
	c.ClearPending()
	cs.saved(c, nil)
	return resultOf(results[len(results)-1]), true, nil
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
