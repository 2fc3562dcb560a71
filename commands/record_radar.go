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
	Event domain.Event // *radar.PageViewed, *radar.CustomEvent or *radar.VisitorIdentified
}

type RecordRadarHandler struct{ *Deps }

// Handle appends the event to the project's Radar stream (any version:
// hits of a project never conflict).
func (h RecordRadarHandler) Handle(ctx context.Context, c RecordRadar) (Result, error) {
	var project string
	switch e := c.Event.(type) {
	case *radar.PageViewed:
		project = e.ProjectID
	case *radar.CustomEvent:
		project = e.ProjectID
	case *radar.VisitorIdentified:
		project = e.ProjectID
	default:
		return Result{}, domain.Invalid("radar: unexpected event %T", c.Event)
	}
	if project == "" {
		return Result{}, domain.Invalid("radar: the event names no project")
	}
	return appendEvents(ctx, h.Store, radar.Stream(project), eventstore.Any(), domain.Metadata{}, c.Event)
}
