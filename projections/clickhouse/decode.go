package clickhouse

import (
	"encoding/json"
	"time"

	"github.com/linkd/linkd/domain/click"
	"github.com/linkd/linkd/internal/jsonscan"
)

// decodeClick decodes a ClickRecorded body into c. JSON decoding was the
// largest client cost of Apply (about 7 µs a click with encoding/json), so the
// bodies linkd writes itself (a flat object with the fields of
// click.Recorded) take a fast path: one copy of the body into a string, of
// which the fields without escapes are substrings (no other allocation but
// the tracking expiry). Anything else (unknown or differently cased fields,
// surrogate escapes, invalid UTF-8, nested values, unexpected syntax) falls
// back to encoding/json. Either way c is what json.Unmarshal gives, and the
// error is json.Unmarshal's (FuzzDecodeClick checks both). The scanner is
// internal/jsonscan's, shared with projections/analytics, which decodes only
// the counted fields.
func decodeClick(data []byte, c *click.Recorded) error {
	*c = click.Recorded{}
	if fastDecodeClick(data, c) == nil {
		return nil
	}
	*c = click.Recorded{}
	return json.Unmarshal(data, c)
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

func fastDecodeClick(data []byte, c *click.Recorded) error {
	s := scanner{Scanner: jsonscan.Scanner{B: data}, s: string(data)}
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

// field decodes the value of one field of click.Recorded, by its JSON name.
func (s *scanner) field(key []byte, c *click.Recorded) error {
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
