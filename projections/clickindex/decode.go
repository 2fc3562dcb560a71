package clickindex

import (
	"encoding/json"
	"time"
	"unsafe"

	"github.com/linkd/linkd/domain/click"
	"github.com/linkd/linkd/internal/jsonscan"
)

// fields is what the index reads of a ClickRecorded body. The byte slices
// alias the event's data (or hold unescaped copies, or alias the strings of
// the click it was taken from) and live as long as the Apply that decoded
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

// decodeClick reads the indexed fields of a ClickRecorded body. The bodies
// linkd writes itself (a flat object with the fields of click.Recorded)
// take a fast path that allocates nothing; anything else (escapes it does
// not handle, invalid UTF-8, unknown or differently cased fields, nested
// values) falls back to encoding/json, so that the result is always
// fieldsOf what json.Unmarshal gives, and an error when json.Unmarshal
// fails (FuzzDecodeClick checks both).
func decodeClick(data []byte, f *fields) error {
	*f = fields{}
	if fastDecodeClick(data, f) == nil {
		return nil
	}
	var full click.Recorded
	if err := json.Unmarshal(data, &full); err != nil {
		*f = fields{}
		return err
	}
	*f = fieldsOf(&full)
	return nil
}

func fastDecodeClick(data []byte, f *fields) error {
	s := scanner{Scanner: jsonscan.Scanner{B: data}}
	for {
		key, ok, err := s.Key()
		if err != nil || !ok {
			return err
		}
		if err := s.field(key, f); err != nil {
			return err
		}
	}
}

type scanner struct{ jsonscan.Scanner }

// str reads a string or null into *dst (null leaves it unchanged, as
// encoding/json does).
func (s *scanner) str(dst *[]byte) error {
	b, _, ok, err := s.NullableString()
	if ok {
		*dst = b
	}
	return err
}

// field decodes the value of one known field. The switch on string(key) does
// not allocate.
func (s *scanner) field(key []byte, f *fields) error {
	switch string(key) {
	case "click_id":
		return s.str(&f.ClickID)
	case "tracking_id":
		return s.str(&f.TrackingID)
	case "link_id":
		return s.str(&f.LinkID)
	case "workspace_id":
		return s.str(&f.WorkspaceID)
	case "project_id":
		return s.str(&f.ProjectID)
	case "domain_id":
		return s.str(&f.DomainID)
	case "timestamp":
		return s.Time(&f.Timestamp)
	case "tracking_expires_at":
		if s.Literal("null") { // a nil pointer for encoding/json
			f.HasExpires, f.ExpiresAt = false, time.Time{}
			return nil
		}
		var t time.Time
		if err := s.Time(&t); err != nil {
			return err
		}
		f.HasExpires, f.ExpiresAt = true, t
		return nil
	case "qr":
		return s.Bool(&f.QR)
	case "country":
		return s.str(&f.Country)
	case "device_type":
		return s.str(&f.DeviceType)
	case "browser":
		return s.str(&f.Browser)
	case "os":
		return s.str(&f.OS)
	case "referrer":
		return s.str(&f.Referrer)
	case "code", "source", "visitor", "browser_version", "os_version", "device", "app",
		"language", "referrer_url", "continent", "city", "region", "destination":
		return s.SkipString()
	case "from_app":
		var b bool
		return s.Bool(&b) // checked, as encoding/json would
	default:
		return jsonscan.ErrSlowPath
	}
}
