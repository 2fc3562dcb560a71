package click

import (
	"strconv"

	"github.com/linkd/linkd/domain/internal/jsonappend"
)

// AppendJSON appends the JSON of r, byte for byte what encoding/json makes
// of it (a test checks), without reflection: clicks are the busiest write.
func (r *Recorded) AppendJSON(b []byte) []byte {
	b, _ = r.AppendJSONExact(b)
	return b
}

// AppendJSONExact is AppendJSON that also tells whether decoding the JSON
// gives r back exactly: every string valid UTF-8 (JSON writes invalid bytes
// as U+FFFD) and both times ones RFC 3339 writes whole. A reader handed r
// alongside its JSON (eventstore.EventData.Value) may then use r instead of
// decoding.
func (r *Recorded) AppendJSONExact(b []byte) ([]byte, bool) {
	var e jsonappend.Exact
	b = append(b, `{"click_id":`...)
	b = e.String(b, r.ClickID)
	b = append(b, `,"link_id":`...)
	b = e.String(b, r.LinkID)
	b = append(b, `,"workspace_id":`...)
	b = e.String(b, r.WorkspaceID)
	b = e.Opt(b, `,"project_id":`, r.ProjectID)
	b = e.Opt(b, `,"domain_id":`, r.DomainID)
	b = append(b, `,"code":`...)
	b = e.String(b, r.Code)
	b = append(b, `,"timestamp":`...)
	b = e.Time(b, r.Timestamp)
	b = append(b, `,"source":`...)
	b = e.String(b, r.Source)
	b = append(b, `,"qr":`...)
	b = strconv.AppendBool(b, r.QR)
	b = append(b, `,"visitor":`...)
	b = e.String(b, r.Visitor)
	b = e.Opt(b, `,"browser":`, r.Browser)
	b = e.Opt(b, `,"browser_version":`, r.BrowserVersion)
	b = e.Opt(b, `,"os":`, r.OS)
	b = e.Opt(b, `,"os_version":`, r.OSVersion)
	b = e.Opt(b, `,"device_type":`, r.DeviceType)
	b = e.Opt(b, `,"device":`, r.Device)
	b = append(b, `,"from_app":`...)
	b = strconv.AppendBool(b, r.FromApp)
	b = e.Opt(b, `,"app":`, r.App)
	b = e.Opt(b, `,"language":`, r.Language)
	b = e.Opt(b, `,"referrer":`, r.Referrer)
	b = e.Opt(b, `,"referrer_url":`, r.ReferrerURL)
	b = e.Opt(b, `,"country":`, r.Country)
	b = e.Opt(b, `,"continent":`, r.Continent)
	b = e.Opt(b, `,"city":`, r.City)
	b = e.Opt(b, `,"region":`, r.Region)
	b = e.Opt(b, `,"destination":`, r.Destination)
	b = e.Opt(b, `,"tracking_id":`, r.TrackingID)
	if r.TrackingExpiresAt != nil {
		b = append(b, `,"tracking_expires_at":`...)
		b = e.Time(b, *r.TrackingExpiresAt)
	}
	return append(b, '}'), !e.Lossy
}
