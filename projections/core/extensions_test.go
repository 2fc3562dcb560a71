package core_test

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/linkd/linkd/domain"
	"github.com/linkd/linkd/domain/link"
	"github.com/linkd/linkd/domain/pixel"
	"github.com/linkd/linkd/domain/utmtemplate"
	"github.com/linkd/linkd/projections/core"
	"github.com/linkd/linkd/queries"
)

func extensionLog(t *testing.T) *log {
	var l log
	l.workspace(t, "w1", "alice")
	l.workspace(t, "w2", "bob")
	l.add(t, utmtemplate.Stream("t1"), &utmtemplate.Created{TemplateID: "t1", WorkspaceID: "w1", Name: "News",
		Values: utmtemplate.Values{Source: "news", Medium: "email", Campaign: "spring"}, At: t0})
	l.add(t, utmtemplate.Stream("t1"), &utmtemplate.Updated{TemplateID: "t1", WorkspaceID: "w1", Name: domain.Some("Weekly"),
		Patch: utmtemplate.Patch{Medium: domain.NullOpt[string](), Term: domain.Some("shoes")}, At: t0.Add(time.Minute)})
	l.add(t, utmtemplate.Stream("t2"), &utmtemplate.Created{TemplateID: "t2", WorkspaceID: "w1", Name: "Gone", At: t0})
	l.add(t, utmtemplate.Stream("t2"), &utmtemplate.Deleted{TemplateID: "t2", WorkspaceID: "w1", At: t0.Add(time.Minute)})
	l.add(t, utmtemplate.Stream("t3"), &utmtemplate.Created{TemplateID: "t3", WorkspaceID: "w2", Name: "Bob's",
		Values: utmtemplate.Values{Source: "bob"}, At: t0})
	l.add(t, pixel.Stream("p1"), &pixel.Created{ID: "p1", WorkspaceID: "w1", Name: "Ads", Type: "meta", PixelID: "123", At: t0})
	l.add(t, pixel.Stream("p1"), &pixel.Updated{ID: "p1", WorkspaceID: "w1", Type: domain.Some("google"), PixelID: domain.Some("G-1"), At: t0.Add(time.Minute)})
	l.add(t, pixel.Stream("p2"), &pixel.Created{ID: "p2", WorkspaceID: "w1", Name: "Old", Type: "x", PixelID: "o1", At: t0})
	l.add(t, pixel.Stream("p2"), &pixel.Deleted{ID: "p2", WorkspaceID: "w1", At: t0.Add(time.Minute)})
	ptr := func(s string) *string { return &s }
	for _, c := range []struct {
		id, tpl string
		px      *string
	}{{"l1", "t1", ptr("p1")}, {"l2", "t2", ptr("p2")}, {"l3", "t3", nil}, {"l4", "", nil}} {
		l.add(t, link.Stream(c.id), &link.Created{LinkID: c.id, Code: c.id, CreatedBy: "alice", At: t0, Attributes: link.Attributes{
			WorkspaceID: "w1", OriginalURL: "https://example.com/" + c.id, UTMTemplateID: c.tpl, PixelID: c.px, UTMSource: map[bool]string{true: "own"}[c.id == "l3"]}})
	}
	return &l
}

type extensionState struct {
	Templates []queries.UTMTemplate
	Pixels    []queries.Pixel
	Links     map[string]queries.Link
}

func readExtensions(t *testing.T, s *core.Store) extensionState {
	t.Helper()
	ctx := context.Background()
	page := queries.Page{Page: 1, PageSize: 100}
	ts, err := s.UTMTemplates(ctx, []string{"w1", "w2"}, page)
	if err != nil {
		t.Fatal(err)
	}
	ps, err := s.Pixels(ctx, []string{"w1", "w2"}, page)
	if err != nil {
		t.Fatal(err)
	}
	st := extensionState{Templates: ts.Items, Pixels: ps.Items, Links: map[string]queries.Link{}}
	for _, code := range []string{"l1", "l2", "l3", "l4"} {
		l, ok, err := s.LinkByCode(ctx, "", code)
		if err != nil || !ok {
			t.Fatalf("link %s: %v %v", code, ok, err)
		}
		st.Links[code] = l
	}
	return st
}

// Templates and pixels are applied once, whatever the batching, and a
// replay after Reset rebuilds the same read model; a link followed by code
// carries its template's values and its pixel.
func TestExtensionsApplyAndReplay(t *testing.T) {
	l := extensionLog(t)
	once := open(t)
	apply(t, once, l.Events)
	want := readExtensions(t, once)

	twice := open(t)
	for i := range l.Events {
		apply(t, twice, l.Events[:i+1])
	}
	apply(t, twice, l.Events)
	if got := readExtensions(t, twice); !reflect.DeepEqual(got, want) {
		t.Fatalf("re-applying changed the read model:\n%+v\n%+v", got, want)
	}
	if err := twice.Reset(context.Background()); err != nil {
		t.Fatal(err)
	}
	if res, _ := twice.UTMTemplates(context.Background(), []string{"w1"}, queries.Page{Page: 1, PageSize: 10}); len(res.Items) != 0 {
		t.Fatalf("reset kept %d templates", len(res.Items))
	}
	apply(t, twice, l.Events)
	if got := readExtensions(t, twice); !reflect.DeepEqual(got, want) {
		t.Fatalf("replay differs:\n%+v\n%+v", got, want)
	}

	if len(want.Templates) != 2 || len(want.Pixels) != 1 {
		t.Fatalf("templates %+v pixels %+v", want.Templates, want.Pixels)
	}
	tpl, ok, err := once.UTMTemplate(context.Background(), "t1")
	wantValues := utmtemplate.Values{Source: "news", Campaign: "spring", Term: "shoes"}
	if err != nil || !ok || tpl.Name != "Weekly" || tpl.Values != wantValues || tpl.WorkspaceID != "w1" || !tpl.UpdatedAt.Equal(t0.Add(time.Minute)) {
		t.Errorf("t1: %+v %v %v", tpl, ok, err)
	}
	if _, ok, _ := once.UTMTemplate(context.Background(), "t2"); ok {
		t.Error("a deleted template is readable")
	}
	px, ok, err := once.Pixel(context.Background(), "p1")
	if err != nil || !ok || px.Type != "google" || px.PixelID != "G-1" || px.Name != "Ads" {
		t.Errorf("p1: %+v %v %v", px, ok, err)
	}
	l1 := want.Links["l1"]
	if l1.TemplateValues == nil || *l1.TemplateValues != wantValues || l1.Pixel == nil || l1.Pixel.PixelID != "G-1" {
		t.Errorf("l1 resolves to %+v, %+v", l1.TemplateValues, l1.Pixel)
	}
	if got := l1.Target(link.PlatformOther); got != "https://example.com/l1?utm_source=news&utm_campaign=spring&utm_term=shoes" {
		t.Errorf("l1 target %s", got)
	}
	if l2 := want.Links["l2"]; l2.TemplateValues != nil || l2.Pixel != nil {
		t.Errorf("l2 resolves deleted ones: %+v %+v", l2.TemplateValues, l2.Pixel)
	}
	if l3 := want.Links["l3"]; l3.TemplateValues != nil { // t3 is another workspace's
		t.Errorf("l3 resolves a foreign template: %+v", l3.TemplateValues)
	}
	if l4 := want.Links["l4"]; l4.TemplateValues != nil || l4.Pixel != nil || l4.Target("") != "https://example.com/l4" {
		t.Errorf("l4: %+v", l4)
	}
}

// Every template or pixel event is announced, so the link cache can forget
// the links that resolved it.
func TestExtensionsNotify(t *testing.T) {
	l := extensionLog(t)
	s := open(t)
	var got []core.Change
	s.OnChange(func(ch []core.Change) { got = append(got, ch...) })
	apply(t, s, l.Events)
	seen := map[core.Change]bool{}
	for _, c := range got {
		seen[c] = true
	}
	for _, c := range []core.Change{{Kind: core.KindUTMTemplate, ID: "t1"}, {Kind: core.KindUTMTemplate, ID: "t2"}, {Kind: core.KindPixel, ID: "p1"}, {Kind: core.KindPixel, ID: "p2"}} {
		if !seen[c] {
			t.Errorf("no change %+v in %+v", c, got)
		}
	}
}
