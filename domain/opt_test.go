package domain

import (
	"strings"
	"testing"
)

func TestOptNormalize(t *testing.T) {
	t.Parallel()
	required := func(s string) (string, error) {
		s = strings.TrimSpace(s)
		if s == "" {
			return "", Invalid("name is required")
		}
		return s, nil
	}
	trim := func(s string) (string, error) { return strings.TrimSpace(s), nil }
	for _, c := range []struct {
		name      string
		in        Opt[string]
		normalize func(string) (string, error)
		want      Opt[string]
		err       string
	}{
		{"absent stays absent", Opt[string]{}, required, Opt[string]{}, ""},
		{"a value is normalized", Some(" a "), required, Some("a"), ""},
		{"a refused value", Some(" "), required, Opt[string]{}, "name is required"},
		{"null where required", NullOpt[string](), required, Opt[string]{}, "name is required"},
		{"null clears", NullOpt[string](), trim, Some(""), ""},
		{"null is the zero value, whatever V holds", Opt[string]{Set: true, Null: true, V: "x"}, trim, Some(""), ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := c.in.Normalize(c.normalize)
			if msg := errMsg(err); msg != c.err {
				t.Fatalf("error %q, want %q", msg, c.err)
			}
			if got != c.want {
				t.Errorf("got %+v, want %+v", got, c.want)
			}
		})
	}
}

func errMsg(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
