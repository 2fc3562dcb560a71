package commands

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/linkd/linkd/domain"
	"github.com/linkd/linkd/domain/click"
	"github.com/linkd/linkd/eventstore"
	"github.com/linkd/linkd/internal/ids"
)

// MsgLinkExpired is the detail of an access to an expired link.
const MsgLinkExpired = "Link has expired"

// RecordClick counts one access to a link. When the link has a click limit
// the click is appended at the exact next version of the link's click
// stream, so concurrent clicks can never count past the limit.
type RecordClick struct {
	Click click.Recorded
	// Limit is the link's expiration_click_count, nil for none.
	Limit *int64
}

type RecordClickHandler struct{ *Deps }

// Handle appends the click and returns its click id (also the tracking id
// when the link tracks conversions).
func (h RecordClickHandler) Handle(ctx context.Context, c RecordClick) (click.Recorded, Result, error) {
	ev := c.Click
	if ev.Timestamp.IsZero() {
		ev.Timestamp = h.now()
	}
	ev.Timestamp = ev.Timestamp.UTC()
	if ev.ClickID == "" {
		ev.ClickID = ids.NewV7(ev.Timestamp).String()
	}
	if ev.TrackingID != "" && ev.TrackingExpiresAt == nil {
		exp := ev.Timestamp.Add(click.TrackingTTL)
		ev.TrackingExpiresAt = &exp
	}
	stream := click.Stream(ev.LinkID)
	if c.Limit == nil {
		res, err := appendClick(ctx, h.Store, stream, eventstore.Any(), &ev)
		return ev, res, err
	}
	for attempt := 0; ; attempt++ {
		v, exists, err := h.Store.StreamVersion(ctx, stream)
		if err != nil {
			return ev, Result{}, err
		}
		count := int64(0)
		expected := eventstore.NoStream()
		if exists {
			count = int64(v) + 1
			expected = eventstore.Exact(v)
		}
		if count >= *c.Limit {
			return ev, Result{}, domain.Gone(MsgLinkExpired)
		}
		res, err := appendClick(ctx, h.Store, stream, expected, &ev)
		if !errors.Is(err, eventstore.ErrWrongExpectedVersion) {
			return ev, res, err
		}
		if attempt > 1000 {
			return ev, Result{}, ErrConcurrency
		}
		if attempt > 10 {
			time.Sleep(time.Duration(attempt%7) * 100 * time.Microsecond)
		}
	}
}

// clickJSON holds the buffers clicks are encoded into: a redirect's click
// is the busiest write there is, and Append keeps nothing of an event's
// data once it returns (eventstore.Store), so one buffer serves click
// after click instead of two allocations per click (the JSON outgrew the
// usual first 512 bytes).
var clickJSON = sync.Pool{New: func() any { b := make([]byte, 0, 1536); return &b }}

// appendClick is appendEvents for one click, without metadata, encoded into
// a buffer of clickJSON.
func appendClick(ctx context.Context, s EventStore, stream string, expected eventstore.ExpectedVersion, ev *click.Recorded) (Result, error) {
	buf := clickJSON.Get().(*[]byte)
	defer clickJSON.Put(buf)
	data, exact := ev.AppendJSONExact((*buf)[:0])
	*buf = data[:0]
	e := eventstore.EventData{ID: ids.NewV7(ev.Timestamp), Type: ev.EventType(), Data: data}
	if exact {
		// ev rides along for the store's in-process subscribers, which then
		// need not decode data (eventstore.EventData.Value): decoding gives
		// ev back, and nothing changes ev once appended.
		e.Value = ev
	}
	ar, err := s.Append(ctx, stream, expected, e)
	if err != nil {
		return Result{}, err
	}
	return resultOf(ar), nil
}

// Clicks returns the number of clicks counted on a link: its click stream's
// version plus one, read from the event store, so it is exact even when a
// read model is behind. Redirects ask it only for links with a click limit
// whose access is not itself counted (bots, HEAD, the password form), to
// tell whether the limit is used up.
func (h RecordClickHandler) Clicks(ctx context.Context, linkID string) (int64, error) {
	v, exists, err := h.Store.StreamVersion(ctx, click.Stream(linkID))
	if err != nil || !exists {
		return 0, err
	}
	return int64(v) + 1, nil
}
