package commands

import (
	"context"

	"github.com/linkd/linkd/domain"
	"github.com/linkd/linkd/domain/radar"
	"github.com/linkd/linkd/eventstore"
)

// RecordRadar records one page view, custom event or identification of a
// project's visitor (the collect endpoint; the caller validated the body
// and resolved the visitor, the click and the enrichment).
type RecordRadar struct {
	Event domain.Event // *radar.PageviewRecorded, *radar.EventRecorded or *radar.VisitorIdentified
}

type RecordRadarHandler struct{ *Deps }

// Handle appends the event to the visitor's Radar stream (any version: a
// visitor's hits never conflict).
func (h RecordRadarHandler) Handle(ctx context.Context, c RecordRadar) (Result, error) {
	var hit *radar.Hit
	switch e := c.Event.(type) {
	case *radar.PageviewRecorded:
		hit = &e.Hit
	case *radar.EventRecorded:
		hit = &e.Hit
	case *radar.VisitorIdentified:
		hit = &e.Hit
	default:
		return Result{}, domain.Invalid("radar: unexpected event %T", c.Event)
	}
	if hit.ProjectID == "" || hit.VisitorID == "" {
		return Result{}, domain.Invalid("radar: the event names no project or visitor")
	}
	return appendEvents(ctx, h.Store, radar.Stream(hit.ProjectID, hit.VisitorID), eventstore.Any(), domain.Metadata{}, c.Event)
}
