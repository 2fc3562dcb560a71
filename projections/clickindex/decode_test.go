package clickindex

import (
	"encoding/json"
	"math/rand/v2"
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

// decoded is fields with strings, for comparisons (an empty and a nil
// slice are the same value).
type decoded struct {
	ClickID, TrackingID, LinkID, WorkspaceID, ProjectID, DomainID string
	Country, DeviceType, Browser, OS, Referrer                    string
	Timestamp, ExpiresAt                                          time.Time
	HasExpires, QR                                                bool
}

func (f *fields) decoded() decoded {
	return decoded{
		string(f.ClickID), string(f.TrackingID), string(f.LinkID), string(f.WorkspaceID),
		string(f.ProjectID), string(f.DomainID), string(f.Country), string(f.DeviceType),
		string(f.Browser), string(f.OS), string(f.Referrer), f.Timestamp, f.ExpiresAt, f.HasExpires, f.QR,
	}
}

func wantOf(c *click.Recorded) decoded {
	f := fieldsOf(c)
	return f.decoded()
}

// Every field of click.Recorded (found by clicktest from its JSON tags)
// is known to the fast path: a new field must be added to scanner.field,
// or every click would take the slow path. Each field alone, and all of
// them, as encoding/json and AppendJSON write them.
func TestFastDecoderKnowsEveryField(t *testing.T) {
	t.Parallel()
	check := func(name string, c click.Recorded) {
		t.Helper()
		for enc, data := range map[string][]byte{"encoding/json": must(json.Marshal(&c)), "AppendJSON": c.AppendJSON(nil)} {
			var got fields
			if err := fastDecodeClick(data, &got); err != nil {
				t.Errorf("%s (%s): the fast path refused linkd's own JSON (%v): add the field to scanner.field\n%s", name, enc, err, data)
				continue
			}
			if got, want := got.decoded(), wantOf(&c); got != want {
				t.Errorf("%s (%s): got %+v\nwant %+v", name, enc, got, want)
			}
		}
	}
	check("every field", clicktest.Full())
	for _, f := range clicktest.Fields() {
		check(f.Name, f.Only())
	}
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

func TestDecodeClickMatchesEncodingJSON(t *testing.T) {
	t.Parallel()
	full, _ := json.Marshal(sampleClick())
	cases := map[string]string{
		"full":               string(full),
		"empty":              `{}`,
		"spaces":             " { \"tracking_id\" : \"T\" ,\n\t\"qr\" : true } ",
		"nulls":              `{"tracking_id":null,"qr":null,"timestamp":null,"tracking_expires_at":null}`,
		"expiry then null":   `{"tracking_expires_at":"2026-01-01T00:00:00Z","tracking_expires_at":null}`,
		"null then expiry":   `{"tracking_expires_at":null,"tracking_expires_at":"2026-01-01T00:00:00Z"}`,
		"escapes":            `{"referrer":"Z\u00fcrich","tracking_id":"a\"b","browser":"\/x"}`,
		"unknown field":      `{"tracking_id":"T","new_field":{"x":[1,2]}}`,
		"case folded":        `{"TRACKING_ID":"T"}`,
		"invalid utf8":       "{\"referrer\":\"\xff\"}",
		"duplicate keys":     `{"tracking_id":"A","tracking_id":"B"}`,
		"bad time":           `{"timestamp":"yesterday"}`,
		"bad expiry":         `{"tracking_expires_at":"soon"}`,
		"trailing garbage":   `{"country":"A"} x`,
		"number as string":   `{"country":1}`,
		"from_app as string": `{"from_app":"yes"}`,
		"not an object":      `[1]`,
		"truncated":          `{"country":"A"`,
		"offset time":        `{"timestamp":"2026-03-01T23:30:00-05:00"}`,
	}
	for name, in := range cases {
		t.Run(name, func(t *testing.T) {
			var full click.Recorded
			var got fields
			wantErr := json.Unmarshal([]byte(in), &full)
			gotErr := decodeClick([]byte(in), &got)
			if (wantErr == nil) != (gotErr == nil) {
				t.Fatalf("error %v, encoding/json says %v", gotErr, wantErr)
			}
			if got, want := got.decoded(), wantOf(&full); wantErr == nil && got != want {
				t.Errorf("got %+v\nwant %+v", got, want)
			}
		})
	}
}

func FuzzDecodeClick(f *testing.F) {
	full, _ := json.Marshal(sampleClick())
	f.Add(full)
	f.Add([]byte(`{"tracking_id":"A","qr":false,"tracking_expires_at":null}`))
	rng := rand.New(rand.NewPCG(1, 1))
	for _, c := range genClicks(rng, 20, 3, t0, time.Hour) {
		f.Add(c.AppendJSON(nil))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var fast fields
		if fastDecodeClick(data, &fast) != nil {
			return
		}
		var full click.Recorded
		if err := json.Unmarshal(data, &full); err != nil {
			t.Fatalf("fast path accepted what encoding/json refuses (%v): %q", err, data)
		}
		if got, want := fast.decoded(), wantOf(&full); got != want {
			t.Fatalf("fast %+v\nwant %+v\nfor %q", got, want, data)
		}
	})
}

// Decoding allocates nothing when no string has escapes (a skipped string
// with escapes, such as a destination URL with '&', costs its unescaped
// copy).
func TestDecodeClickAllocations(t *testing.T) {
	c := sampleClick()
	c.Destination = "https://example.com/?a=1"
	data := c.AppendJSON(nil)
	var f fields
	if n := testing.AllocsPerRun(100, func() {
		if err := decodeClick(data, &f); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("%v allocations per decode, want 0", n)
	}
}

func BenchmarkDecodeClick(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 1))
	var data [][]byte
	for _, c := range genClicks(rng, 1000, 100, t0, time.Hour) {
		data = append(data, c.AppendJSON(nil))
	}
	b.Run("fast", func(b *testing.B) {
		var f fields
		for i := 0; b.Loop(); i++ {
			if err := decodeClick(data[i%len(data)], &f); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			var c click.Recorded
			if err := json.Unmarshal(data[i%len(data)], &c); err != nil {
				b.Fatal(err)
			}
		}
	})
}
