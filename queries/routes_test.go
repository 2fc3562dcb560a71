package queries

import (
	"context"
	"testing"
	"time"

	"github.com/linkd/linkd/domain/link"
	"github.com/linkd/linkd/domain/utmtemplate"
)

// A prepared link answers as one worked out on every redirect: the same
// target on every platform, and the same target with a tracking id, for
// deep links, UTM values of the link and of its template, fragments,
// parameters replaced and targets that take none.
func TestPreparedRoutesAnswerAsWorkedOut(t *testing.T) {
	links := map[string]*Link{
		"plain": {Attributes: link.Attributes{OriginalURL: "https://shop.example/p"}},
		"utm": {Attributes: link.Attributes{OriginalURL: "https://shop.example/p?a=1&utm_source=old#top",
			UTMSource: "news letter", UTMCampaign: "black&friday"}},
		"template": {Attributes: link.Attributes{OriginalURL: "https://shop.example/p?svc_tid=stale", UTMMedium: "own"},
			TemplateValues: &utmtemplate.Values{Source: "tpl", Medium: "not used", Name: "n"}},
		"deep": {Attributes: link.Attributes{OriginalURL: "https://shop.example/p", UTMSource: "s",
			IOSLink: "myapp://item/5", AndroidLink: "https://play.example/item?id=5#x", WindowsLink: " ", MacOSLink: "https://mac.example/"}},
		"mail": {Attributes: link.Attributes{OriginalURL: "mailto:a@b.example?subject=hi"}},
	}
	const id = "0190a3c2-7d1e-7abc-8def-0123456789ab"
	for name, l := range links {
		prepared := *l
		prepared.PrepareRoutes()
		for _, p := range append(platforms[:], "", "linux") {
			if got, want := prepared.Target(p), l.Target(p); got != want {
				t.Errorf("%s on %q: prepared target %q, worked out %q", name, p, got, want)
			}
			for _, tid := range []string{id, "x/y z"} {
				want := Access{Target: l.Target(p)}.WithTracking(tid)
				if got := (Access{Target: prepared.Target(p), route: prepared.route(p)}).WithTracking(tid); got != want {
					t.Errorf("%s on %q with %q: prepared %q, worked out %q", name, p, tid, got, want)
				}
			}
		}
	}
	if n := len(func() *Link { l := *links["plain"]; l.PrepareRoutes(); return &l }().routes.distinct); n != 1 {
		t.Errorf("a link without deep links keeps %d routes, want 1", n)
	}
}

// LinkAccess grants a prepared link's route; a target changed after it
// (as the WhatsApp message changes a wa.me target, api/linkpages.go) takes
// its tracking id as before.
func TestLinkAccessUsesPreparedRoutes(t *testing.T) {
	l := &Link{ID: "l1", Code: "c", Attributes: link.Attributes{OriginalURL: "https://shop.example/p#f", UTMSource: "s"}}
	l.PrepareRoutes()
	h := LinkAccessHandler{ReadModel: fakeLinks{links: map[string]*Link{"/c": l}}, DefaultHost: "s.example"}
	a, err := h.Handle(context.Background(), LinkAccess{Host: "s.example", Code: "c", Channel: ShortURL, Counted: true,
		Platform: link.PlatformAndroid, At: time.Now()})
	if err != nil || a.Outcome != Granted || a.route == nil {
		t.Fatalf("Handle: %+v, %v; want granted through a route", a, err)
	}
	if want := "https://shop.example/p?utm_source=s&svc_tid=t1#f"; a.WithTracking("t1") != want {
		t.Errorf("WithTracking = %q, want %q", a.WithTracking("t1"), want)
	}
	a.Target = "https://wa.me/1555?text=hi"
	if got, want := a.WithTracking("t1"), link.AddParams(a.Target, [][2]string{{"svc_tid", "t1"}}); got != want {
		t.Errorf("changed target: WithTracking = %q, want %q", got, want)
	}
}
