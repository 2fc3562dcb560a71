package domain

import (
	"encoding/json"
	"testing"
)

func TestCheckText(t *testing.T) {
	cases := []struct {
		s         string
		max       int
		multiline bool
		want      string
	}{
		{"plain", 10, false, ""},
		{"Café ☕", 10, false, ""},
		{"a\tb\nc\r", 10, true, ""},
		{"a\nb", 10, false, "Control characters are not allowed in 'f'"},
		{"a\x00", 10, true, "Control characters are not allowed in 'f'"},
		{"\x1b[2J", 10, true, "Control characters are not allowed in 'f'"},
		{"\u0085", 10, true, "Control characters are not allowed in 'f'"},
		{"\x7f", 10, true, "Control characters are not allowed in 'f'"},
		{"\xff", 10, false, "f is not valid UTF-8"},
		{"12345678901", 10, false, "f is too long (at most 10 bytes)"},
	}
	for _, c := range cases {
		err := CheckText("f", c.s, c.max, c.multiline)
		got := ""
		if err != nil {
			got = err.Error()
			if KindOf(err) != KindInvalid {
				t.Errorf("%q: kind %v", c.s, KindOf(err))
			}
		}
		if got != c.want {
			t.Errorf("CheckText(%q) = %q, want %q", c.s, got, c.want)
		}
	}
}

// PlainJSONString takes a plain JSON string as it is and leaves the rest to
// json.Unmarshal, which reads the plain ones the same.
func TestPlainJSONString(t *testing.T) {
	for _, c := range []struct {
		raw string
		ok  bool
	}{
		{`"abc"`, true},
		{`""`, true},
		{`"é ü 中文"`, true},
		{`"a\"b"`, false},
		{`"a\u00e9"`, false},
		{`"\\"`, false},
		{"\"a\xffb\"", false},
		{`12`, false},
		{`null`, false},
		{`"`, false},
	} {
		s, ok := PlainJSONString([]byte(c.raw))
		if ok != c.ok {
			t.Errorf("PlainJSONString(%s) ok = %v, want %v", c.raw, ok, c.ok)
			continue
		}
		if ok {
			var want string
			if err := json.Unmarshal([]byte(c.raw), &want); err != nil || s != want {
				t.Errorf("PlainJSONString(%s) = %q; json.Unmarshal: %q, %v", c.raw, s, want, err)
			}
		}
	}
}

func TestValidateName(t *testing.T) {
	for _, c := range []struct{ name, want string }{
		{"Shop", ""},
		{"  ", "Project name is required"},
		{"", "Project name is required"},
		{"abcdef", "Project name is too long (at most 5 bytes)"},
	} {
		got := ""
		if err := ValidateName("Project", c.name, 5); err != nil {
			got = err.Error()
		}
		if got != c.want {
			t.Errorf("ValidateName(%q) = %q, want %q", c.name, got, c.want)
		}
	}
}
