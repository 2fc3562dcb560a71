package domain

import (
	"encoding/json"
	"reflect"
	"testing"
)

func decodeObjectBoth(b []byte) (fast, slow map[string]json.RawMessage, fastErr, slowErr error) {
	fast, fastErr = DecodeObject(b)
	slowErr = json.Unmarshal(b, &slow)
	return
}

var objectCases = []string{
	`{"type":"pageview","url":"https://shop.example/p?x=1","referrer":"","visitorId":"v1","props":{"a":"b","n":[1,2,{"c":"}"}]},"n":-1.5e3,"t":true,"f":false,"z":null}`,
	` { } `, `{}`, `null`, ` null `, `[]`, `"x"`, `1`, ``, `{`, `{"a":1,}`, `{"a":1} x`, `{"a" 1}`,
	`{"a":"x\"}y","b":"\\"}`, `{"a\u0062":1}`, `{"A":1,"a":2}`, `{"a":1,"a":2}`,
	"{\"\xff\":1}", "{\"a\":\"\xff\"}", "{\"a\":\"\t\"}",
	` {"a" : [ ] , "b" : { } , "c" : "" } `, `{"":0}`,
}

// DecodeObject gives what json.Unmarshal gives, valid or not.
func TestDecodeObjectMatchesEncodingJSON(t *testing.T) {
	for _, c := range objectCases {
		fast, slow, fe, se := decodeObjectBoth([]byte(c))
		if (fe == nil) != (se == nil) || !reflect.DeepEqual(fast, slow) {
			t.Errorf("%q: DecodeObject %q (%v), encoding/json %q (%v)", c, fast, fe, slow, se)
		}
	}
}

func FuzzDecodeObject(f *testing.F) {
	for _, c := range objectCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		fast, slow, fe, se := decodeObjectBoth(b)
		if (fe == nil) != (se == nil) || !reflect.DeepEqual(fast, slow) {
			t.Fatalf("%q: DecodeObject %q (%v), encoding/json %q (%v)", b, fast, fe, slow, se)
		}
	})
}

func BenchmarkDecodeObject(b *testing.B) {
	body := []byte(objectCases[0])
	b.Run("encoding-json", func(b *testing.B) {
		for b.Loop() {
			var m map[string]json.RawMessage
			if err := json.Unmarshal(body, &m); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("DecodeObject", func(b *testing.B) {
		for b.Loop() {
			if _, err := DecodeObject(body); err != nil {
				b.Fatal(err)
			}
		}
	})
}
