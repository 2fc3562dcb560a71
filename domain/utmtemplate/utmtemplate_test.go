package utmtemplate_test

import (
	"strings"
	"testing"

	"github.com/linkd/linkd/domain"
	. "github.com/linkd/linkd/domain/domaintest"
	"github.com/linkd/linkd/domain/link"
	"github.com/linkd/linkd/domain/utmtemplate"
)

func created() *utmtemplate.Created {
	return &utmtemplate.Created{TemplateID: "t1", WorkspaceID: "w1", Name: "Newsletter",
		Values: utmtemplate.Values{Source: "news", Medium: "email"}, CreatedBy: "alice", At: T0}
}

func given(t *testing.T, events ...domain.Event) *utmtemplate.Template {
	t.Helper()
	x, err := utmtemplate.Load(Given(t, events...))
	if err != nil {
		t.Fatal(err)
	}
	return x
}

func TestCreate(t *testing.T) {
	x, err := utmtemplate.Create("t1", "w1", " Newsletter ", utmtemplate.Values{Source: "news", Medium: "email"}, "alice", T0)
	if err != nil {
		t.Fatal(err)
	}
	Then(t, x, created())
	for _, c := range []struct {
		name, tname string
		values      utmtemplate.Values
		msg         string
	}{
		{"no name", "", utmtemplate.Values{}, "UTM template name is required"},
		{"blank name", " \t", utmtemplate.Values{}, "UTM template name is required"},
		{"long name", strings.Repeat("n", utmtemplate.MaxNameLength+1), utmtemplate.Values{}, ""},
		{"long value", "x", utmtemplate.Values{Campaign: strings.Repeat("c", link.MaxNameLength+1)}, ""},
		{"not UTF-8", "x", utmtemplate.Values{Term: "\xff"}, "utm_term is not valid UTF-8"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := utmtemplate.Create("t1", "w1", c.tname, c.values, "alice", T0)
			ThenError(t, err, domain.KindInvalid, c.msg)
		})
	}
}

func TestUpdate(t *testing.T) {
	t.Run("given fields, null clears", func(t *testing.T) {
		x := given(t, created())
		patch := utmtemplate.Patch{Medium: domain.NullOpt[string](), Campaign: domain.Some("spring")}
		if err := x.Update(domain.Some("Spring"), patch, At(1)); err != nil {
			t.Fatal(err)
		}
		Then(t, x, &utmtemplate.Updated{TemplateID: "t1", WorkspaceID: "w1", Name: domain.Some("Spring"), Patch: patch, At: At(1)})
		want := utmtemplate.Values{Source: "news", Campaign: "spring"}
		if x.Name != "Spring" || x.Values != want || !x.UpdatedAt.Equal(At(1)) {
			t.Errorf("state: %+v", x)
		}
	})
	t.Run("null name", func(t *testing.T) {
		x := given(t, created())
		ThenError(t, x.Update(domain.NullOpt[string](), utmtemplate.Patch{}, At(1)), domain.KindInvalid, "UTM template name is required")
		ThenNothing(t, x)
	})
	t.Run("long value", func(t *testing.T) {
		x := given(t, created())
		ThenError(t, x.Update(domain.Opt[string]{}, utmtemplate.Patch{Source: domain.Some(strings.Repeat("s", link.MaxNameLength+1))}, At(1)), domain.KindInvalid, "")
		ThenNothing(t, x)
	})
	t.Run("deleted", func(t *testing.T) {
		x := given(t, created(), &utmtemplate.Deleted{TemplateID: "t1", WorkspaceID: "w1", At: At(1)})
		ThenError(t, x.Update(domain.Some("x"), utmtemplate.Patch{}, At(2)), domain.KindNotFound, utmtemplate.MsgNotFound)
	})
}

func TestDelete(t *testing.T) {
	x := given(t, created())
	if err := x.Delete(At(1)); err != nil {
		t.Fatal(err)
	}
	Then(t, x, &utmtemplate.Deleted{TemplateID: "t1", WorkspaceID: "w1", At: At(1)})
	if x.Exists() {
		t.Error("a deleted template exists")
	}
	ThenError(t, x.Delete(At(2)), domain.KindNotFound, utmtemplate.MsgNotFound)
	ThenError(t, given(t).Delete(At(2)), domain.KindNotFound, utmtemplate.MsgNotFound)
}
