package project_test

import (
	"strings"
	"testing"

	"github.com/linkd/linkd/domain"
	. "github.com/linkd/linkd/domain/domaintest"
	"github.com/linkd/linkd/domain/project"
)

func created() *project.Created {
	return &project.Created{ProjectID: "p1", WorkspaceID: "w1", Name: "Launch", Description: "d", Color: "#000000", CreatedBy: "alice", At: T0}
}

func given(t *testing.T, events ...domain.Event) *project.Project {
	t.Helper()
	p, err := project.Load(Given(t, events...))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestCreate(t *testing.T) {
	for _, c := range []struct{ give, want string }{
		{"", "#000000"}, {"#abc", "#ABC"}, {"#a1B2c3", "#A1B2C3"}, {"#FFF", "#FFF"},
	} {
		p, err := project.Create("p1", "w1", " Launch ", "d", c.give, "alice", T0)
		if err != nil {
			t.Fatalf("colour %q: %v", c.give, err)
		}
		want := created()
		want.Color = c.want
		Then(t, p, want)
	}
	for _, c := range []struct{ name, pname, desc, color, msg string }{
		{"no name", "", "", "", "Project name is required"},
		{"blank name", "\t", "", "", "Project name is required"},
		{"long name", strings.Repeat("x", project.MaxNameLength+1), "", "", ""},
		{"long description", "x", strings.Repeat("d", project.MaxDescriptionLength+1), "", ""},
		{"colour without #", "x", "", "abcdef", ""},
		{"colour of 4 digits", "x", "", "#abcd", ""},
		{"colour not hex", "x", "", "#ggg", ""},
		{"colour name", "x", "", "red", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := project.Create("p1", "w1", c.pname, c.desc, c.color, "alice", T0)
			ThenError(t, err, domain.KindInvalid, c.msg)
		})
	}
}

func TestUpdate(t *testing.T) {
	t.Run("given fields", func(t *testing.T) {
		p := given(t, created())
		if err := p.Update(domain.Some("Relaunch"), domain.Opt[string]{}, domain.Some("#fff"), At(1)); err != nil {
			t.Fatal(err)
		}
		Then(t, p, &project.Updated{ProjectID: "p1", WorkspaceID: "w1", Name: domain.Some("Relaunch"), Color: domain.Some("#FFF"), At: At(1)})
		if p.Name != "Relaunch" || p.Description != "d" || p.Color != "#FFF" || !p.UpdatedAt.Equal(At(1)) {
			t.Errorf("state: %+v", p)
		}
	})
	t.Run("null colour resets to the default", func(t *testing.T) {
		p := given(t, created(), &project.Updated{ProjectID: "p1", Color: domain.Some("#123"), At: At(1)})
		if err := p.Update(domain.Opt[string]{}, domain.Opt[string]{}, domain.NullOpt[string](), At(2)); err != nil {
			t.Fatal(err)
		}
		if p.Color != project.DefaultColor {
			t.Errorf("colour %q", p.Color)
		}
	})
	for _, c := range []struct {
		name              string
		pname, desc, colr domain.Opt[string]
		msg               string
	}{
		{"null name", domain.NullOpt[string](), domain.Opt[string]{}, domain.Opt[string]{}, "Project name is required"},
		{"empty name", domain.Some(""), domain.Opt[string]{}, domain.Opt[string]{}, "Project name is required"},
		{"bad colour", domain.Opt[string]{}, domain.Opt[string]{}, domain.Some("blue"), ""},
		{"long description", domain.Opt[string]{}, domain.Some(strings.Repeat("d", project.MaxDescriptionLength+1)), domain.Opt[string]{}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := given(t, created())
			ThenError(t, p.Update(c.pname, c.desc, c.colr, At(1)), domain.KindInvalid, c.msg)
			ThenNothing(t, p)
		})
	}
	t.Run("deleted", func(t *testing.T) {
		p := given(t, created(), &project.Deleted{ProjectID: "p1", WorkspaceID: "w1", Name: "Launch", At: At(1)})
		ThenError(t, p.Update(domain.Some("x"), domain.Opt[string]{}, domain.Opt[string]{}, At(2)), domain.KindNotFound, "Project not found")
	})
}

func TestDelete(t *testing.T) {
	p := given(t, created())
	if err := p.Delete(At(1)); err != nil {
		t.Fatal(err)
	}
	Then(t, p, &project.Deleted{ProjectID: "p1", WorkspaceID: "w1", Name: "Launch", At: At(1)})
	ThenError(t, p.Delete(At(2)), domain.KindNotFound, "Project not found")
	ThenError(t, given(t).Delete(At(2)), domain.KindNotFound, "Project not found")
}
