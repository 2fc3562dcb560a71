package queries

import (
	"context"
	"time"

	"github.com/linkd/linkd/domain"
	"github.com/linkd/linkd/domain/click"
	"github.com/linkd/linkd/domain/conversion"
)

// ClickByTrackingID asks for the click a redirect handed a tracking id
// (svc_tid) to, as a conversion names it.
type ClickByTrackingID struct {
	TrackingID string
}

// TrackedClick is a click that conversions can be attributed to, with
// what segmenting them needs.
type TrackedClick struct {
	ClickID     string
	LinkID      string
	WorkspaceID string
	ProjectID   string
	DomainID    string
	ClickedAt   time.Time
	Country     string
	DeviceType  string
	Browser     string
	OS          string
	Referrer    string
	QR          bool
	// Version is the click's version in its link's click stream, where
	// the whole click is (HasVersion false: not known for this click).
	Version    uint64
	HasVersion bool
}

// ClickIndex is what ClickByTrackingID reads: the click-id index
// (projections/clickindex).
type ClickIndex interface {
	TrackedClick(ctx context.Context, clickID string) (TrackedClick, bool, error)
}

// ClickByTrackingIDHandler answers ClickByTrackingID: 404 `Click not found
// for this trackingId` for an unknown id or a click older than
// click.TrackingTTL (90 days).
type ClickByTrackingIDHandler struct {
	ReadModel ClickIndex
	Clock     interface{ Now() time.Time }
}

// Handle answers the query.
func (h ClickByTrackingIDHandler) Handle(ctx context.Context, q ClickByTrackingID) (TrackedClick, error) {
	if q.TrackingID == "" || h.ReadModel == nil {
		return TrackedClick{}, domain.NotFound(conversion.MsgClickNotFound)
	}
	c, ok, err := h.ReadModel.TrackedClick(ctx, q.TrackingID)
	if err != nil {
		return c, err
	}
	if !ok || !h.Clock.Now().Before(c.ClickedAt.Add(click.TrackingTTL)) {
		return TrackedClick{}, domain.NotFound(conversion.MsgClickNotFound)
	}
	return c, nil
}
