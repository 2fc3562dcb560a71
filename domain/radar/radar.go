// Package radar holds the events of web analytics ("Radar"): page views,
// custom events and identifications collected for a project. Each visitor
// of a project has a stream, "radar-<project id>_<visitor id>".
package radar

import (
	"time"

	"github.com/linkd/linkd/domain"
)

const (
	EventPageviewRecorded = "RadarPageviewRecorded"
	EventCustomRecorded   = "RadarEventRecorded"
	EventVisitorIdentify  = "RadarVisitorIdentified"
)

// StreamPrefix is the category of Radar streams.
const StreamPrefix = "radar-"

// Stream names the stream of a visitor of a project.
func Stream(projectID, visitorID string) string { return StreamPrefix + projectID + "_" + visitorID }

// Hit is what every Radar event knows of the visitor.
type Hit struct {
	ProjectID string    `json:"project_id"`
	VisitorID string    `json:"visitor_id"`
	URL       string    `json:"url,omitempty"`
	Hostname  string    `json:"hostname,omitempty"`
	Pathname  string    `json:"pathname,omitempty"`
	Referrer  string    `json:"referrer,omitempty"`
	Browser   string    `json:"browser,omitempty"`
	OS        string    `json:"os,omitempty"`
	Device    string    `json:"device,omitempty"`
	Country   string    `json:"country,omitempty"`
	At        time.Time `json:"at"`
}

// PageviewRecorded: a page was viewed.
type PageviewRecorded struct {
	Hit
}

// EventRecorded: a custom event happened.
type EventRecorded struct {
	Hit
	Name  string            `json:"name"`
	Props map[string]string `json:"props,omitempty"`
}

// VisitorIdentified: a visitor told who they are.
type VisitorIdentified struct {
	Hit
	Name  string `json:"name,omitempty"`
	Email string `json:"email,omitempty"`
}

func (PageviewRecorded) EventType() string  { return EventPageviewRecorded }
func (EventRecorded) EventType() string     { return EventCustomRecorded }
func (VisitorIdentified) EventType() string { return EventVisitorIdentify }

func init() {
	domain.Register(func() domain.Event { return &PageviewRecorded{} })
	domain.Register(func() domain.Event { return &EventRecorded{} })
	domain.Register(func() domain.Event { return &VisitorIdentified{} })
}
