package domain

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"
)

// DecodeObject is json.Unmarshal(b, &m) for m a map[string]json.RawMessage
// (the first step of reading a request body field by field), with the
// same result and error-ness, in about half the time: once json.Valid has
// checked b, its members are cut out directly. The values alias b. A key
// with an escape or invalid UTF-8, or anything but an object or null, is
// left to encoding/json. FuzzDecodeObject holds the two to the same result.
func DecodeObject(b []byte) (map[string]json.RawMessage, error) {
	if !json.Valid(b) {
		return decodeObjectSlow(b)
	}
	whole := b
	b = skipWS(b)
	if len(b) == 0 || b[0] != '{' {
		return decodeObjectSlow(b) // null, or not an object
	}
	m := map[string]json.RawMessage{}
	b = skipWS(b[1:])
	if b[0] == '}' {
		return m, nil
	}
	for {
		// b is valid JSON from here: a key, a colon, a value, then , or }.
		end := bytes.IndexByte(b[1:], '"')
		key := b[1 : 1+end]
		if bytes.IndexByte(key, '\\') >= 0 || !utf8.Valid(key) {
			return decodeObjectSlow(whole)
		}
		b = skipWS(b[2+end:])
		b = skipWS(b[1:]) // the colon
		n := valueLen(b)
		m[string(key)] = json.RawMessage(b[:n:n])
		b = skipWS(b[n:])
		if b[0] == '}' {
			return m, nil
		}
		b = skipWS(b[1:]) // the comma
	}
}

// ScanPlainObject reads b when it is a JSON object whose every value is a
// plain string (no escapes, no control characters, valid UTF-8), as linkd
// writes its simplest events, calling set with each key, the string's text
// and its quoted form, in order, and reports whether it did. It stops with
// false at anything else (a value of another kind, an escape, malformed
// JSON, trailing data) or when set returns false: what it read is for
// encoding/json then. Unlike DecodeObject it checks b as it goes, so a
// plain object costs one pass.
func ScanPlainObject(b []byte, set func(key, val, raw []byte) bool) bool {
	return scanObject(b, false, set)
}

// ScanFlatObject is ScanPlainObject that also takes the literals true and
// false and integers (-?(0|[1-9][0-9]*)) as values: set gets a nil val and
// the literal as raw. Objects, arrays, null, fractions and exponents still
// stop it.
func ScanFlatObject(b []byte, set func(key, val, raw []byte) bool) bool {
	return scanObject(b, true, set)
}

func scanObject(b []byte, literals bool, set func(key, val, raw []byte) bool) bool {
	b = skipWS(b)
	if len(b) == 0 || b[0] != '{' {
		return false
	}
	b = skipWS(b[1:])
	if len(b) > 0 && b[0] == '}' {
		return len(skipWS(b[1:])) == 0
	}
	for {
		key, rest, ok := plainString(b)
		if !ok {
			return false
		}
		b = skipWS(rest)
		if len(b) == 0 || b[0] != ':' {
			return false
		}
		b = skipWS(b[1:])
		val, rest, ok := plainString(b)
		if !ok && literals {
			val, rest, ok = nil, b[plainLiteral(b):], true
			if len(rest) == len(b) {
				return false
			}
		}
		if !ok || !set(key, val, b[:len(b)-len(rest)]) {
			return false
		}
		b = skipWS(rest)
		if len(b) == 0 {
			return false
		}
		switch b[0] {
		case ',':
			b = skipWS(b[1:])
		case '}':
			return len(skipWS(b[1:])) == 0
		default:
			return false
		}
	}
}

// plainLiteral is the length of the true, false or integer literal at the
// start of b, 0 when there is none (what follows is checked by the caller:
// "12.5" is 2, then '.' is refused).
func plainLiteral(b []byte) int {
	for _, lit := range []string{"true", "false"} {
		if bytes.HasPrefix(b, []byte(lit)) {
			return len(lit)
		}
	}
	n := 0
	if len(b) > 0 && b[0] == '-' {
		n = 1
	}
	switch {
	case n < len(b) && b[n] == '0':
		n++
	case n < len(b) && b[n] >= '1' && b[n] <= '9':
		for n < len(b) && b[n] >= '0' && b[n] <= '9' {
			n++
		}
	default:
		return 0
	}
	return n
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

func decodeObjectSlow(b []byte) (map[string]json.RawMessage, error) {
	var m map[string]json.RawMessage
	err := json.Unmarshal(b, &m)
	return m, err
}

func skipWS(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t' || b[0] == '\n' || b[0] == '\r') {
		b = b[1:]
	}
	return b
}

// valueLen is the length of the valid JSON value at the start of b.
func valueLen(b []byte) int {
	switch b[0] {
	case '"':
		return stringLen(b)
	case '{', '[':
		depth := 0
		for i := 0; i < len(b); i++ {
			switch b[i] {
			case '"':
				i += stringLen(b[i:]) - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			}
		}
		return len(b)
	default: // a number, true, false or null
		for i, c := range b {
			switch c {
			case ',', '}', ']', ' ', '\t', '\r', '\n':
				return i
			}
		}
		return len(b)
	}
}

// stringLen is the length of the valid JSON string at the start of b,
// quotes included.
func stringLen(b []byte) int {
	for i := 1; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return len(b)
}
