package conversion_test

import (
	"encoding/json"
	"reflect"
	"testing"
	"unicode/utf8"

	"github.com/linkd/linkd/domain"
	"github.com/linkd/linkd/domain/conversion"
)

// Bodies whose text a decoder would change (invalid bytes, lone
// surrogates) in every field the parser reads.
var textSeeds = []string{
	`{"trackingId":"c","customer":{"externalId":"cus_1","email":"a@b.example","firstname":"Zoë"},"amount":1,"currency":"usd","eventName":"Buy","eventId":"o1","metadata":{"k":"v"}}`,
	"{\"trackingId\":\"c\",\"customer\":{\"externalId\":\"cus_\xff\"},\"amount\":1,\"currency\":\"usd\"}",
	`{"trackingId":"c","customer":{"externalId":"cus_\ud800"},"amount":1,"currency":"usd"}`,
	`{"trackingId":"c","customer":{"externalId":"cus_\udc00x"},"amount":1,"currency":"usd"}`,
	`{"trackingId":"c","customer":{"externalId":"cus_\ud83d\ude00"},"amount":1,"currency":"usd","metadata":{"\ud800":"v"}}`,
	"{\"trackingId\":\"c\",\"customer\":{\"externalId\":\"e\"},\"amount\":1,\"currency\":\"usd\",\"metadata\":{\"k\":\"\xe2\x82\"}}",
	`{"trackingId":"c","customer":{"externalId":"e"},"amount":1,"currency":"usd","eventId":"\\ud800"}`,
}

// reference is what encoding/json reads from an accepted body.
type reference struct {
	TrackingID string `json:"trackingId"`
	Customer   struct {
		ExternalID  string `json:"externalId"`
		Email       string `json:"email"`
		Firstname   string `json:"firstname"`
		Lastname    string `json:"lastname"`
		PhoneNumber string `json:"phoneNumber"`
		AvatarURL   string `json:"avatarUrl"`
	} `json:"customer"`
	EventName string          `json:"eventName"`
	EventID   string          `json:"eventId"`
	Metadata  json.RawMessage `json:"metadata"`
}

// FuzzParseAgainstEncodingJSON: an accepted lead or sale body is text that
// encoding/json decodes unchanged (valid UTF-8, no lone surrogate), and
// every field the parser took is what encoding/json reads there; a body
// that is not such text is refused as an invalid payload.
func FuzzParseAgainstEncodingJSON(f *testing.F) {
	for _, s := range textSeeds {
		f.Add([]byte(s), true)
		f.Add([]byte(s), false)
	}
	f.Fuzz(func(t *testing.T, body []byte, sale bool) {
		parse := conversion.ParseLead
		if sale {
			parse = conversion.ParseSale
		}
		p, err := parse(body)
		valid := domain.ValidJSONText(body)
		if !valid {
			if err == nil {
				t.Fatalf("%q: accepted a body that is not text: %+v", body, p)
			}
			if domain.KindOf(err) != domain.KindInvalid {
				t.Fatalf("%q: %v, want an invalid payload", body, err)
			}
			return
		}
		if err != nil {
			return
		}
		if !utf8.ValidString(p.ExternalID) || !utf8.ValidString(p.TrackingID) {
			t.Fatalf("%q: accepted text that is not UTF-8: %+v", body, p)
		}
		var ref reference
		if err := json.Unmarshal(body, &ref); err != nil {
			t.Fatalf("%q: accepted, but encoding/json says %v", body, err)
		}
		got := []string{p.TrackingID, p.ExternalID, p.Profile.Email, p.Profile.Firstname, p.Profile.Lastname, p.Profile.PhoneNumber, p.Profile.AvatarURL, p.EventID}
		want := []string{ref.TrackingID, ref.Customer.ExternalID, ref.Customer.Email, ref.Customer.Firstname, ref.Customer.Lastname, ref.Customer.PhoneNumber, ref.Customer.AvatarURL, ref.EventID}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%q: parsed %q, encoding/json %q", body, got, want)
		}
		if ref.EventName != "" && p.EventName != ref.EventName {
			t.Fatalf("%q: eventName %q, encoding/json %q", body, p.EventName, ref.EventName)
		}
		if p.Metadata != nil {
			var a, b any
			if json.Unmarshal(p.Metadata, &a) != nil || json.Unmarshal(ref.Metadata, &b) != nil || !reflect.DeepEqual(a, b) {
				t.Fatalf("%q: metadata %s, encoding/json %s", body, p.Metadata, ref.Metadata)
			}
		}
	})
}
