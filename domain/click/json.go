package click

import (
	"strconv"
	"time"
	"unicode/utf8"
)

// AppendJSON appends the JSON of r, byte for byte what encoding/json makes
// of it (a test checks), without reflection: clicks are the busiest write.
func (r *Recorded) AppendJSON(b []byte) []byte {
	b = append(b, `{"click_id":`...)
	b = appendString(b, r.ClickID)
	b = append(b, `,"link_id":`...)
	b = appendString(b, r.LinkID)
	b = append(b, `,"workspace_id":`...)
	b = appendString(b, r.WorkspaceID)
	b = appendOpt(b, `,"project_id":`, r.ProjectID)
	b = appendOpt(b, `,"domain_id":`, r.DomainID)
	b = append(b, `,"code":`...)
	b = appendString(b, r.Code)
	b = append(b, `,"timestamp":`...)
	b = appendTime(b, r.Timestamp)
	b = append(b, `,"source":`...)
	b = appendString(b, r.Source)
	b = append(b, `,"qr":`...)
	b = strconv.AppendBool(b, r.QR)
	b = append(b, `,"visitor":`...)
	b = appendString(b, r.Visitor)
	b = appendOpt(b, `,"browser":`, r.Browser)
	b = appendOpt(b, `,"browser_version":`, r.BrowserVersion)
	b = appendOpt(b, `,"os":`, r.OS)
	b = appendOpt(b, `,"os_version":`, r.OSVersion)
	b = appendOpt(b, `,"device_type":`, r.DeviceType)
	b = appendOpt(b, `,"device":`, r.Device)
	b = append(b, `,"from_app":`...)
	b = strconv.AppendBool(b, r.FromApp)
	b = appendOpt(b, `,"app":`, r.App)
	b = appendOpt(b, `,"language":`, r.Language)
	b = appendOpt(b, `,"referrer":`, r.Referrer)
	b = appendOpt(b, `,"referrer_url":`, r.ReferrerURL)
	b = appendOpt(b, `,"country":`, r.Country)
	b = appendOpt(b, `,"continent":`, r.Continent)
	b = appendOpt(b, `,"city":`, r.City)
	b = appendOpt(b, `,"region":`, r.Region)
	b = appendOpt(b, `,"destination":`, r.Destination)
	b = appendOpt(b, `,"tracking_id":`, r.TrackingID)
	if r.TrackingExpiresAt != nil {
		b = append(b, `,"tracking_expires_at":`...)
		b = appendTime(b, *r.TrackingExpiresAt)
	}
	return append(b, '}')
}

func appendOpt(b []byte, key, v string) []byte {
	if v == "" {
		return b
	}
	return appendString(append(b, key...), v)
}

func appendTime(b []byte, t time.Time) []byte {
	b = append(b, '"')
	b = t.AppendFormat(b, time.RFC3339Nano)
	return append(b, '"')
}

const hex = "0123456789abcdef"

// appendString quotes s as encoding/json does: HTML-safe, control
// characters and U+2028/U+2029 escaped, invalid UTF-8 as U+FFFD.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
