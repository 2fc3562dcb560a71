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
