package clickhouse

import (
	"encoding/json"
	"errors"
	"time"
	"unicode/utf8"

	"github.com/linkd/linkd/domain/click"
)

// decodeClick decodes a ClickRecorded body into c. JSON decoding was the
// largest client cost of Apply (about 7 µs a click with encoding/json), so the
// bodies linkd writes itself (a flat object with the fields of
// click.Recorded) take a fast path: one copy of the body into a string, of
// which the fields without escapes are substrings (no other allocation but
// the tracking expiry). Anything else (unknown or differently cased fields,
// surrogate escapes, invalid UTF-8, nested values, unexpected syntax) falls
// back to encoding/json. Either way c is what json.Unmarshal gives, and the
// error is json.Unmarshal's (FuzzDecodeClick checks both). The scanner
// follows the one of projections/analytics, which decodes only the counted
// fields.
func decodeClick(data []byte, c *click.Recorded) error {
	*c = click.Recorded{}
	if fastDecodeClick(data, c) == nil {
		return nil
	}
	*c = click.Recorded{}
	return json.Unmarshal(data, c)
}

var errSlowPath = errors.New("clickhouse: not on the fast path")

type scanner struct {
	b []byte
	s string // b as a string: unescaped values are substrings of it
	i int
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

// str scans a string. Without escapes the result is a substring of s.s;
// with escapes it is new. Surrogate escapes, control characters and invalid
// UTF-8 take the slow path.
func (s *scanner) str() (string, bool, error) {
	if s.peek() != '"' {
		return "", false, errSlowPath
	}
	start := s.i + 1
	ascii := true
	var buf []byte
	escaped := false
	from := start // start of the bytes not yet copied into buf
	for j := start; j < len(s.b); j++ {
		switch ch := s.b[j]; {
		case ch == '"':
			s.i = j + 1
			var out string
			if escaped {
				buf = append(buf, s.b[from:j]...)
				out = string(buf)
			} else {
				out = s.s[start:j]
			}
			if !ascii && !utf8.ValidString(out) {
				return "", false, errSlowPath
			}
			return out, escaped, nil
		case ch == '\\':
			if j+1 >= len(s.b) {
				return "", false, errSlowPath
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
				if !ok || 0xd800 <= r && r < 0xe000 {
					return "", false, errSlowPath
				}
				buf = utf8.AppendRune(buf, r)
				j += 4
			default:
				return "", false, errSlowPath
			}
			j++
			from = j + 1
		case ch < 0x20:
			return "", false, errSlowPath
		case ch >= utf8.RuneSelf:
			ascii = false
		}
	}
	return "", false, errSlowPath
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

func (s *scanner) literal(lit string) bool {
	if len(s.b)-s.i >= len(lit) && string(s.b[s.i:s.i+len(lit)]) == lit {
		s.i += len(lit)
		return true
	}
	return false
}

// string reads a string or null into *dst (null leaves it unchanged, as
// encoding/json does).
func (s *scanner) string(dst *string) error {
	if s.literal("null") {
		return nil
	}
	v, _, err := s.str()
	if err != nil {
		return err
	}
	*dst = v
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

// timestamp reads a time the way time.Time.UnmarshalJSON does (null leaves
// it unchanged); escaped strings take the slow path.
func (s *scanner) timestamp(dst *time.Time) error {
	if s.literal("null") {
		return nil
	}
	start := s.i
	if _, escaped, err := s.str(); err != nil || escaped {
		return errSlowPath
	}
	var t time.Time
	if err := t.UnmarshalJSON(s.b[start:s.i]); err != nil {
		return errSlowPath
	}
	*dst = t
	return nil
}

func fastDecodeClick(data []byte, c *click.Recorded) error {
	s := scanner{b: data, s: string(data)}
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
		if s.peek() != '"' {
			return errSlowPath
		}
		key, escaped, err := s.str()
		if err != nil || escaped {
			return errSlowPath
		}
		s.ws()
		if s.peek() != ':' {
			return errSlowPath
		}
		s.i++
		s.ws()
		if err := s.field(key, c); err != nil {
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

// field decodes the value of one field of click.Recorded, by its JSON name.
func (s *scanner) field(key string, c *click.Recorded) error {
	switch key {
	case "click_id":
		return s.string(&c.ClickID)
	case "link_id":
		return s.string(&c.LinkID)
	case "workspace_id":
		return s.string(&c.WorkspaceID)
	case "project_id":
		return s.string(&c.ProjectID)
	case "domain_id":
		return s.string(&c.DomainID)
	case "code":
		return s.string(&c.Code)
	case "timestamp":
		return s.timestamp(&c.Timestamp)
	case "source":
		return s.string(&c.Source)
	case "qr":
		return s.boolean(&c.QR)
	case "visitor":
		return s.string(&c.Visitor)
	case "browser":
		return s.string(&c.Browser)
	case "browser_version":
		return s.string(&c.BrowserVersion)
	case "os":
		return s.string(&c.OS)
	case "os_version":
		return s.string(&c.OSVersion)
	case "device_type":
		return s.string(&c.DeviceType)
	case "device":
		return s.string(&c.Device)
	case "from_app":
		return s.boolean(&c.FromApp)
	case "app":
		return s.string(&c.App)
	case "language":
		return s.string(&c.Language)
	case "referrer":
		return s.string(&c.Referrer)
	case "referrer_url":
		return s.string(&c.ReferrerURL)
	case "country":
		return s.string(&c.Country)
	case "continent":
		return s.string(&c.Continent)
	case "city":
		return s.string(&c.City)
	case "region":
		return s.string(&c.Region)
	case "destination":
		return s.string(&c.Destination)
	case "tracking_id":
		return s.string(&c.TrackingID)
	case "tracking_expires_at":
		if s.literal("null") {
			c.TrackingExpiresAt = nil
			return nil
		}
		var t time.Time
		if err := s.timestamp(&t); err != nil {
			return err
		}
		c.TrackingExpiresAt = &t
		return nil
	default:
		return errSlowPath
	}
}
