package click

import (
	"time"

	"github.com/linkd/linkd/domain/internal/jsonscan"
)

// DecodePlain implements domain.PlainDecoder: it reads the JSON AppendJSON
// writes (a flat object with the fields of Recorded) without reflection,
// the unescaped values as substrings of one copy of data. Anything else
// (unknown or differently cased fields, surrogate escapes, invalid UTF-8,
// nested values, unexpected syntax) it refuses, leaving r as it was, and
// domain.DecodeEvent hands data to encoding/json. When it reads data, r is
// what json.Unmarshal gives (FuzzDecodePlain checks).
func (r *Recorded) DecodePlain(data []byte) bool {
	var c Recorded
	s := scanner{Scanner: jsonscan.Scanner{B: data}, s: string(data)}
	for {
		key, ok, err := s.Key()
		if err != nil {
			return false
		}
		if !ok {
			*r = c
			return true
		}
		if s.field(key, &c) != nil {
			return false
		}
	}
}

// scanner is jsonscan's, with the body as a string too: unescaped values
// are substrings of it.
type scanner struct {
	jsonscan.Scanner
	s string
}

// string reads a string or null into *dst (null leaves it unchanged, as
// encoding/json does). Without escapes the value is a substring of s.s.
func (s *scanner) string(dst *string) error {
	v, escaped, ok, err := s.NullableString()
	switch {
	case !ok:
	case escaped:
		*dst = string(v)
	default:
		*dst = s.s[s.I-1-len(v) : s.I-1]
	}
	return err
}

// field decodes the value of one field of Recorded, by its JSON name.
func (s *scanner) field(key []byte, c *Recorded) error {
	switch string(key) {
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
		return s.Time(&c.Timestamp)
	case "source":
		return s.string(&c.Source)
	case "qr":
		return s.Bool(&c.QR)
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
		return s.Bool(&c.FromApp)
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
		if s.Literal("null") {
			c.TrackingExpiresAt = nil
			return nil
		}
		var t time.Time
		if err := s.Time(&t); err != nil {
			return err
		}
		c.TrackingExpiresAt = &t
		return nil
	default:
		return jsonscan.ErrSlowPath
	}
}
