package radar

import (
	"bytes"
	"unicode/utf8"
)

// DecodePlain implements domain.PlainDecoder for a page view: the event
// Radar's projections decode most (nine hits in ten). What linkd writes (a
// flat object of Hit's keys, every value a string without escapes) is read
// directly, in a fraction of encoding/json's time; anything else is left
// to it (false, e untouched). FuzzPageviewDecode holds the two to the same
// result.
func (e *PageviewRecorded) DecodePlain(b []byte) bool {
	var h Hit
	if !h.decodePlain(b) {
		return false
	}
	e.Hit = h
	return true
}

// decodePlain reads b when it is an object whose keys are all Hit's own
// (as written) with string values free of escapes and valid UTF-8, and
// reports whether it did. On false, h may hold some of b's values.
func (h *Hit) decodePlain(b []byte) bool {
	b = skipSpace(b)
	if len(b) == 0 || b[0] != '{' {
		return false
	}
	b = skipSpace(b[1:])
	if len(b) > 0 && b[0] == '}' {
		return len(skipSpace(b[1:])) == 0
	}
	for {
		key, rest, ok := plainString(b)
		if !ok {
			return false
		}
		b = skipSpace(rest)
		if len(b) == 0 || b[0] != ':' {
			return false
		}
		b = skipSpace(b[1:])
		start := b
		val, rest, ok := plainString(b)
		if !ok {
			return false
		}
		raw := start[:len(start)-len(rest)]
		if !h.set(key, val, raw) {
			return false
		}
		b = skipSpace(rest)
		if len(b) == 0 {
			return false
		}
		switch b[0] {
		case ',':
			b = skipSpace(b[1:])
		case '}':
			return len(skipSpace(b[1:])) == 0
		default:
			return false
		}
	}
}

// set assigns the field written under key (exactly as Hit's tags spell
// it); raw is the quoted value. False for any other key, or a time that
// does not parse.
func (h *Hit) set(key []byte, val []byte, raw []byte) bool {
	var f *string
	switch string(key) {
	case "project_id":
		f = &h.ProjectID
	case "workspace_id":
		f = &h.WorkspaceID
	case "visitor_id":
		f = &h.VisitorID
	case "url":
		f = &h.URL
	case "hostname":
		f = &h.Hostname
	case "pathname":
		f = &h.Pathname
	case "referrer":
		f = &h.Referrer
	case "source":
		f = &h.Source
	case "country":
		f = &h.Country
	case "browser":
		f = &h.Browser
	case "os":
		f = &h.OS
	case "device":
		f = &h.Device
	case "click_id":
		f = &h.ClickID
	case "link_id":
		f = &h.LinkID
	case "at":
		return h.At.UnmarshalJSON(raw) == nil
	default:
		return false
	}
	*f = string(val)
	return true
}

// plainString reads the JSON string at the start of b when it has no
// escapes, no control characters and is valid UTF-8: its text, and what
// follows it.
func plainString(b []byte) (s, rest []byte, ok bool) {
	if len(b) == 0 || b[0] != '"' {
		return nil, nil, false
	}
	end := bytes.IndexByte(b[1:], '"')
	if end < 0 {
		return nil, nil, false
	}
	s = b[1 : 1+end]
	if bytes.IndexByte(s, '\\') >= 0 || !utf8.Valid(s) {
		return nil, nil, false
	}
	for _, c := range s {
		if c < 0x20 {
			return nil, nil, false
		}
	}
	return s, b[2+end:], true
}

func skipSpace(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t' || b[0] == '\n' || b[0] == '\r') {
		b = b[1:]
	}
	return b
}
