package pixel_test

import (
	"strings"
	"testing"

	"github.com/linkd/linkd/domain"
	. "github.com/linkd/linkd/domain/domaintest"
	"github.com/linkd/linkd/domain/pixel"
)

func created() *pixel.Created {
	return &pixel.Created{ID: "p1", WorkspaceID: "w1", Name: "Ads", Type: "meta", PixelID: "1234567890", CreatedBy: "alice", At: T0}
}

func given(t *testing.T, events ...domain.Event) *pixel.Pixel {
	t.Helper()
	p, err := pixel.Load(Given(t, events...))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestCreate(t *testing.T) {
	p, err := pixel.Create("p1", "w1", " Ads ", "Meta", " 1234567890 ", "alice", T0)
	if err != nil {
		t.Fatal(err)
	}
	Then(t, p, created())
	for give, want := range map[string]string{"Facebook": "meta", "twitter": "x", "X": "x", " TikTok ": "tiktok"} {
		if got, err := pixel.NormalizeType(give); err != nil || got != want {
			t.Errorf("type %q: %q %v, want %q", give, got, err, want)
		}
	}
	if got, err := pixel.NormalizeTagID("AW-123456789/AbC-D_efG"); err != nil || got != "AW-123456789/AbC-D_efG" {
		t.Errorf("Google Ads id with label: %q %v", got, err)
	}
	for _, typ := range pixel.Types {
		if _, err := pixel.Create("p1", "w1", "x", typ, "G-ABC_1.2", "alice", T0); err != nil {
			t.Errorf("type %s: %v", typ, err)
		}
	}
	for _, c := range []struct{ name, pname, typ, tag, msg string }{
		{"no name", "", "meta", "1", "Pixel name is required"},
		{"long name", strings.Repeat("n", pixel.MaxNameLength+1), "meta", "1", ""},
		{"no type", "x", "", "1", "Pixel type is required (one of meta, google, linkedin, tiktok, x)"},
		{"unknown type", "x", "snapchat", "1", "Invalid pixel type. Use one of meta, google, linkedin, tiktok, x"},
		{"no id", "x", "meta", " ", "pixel_id is required"},
		{"quote in id", "x", "meta", `1");alert(1)//`, ""},
		{"tag in id", "x", "google", "<script>", ""},
		{"space in id", "x", "x", "a b", ""},
		{"long id", "x", "tiktok", strings.Repeat("a", 101), ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := pixel.Create("p1", "w1", c.pname, c.typ, c.tag, "alice", T0)
			ThenError(t, err, domain.KindInvalid, c.msg)
		})
	}
}

func TestUpdate(t *testing.T) {
	t.Run("given fields", func(t *testing.T) {
		p := given(t, created())
		if err := p.Update(domain.Opt[string]{}, domain.Some("GOOGLE"), domain.Some("G-XYZ"), At(1)); err != nil {
			t.Fatal(err)
		}
		Then(t, p, &pixel.Updated{ID: "p1", WorkspaceID: "w1", Type: domain.Some("google"), PixelID: domain.Some("G-XYZ"), At: At(1)})
		if p.Name != "Ads" || p.Type != "google" || p.PixelID != "G-XYZ" {
			t.Errorf("state: %+v", p)
		}
	})
	for _, c := range []struct {
		name           string
		pname, typ, id domain.Opt[string]
		msg            string
	}{
		{"null name", domain.NullOpt[string](), domain.Opt[string]{}, domain.Opt[string]{}, "Pixel name is required"},
		{"blank name", domain.Some(" "), domain.Opt[string]{}, domain.Opt[string]{}, "Pixel name is required"},
		{"null type", domain.Opt[string]{}, domain.NullOpt[string](), domain.Opt[string]{}, "Pixel type is required (one of meta, google, linkedin, tiktok, x)"},
		{"null id", domain.Opt[string]{}, domain.Opt[string]{}, domain.NullOpt[string](), "pixel_id is required"},
		{"bad type", domain.Opt[string]{}, domain.Some("myspace"), domain.Opt[string]{}, ""},
		{"bad id", domain.Opt[string]{}, domain.Opt[string]{}, domain.Some("a'b"), ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := given(t, created())
			ThenError(t, p.Update(c.pname, c.typ, c.id, At(1)), domain.KindInvalid, c.msg)
			ThenNothing(t, p)
		})
	}
	t.Run("deleted", func(t *testing.T) {
		p := given(t, created(), &pixel.Deleted{ID: "p1", WorkspaceID: "w1", At: At(1)})
		ThenError(t, p.Update(domain.Some("x"), domain.Opt[string]{}, domain.Opt[string]{}, At(2)), domain.KindNotFound, pixel.MsgNotFound)
	})
}

func TestDelete(t *testing.T) {
	p := given(t, created())
	if err := p.Delete(At(1)); err != nil {
		t.Fatal(err)
	}
	Then(t, p, &pixel.Deleted{ID: "p1", WorkspaceID: "w1", At: At(1)})
	ThenError(t, p.Delete(At(2)), domain.KindNotFound, pixel.MsgNotFound)
}
