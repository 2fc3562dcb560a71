package link_test

import (
	"strings"
	"testing"

	"github.com/linkd/linkd/domain"
	. "github.com/linkd/linkd/domain/domaintest"
	"github.com/linkd/linkd/domain/link"
)

func ptr[T any](v T) *T { return &v }

func attrs() link.Attributes {
	return link.Attributes{WorkspaceID: "w1", OriginalURL: "https://example.com", Name: "n"}
}

func created() *link.Created {
	return &link.Created{LinkID: "l1", Code: "abc", CreatedBy: "alice", At: T0, Attributes: attrs()}
}

// given loads a link from history.
func given(t *testing.T, events ...domain.Event) *link.Link {
	t.Helper()
	l, err := link.Load(Given(t, events...))
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestCreate(t *testing.T) {
	t.Run("records LinkCreated", func(t *testing.T) {
		l, err := link.Create("l1", "abc", "alice", attrs(), T0)
		if err != nil {
			t.Fatal(err)
		}
		Then(t, l, created())
		if v, exists := l.LoadedVersion(); exists || v != 0 {
			t.Errorf("a new link expects no stream, got %d %v", v, exists)
		}
	})
	t.Run("normalises options", func(t *testing.T) {
		a := attrs()
		a.QRCodeOptions = &link.QRCodeOptions{Color: ptr("#abc"), ErrorCorrectionLevel: ptr("q")}
		a.ExcludedCountries = []link.ExcludedCountry{{Code: " us ", Suggested: ptr(false)}}
		l, err := link.Create("l1", "abc", "alice", a, T0)
		if err != nil {
			t.Fatal(err)
		}
		want := created()
		want.QRCodeOptions = &link.QRCodeOptions{Color: ptr("#ABC"), ErrorCorrectionLevel: ptr("Q")}
		want.ExcludedCountries = []link.ExcludedCountry{{Code: "US", Suggested: ptr(false)}}
		Then(t, l, want)
	})
	cases := []struct {
		name   string
		id     string
		code   string
		change func(*link.Attributes)
		msg    string
	}{
		{"no id", "", "abc", nil, "link id is required"},
		{"bad URL", "l1", "abc", func(a *link.Attributes) { a.OriginalURL = "ftp://x" }, link.MsgInvalidURL},
		{"no URL", "l1", "abc", func(a *link.Attributes) { a.OriginalURL = "" }, link.MsgInvalidURL},
		{"bad code", "l1", "a b", nil, ""},
		{"empty code", "l1", "", nil, ""},
		{"reserved code", "l1", "healthz", nil, ""},
		{"no workspace", "l1", "abc", func(a *link.Attributes) { a.WorkspaceID = "" }, "workspace_id is required"},
		{"click limit 0", "l1", "abc", func(a *link.Attributes) { a.ExpirationClickCount = ptr(int64(0)) }, "expiration_click_count must be at least 1"},
		{"bad deep link", "l1", "abc", func(a *link.Attributes) { a.IOSLink = "javascript:alert(1)" }, "Invalid URL format for ios_link"},
		{"bad logo", "l1", "abc", func(a *link.Attributes) { a.AppLogo = "fb://x" }, "Invalid URL format for app_logo"},
		{"long name", "l1", "abc", func(a *link.Attributes) { a.Name = strings.Repeat("n", link.MaxNameLength+1) }, ""},
		{"long metadata", "l1", "abc", func(a *link.Attributes) {
			a.Metadata = &link.Preview{Title: ptr(strings.Repeat("t", link.MaxTextLength+1))}
		}, ""},
		{"bad QR size", "l1", "abc", func(a *link.Attributes) { a.QRCodeOptions = &link.QRCodeOptions{Size: ptr(10)} }, ""},
		{"bad QR colour", "l1", "abc", func(a *link.Attributes) { a.QRCodeOptions = &link.QRCodeOptions{BackgroundColor: ptr("white")} }, ""},
		{"bad QR level", "l1", "abc", func(a *link.Attributes) { a.QRCodeOptions = &link.QRCodeOptions{ErrorCorrectionLevel: ptr("X")} }, ""},
		{"bad country", "l1", "abc", func(a *link.Attributes) { a.ExcludedCountries = []link.ExcludedCountry{{Code: "USA"}} }, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := attrs()
			if c.change != nil {
				c.change(&a)
			}
			l, err := link.Create(c.id, c.code, "alice", a, T0)
			ThenError(t, err, domain.KindInvalid, c.msg)
			if l != nil {
				t.Errorf("a refused create returned a link")
			}
		})
	}
}

func TestUpdate(t *testing.T) {
	t.Run("records the given fields only", func(t *testing.T) {
		l := given(t, created())
		p := link.Patch{Name: domain.Some("new"), ProjectID: domain.NullOpt[string]()}
		if err := l.Update(p, "bob", At(1)); err != nil {
			t.Fatal(err)
		}
		Then(t, l, &link.Updated{LinkID: "l1", Changes: p, By: "bob", At: At(1)})
		if l.Name != "new" || l.OriginalURL != "https://example.com" || !l.UpdatedAt.Equal(At(1)) || !l.CreatedAt.Equal(T0) {
			t.Errorf("state after update: %+v", l)
		}
		if v, _ := l.LoadedVersion(); v != 0 {
			t.Errorf("expected version %d, want 0", v)
		}
	})
	t.Run("changes the code", func(t *testing.T) {
		l := given(t, created())
		if err := l.Update(link.Patch{Code: domain.Some("xyz")}, "alice", At(1)); err != nil {
			t.Fatal(err)
		}
		if l.Code != "xyz" {
			t.Errorf("code %q", l.Code)
		}
	})
	for _, c := range []struct {
		name  string
		patch link.Patch
	}{
		{"bad URL", link.Patch{OriginalURL: domain.Some("mailto:")}},
		{"null URL", link.Patch{OriginalURL: domain.NullOpt[string]()}},
		{"bad code", link.Patch{Code: domain.Some("no/slash")}},
		{"null workspace", link.Patch{WorkspaceID: domain.NullOpt[string]()}},
		{"countries need label and phone", link.Patch{ExcludedCountries: domain.Some([]link.ExcludedCountry{{Code: "FR"}})}},
		{"click limit", link.Patch{ExpirationClickCount: domain.Some(int64(-1))}},
		{"bad android link", link.Patch{AndroidLink: domain.Some("data:text/html,x")}},
		{"bad QR", link.Patch{QRCodeOptions: domain.Some(link.QRCodeOptions{LogoSize: ptr(5000)})}},
	} {
		t.Run(c.name, func(t *testing.T) {
			l := given(t, created())
			ThenError(t, l.Update(c.patch, "alice", At(1)), domain.KindInvalid, "")
			ThenNothing(t, l)
		})
	}
	t.Run("deleted link", func(t *testing.T) {
		l := given(t, created(), &link.Deleted{LinkID: "l1", WorkspaceID: "w1", Code: "abc", At: At(1)})
		ThenError(t, l.Update(link.Patch{Name: domain.Some("x")}, "alice", At(2)), domain.KindNotFound, "Link not found")
		ThenNothing(t, l)
	})
	t.Run("no link", func(t *testing.T) {
		l := given(t)
		ThenError(t, l.Update(link.Patch{Name: domain.Some("x")}, "alice", At(2)), domain.KindNotFound, "Link not found")
	})
}

func TestArchive(t *testing.T) {
	t.Run("archive", func(t *testing.T) {
		l := given(t, created())
		if err := l.SetArchived(true, At(1)); err != nil {
			t.Fatal(err)
		}
		Then(t, l, &link.Archived{LinkID: "l1", At: At(1)})
		if !l.Archived || !l.UpdatedAt.Equal(At(1)) {
			t.Errorf("state: archived %v updated %v", l.Archived, l.UpdatedAt)
		}
	})
	t.Run("archive twice records nothing", func(t *testing.T) {
		l := given(t, created(), &link.Archived{LinkID: "l1", At: At(1)})
		if err := l.SetArchived(true, At(2)); err != nil {
			t.Fatal(err)
		}
		ThenNothing(t, l)
	})
	t.Run("unarchive", func(t *testing.T) {
		l := given(t, created(), &link.Archived{LinkID: "l1", At: At(1)})
		if err := l.SetArchived(false, At(2)); err != nil {
			t.Fatal(err)
		}
		Then(t, l, &link.Unarchived{LinkID: "l1", At: At(2)})
		if l.Archived {
			t.Errorf("still archived")
		}
	})
	t.Run("unarchive an active link records nothing", func(t *testing.T) {
		l := given(t, created())
		if err := l.SetArchived(false, At(2)); err != nil {
			t.Fatal(err)
		}
		ThenNothing(t, l)
	})
	t.Run("deleted", func(t *testing.T) {
		l := given(t, created(), &link.Deleted{LinkID: "l1", At: At(1)})
		ThenError(t, l.SetArchived(true, At(2)), domain.KindNotFound, "Link not found")
	})
}

func TestDelete(t *testing.T) {
	l := given(t, created(), &link.Updated{LinkID: "l1", Changes: link.Patch{Code: domain.Some("new")}, At: At(1)})
	if err := l.Delete(At(2)); err != nil {
		t.Fatal(err)
	}
	Then(t, l, &link.Deleted{LinkID: "l1", WorkspaceID: "w1", Code: "new", At: At(2)})
	if l.Exists() {
		t.Errorf("a deleted link exists")
	}
	ThenError(t, l.Delete(At(3)), domain.KindNotFound, "Link not found")
	if v, ok := l.LoadedVersion(); !ok || v != 1 {
		t.Errorf("loaded version %d %v, want 1", v, ok)
	}
}

func TestLoadRefusesForeignEvents(t *testing.T) {
	type other struct{ domain.Event }
	if _, err := link.Load([]domain.Event{created(), other{}}); err == nil {
		t.Fatal("loading a foreign event succeeded")
	}
}

func TestApplyPatch(t *testing.T) {
	a := attrs()
	a.ProjectID, a.PixelID = ptr("p1"), ptr("px")
	a.Metadata = &link.Preview{Title: ptr("t")}
	code := "abc"
	link.ApplyPatch(&a, &code, link.Patch{
		ProjectID: domain.NullOpt[string](), PixelID: domain.Some("px2"), Metadata: domain.NullOpt[link.Preview](),
		Description: domain.Some("d"), HasPublicStat: domain.Some(true), ExpirationClickCount: domain.Some(int64(3)),
	})
	if a.ProjectID != nil || *a.PixelID != "px2" || a.Metadata != nil || a.Description != "d" || !a.HasPublicStat || *a.ExpirationClickCount != 3 {
		t.Errorf("after patch: %+v", a)
	}
	if a.Name != "n" || a.OriginalURL != "https://example.com" || code != "abc" {
		t.Errorf("absent fields changed: %+v %q", a, code)
	}
}
