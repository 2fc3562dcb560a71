package analytics

import (
	"encoding/json"
	"errors"
	"time"
	"unicode/utf8"

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

var errSlowPath = errors.New("analytics: not on the fast path")

type scanner struct {
	b  []byte
	i  int
	in *interner
}

func (s *scanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

func (s *scanner) peek() byte {
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

// rawString returns the contents of a string without escapes, quotes
// excluded, aliasing the input.
func (s *scanner) rawString() ([]byte, error) {
	b, escaped, err := s.stringBytes()
	if err != nil || escaped {
		return nil, errSlowPath
	}
	return b, nil
}

// stringBytes scans a string. Without escapes the result aliases the input;
// with escapes it is a new slice holding the decoded text. Surrogate escapes,
// control characters and invalid UTF-8 take the slow path.
func (s *scanner) stringBytes() (out []byte, escaped bool, err error) {
	if s.peek() != '"' {
		return nil, false, errSlowPath
	}
	start := s.i + 1
	ascii := true
	var buf []byte
	from := start // start of the bytes not yet copied into buf
	for j := start; j < len(s.b); j++ {
		switch ch := s.b[j]; {
		case ch == '"':
			s.i = j + 1
			if buf != nil {
				buf = append(buf, s.b[from:j]...)
			} else {
				buf = s.b[start:j]
			}
			if !ascii && !utf8.Valid(buf) {
				return nil, false, errSlowPath
			}
			return buf, escaped, nil
		case ch == '\\':
			if j+1 >= len(s.b) {
				return nil, false, errSlowPath
			}
			escaped = true
			buf = append(buf, s.b[from:j]...)
			switch e := s.b[j+1]; e {
			case '"', '\\', '/':
				buf = append(buf, e)
			case 'b':
				buf = append(buf, '\b')
			case 'f':
				buf = append(buf, '\f')
			case 'n':
				buf = append(buf, '\n')
			case 'r':
				buf = append(buf, '\r')
			case 't':
				buf = append(buf, '\t')
			case 'u':
				r, ok := hex4(s.b[j+2:])
				if !ok || utf16IsSurrogate(r) {
					return nil, false, errSlowPath
				}
				buf = utf8.AppendRune(buf, r)
				j += 4
			default:
				return nil, false, errSlowPath
			}
			j++
			from = j + 1
		case ch < 0x20:
			return nil, false, errSlowPath
		case ch >= utf8.RuneSelf:
			ascii = false
		}
	}
	return nil, false, errSlowPath
}

func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

func utf16IsSurrogate(r rune) bool { return 0xd800 <= r && r < 0xe000 }

func (s *scanner) literal(lit string) bool {
	if len(s.b)-s.i >= len(lit) && string(s.b[s.i:s.i+len(lit)]) == lit {
		s.i += len(lit)
		return true
	}
	return false
}

// str reads a string or null into *dst (null leaves it unchanged, as
// encoding/json does).
func (s *scanner) str(dst *string) error {
	if s.literal("null") {
		return nil
	}
	b, _, err := s.stringBytes()
	if err != nil {
		return err
	}
	*dst = s.in.get(b)
	return nil
}

// skipString checks a string or null that is not counted.
func (s *scanner) skipString() error {
	if s.literal("null") {
		return nil
	}
	_, _, err := s.stringBytes()
	return err
}

// visitor reads the visitor value as its hash.
func (s *scanner) visitor(c *clickFields) error {
	if s.literal("null") {
		return nil
	}
	b, _, err := s.stringBytes()
	if err != nil {
		return err
	}
	c.HasVisitor, c.Visitor = len(b) > 0, 0
	if c.HasVisitor {
		c.Visitor = visitorHash(b)
	}
	return nil
}

func (s *scanner) boolean(dst *bool) error {
	switch {
	case s.literal("true"):
		*dst = true
	case s.literal("false"):
		*dst = false
	case s.literal("null"):
	default:
		return errSlowPath
	}
	return nil
}

func (s *scanner) timestamp(dst *time.Time) error {
	if s.literal("null") {
		return nil
	}
	start := s.i
	if _, err := s.rawString(); err != nil {
		return err
	}
	if err := dst.UnmarshalJSON(s.b[start:s.i]); err != nil {
		return errSlowPath
	}
	return nil
}

func fastDecodeClick(data []byte, c *clickFields, in *interner) error {
	s := scanner{b: data, in: in}
	s.ws()
	if s.peek() != '{' {
		return errSlowPath
	}
	s.i++
	s.ws()
	if s.peek() == '}' {
		s.i++
		return s.end()
	}
	for {
		s.ws()
		key, err := s.rawString()
		if err != nil {
			return err
		}
		s.ws()
		if s.peek() != ':' {
			return errSlowPath
		}
		s.i++
		s.ws()
		if err := s.field(string(key), c); err != nil {
			return err
		}
		s.ws()
		switch s.peek() {
		case ',':
			s.i++
		case '}':
			s.i++
			return s.end()
		default:
			return errSlowPath
		}
	}
}

func (s *scanner) end() error {
	s.ws()
	if s.i != len(s.b) {
		return errSlowPath
	}
	return nil
}

// field decodes the value of one known field. The switch on string(key) does
// not allocate.
func (s *scanner) field(key string, c *clickFields) error {
	switch key {
	case "link_id":
		return s.str(&c.LinkID)
	case "workspace_id":
		return s.str(&c.WorkspaceID)
	case "timestamp":
		return s.timestamp(&c.Timestamp)
	case "qr":
		return s.boolean(&c.QR)
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
		return s.boolean(&c.FromApp)
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
		return s.skipString()
	case "tracking_expires_at":
		var t time.Time
		return s.timestamp(&t) // checked, as encoding/json would
	default:
		return errSlowPath
	}
}
