package analytics

import (
	"encoding/json"
	"time"

	"github.com/linkd/linkd/domain/click"
	"github.com/linkd/linkd/internal/jsonscan"
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

// decodeClick reads the counted fields of a ClickRecorded body. JSON decoding
// is the largest cost of a click, so the bodies linkd writes itself (a flat
// object with the fields of click.Recorded) take a fast path that allocates
// nothing for values seen before (in) and skips what is not counted;
// anything else (surrogate escapes, invalid UTF-8, unknown or differently
// cased fields, nested values, syntax it does not expect) falls back to
// encoding/json. Either way the result is fieldsOf what json.Unmarshal gives,
// and an error when json.Unmarshal fails (FuzzDecodeClick checks both).
func decodeClick(data []byte, c *clickFields, in *interner) error {
	*c = clickFields{}
	if fastDecodeClick(data, c, in) == nil {
		return nil
	}
	var full click.Recorded
	if err := json.Unmarshal(data, &full); err != nil {
		*c = clickFields{}
		return err
	}
	*c = fieldsOf(&full)
	return nil
}

// interner returns one string per distinct value, so that the values of
// clicks (browsers, countries, link ids) are not allocated again and again.
// It forgets everything when it holds internMax values.
type interner struct{ m map[string]string }

const internMax = 1 << 16

func newInterner() *interner { return &interner{m: make(map[string]string)} }

func (in *interner) get(b []byte) string {
	if in == nil {
		return string(b)
	}
	if s, ok := in.m[string(b)]; ok { // no allocation
		return s
	}
	if len(in.m) >= internMax {
		clear(in.m)
	}
	s := string(b)
	in.m[s] = s
	return s
}

// scanner is jsonscan's, with the interner of the decoded strings.
type scanner struct {
	jsonscan.Scanner
	in *interner
}

// str reads a string or null into *dst (null leaves it unchanged, as
// encoding/json does).
func (s *scanner) str(dst *string) error {
	b, _, ok, err := s.NullableString()
	if ok {
		*dst = s.in.get(b)
	}
	return err
}

// visitor reads the visitor value as its hash.
func (s *scanner) visitor(c *clickFields) error {
	if s.Literal("null") {
		return nil
	}
	b, _, err := s.String()
	if err != nil {
		return err
	}
	c.HasVisitor, c.Visitor = len(b) > 0, 0
	if c.HasVisitor {
		c.Visitor = visitorHash(b)
	}
	return nil
}

func fastDecodeClick(data []byte, c *clickFields, in *interner) error {
	s := scanner{Scanner: jsonscan.Scanner{B: data}, in: in}
	for {
		key, ok, err := s.Key()
		if err != nil || !ok {
			return err
		}
		if err := s.field(key, c); err != nil {
			return err
		}
	}
}

// field decodes the value of one known field. The switch on string(key) does
// not allocate.
func (s *scanner) field(key []byte, c *clickFields) error {
	switch string(key) {
	case "link_id":
		return s.str(&c.LinkID)
	case "workspace_id":
		return s.str(&c.WorkspaceID)
	case "timestamp":
		return s.Time(&c.Timestamp)
	case "qr":
		return s.Bool(&c.QR)
	case "visitor":
		return s.visitor(c)
	case "browser":
		return s.str(&c.Browser)
	case "os":
		return s.str(&c.OS)
	case "os_version":
		return s.str(&c.OSVersion)
	case "device_type":
		return s.str(&c.DeviceType)
	case "from_app":
		return s.Bool(&c.FromApp)
	case "app":
		return s.str(&c.App)
	case "language":
		return s.str(&c.Language)
	case "referrer":
		return s.str(&c.Referrer)
	case "country":
		return s.str(&c.Country)
	case "continent":
		return s.str(&c.Continent)
	case "city":
		return s.str(&c.City)
	case "click_id", "project_id", "domain_id", "code", "source", "browser_version",
		"device", "referrer_url", "region", "destination", "tracking_id":
		return s.SkipString()
	case "tracking_expires_at":
		var t time.Time
		return s.Time(&t) // checked, as encoding/json would
	default:
		return jsonscan.ErrSlowPath
	}
}
