package analytics

import (
	"time"

	"github.com/linkd/linkd/domain/click"
)

// clickFields is what the projection reads of a click: the fields of
// click.Recorded that it counts, with the visitor reduced to its hash.
type clickFields struct {
	LinkID, WorkspaceID string
	Timestamp           time.Time
	QR, FromApp         bool
	HasVisitor          bool
	Visitor             uint64 // visitorHash of the visitor value, when HasVisitor
	Browser, OS         string
	OSVersion           string
	DeviceType, App     string
	Language, Referrer  string
	Country, Continent  string
	City                string
}

// fieldsOf takes the counted fields of a decoded click.
func fieldsOf(c *click.Recorded) clickFields {
	f := clickFields{
		LinkID: c.LinkID, WorkspaceID: c.WorkspaceID, Timestamp: c.Timestamp, QR: c.QR, FromApp: c.FromApp,
		Browser: c.Browser, OS: c.OS, OSVersion: c.OSVersion, DeviceType: c.DeviceType, App: c.App,
		Language: c.Language, Referrer: c.Referrer, Country: c.Country, Continent: c.Continent, City: c.City,
	}
	if c.Visitor != "" {
		f.HasVisitor, f.Visitor = true, visitorHash(c.Visitor)
	}
	return f
}
