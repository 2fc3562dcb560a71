package domain

import (
	"bytes"
	"strings"
	"unicode/utf8"
)

// CheckText refuses text a field must not store: more than max bytes,
// bytes that are not UTF-8, control characters (tab, line feed and
// carriage return only when multiline). The refusal names the field.
func CheckText(field, s string, max int, multiline bool) error {
	if len(s) > max {
		return Invalid("%s is too long (at most %d bytes)", field, max)
	}
	if !utf8.ValidString(s) {
		return Invalid("%s is not valid UTF-8", field)
	}
	for _, r := range s {
		if IsControl(r, multiline) {
			return Invalid("Control characters are not allowed in '%s'", field)
		}
	}
	return nil
}

// IsControl reports whether r is a control character no stored text may
// hold: C0, DEL and C1, but tab, line feed and carriage return in
// multiline text.
func IsControl(r rune, multiline bool) bool {
	return r < 0x20 && !(multiline && (r == '\t' || r == '\n' || r == '\r')) || r >= 0x7f && r <= 0x9f
}

// PlainJSONString reads a JSON string without escapes (what clients
// mostly send) without decoding it: raw must be a valid JSON value already
// (from a decoded object), so a quoted run of valid UTF-8 with no
// backslash is its own text. Anything else (ok false) is for
// json.Unmarshal.
func PlainJSONString(raw []byte) (s string, ok bool) {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return "", false
	}
	in := raw[1 : len(raw)-1]
	if bytes.IndexByte(in, '\\') >= 0 || !utf8.Valid(in) {
		return "", false
	}
	return string(in), true
}

// ValidateName checks the name of a named thing (what names it: "Project",
// "Workspace", ...): required (not blank) and at most max bytes.
func ValidateName(what, name string, max int) error {
	if strings.TrimSpace(name) == "" {
		return Invalid("%s name is required", what)
	}
	if len(name) > max {
		return Invalid("%s name is too long (at most %d bytes)", what, max)
	}
	return nil
}

// HasLoneSurrogate finds, in a JSON text, a \uD800-\uDFFF escape that is
// not a high surrogate followed by a low one: a JSON decoder quietly makes
// it U+FFFD.
func HasLoneSurrogate(b []byte) bool {
	for i := 0; i < len(b); i++ {
		if b[i] != '\\' || i+1 >= len(b) {
			continue
		}
		if b[i+1] != 'u' {
			i++ // an escaped character, perhaps a backslash
			continue
		}
		c, ok := hexEscape(b, i+2)
		if !ok {
			continue
		}
		switch {
		case c >= 0xd800 && c <= 0xdbff:
			if i+11 < len(b) && b[i+6] == '\\' && b[i+7] == 'u' {
				if lo, ok := hexEscape(b, i+8); ok && lo >= 0xdc00 && lo <= 0xdfff {
					i += 11
					continue
				}
			}
			return true
		case c >= 0xdc00 && c <= 0xdfff:
			return true
		}
		i += 5
	}
	return false
}

func hexEscape(b []byte, at int) (rune, bool) {
	if at+4 > len(b) {
		return 0, false
	}
	var r rune
	for _, c := range b[at : at+4] {
		r <<= 4
		switch {
		case c >= '0' && c <= '9':
			r |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			r |= rune(c-'a') + 10
		case c >= 'A' && c <= 'F':
			r |= rune(c-'A') + 10
		default:
			return 0, false
		}
	}
	return r, true
}

// ValidJSONText reports whether a JSON body holds only text that decodes
// unchanged: valid UTF-8 and no lone surrogate escape (either would be
// decoded as U+FFFD, so two different inputs would become one value).
func ValidJSONText(b []byte) bool {
	return utf8.Valid(b) && !HasLoneSurrogate(b)
}
