// Package click holds the events of counted accesses to links. Each link has
// its own click stream, "clicks-<link id>", whose versions number the link's
// clicks from 0: the stream version is the exact click count, which is how a
// click limit (expiration_click_count) is enforced without ever counting more
// clicks than the limit.
package click

import (
	"time"

	"github.com/linkd/linkd/domain"
)

// Wire name of a counted click.
const EventRecorded = "ClickRecorded"

// StreamPrefix is the category of click streams.
const StreamPrefix = "clicks-"

// Stream names the click stream of a link.
func Stream(linkID string) string { return StreamPrefix + linkID }

// Sources of a click.
const (
	SourceRedirect = "redirect" // /{code} on a short domain
	SourceAPI      = "api"      // GET /v1/links/code/{code}
)

// Recorded is one counted access to a link, with everything known about the
// visitor except their address: raw IPs are never stored.
type Recorded struct {
	ClickID     string    `json:"click_id"`
	LinkID      string    `json:"link_id"`
	WorkspaceID string    `json:"workspace_id"`
	ProjectID   string    `json:"project_id,omitempty"`
	DomainID    string    `json:"domain_id,omitempty"`
	Code        string    `json:"code"`
	Timestamp   time.Time `json:"timestamp"`
	Source      string    `json:"source"`
	QR          bool      `json:"qr"`
	// Visitor is a keyed hash of address and user agent whose key rotates
	// every UTC day: it counts unique visitors per day and nothing more.
	Visitor        string `json:"visitor"`
	Browser        string `json:"browser,omitempty"`
	BrowserVersion string `json:"browser_version,omitempty"`
	OS             string `json:"os,omitempty"`
	OSVersion      string `json:"os_version,omitempty"`
	DeviceType     string `json:"device_type,omitempty"` // mobile, desktop, tablet
	Device         string `json:"device,omitempty"`
	FromApp        bool   `json:"from_app"`
	App            string `json:"app,omitempty"`
	Language       string `json:"language,omitempty"`
	Referrer       string `json:"referrer,omitempty"` // host
	ReferrerURL    string `json:"referrer_url,omitempty"`
	Country        string `json:"country,omitempty"`   // ISO 3166-1 alpha-2
	Continent      string `json:"continent,omitempty"` // AF AN AS EU NA OC SA
	City           string `json:"city,omitempty"`
	Region         string `json:"region,omitempty"`
	Destination    string `json:"destination,omitempty"`
	// TrackingID is set when the link tracks conversions: the svc_tid given
	// to the visitor, valid until TrackingExpiresAt.
	TrackingID        string     `json:"tracking_id,omitempty"`
	TrackingExpiresAt *time.Time `json:"tracking_expires_at,omitempty"`
}

func (Recorded) EventType() string { return EventRecorded }

func init() {
	domain.Register(func() domain.Event { return &Recorded{} })
}

// TrackingTTL is how long a click id (svc_tid) stays valid.
const TrackingTTL = 90 * 24 * time.Hour
