package api_test

import (
	"math/rand/v2"
	"net/http"
	"net/url"
	"reflect"
	"testing"

	"github.com/linkd/linkd/cmd/linkd/app/apptest"
)

// Pagination (spec 2.6 and 8): properties that hold for every list size,
// page size and order, checked on random but reproducible cases.
//
//   - the page-number walk and the cursor walk both visit every item exactly
//     once, in the list's order;
//   - walking back with prev_cursor from the last page visits them again in
//     reverse;
//   - has_next/has_prev and the cursors agree with the position;
//   - a cursor walk stays exact while items are added in front of it.

type lister struct {
	t    *testing.T
	s    *apptest.Server
	key  string
	path string // with its filter query, without page parameters
}

func (l lister) get(params url.Values) page {
	l.t.Helper()
	sep := "?"
	if u, _ := url.Parse(l.path); u.RawQuery != "" {
		sep = "&"
	}
	return envelope(l.t, l.s.Do("GET", l.path+sep+params.Encode(), l.key, nil))
}

// all returns the whole list in one page.
func (l lister) all() []string {
	p := l.get(url.Values{"page_size": {"100"}})
	if p.HasNext {
		l.t.Fatalf("more than 100 items")
	}
	return ids(p.Items)
}

func (l lister) checkWalks(size int) {
	t := l.t
	t.Helper()
	want := l.all()
	n := len(want)
	pages := (n + size - 1) / size
	sz := url.Values{"page_size": {q("%d", size)}}
	with := func(k, v string) url.Values {
		out := url.Values{"page_size": sz["page_size"]}
		out.Set(k, v)
		return out
	}

	// Page numbers.
	var byNumber []string
	for i := 1; i <= pages+1; i++ {
		p := l.get(with("page", q("%d", i)))
		if p.Page != i || p.PageSize != size {
			t.Errorf("size %d page %d: envelope page %d size %d", size, i, p.Page, p.PageSize)
		}
		if p.HasNext != (i < pages) || p.HasPrev != (i > 1) {
			t.Errorf("size %d page %d of %d: has_next %v has_prev %v", size, i, pages, p.HasNext, p.HasPrev)
		}
		if i > pages && len(p.Items) != 0 {
			t.Errorf("size %d page %d past the end has %d items", size, i, len(p.Items))
		}
		byNumber = append(byNumber, ids(p.Items)...)
	}
	if !sameIDs(byNumber, want) {
		t.Errorf("size %d: page walk %v, want %v", size, byNumber, want)
	}

	// Cursors forward.
	var forward []string
	var last page
	p := l.get(sz)
	for steps := 0; ; steps++ {
		if steps > n+2 {
			t.Fatalf("size %d: cursor walk does not end", size)
		}
		if len(p.Items) > size {
			t.Fatalf("size %d: page of %d items", size, len(p.Items))
		}
		if p.Page != steps+1 {
			t.Errorf("size %d: cursor page %d at step %d", size, p.Page, steps)
		}
		if p.HasPrev != (steps > 0) {
			t.Errorf("size %d step %d: has_prev %v", size, steps, p.HasPrev)
		}
		forward = append(forward, ids(p.Items)...)
		last = p
		if !p.HasNext {
			break
		}
		p = l.get(with("cursor", p.NextCursor))
	}
	if !sameIDs(forward, want) {
		t.Errorf("size %d: cursor walk %v, want %v", size, forward, want)
	}

	// Cursors backward from the last page.
	back := append([]string(nil), ids(last.Items)...)
	for p, steps := last, 0; p.HasPrev; steps++ {
		if steps > n+2 {
			t.Fatalf("size %d: backward walk does not end", size)
		}
		if p.PrevCursor == "" {
			t.Fatalf("size %d: has_prev without prev_cursor", size)
		}
		p = l.get(with("cursor", p.PrevCursor))
		if !p.HasNext {
			t.Errorf("size %d: a page reached backwards says it has no next", size)
		}
		back = append(ids(p.Items), back...)
	}
	if !sameIDs(back, want) {
		t.Errorf("size %d: backward walk %v, want %v", size, back, want)
	}

	// Forward two, back one: the second page again.
	if pages >= 3 {
		p1 := l.get(sz)
		p2 := l.get(with("cursor", p1.NextCursor))
		p3 := l.get(with("cursor", p2.NextCursor))
		again := l.get(with("cursor", p3.PrevCursor))
		if !reflect.DeepEqual(ids(again.Items), ids(p2.Items)) || again.Page != 2 {
			t.Errorf("size %d: back from page 3 gives page %d %v, want %v", size, again.Page, ids(again.Items), ids(p2.Items))
		}
	}
}

func sameIDs(got, want []string) bool {
	if len(got) == 0 && len(want) == 0 {
		return true
	}
	return reflect.DeepEqual(got, want)
}

func reversed(in []string) []string {
	out := make([]string, len(in))
	for i, v := range in {
		out[len(in)-1-i] = v
	}
	return out
}

func TestPaginationProperties(t *testing.T) {
	t.Parallel()
	for _, seed := range []uint64{1, 2, 3} {
		t.Run(q("seed%d", seed), func(t *testing.T) {
			t.Parallel()
			rng := rand.New(rand.NewPCG(seed, 99))
			s := start(t)
			key := op // exempt from rate limits: this test sends thousands of requests
			n := rng.IntN(21)
			var created []string
			for i := 0; i < n; i++ {
				created = append(created, str(newLink(s, key, q("https://p%d.example", i)), "id"))
				s.MustCreate("/v1/projects", key, map[string]any{"name": q("project %d", i)})
				s.MustCreate("/v1/domains", key, map[string]any{"domain": q("d%d.example.com", i)})
			}
			links := lister{t, s, key, "/v1/links"}
			if got := links.all(); !sameIDs(got, reversed(created)) {
				t.Fatalf("links are not newest first: %v, want %v", got, reversed(created))
			}
			asc := lister{t, s, key, "/v1/links?sort_order=asc"}
			if got := asc.all(); !sameIDs(got, created) {
				t.Fatalf("sort_order=asc: %v, want %v", got, created)
			}
			random := 1 + rng.IntN(12)
			for _, size := range []int{1, 2, 7, 100, random} {
				links.checkWalks(size)
				asc.checkWalks(size)
			}
			for _, size := range []int{1, 3, random} {
				lister{t, s, key, "/v1/projects"}.checkWalks(size)
				lister{t, s, key, "/v1/domains"}.checkWalks(size)
			}
		})
	}
}

// A cursor walk over links, newest first, visits every link that existed
// when it began exactly once, even while new links are created.
func TestCursorWalkUnderInserts(t *testing.T) {
	t.Parallel()
	s := start(t)
	key := s.NewKey("walker", "full", nil)
	for i := 0; i < 17; i++ {
		newLink(s, key, q("https://w%d.example", i))
	}
	l := lister{t, s, key, "/v1/links"}
	want := l.all()
	var got []string
	p := l.get(url.Values{"page_size": {"4"}})
	for i := 0; ; i++ {
		got = append(got, ids(p.Items)...)
		newLink(s, key, q("https://late%d.example", i)) // lands in front of the walk
		if !p.HasNext {
			break
		}
		p = l.get(url.Values{"page_size": {"4"}, "cursor": {p.NextCursor}})
	}
	if !sameIDs(got, want) {
		t.Errorf("walk under inserts: %v, want %v", got, want)
	}
	// Deleting a link the walk has not reached yet removes it from the walk
	// and disturbs nothing else.
	want = l.all()
	p = l.get(url.Values{"page_size": {"5"}})
	got = ids(p.Items)
	victim := want[7]
	wantMessage(t, s.Do("DELETE", "/v1/links/"+victim, key, nil))
	for p.HasNext {
		p = l.get(url.Values{"page_size": {"5"}, "cursor": {p.NextCursor}})
		got = append(got, ids(p.Items)...)
	}
	var expect []string
	for _, id := range want {
		if id != victim {
			expect = append(expect, id)
		}
	}
	if !sameIDs(got, expect) {
		t.Errorf("walk past a delete: %v, want %v", got, expect)
	}
}

// Defaults and limits of section 8.
func TestPaginationDefaults(t *testing.T) {
	t.Parallel()
	s := start(t)
	key := s.NewKey("d", "full", nil)
	for i := 0; i < 12; i++ {
		newLink(s, key, q("https://def%d.example", i))
	}
	for _, path := range []string{"/v1/links", "/v1/projects", "/v1/domains"} {
		p := envelope(t, s.Do("GET", path, key, nil))
		if p.Page != 1 || p.PageSize != 10 {
			t.Errorf("%s defaults: page %d size %d", path, p.Page, p.PageSize)
		}
		for _, bad := range []string{"page_size=101", "page_size=0", "page=0", "page=abc", "cursor=not-a-cursor"} {
			wantError(t, s.Do("GET", path+"?"+bad, key, nil), http.StatusBadRequest, "")
		}
		if p := envelope(t, s.Do("GET", path+"?page_size=100", key, nil)); p.PageSize != 100 {
			t.Errorf("%s page_size=100: %d", path, p.PageSize)
		}
	}
	p := envelope(t, s.Do("GET", "/v1/links", key, nil))
	if len(p.Items) != 10 || !p.HasNext || p.HasPrev || p.NextCursor == "" || p.PrevCursor != "" {
		t.Errorf("first page of 12: %d items next %v prev %v", len(p.Items), p.HasNext, p.HasPrev)
	}
}

// A page number so large that its offset overflows is past the end of the
// list: no items, never the first page again.
func TestPaginationHugePageNumber(t *testing.T) {
	t.Parallel()
	s := start(t)
	key := s.NewKey("huge", "full", nil)
	ws := workspace(s, key, "Huge")
	newLink(s, key, "https://huge.example")
	s.MustCreate("/v1/projects", key, map[string]any{"name": "Huge", "workspace_id": ws})
	s.MustCreate("/v1/domains", key, map[string]any{"domain": "huge.example.com", "workspace_id": ws})
	for _, path := range []string{"/v1/links", "/v1/projects", "/v1/domains"} {
		for _, pg := range []string{"9223372036854775807", "922337203685477580", "92233720368547759"} {
			for _, size := range []string{"10", "100"} {
				p := envelope(t, s.Do("GET", path+"?page_size="+size+"&page="+pg, key, nil))
				if len(p.Items) != 0 || p.HasNext || !p.HasPrev {
					t.Errorf("%s page %s size %s: %d items, has_next %v has_prev %v", path, pg, size, len(p.Items), p.HasNext, p.HasPrev)
				}
			}
		}
	}
}
