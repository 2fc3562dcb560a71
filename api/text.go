package api

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"

	"github.com/linkd/linkd/domain"
)

// checkText refuses what a JSON decoder would quietly change or what no
// field should hold: bytes that are not UTF-8 and lone UTF-16 surrogate
// escapes (both become U+FFFD), and control characters in any string
// (keys included), except tab, line feed and carriage return. Every field
// of every request body is held to it, so nothing stored can carry a NUL
// or an escape sequence into a log, a CSV export or an HTML page.
func checkText(body []byte) error {
	if !utf8.Valid(body) {
		return domain.Invalid("Request body is not valid UTF-8")
	}
	if domain.HasLoneSurrogate(body) {
		return domain.Invalid("Request body is not valid UTF-8: a \\u escape is half of a surrogate pair")
	}
	if bytes.IndexByte(body, '\\') < 0 && !hasControl(body) {
		return nil // no escapes and no raw control bytes: nothing to decode
	}
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		return nil // the typed decode reports malformed JSON
	}
	if path, ok := findControl(v, ""); ok {
		if path == "" {
			return domain.Invalid("Control characters are not allowed")
		}
		return domain.Invalid("Control characters are not allowed in '%s'", path)
	}
	return nil
}

// hasControl reports raw control bytes outside JSON whitespace; JSON
// forbids them inside strings, but the check is cheap.
func hasControl(b []byte) bool {
	for _, c := range b {
		if c < 0x20 && c != '\t' && c != '\n' && c != '\r' || c == 0x7f {
			return true
		}
	}
	return bytes.Contains(b, []byte{0xc2}) // C1 controls are U+0080..U+009F: 0xc2 0x80..0x9f
}

func findControl(v any, path string) (string, bool) {
	join := func(k string) string {
		if path == "" {
			return k
		}
		return path + "." + k
	}
	switch t := v.(type) {
	case string:
		for _, r := range t {
			if domain.IsControl(r, true) {
				return path, true
			}
		}
	case map[string]any:
		for k, e := range t {
			if p, ok := findControl(k, join(k)); ok {
				return p, true
			}
			if p, ok := findControl(e, join(k)); ok {
				return p, true
			}
		}
	case []any:
		for _, e := range t {
			if p, ok := findControl(e, path); ok {
				return p, true
			}
		}
	}
	return "", false
}
