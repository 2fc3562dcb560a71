package api

import (
	"strings"
	"testing"
)

func TestCheckText(t *testing.T) {
	ok := []string{
		`{"name":"plain"}`, `{"name":"caf\u00e9 ☕"}`, `{"d":"line\nbreak\ttab\r"}`, `{"e":"\ud83d\ude00"}`,
		`{"k":"a\\u0000 is text, not a NUL"}`, `{"n":1,"b":true,"z":null,"l":["x",{"y":"z"}]}`, "{\"raw\":\"é\"}",
		`{"r":"\ufffd given as itself"}`,
	}
	for _, b := range ok {
		if err := checkText([]byte(b)); err != nil {
			t.Errorf("%s: %v", b, err)
		}
	}
	bad := map[string]string{
		"{\"name\":\"\xff\"}":          "not valid UTF-8",
		"{\"name\":\"\xc3\"}":          "not valid UTF-8",
		`{"name":"\ud800"}`:            "surrogate",
		`{"name":"\udc00x"}`:           "surrogate",
		`{"name":"\ud800\u0041"}`:      "surrogate",
		`{"name":"\u0000"}`:            "in 'name'",
		`{"w":{"user_id":"a\u0007b"}}`: "in 'w.user_id'",
		`{"l":["ok","\u001b[31m"]}`:    "in 'l'",
		`{"x\u0000":"key"}`:            "in 'x\x00'",
		`{"c1":"\u0085"}`:              "in 'c1'",
		`{"del":"\u007f"}`:             "in 'del'",
		"{\"c1raw\":\"\xc2\x9b\"}":     "in 'c1raw'",
	}
	for b, want := range bad {
		err := checkText([]byte(b))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want an error with %q", b, err, want)
		}
	}
}

func FuzzCheckTextNeverPanics(f *testing.F) {
	f.Add([]byte(`{"a":"\ud800\udc00"}`))
	f.Add([]byte(`{"a":"\\\u"}`))
	f.Fuzz(func(t *testing.T, b []byte) { _ = checkText(b) })
}
