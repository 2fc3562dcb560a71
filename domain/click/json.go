package click

import (
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/linkd/linkd/domain/internal/jsonappend"
)

// AppendJSON appends the JSON of r, byte for byte what encoding/json makes
// of it (a test checks), without reflection: clicks are the busiest write.
func (r *Recorded) AppendJSON(b []byte) []byte {
	b = append(b, `{"click_id":`...)
	b = jsonappend.String(b, r.ClickID)
	b = append(b, `,"link_id":`...)
	b = jsonappend.String(b, r.LinkID)
	b = append(b, `,"workspace_id":`...)
	b = jsonappend.String(b, r.WorkspaceID)
	b = jsonappend.Opt(b, `,"project_id":`, r.ProjectID)
	b = jsonappend.Opt(b, `,"domain_id":`, r.DomainID)
	b = append(b, `,"code":`...)
	b = jsonappend.String(b, r.Code)
	b = append(b, `,"timestamp":`...)
	b = jsonappend.Time(b, r.Timestamp)
	b = append(b, `,"source":`...)
	b = jsonappend.String(b, r.Source)
	b = append(b, `,"qr":`...)
	b = strconv.AppendBool(b, r.QR)
	b = append(b, `,"visitor":`...)
	b = jsonappend.String(b, r.Visitor)
	b = jsonappend.Opt(b, `,"browser":`, r.Browser)
	b = jsonappend.Opt(b, `,"browser_version":`, r.BrowserVersion)
	b = jsonappend.Opt(b, `,"os":`, r.OS)
	b = jsonappend.Opt(b, `,"os_version":`, r.OSVersion)
	b = jsonappend.Opt(b, `,"device_type":`, r.DeviceType)
	b = jsonappend.Opt(b, `,"device":`, r.Device)
	b = append(b, `,"from_app":`...)
	b = strconv.AppendBool(b, r.FromApp)
	b = jsonappend.Opt(b, `,"app":`, r.App)
	b = jsonappend.Opt(b, `,"language":`, r.Language)
	b = jsonappend.Opt(b, `,"referrer":`, r.Referrer)
	b = jsonappend.Opt(b, `,"referrer_url":`, r.ReferrerURL)
	b = jsonappend.Opt(b, `,"country":`, r.Country)
	b = jsonappend.Opt(b, `,"continent":`, r.Continent)
	b = jsonappend.Opt(b, `,"city":`, r.City)
	b = jsonappend.Opt(b, `,"region":`, r.Region)
	b = jsonappend.Opt(b, `,"destination":`, r.Destination)
	b = jsonappend.Opt(b, `,"tracking_id":`, r.TrackingID)
	if r.TrackingExpiresAt != nil {
		b = append(b, `,"tracking_expires_at":`...)
		b = jsonappend.Time(b, *r.TrackingExpiresAt)
	}
	return append(b, '}')
}

// RoundTrips reports whether decoding the JSON of r gives r back exactly:
// every string valid UTF-8 (JSON writes invalid bytes as U+FFFD) and both
// times ones that RFC 3339 writes whole (years 0 to 9999, a zone offset
// in whole minutes). A reader handed r itself alongside its JSON
// (eventstore.RecordedEvent.Value) may use r instead of decoding when it
// does.
func (r *Recorded) RoundTrips() bool {
	for _, s := range [...]string{r.ClickID, r.LinkID, r.WorkspaceID, r.ProjectID, r.DomainID,
		r.Code, r.Source, r.Visitor, r.Browser, r.BrowserVersion, r.OS, r.OSVersion, r.DeviceType,
		r.Device, r.App, r.Language, r.Referrer, r.ReferrerURL, r.Country, r.Continent, r.City,
		r.Region, r.Destination, r.TrackingID} {
		if !utf8.ValidString(s) {
			return false
		}
	}
	return timeRoundTrips(r.Timestamp) && (r.TrackingExpiresAt == nil || timeRoundTrips(*r.TrackingExpiresAt))
}

// timeRoundTrips reports whether t survives RFC 3339 with nanoseconds as
// JSON writes and reads it: the same instant back.
func timeRoundTrips(t time.Time) bool {
	if y := t.Year(); y < 0 || y > 9999 {
		return false
	}
	_, off := t.Zone()
	return off%60 == 0 && -24*3600 < off && off < 24*3600
}
