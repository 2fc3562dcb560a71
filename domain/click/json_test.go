package click

import (
	"bytes"
	"encoding/json"
	"math/rand"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/linkd/linkd/domain/domaintest"
)

func randomClick(rng *rand.Rand) Recorded {
	s := func() string { return domaintest.JSONString(rng) }
	r := Recorded{
		ClickID: s(), LinkID: s(), WorkspaceID: s(), ProjectID: s(), DomainID: s(), Code: s(),
		Timestamp: time.Unix(rng.Int63n(4e9), rng.Int63n(1e9)).UTC(), Source: s(), QR: rng.Intn(2) == 0,
		Visitor: s(), Browser: s(), BrowserVersion: s(), OS: s(), OSVersion: s(), DeviceType: s(), Device: s(),
		FromApp: rng.Intn(2) == 0, App: s(), Language: s(), Referrer: s(), ReferrerURL: s(), Country: s(),
		Continent: s(), City: s(), Region: s(), Destination: s(), TrackingID: s(),
	}
	if rng.Intn(2) == 0 {
		t := time.Unix(rng.Int63n(4e9), 0).In(time.FixedZone("x", 3600))
		r.TrackingExpiresAt = &t
	}
	return r
}

// TestAppendJSONMatchesEncodingJSON: the hand-written encoder gives the
// same bytes as encoding/json for varied content.
func TestAppendJSONMatchesEncodingJSON(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	cases := []Recorded{{}, {Timestamp: time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)}}
	for i := 0; i < 5000; i++ {
		cases = append(cases, randomClick(rng))
	}
	for i, c := range cases {
		want, err := json.Marshal(&c)
		if err != nil {
			t.Fatal(err)
		}
		if got := c.AppendJSON(nil); !bytes.Equal(got, want) {
			t.Fatalf("case %d:\n got %s\nwant %s", i, got, want)
		}
	}
}

func FuzzAppendJSON(f *testing.F) {
	f.Add("id", "<b>&", "\u2028x\xff", int64(1700000000))
	f.Fuzz(func(t *testing.T, a, b, c string, ts int64) {
		r := Recorded{ClickID: a, Browser: b, ReferrerURL: c, City: a + c, Timestamp: time.Unix(ts%4e9, 0).UTC()}
		want, err := json.Marshal(&r)
		if err != nil {
			t.Skip()
		}
		if got := r.AppendJSON(nil); !bytes.Equal(got, want) {
			t.Fatalf("got %s\nwant %s", got, want)
		}
	})
}

func BenchmarkAppendJSON(b *testing.B) {
	r := randomClick(rand.New(rand.NewSource(2)))
	buf := make([]byte, 0, 1024)
	for i := 0; i < b.N; i++ {
		buf = r.AppendJSON(buf[:0])
	}
}

// BenchmarkAppendJSONRedirect encodes a click as a redirect records it:
// ids, URLs and the names enrichment gives, all plain ASCII.
func BenchmarkAppendJSONRedirect(b *testing.B) {
	exp := time.Date(2027, 2, 22, 10, 6, 8, 982347937, time.UTC)
	r := Recorded{
		ClickID: "019ca8dc-ce56-7000-8000-00000000a1b2", LinkID: "019ca8dc-ce56-7000-8000-0000000001f4",
		WorkspaceID: "019ca8dc-ce56-7000-8000-000000000001", Code: "b123",
		Timestamp: time.Date(2026, 11, 24, 10, 6, 8, 982347937, time.UTC), Source: "redirect",
		Visitor: "9f86d081884c7d659a2feaa0c55ad015", Browser: "Chrome", BrowserVersion: "126.0.0.0",
		OS: "Windows", OSVersion: "10", DeviceType: "desktop", Language: "en",
		Referrer: "news.ycombinator.com", ReferrerURL: "https://news.ycombinator.com/item?id=42424242",
		Country: "DE", Continent: "EU", City: "Berlin", Region: "BE",
		Destination: "https://example.com/landing/123?utm_source=bench",
		TrackingID:  "019ca8dc-ce56-7000-8000-00000000a1b2", TrackingExpiresAt: &exp,
	}
	buf := make([]byte, 0, 1024)
	for b.Loop() {
		buf = r.AppendJSON(buf[:0])
	}
}

func BenchmarkEncodingJSON(b *testing.B) {
	r := randomClick(rand.New(rand.NewSource(2)))
	for i := 0; i < b.N; i++ {
		_, _ = json.Marshal(&r)
	}
}

// sameClick reports whether a and b hold the same click: the same strings
// and flags, and times of the same instant (JSON keeps the instant and the
// offset, not the location's name).
func sameClick(a, b *Recorded) bool {
	ta, tb := *a, *b
	if !ta.Timestamp.Equal(tb.Timestamp) || (ta.TrackingExpiresAt == nil) != (tb.TrackingExpiresAt == nil) ||
		ta.TrackingExpiresAt != nil && !ta.TrackingExpiresAt.Equal(*tb.TrackingExpiresAt) {
		return false
	}
	ta.Timestamp, tb.Timestamp, ta.TrackingExpiresAt, tb.TrackingExpiresAt = time.Time{}, time.Time{}, nil, nil
	return ta == tb
}

// exactWant is what AppendJSONExact must say of r: whether every string is
// valid UTF-8 and both times are ones RFC 3339 writes whole.
func exactWant(r *Recorded) bool {
	for _, s := range [...]string{r.ClickID, r.LinkID, r.WorkspaceID, r.ProjectID, r.DomainID,
		r.Code, r.Source, r.Visitor, r.Browser, r.BrowserVersion, r.OS, r.OSVersion, r.DeviceType,
		r.Device, r.App, r.Language, r.Referrer, r.ReferrerURL, r.Country, r.Continent, r.City,
		r.Region, r.Destination, r.TrackingID} {
		if !utf8.ValidString(s) {
			return false
		}
	}
	whole := func(t time.Time) bool {
		_, off := t.Zone()
		return t.Year() >= 0 && t.Year() <= 9999 && off%60 == 0 && -24*3600 < off && off < 24*3600
	}
	return whole(r.Timestamp) && (r.TrackingExpiresAt == nil || whole(*r.TrackingExpiresAt))
}

// TestAppendJSONExact: a click whose JSON is said to be exact decodes from
// it to itself; one with invalid UTF-8 or a time RFC 3339 cannot write
// whole is not said to be, and its JSON is AppendJSON's all the same.
func TestAppendJSONExact(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	lmt := time.FixedZone("LMT", 561) // an offset in seconds: RFC 3339 drops them
	far := time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)
	cases := []Recorded{
		{Browser: "\xff"},
		{Timestamp: time.Date(2026, 11, 27, 0, 0, 0, 0, lmt)},
		{Timestamp: far},
		{TrackingExpiresAt: &far},
	}
	for i := 0; i < 5000; i++ {
		cases = append(cases, randomClick(rng))
	}
	yes, no := 0, 0
	for i, c := range cases {
		data, exact := c.AppendJSONExact(nil)
		if !bytes.Equal(data, c.AppendJSON(nil)) {
			t.Fatalf("case %d: AppendJSONExact and AppendJSON differ", i)
		}
		if want := exactWant(&c); exact != want {
			t.Fatalf("case %d: exact %v, want %v: %+v", i, exact, want, c)
		}
		if !exact {
			no++
			continue
		}
		yes++
		var back Recorded
		if err := json.Unmarshal(data, &back); err != nil {
			t.Fatal(err)
		}
		if !sameClick(&c, &back) {
			t.Fatalf("case %d is said to be exact:\n%+v\n%+v", i, c, back)
		}
	}
	if yes == 0 || no < 4 {
		t.Fatalf("%d clicks exact, %d not: the cases miss one side", yes, no)
	}
}

func FuzzAppendJSONExact(f *testing.F) {
	f.Add("id", "<b>&\u2028", "\xff", int64(1700000000), int64(5), 0)
	f.Fuzz(func(t *testing.T, a, b, c string, sec, nsec int64, off int) {
		exp := time.Unix(sec, nsec).In(time.FixedZone("z", off%(30*3600)))
		r := Recorded{ClickID: a, Browser: b, City: c, Visitor: a + c,
			Timestamp: time.Unix(sec/2, nsec).UTC(), TrackingExpiresAt: &exp}
		data, exact := r.AppendJSONExact(nil)
		if want := exactWant(&r); exact != want {
			t.Fatalf("exact %v, want %v: %+v", exact, want, r)
		}
		if !exact {
			return
		}
		var back Recorded
		if err := json.Unmarshal(data, &back); err != nil {
			t.Fatalf("%+v is said to be exact, its JSON does not decode: %v", r, err)
		}
		if !sameClick(&r, &back) {
			t.Fatalf("%+v is said to be exact:\n%+v", r, back)
		}
	})
}
