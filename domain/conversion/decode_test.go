package conversion

import (
	"encoding/json"
	"math/rand"
	"reflect"
	"testing"

	"github.com/linkd/linkd/domain"
	"github.com/linkd/linkd/domain/domaintest"
)

type plainEvent interface {
	domain.Event
	domain.PlainDecoder
}

func fresh(e domain.Event) plainEvent {
	return reflect.New(reflect.TypeOf(e).Elem()).Interface().(plainEvent)
}

// sameAsEncodingJSON decodes data both ways and fails when the results
// differ, or when DecodePlain took data that encoding/json refuses. It
// reports whether DecodePlain read data.
func sameAsEncodingJSON(t *testing.T, like domain.Event, data []byte) bool {
	t.Helper()
	want := fresh(like)
	wantErr := json.Unmarshal(data, want)
	got := fresh(like)
	if !got.DecodePlain(data) {
		if !reflect.DeepEqual(got, fresh(like)) {
			t.Fatalf("DecodePlain refused %s but changed the event: %+v", data, got)
		}
		return false
	}
	if wantErr != nil {
		t.Fatalf("DecodePlain took %s, which encoding/json refuses: %v", data, wantErr)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s:\n got %+v\nwant %+v", data, got, want)
	}
	return true
}

// The events as linkd writes them decode to what encoding/json gives:
// plain ones (no escapes, no metadata) without it, the others through it.
func TestDecodePlainMatchesEncodingJSON(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	plainRNG := rand.New(rand.NewSource(4))
	plain := func() string {
		parts := []string{"", "a", "cus_42", "ünïcödé", "日本語", "https://example.com/?a=1", "Mozilla/5.0 (X11)"}
		return parts[plainRNG.Intn(len(parts))]
	}
	fast := 0
	for i := range 3000 {
		s := func() string { return domaintest.JSONString(rng) }
		if i%2 == 0 {
			s = plain
		}
		var md json.RawMessage
		if i%5 == 0 {
			md = json.RawMessage(`{"plan":"pro"}`)
		}
		for _, e := range []domain.Event{
			&CustomerCreated{CustomerID: s(), WorkspaceID: s(), ExternalID: s(),
				Profile: Profile{Email: s(), Firstname: s(), Lastname: s(), PhoneNumber: s(), AvatarURL: s()}, At: randomTime(rng)},
			&LeadTracked{ConversionID: s(), EventID: s(), EventName: s(), Click: Click{ClickID: s(), LinkID: s(), WorkspaceID: s(),
				ProjectID: s(), ClickedAt: randomTime(rng), DeviceType: s(), Browser: s(), OS: s()}, CustomerID: s(),
				CustomerExternalID: s(), First: rng.Intn(2) == 0, Metadata: md, Timestamp: randomTime(rng)},
			&SaleTracked{ConversionID: s(), EventID: s(), EventName: s(), Click: Click{ClickID: s(), LinkID: s(), WorkspaceID: s(),
				ClickedAt: randomTime(rng), Country: s(), Referrer: s(), QR: rng.Intn(2) == 0, Seq: uint64(rng.Int63())}, CustomerID: s(), CustomerExternalID: s(),
				AmountMinor: rng.Int63n(1e12) - 1e6, Currency: s(), First: rng.Intn(2) == 0, Metadata: md, Timestamp: randomTime(rng)},
		} {
			_, data, err := domain.EncodeEvent(e)
			if err != nil {
				t.Fatal(err)
			}
			if sameAsEncodingJSON(t, e, data) {
				fast++
			}
			got, err := domain.DecodeEvent(e.EventType(), data)
			if err != nil || !reflect.DeepEqual(reflect.ValueOf(got).Elem().Interface(), decoded(t, e, data)) {
				t.Fatalf("DecodeEvent(%s) = %+v, %v", data, got, err)
			}
		}
	}
	if fast < 2400 {
		t.Errorf("only %d of 9,000 events read without encoding/json", fast)
	}
}

func decoded(t *testing.T, like domain.Event, data []byte) any {
	t.Helper()
	v := fresh(like)
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatal(err)
	}
	return reflect.ValueOf(v).Elem().Interface()
}

// Hand-made data at the edges: what encoding/json refuses or reads in its
// own way is left to it.
func TestDecodePlainEdges(t *testing.T) {
	for _, data := range []string{
		`{"conversion_id":"c","amount_minor":12,"first":true}`,
		`{"amount_minor":-0}`, `{"amount_minor":012}`, `{"amount_minor":1.5}`, `{"amount_minor":1e3}`,
		`{"amount_minor":99999999999999999999}`, `{"amount_minor":"12"}`, `{"amount_minor":true}`,
		`{"first":1}`, `{"first":"true"}`, `{"first":truex}`, `{"first":null}`, `{"currency":12}`,
		`{"Conversion_ID":"c"}`, `{"timestamp":"2026-11-25T00:00:00Z"}`, `{"timestamp":"2026-11-25"}`,
		`{"clicked_at":"2026-11-25T00:00:00.5+01:00","click_country":"DE"}`, `{"metadata":{}}`,
		`{"conversion_id":"a","conversion_id":"b"}`, `{}`, ` { "currency" : "usd" } `, `{"currency":"usd"} x`,
		`{"currency":"u\u0073d"}`, `[]`, `null`, ``, `{"currency":"usd",}`,
	} {
		for _, e := range []domain.Event{&SaleTracked{}, &LeadTracked{}, &CustomerCreated{}} {
			sameAsEncodingJSON(t, e, []byte(data))
		}
	}
}

func FuzzDecodePlain(f *testing.F) {
	f.Add([]byte(`{"conversion_id":"c","amount_minor":12,"first":true,"clicked_at":"2026-11-25T00:00:00Z","email":"a"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, e := range []domain.Event{&SaleTracked{}, &LeadTracked{}, &CustomerCreated{}} {
			sameAsEncodingJSON(t, e, data)
		}
	})
}

func BenchmarkDecodeSale(b *testing.B) {
	e := &SaleTracked{ConversionID: "0194f6c2-8f1e-7a3b-9c2d-4e5f6a7b8c9d", EventID: "evt_123", EventName: "Purchase",
		Click: Click{ClickID: "0194f6c2-8f1e-7a3b-9c2d-4e5f6a7b8c9e", LinkID: "0194f6c2-8f1e-7a3b-9c2d-4e5f6a7b8c9f",
			WorkspaceID: "0194f6c2-8f1e-7a3b-9c2d-4e5f6a7b8ca0", ClickedAt: randomTime(rand.New(rand.NewSource(5))).UTC(), Country: "DE",
			DeviceType: "desktop", Browser: "Chrome", OS: "Windows", Referrer: "google.com"},
		CustomerID: "0194f6c2-8f1e-7a3b-9c2d-4e5f6a7b8ca1", CustomerExternalID: "cus_42", AmountMinor: 2999, Currency: "usd", First: true}
	_, data, err := domain.EncodeEvent(e)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("DecodePlain", func(b *testing.B) {
		for range b.N {
			var d SaleTracked
			if !d.DecodePlain(data) {
				b.Fatal("not plain")
			}
		}
	})
	b.Run("encoding/json", func(b *testing.B) {
		for range b.N {
			var d SaleTracked
			if err := json.Unmarshal(data, &d); err != nil {
				b.Fatal(err)
			}
		}
	})
}
