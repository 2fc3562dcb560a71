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
	"crypto/sha256"
	"encoding/hex"
	"time"

	"github.com/linkd/linkd/domain"
)

// Wire names.
const (
	EventPageviewRecorded  = "RadarPageviewRecorded"
	EventRecordedName      = "RadarEventRecorded"
	EventVisitorIdentified = "RadarVisitorIdentified"
)

// StreamPrefix starts the name of every Radar stream; Category is the
// topic projections consume.
const (
	StreamPrefix = "radar-"
	Category     = "radar"
)

// Stream names the stream of a visitor of a project:
// "radar-<project id>_<sha256 of the visitor id, 32 hex digits>". A
// visitor's events keep their order (sessions are cut from it), and on
// Kafka the visitors of a project spread over the partitions.
func Stream(projectID, visitorID string) string {
	sum := sha256.Sum256([]byte(visitorID))
	return StreamPrefix + projectID + "_" + hex.EncodeToString(sum[:16])
}

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
	ClickID string    `json:"click_id,omitempty"`
	LinkID  string    `json:"link_id,omitempty"`
	At      time.Time `json:"at"`
}

// PageviewRecorded is a page view.
type PageviewRecorded struct {
	Hit
}

// EventRecorded is a custom event (radar.track) with its properties.
type EventRecorded struct {
	Hit
	Name  string            `json:"name"`
	Props map[string]string `json:"props,omitempty"`
}

// VisitorIdentified names a visitor (radar.identify); its Hit says where
// and when.
type VisitorIdentified struct {
	Hit
	Name  string `json:"name,omitempty"`
	Email string `json:"email,omitempty"`
}

func (PageviewRecorded) EventType() string  { return EventPageviewRecorded }
func (EventRecorded) EventType() string     { return EventRecordedName }
func (VisitorIdentified) EventType() string { return EventVisitorIdentified }

func init() {
	domain.Register(func() domain.Event { return &PageviewRecorded{} })
	domain.Register(func() domain.Event { return &EventRecorded{} })
	domain.Register(func() domain.Event { return &VisitorIdentified{} })
}
