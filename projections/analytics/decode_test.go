package analytics

import (
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/linkd/linkd/domain/click"
	"github.com/linkd/linkd/domain/click/clicktest"
)

func sampleClick() click.Recorded {
	exp := time.Date(2026, 6, 1, 10, 0, 0, 123456789, time.UTC)
	return click.Recorded{
		ClickID: "c1", LinkID: "L1", WorkspaceID: "W1", ProjectID: "P1", DomainID: "D1", Code: "abc",
		Timestamp: time.Date(2026, 3, 1, 10, 0, 0, 5, time.UTC), Source: click.SourceRedirect, QR: true,
		Visitor: "v1", Browser: "Chrome", BrowserVersion: "120.0", OS: "iOS", OSVersion: "17.4",
		DeviceType: "mobile", Device: "iPhone", FromApp: true, App: "Instagram", Language: "pt-BR",
		Referrer: "t.co", ReferrerURL: "https://t.co/x?y=1", Country: "BR", Continent: "SA",
		City: "São Paulo", Region: "SP", Destination: "https://example.com/?a=1&b=2",
		TrackingID: "tid", TrackingExpiresAt: &exp,
	}
}

// Every field of click.Recorded (found by reflection over its JSON tags:
// clicktest) has a case in the fast decoder, counted or skipped: the JSON
// of a click with only that field set, and of one with every field set,
// each to a value of its own, takes the fast path and gives what
// encoding/json gives. A field added to click.Recorded but not to
// scanner.field fails here: else every click would silently take the slow
// path.
func TestFastDecoderKnowsEveryField(t *testing.T) {
	t.Parallel()
	in := newInterner()
	check := func(name string, c click.Recorded) {
		t.Helper()
		data, err := json.Marshal(&c) // the wire format as the tags say; AppendJSON is held to it in domain/click
		if err != nil {
			t.Fatal(err)
		}
		var got clickFields
		if err := fastDecodeClick(data, &got, in); err != nil {
			t.Errorf("%s: the fast path refused linkd's own JSON (%v): add the field to scanner.field\n%s", name, err, data)
			return
		}
		var full click.Recorded
		if err := json.Unmarshal(data, &full); err != nil {
			t.Fatal(err)
		}
		if want := fieldsOf(&full); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: the fast path read\n %+v\nwant\n %+v", name, got, want)
		}
	}
	check("every field", clicktest.Full())
	for _, f := range clicktest.Fields() {
		check(f.Name, f.Only())
	}
}

func TestDecodeClickMatchesEncodingJSON(t *testing.T) {
	t.Parallel()
	full, _ := json.Marshal(sampleClick())
	cases := map[string]string{
		"full":             string(full),
		"empty":            `{}`,
		"spaces":           " { \"link_id\" : \"L\" ,\n\t\"qr\" : true } ",
		"nulls":            `{"link_id":null,"qr":null,"timestamp":null,"tracking_expires_at":null}`,
		"escapes":          `{"city":"Z\u00fcrich","referrer":"a\"b"}`,
		"unknown field":    `{"link_id":"L","new_field":{"x":[1,2]}}`,
		"case folded":      `{"LINK_ID":"L"}`,
		"invalid utf8":     "{\"city\":\"\xff\"}",
		"duplicate keys":   `{"city":"A","city":"B"}`,
		"bad time":         `{"timestamp":"yesterday"}`,
		"trailing garbage": `{"city":"A"} x`,
		"number as string": `{"city":1}`,
		"not an object":    `[1]`,
		"truncated":        `{"city":"A"`,
		"offset time":      `{"timestamp":"2026-03-01T23:30:00-05:00"}`,
	}
	for name, in := range cases {
		t.Run(name, func(t *testing.T) {
			var full click.Recorded
			var got clickFields
			wantErr := json.Unmarshal([]byte(in), &full)
			gotErr := decodeClick([]byte(in), &got, newInterner())
			if (wantErr == nil) != (gotErr == nil) {
				t.Fatalf("error %v, encoding/json says %v", gotErr, wantErr)
			}
			if want := fieldsOf(&full); wantErr == nil && !reflect.DeepEqual(got, want) {
				t.Errorf("got %+v\nwant %+v", got, want)
			}
		})
	}
}

func FuzzDecodeClick(f *testing.F) {
	full, _ := json.Marshal(sampleClick())
	f.Add(full)
	f.Add([]byte(`{"city":"A","qr":false}`))
	rng := rand.New(rand.NewPCG(1, 1))
	for _, c := range genClicks(rng, 20, 3, 2, 2, time.Now()) {
		b, _ := json.Marshal(c)
		f.Add(b)
	}
	in := newInterner()
	f.Fuzz(func(t *testing.T, data []byte) {
		var fast clickFields
		if fastDecodeClick(data, &fast, in) != nil {
			return
		}
		var full click.Recorded
		if err := json.Unmarshal(data, &full); err != nil {
			t.Fatalf("fast path accepted what encoding/json refuses (%v): %q", err, data)
		}
		if want := fieldsOf(&full); !reflect.DeepEqual(fast, want) {
			t.Fatalf("fast %+v\nwant %+v\nfor %q", fast, want, data)
		}
	})
}

func BenchmarkDecodeClick(b *testing.B) {
	g := newBenchGen(1000, true, 1)
	events := g.batch(1000)
	b.Run("fast", func(b *testing.B) {
		var c clickFields
		in := newInterner()
		for i := 0; b.Loop(); i++ {
			if err := decodeClick(events[i%len(events)].Data, &c, in); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			var c click.Recorded
			if err := json.Unmarshal(events[i%len(events)].Data, &c); err != nil {
				b.Fatal(err)
			}
		}
	})
}
