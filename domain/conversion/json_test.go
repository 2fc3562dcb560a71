package conversion

import (
	"bytes"
	"encoding/json"
	"math/rand"
	"testing"
	"time"

	"github.com/linkd/linkd/domain"
	"github.com/linkd/linkd/domain/domaintest"
)

var metadatas = []string{"", `{}`, `{"plan":"pro"}`, ` { "a" : [1, 2.5e3, true, null] ,"b":{"c":"<&>"} } `,
	`{"s":"\u2028 line"}`, "{\"u\":\"\u2028\u2029 raw\"}", `{"esc":"\"\\\/\n"}`, `{"ü":"日本"}`, `{"n":-0.0}`}

func randomTime(rng *rand.Rand) time.Time {
	t := time.Unix(rng.Int63n(4e9), rng.Int63n(1e9))
	if rng.Intn(2) == 0 {
		return t.In(time.FixedZone("x", 5400))
	}
	return t.UTC()
}

func randomClick(rng *rand.Rand) Click {
	s := func() string { return domaintest.JSONString(rng) }
	return Click{ClickID: s(), LinkID: s(), WorkspaceID: s(), ProjectID: s(), ClickedAt: randomTime(rng),
		Country: s(), DeviceType: s(), Browser: s(), OS: s(), Referrer: s(), QR: rng.Intn(2) == 0, Seq: uint64(rng.Int63n(3))}
}

// The hand-written encoders give the bytes encoding/json gives, for varied
// content: strings that need escaping, omitted fields, time zones, and
// metadata as callers send it (spaces, HTML, U+2028).
func TestAppendJSONMatchesEncodingJSON(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	events := []domain.Event{&CustomerCreated{}, &LeadTracked{}, &SaleTracked{}}
	for range 3000 {
		s := func() string { return domaintest.JSONString(rng) }
		md := json.RawMessage(metadatas[rng.Intn(len(metadatas))])
		if len(md) == 0 && rng.Intn(2) == 0 {
			md = nil
		}
		events = append(events,
			&CustomerCreated{CustomerID: s(), WorkspaceID: s(), ExternalID: s(),
				Profile: Profile{Email: s(), Firstname: s(), Lastname: s(), PhoneNumber: s(), AvatarURL: s()}, At: randomTime(rng)},
			&LeadTracked{ConversionID: s(), EventID: s(), EventName: s(), Click: randomClick(rng), CustomerID: s(),
				CustomerExternalID: s(), First: rng.Intn(2) == 0, Metadata: md, Timestamp: randomTime(rng)},
			&SaleTracked{ConversionID: s(), EventID: s(), EventName: s(), Click: randomClick(rng), CustomerID: s(),
				CustomerExternalID: s(), AmountMinor: rng.Int63n(1e12) - 1e6, Currency: s(), First: rng.Intn(2) == 0,
				Metadata: md, Timestamp: randomTime(rng)})
	}
	for i, e := range events {
		want, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		if got := e.(domain.JSONAppender).AppendJSON(nil); !bytes.Equal(got, want) {
			t.Fatalf("event %d (%T):\n got %s\nwant %s", i, e, got, want)
		}
	}
}

// Metadata that is not JSON is not encoded by hand: EncodeEvent reports
// encoding/json's error, as it did before.
func TestAppendJSONLeavesBadMetadataToEncodingJSON(t *testing.T) {
	for _, e := range []domain.Event{
		&SaleTracked{ConversionID: "c", Metadata: json.RawMessage(`{"a":`)},
		&LeadTracked{ConversionID: "c", Metadata: json.RawMessage(`nope`)},
	} {
		if got := e.(domain.JSONAppender).AppendJSON(nil); got != nil {
			t.Errorf("%T: AppendJSON gave %s", e, got)
		}
		if _, _, err := domain.EncodeEvent(e); err == nil {
			t.Errorf("%T: EncodeEvent took invalid metadata", e)
		}
	}
}

func BenchmarkEncodeSale(b *testing.B) {
	rng := rand.New(rand.NewSource(2))
	e := &SaleTracked{ConversionID: "0194f6c2-8f1e-7a3b-9c2d-4e5f6a7b8c9d", EventID: "evt_123", EventName: "Purchase",
		Click: Click{ClickID: "0194f6c2-8f1e-7a3b-9c2d-4e5f6a7b8c9e", LinkID: "0194f6c2-8f1e-7a3b-9c2d-4e5f6a7b8c9f",
			WorkspaceID: "0194f6c2-8f1e-7a3b-9c2d-4e5f6a7b8ca0", ClickedAt: randomTime(rng), Country: "DE", DeviceType: "desktop",
			Browser: "Chrome", OS: "Windows", Referrer: "google.com"},
		CustomerID: "0194f6c2-8f1e-7a3b-9c2d-4e5f6a7b8ca1", CustomerExternalID: "cus_42", AmountMinor: 2999, Currency: "usd",
		First: true, Timestamp: randomTime(rng)}
	b.Run("AppendJSON", func(b *testing.B) {
		for range b.N {
			if _, _, err := domain.EncodeEvent(e); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding/json", func(b *testing.B) {
		for range b.N {
			if _, err := json.Marshal(e); err != nil {
				b.Fatal(err)
			}
		}
	})
}
