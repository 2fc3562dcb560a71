package radar_test

import (
	"reflect"
	"testing"

	"github.com/linkd/linkd/domain/conversion"
	"github.com/linkd/linkd/domain/radar"
)

// ParsePayload reads every string field of a collect body alike, plain or
// with escapes, and names every bad field.
func TestParsePayload(t *testing.T) {
	for _, c := range []struct {
		name, body string
		want       radar.Payload // zero with bad
		bad        []string      // the paths of the issues
	}{
		{name: "page view", body: `{"type":"pageview","url":"https://www.Shop.example/a/b?x=1","referrer":"https://news.example/","visitorId":"v-1","trackingId":"t1"}`,
			want: radar.Payload{Type: "pageview", URL: "https://www.Shop.example/a/b?x=1", Hostname: "shop.example", Pathname: "/a/b",
				Query: map[string][]string{"x": {"1"}}, Referrer: "https://news.example/", VisitorID: "v-1", TrackingID: "t1"}},
		{name: "escapes and unicode", body: `{"type":"event","url":"https:\/\/shop.example\/","name":"Sign\u00a0up \"now\" é","props":{"plan":"pro"},"key":"svc_pk_1"}`,
			want: radar.Payload{Type: "event", URL: "https://shop.example/", Hostname: "shop.example", Pathname: "/", Query: map[string][]string{},
				Name: "Sign\u00a0up \"now\" é", Props: map[string]string{"plan": "pro"}, Key: "svc_pk_1"}},
		{name: "identify", body: ` {"type":"identify","visitorId":"v","email":"a@example.com","name":"Ann"} `,
			want: radar.Payload{Type: "identify", VisitorID: "v", Email: "a@example.com", Name: "Ann"}},
		{name: "nulls", body: `{"type":"pageview","url":"https://shop.example/","referrer":null,"props":null}`,
			want: radar.Payload{Type: "pageview", URL: "https://shop.example/", Hostname: "shop.example", Pathname: "/", Query: map[string][]string{}}},
		{name: "not strings", body: `{"type":"pageview","url":"https://shop.example/","visitorId":7,"name":true,"email":{}}`, bad: []string{"email", "name", "visitorId"}},
		{name: "control character", body: `{"type":"pageview","url":"https://shop.example/","visitorId":"a\u0000b"}`, bad: []string{"visitorId"}},
		{name: "no type, bad url", body: `{"url":"ftp://shop.example/"}`, bad: []string{"type", "url"}},
		{name: "trailing data", body: `{"type":"pageview","url":"https://shop.example/"} {}`, bad: []string{""}},
		{name: "not an object", body: `[1]`, bad: []string{""}},
		{name: "null", body: `null`, bad: []string{""}},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, err := radar.ParsePayload([]byte(c.body))
			if c.bad == nil {
				if err != nil || !reflect.DeepEqual(p, c.want) {
					t.Errorf("ParsePayload = %#v, %v; want %#v", p, err, c.want)
				}
				return
			}
			pe, ok := err.(*conversion.PayloadError)
			if !ok {
				t.Fatalf("ParsePayload = %#v, %v; want issues at %q", p, err, c.bad)
			}
			var got []string
			for _, is := range pe.Details {
				path := ""
				if len(is.Path) > 0 {
					path = is.Path[0]
				}
				got = append(got, path)
			}
			if !reflect.DeepEqual(got, c.bad) {
				t.Errorf("issues at %q (%+v), want %q", got, pe.Details, c.bad)
			}
		})
	}
}

// BenchmarkParsePayload reads what radar.js sends for a page view.
//
//	go test -run '^$' -bench ParsePayload ./domain/radar/
func BenchmarkParsePayload(b *testing.B) {
	body := []byte(`{"type":"pageview","url":"https://shop.example/products/blue-shoes?utm_source=news","referrer":"https://news.example/article/12","visitorId":"k2l9x0a8b7c6d5e4","trackingId":"01a20e83-f4a0-79c4-84f5-1f6ab4148518","key":"svc_pk_3f9a0c1d2e4b5a6978"}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := radar.ParsePayload(body); err != nil {
			b.Fatal(err)
		}
	}
}
