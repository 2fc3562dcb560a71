// Package radar holds Radar, the web analytics of a project: page views,
// custom events and identifications sent by the tracker (radar.js) or any
// client to the collect endpoint, each one a domain event in the project's
// Radar stream.
//
// A visitor is a project's visitorId (the tracker's first-party id, or a
// daily-rotating hash of address and user agent when a client sends none).
// Sessions are not recorded: projections cut a visitor's activity into
// visits (SessionTimeout without activity ends one), so that the rule can
// change and a replay applies it to all history.
package radar

import (
	"time"

	"github.com/linkd/linkd/domain"
)

// Wire names.
const (
	EventPageViewed        = "RadarPageViewed"
	EventCustomEvent       = "RadarEventTracked"
	EventVisitorIdentified = "RadarVisitorIdentified"
)

// StreamPrefix starts the name of every Radar stream; Category is the
// topic projections consume.
const (
	StreamPrefix = "radar-"
	Category     = "radar"
)

// Stream names the Radar stream of a project.
func Stream(projectID string) string { return StreamPrefix + projectID }

// SessionTimeout ends a visit: the next activity of the visitor starts a
// new one.
const SessionTimeout = 30 * time.Minute

// Hit is what a page view and a custom event share: where, who, and what
// the request said about the visitor's browser and place.
type Hit struct {
	ProjectID   string `json:"project_id"`
	WorkspaceID string `json:"workspace_id"`
	VisitorID   string `json:"visitor_id"`
	URL         string `json:"url"`
	Hostname    string `json:"hostname"`
	Pathname    string `json:"pathname"`
	Referrer    string `json:"referrer,omitempty"`
	// Source is where the visit came from: the short link of ClickID, a
	// utm_source, the referrer's host, or "" for direct.
	Source  string `json:"source,omitempty"`
	Country string `json:"country,omitempty"`
	Browser string `json:"browser,omitempty"`
	OS      string `json:"os,omitempty"`
	Device  string `json:"device,omitempty"`
	// ClickID and LinkID are the short-link click the visitor came through
	// (its svc_tid), when it is known and of the project's workspace.
	ClickID   string    `json:"click_id,omitempty"`
	LinkID    string    `json:"link_id,omitempty"`
	Timestamp time.Time `json:"timestamp"`
}

// PageViewed is a page view.
type PageViewed struct {
	Hit
}

// CustomEvent is a custom event (radar.track) with its properties.
type CustomEvent struct {
	Hit
	Name  string            `json:"name"`
	Props map[string]string `json:"props,omitempty"`
}

// VisitorIdentified names a visitor (radar.identify).
type VisitorIdentified struct {
	ProjectID string    `json:"project_id"`
	VisitorID string    `json:"visitor_id"`
	Name      string    `json:"name,omitempty"`
	Email     string    `json:"email,omitempty"`
	ClickID   string    `json:"click_id,omitempty"`
	Timestamp time.Time `json:"timestamp"`
}

func (*PageViewed) EventType() string        { return EventPageViewed }
func (*CustomEvent) EventType() string       { return EventCustomEvent }
func (*VisitorIdentified) EventType() string { return EventVisitorIdentified }

func init() {
	domain.Register(func() domain.Event { return &PageViewed{} })
	domain.Register(func() domain.Event { return &CustomEvent{} })
	domain.Register(func() domain.Event { return &VisitorIdentified{} })
}
