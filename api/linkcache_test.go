package api

import (
	"context"
	"sync"
	"testing"

	"github.com/linkd/linkd/domain/link"
	"github.com/linkd/linkd/projections/core"
	"github.com/linkd/linkd/queries"
)

// countingSource serves fixed links by code and counts its reads; during
// a read it runs the hook (a change landing while the cache reads).
type countingSource struct {
	mu    sync.Mutex
	links map[string]queries.Link
	reads map[string]int
	hook  func()
}

func (s *countingSource) LinkByCode(_ context.Context, _, code string) (queries.Link, bool, error) {
	s.mu.Lock()
	s.reads[code]++
	l, ok := s.links[code]
	hook := s.hook
	s.hook = nil
	s.mu.Unlock()
	if hook != nil {
		hook()
	}
	return l, ok, nil
}

func (s *countingSource) VerifiedDomain(context.Context, string) (queries.Domain, bool, error) {
	return queries.Domain{}, false, nil
}

func (s *countingSource) read(code string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reads[code]
}

// The cache forgets exactly the links that resolved a template or pixel
// when it changes, and never keeps a link read before an invalidation.
func TestLinkCacheForgetsLinksOfAChangedTemplateOrPixel(t *testing.T) {
	ctx := context.Background()
	px := "p1"
	src := &countingSource{reads: map[string]int{}, links: map[string]queries.Link{
		"plain": {ID: "l1", Code: "plain"},
		"tpl":   {ID: "l2", Code: "tpl", Attributes: link.Attributes{UTMTemplateID: "t1"}},
		"px":    {ID: "l3", Code: "px", Attributes: link.Attributes{PixelID: &px}},
	}}
	c := NewLinkCache(src, 0)
	get := func(code string) {
		t.Helper()
		if l, err := c.LinkByCode(ctx, "", code); err != nil || l == nil || l.Code != code {
			t.Fatalf("%s: %v %v", code, l, err)
		}
	}
	want := func(what string, reads map[string]int) {
		t.Helper()
		for code, n := range reads {
			if got := src.read(code); got != n {
				t.Errorf("%s: %s read %d times, want %d", what, code, got, n)
			}
		}
	}
	for range 3 {
		get("plain")
		get("tpl")
		get("px")
	}
	want("cached", map[string]int{"plain": 1, "tpl": 1, "px": 1})

	c.Invalidate(core.KindUTMTemplate, "t2") // another template
	c.Invalidate(core.KindPixel, "p2")
	get("plain")
	get("tpl")
	get("px")
	want("after other changes", map[string]int{"plain": 1, "tpl": 1, "px": 1})

	c.Invalidate(core.KindUTMTemplate, "t1")
	get("plain")
	get("tpl")
	get("px")
	want("after t1 changed", map[string]int{"plain": 1, "tpl": 2, "px": 1})

	c.Invalidate(core.KindPixel, "p1")
	get("plain")
	get("tpl")
	get("px")
	get("px")
	want("after p1 changed", map[string]int{"plain": 1, "tpl": 2, "px": 2})

	// A template change landing while the link is being read: what was
	// read is answered, and not kept.
	c.Invalidate(core.KindUTMTemplate, "t1")
	src.mu.Lock()
	src.hook = func() { c.Invalidate(core.KindUTMTemplate, "t1") }
	src.mu.Unlock()
	get("tpl")
	get("tpl")
	want("after a racing change", map[string]int{"tpl": 4})
	get("tpl")
	want("then cached", map[string]int{"tpl": 4})
}

// Changes that forget no link (click counts, keys, projects) do not keep a
// link being read out of the cache: under load they land all the time.
func TestLinkCacheKeepsReadsAcrossOtherChanges(t *testing.T) {
	src := &countingSource{reads: map[string]int{}, links: map[string]queries.Link{"plain": {ID: "l1", Code: "plain"}}}
	c := NewLinkCache(src, 0)
	src.hook = func() {
		for _, kind := range []string{"clicks", "apikey", "project"} {
			c.Invalidate(kind, "l1")
		}
	}
	for range 3 {
		if _, err := c.LinkByCode(context.Background(), "", "plain"); err != nil {
			t.Fatal(err)
		}
	}
	if n := src.read("plain"); n != 1 {
		t.Errorf("read %d times, want 1", n)
	}
}

// listingSource is a countingSource that also lists links (LinkLister),
// by id or the newest first, and counts its lists.
type listingSource struct {
	*countingSource
	order []string // codes, oldest first
	lists int
}

func (s *listingSource) LinksToFollow(_ context.Context, ids []string, n int) ([]queries.Link, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lists++
	want := map[string]bool{}
	for _, id := range ids {
		want[id] = true
	}
	var out []queries.Link
	for i := len(s.order) - 1; i >= 0 && len(out) < n; i-- {
		l := s.links[s.order[i]]
		if ids == nil || want[l.ID] {
			out = append(out, l)
		}
	}
	return out, nil
}

// Warm reads the newest links, as many as the cache has room for, in one list;
// Refresh reads changed links while there is room; a link they cached is
// served without a read of its own, with its custom domain in its key.
func TestLinkCacheWarmAndRefresh(t *testing.T) {
	ctx := context.Background()
	dom := "d1"
	src := &listingSource{countingSource: &countingSource{reads: map[string]int{}, links: map[string]queries.Link{
		"a": {ID: "l1", Code: "a"},
		"b": {ID: "l2", Code: "b"},
		"c": {ID: "l3", Code: "c", Attributes: link.Attributes{DomainID: &dom}},
	}}, order: []string{"a", "b", "c"}}
	c := NewLinkCache(src, 2)
	if err := c.Warm(ctx); err != nil {
		t.Fatal(err)
	}
	if src.lists != 1 {
		t.Fatalf("Warm listed %d times, want 1", src.lists)
	}
	for _, k := range []struct{ domain, code string }{{"d1", "c"}, {"", "b"}} {
		if l, err := c.LinkByCode(ctx, k.domain, k.code); err != nil || l == nil || l.Code != k.code {
			t.Fatalf("%s/%s: %v %v", k.domain, k.code, l, err)
		}
		if n := src.read(k.code); n != 0 {
			t.Errorf("%s: read %d times after Warm, want 0 (cached)", k.code, n)
		}
	}
	// Full (2 of 2): the oldest was not cached, and Refresh adds nothing.
	if err := c.Refresh(ctx, []string{"l1"}); err != nil {
		t.Fatal(err)
	}
	if src.lists != 1 {
		t.Errorf("Refresh of a full cache listed links")
	}
	if l, _ := c.LinkByCode(ctx, "", "a"); l == nil || src.read("a") != 1 {
		t.Errorf("a: %v, read %d times, want one read (not warmed)", l, src.read("a"))
	}

	// A changed link is forgotten, then read again by Refresh with its
	// new values.
	c = NewLinkCache(src, 0)
	if err := c.Warm(ctx); err != nil {
		t.Fatal(err)
	}
	src.mu.Lock()
	src.links["b"] = queries.Link{ID: "l2", Code: "b", Attributes: link.Attributes{OriginalURL: "https://example.com/new"}}
	src.mu.Unlock()
	c.Invalidate("link", "l2")
	if err := c.Refresh(ctx, []string{"l2"}); err != nil {
		t.Fatal(err)
	}
	if l, _ := c.LinkByCode(ctx, "", "b"); l == nil || l.OriginalURL != "https://example.com/new" || src.read("b") != 0 {
		t.Errorf("b after Refresh: %+v, read %d times, want the new link without a read", l, src.read("b"))
	}
}
