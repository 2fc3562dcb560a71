package clickindex

import (
	"time"
	"unsafe"

	"github.com/linkd/linkd/domain/click"
)

// fields is what the index reads of a click. The byte slices
// alias the strings of the decoded click (projections.Event.Decode, shared
// read-only) and live as long as the Apply that took
// them; nothing writes to them.
type fields struct {
	ClickID, TrackingID                      []byte
	LinkID, WorkspaceID, ProjectID, DomainID []byte
	Country, DeviceType, Browser, OS         []byte
	Referrer                                 []byte
	Timestamp                                time.Time
	ExpiresAt                                time.Time
	HasExpires                               bool
	QR                                       bool
	// Version is the click's version in its link's click stream: where
	// the whole click is read again (a lead's or sale's click, with every
	// field of link.clicked).
	Version uint64
}

// fieldsOf takes the indexed fields of a click, aliasing its strings.
func fieldsOf(c *click.Recorded) fields {
	f := fields{
		ClickID: view(c.ClickID), TrackingID: view(c.TrackingID),
		LinkID: view(c.LinkID), WorkspaceID: view(c.WorkspaceID),
		ProjectID: view(c.ProjectID), DomainID: view(c.DomainID),
		Country: view(c.Country), DeviceType: view(c.DeviceType),
		Browser: view(c.Browser), OS: view(c.OS), Referrer: view(c.Referrer),
		Timestamp: c.Timestamp, QR: c.QR,
	}
	if c.TrackingExpiresAt != nil {
		f.HasExpires, f.ExpiresAt = true, *c.TrackingExpiresAt
	}
	return f
}

// view is the bytes of s, to be read only: fields never changes the bytes
// it holds.
func view(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }
