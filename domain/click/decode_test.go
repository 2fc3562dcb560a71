package click_test

import (
	"encoding/json"
	"math/rand"
	"reflect"
	"testing"
	"time"

	"github.com/linkd/linkd/domain"
	"github.com/linkd/linkd/domain/click"
	"github.com/linkd/linkd/domain/click/clicktest"
	"github.com/linkd/linkd/domain/domaintest"
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

// sameAsEncodingJSON decodes data with DecodePlain and with encoding/json
// and fails when DecodePlain took data that encoding/json refuses or reads
// differently, or changed the click when it refused data. It reports
// whether DecodePlain read data.
func sameAsEncodingJSON(t *testing.T, data []byte) bool {
	t.Helper()
	var want click.Recorded
	wantErr := json.Unmarshal(data, &want)
	got := click.Recorded{City: "untouched"}
	if !got.DecodePlain(data) {
		if !reflect.DeepEqual(got, click.Recorded{City: "untouched"}) {
			t.Fatalf("DecodePlain refused %q but changed the click: %+v", data, got)
		}
		return false
	}
	if wantErr != nil {
		t.Fatalf("DecodePlain took %q, which encoding/json refuses: %v", data, wantErr)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%q:\n got %+v\nwant %+v", data, got, want)
	}
	return true
}

// Every field of click.Recorded (found by reflection over its JSON tags:
// clicktest) has a case in DecodePlain: the JSON of a click with only that
// field set, and of one with every field set, each to a value of its own,
// is read and comes back whole. A field added to click.Recorded but not to
// the decoder fails here: else every click would silently take the slow
// path.
func TestDecodePlainKnowsEveryField(t *testing.T) {
	t.Parallel()
	check := func(name string, c click.Recorded) {
		t.Helper()
		data := c.AppendJSON(nil)
		var got click.Recorded
		if !got.DecodePlain(data) {
			t.Errorf("%s: DecodePlain refused linkd's own JSON: add the field to scanner.field\n%s", name, data)
			return
		}
		if !reflect.DeepEqual(got, c) {
			t.Errorf("%s: DecodePlain read\n %+v\nwant\n %+v", name, got, c)
		}
	}
	check("every field", clicktest.Full())
	for _, f := range clicktest.Fields() {
		check(f.Name, f.Only())
	}
}

// Edge cases, each read as encoding/json reads it or refused.
func TestDecodePlainMatchesEncodingJSON(t *testing.T) {
	t.Parallel()
	full, _ := json.Marshal(sampleClick())
	cases := map[string]struct {
		in    string
		plain bool // DecodePlain reads it (else encoding/json must)
	}{
		"full":                 {string(full), true},
		"empty":                {`{}`, true},
		"spaces":               {" { \"link_id\" : \"L\" ,\n\t\"qr\" : true } ", true},
		"nulls":                {`{"link_id":null,"qr":null,"timestamp":null,"tracking_expires_at":null}`, false},
		"expiry then null":     {`{"tracking_expires_at":"2026-01-01T00:00:00Z","tracking_expires_at":null}`, true},
		"escapes":              {`{"city":"Z\u00fcrich","referrer":"a\"b","destination":"https:\/\/x.y\/?a=1\u0026b=2"}`, true},
		"surrogate pair":       {`{"city":"\ud83d\ude00"}`, false},
		"lone surrogate":       {`{"city":"\ud83d"}`, false},
		"lone low surrogate":   {`{"city":"a\udc00b"}`, false},
		"unknown field":        {`{"link_id":"L","new_field":{"x":[1,2]}}`, false},
		"case folded":          {`{"LINK_ID":"L"}`, false},
		"invalid utf8":         {"{\"city\":\"\xff\"}", false},
		"truncated utf8":       {"{\"city\":\"\xe6\x97\"}", false},
		"encoded surrogate":    {"{\"city\":\"\xed\xa0\x80\"}", false},
		"duplicate keys":       {`{"city":"A","city":"B"}`, true},
		"bad time":             {`{"timestamp":"yesterday"}`, false},
		"escaped time":         {`{"timestamp":"2026-03-01T10:00:00\u005a"}`, false},
		"trailing garbage":     {`{"city":"A"} x`, false},
		"number as string":     {`{"city":1}`, false},
		"string as bool":       {`{"qr":"true"}`, false},
		"not an object":        {`[1]`, false},
		"truncated":            {`{"city":"A"`, false},
		"offset time":          {`{"timestamp":"2026-03-01T23:30:00-05:00"}`, false},
		"control character":    {"{\"city\":\"a\tb\"}", false},
		"unicode, unescaped":   {`{"city":"São Paulo","region":"東京"}`, true},
		"line separator, raw":  {"{\"city\":\"a\u2028b\"}", true},
		"html escapes":         {`{"destination":"\u003cb\u003e"}`, true},
		"escaped key":          {`{"c\u0069ty":"A"}`, false},
		"nested value skipped": {`{"visitor":{"a":1}}`, false},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			read := sameAsEncodingJSON(t, []byte(c.in))
			if c.plain && !read {
				t.Errorf("DecodePlain refused %q, which linkd writes", c.in)
			}
			// domain.DecodeEvent (DecodePlain, then encoding/json) always
			// gives what encoding/json gives.
			var want click.Recorded
			wantErr := json.Unmarshal([]byte(c.in), &want)
			got, err := domain.DecodeEvent(click.EventRecorded, []byte(c.in))
			if (err == nil) != (wantErr == nil) {
				t.Fatalf("DecodeEvent error %v, encoding/json says %v", err, wantErr)
			}
			if err == nil && !reflect.DeepEqual(*got.(*click.Recorded), want) {
				t.Errorf("DecodeEvent %+v\nwant %+v", got, want)
			}
		})
	}
}

// Random clicks as AppendJSON writes them: those whose strings are valid
// UTF-8 are read by DecodePlain, every one as encoding/json reads it.
func TestDecodePlainRandom(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewSource(5))
	read := 0
	for range 3000 {
		s := func() string { return domaintest.JSONString(rng) }
		c := click.Recorded{
			ClickID: s(), LinkID: s(), WorkspaceID: s(), Code: s(), City: s(), Referrer: s(),
			Timestamp: time.Unix(rng.Int63n(4e9), rng.Int63n(1e9)).UTC(), Visitor: s(), QR: rng.Intn(2) == 0,
		}
		if sameAsEncodingJSON(t, c.AppendJSON(nil)) {
			read++
		}
	}
	if read == 0 {
		t.Fatal("DecodePlain read none of the random clicks")
	}
}

func FuzzDecodePlain(f *testing.F) {
	full, _ := json.Marshal(sampleClick())
	f.Add(full)
	f.Add([]byte(`{"city":"A","qr":false}`))
	f.Add([]byte(`{"tracking_id":"A","qr":false,"tracking_expires_at":null}`))
	f.Add([]byte("{\"city\":\"\xff\\ud800\"}"))
	f.Add([]byte(`{"city":"\ud83d\ude00","referrer":"\udc00"}`))
	fullClick := clicktest.Full()
	f.Add(fullClick.AppendJSON(nil))
	f.Fuzz(func(t *testing.T, data []byte) {
		sameAsEncodingJSON(t, data)
	})
}

func BenchmarkDecodePlain(b *testing.B) {
	c := sampleClick()
	data := c.AppendJSON(nil)
	b.ReportAllocs()
	for b.Loop() {
		var c click.Recorded
		if !c.DecodePlain(data) {
			b.Fatal("refused")
		}
	}
}

func BenchmarkDecodeEncodingJSON(b *testing.B) {
	c := sampleClick()
	data := c.AppendJSON(nil)
	b.ReportAllocs()
	for b.Loop() {
		var c click.Recorded
		if err := json.Unmarshal(data, &c); err != nil {
			b.Fatal(err)
		}
	}
}
