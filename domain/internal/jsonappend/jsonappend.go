// Package jsonappend appends JSON values byte for byte as encoding/json
// writes them, for the events that encode themselves on hot paths
// (domain.JSONAppender).
package jsonappend

import (
	"time"
	"unicode/utf8"
)

// Opt appends key and v quoted, unless v is "" (a field with omitempty).
func Opt(b []byte, key, v string) []byte { return opt(b, key, v, nil) }

// opt is Opt; it sets *lossy (when not nil) if v is not valid UTF-8.
func opt(b []byte, key, v string, lossy *bool) []byte {
	if v == "" {
		return b
	}
	return quote(append(b, key...), v, lossy)
}

// Time appends t as encoding/json does (RFC 3339 with nanoseconds,
// quoted), for years 0 to 9999.
func Time(b []byte, t time.Time) []byte {
	b = append(b, '"')
	b = t.AppendFormat(b, time.RFC3339Nano)
	return append(b, '"')
}

const hex = "0123456789abcdef"

// plain marks the bytes String copies as they are: printable ASCII but
// for the quote, the backslash and the HTML-unsafe <, > and &. One table
// load per byte instead of six comparisons: click events are mostly such
// bytes.
var plain = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
	}
	return t
}()

// String quotes s as encoding/json does: HTML-safe, control characters
// and U+2028/U+2029 escaped, invalid UTF-8 as U+FFFD.
func String(b []byte, s string) []byte { return quote(b, s, nil) }

// Exact appends as String, Opt and Time do and tells whether decoding what
// it appended gives back exactly what it was given: not when a string is
// not valid UTF-8 (written as U+FFFD) or a time is one RFC 3339 does not
// write whole (a year outside 0 to 9999, a zone offset in seconds).
type Exact struct {
	Lossy bool // something appended does not decode to what it was
}

// String is String, noting invalid UTF-8.
func (e *Exact) String(b []byte, s string) []byte { return quote(b, s, &e.Lossy) }

// Opt is Opt, noting invalid UTF-8.
func (e *Exact) Opt(b []byte, key, v string) []byte { return opt(b, key, v, &e.Lossy) }

// Time is Time, noting a time RFC 3339 does not write whole.
func (e *Exact) Time(b []byte, t time.Time) []byte {
	if y := t.Year(); y < 0 || y > 9999 {
		e.Lossy = true
	} else if _, off := t.Zone(); off%60 != 0 || off <= -24*3600 || off >= 24*3600 {
		e.Lossy = true
	}
	return Time(b, t)
}

// quote is String; it sets *lossy (when not nil) if s is not valid UTF-8.
func quote(b []byte, s string, lossy *bool) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if plain[c] {
			i++
			continue
		}
		if c < utf8.RuneSelf {
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
			if lossy != nil {
				*lossy = true
			}
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
