package workspace_test

import (
	"strings"
	"testing"

	"github.com/linkd/linkd/domain"
	. "github.com/linkd/linkd/domain/domaintest"
	"github.com/linkd/linkd/domain/workspace"
)

func created() []domain.Event {
	return []domain.Event{
		&workspace.Created{WorkspaceID: "w1", Name: "Team", Description: "d", OwnerID: "alice", Plan: workspace.PlanPro, At: T0},
		&workspace.MemberAdded{WorkspaceID: "w1", UserID: "alice", Role: workspace.RoleAdmin, At: T0},
	}
}

func withBob(role string) []domain.Event {
	return append(created(), &workspace.MemberAdded{WorkspaceID: "w1", UserID: "bob", Email: "bob@example.com", Role: role, At: At(1)})
}

func given(t *testing.T, events ...domain.Event) *workspace.Workspace {
	t.Helper()
	w, err := workspace.Load(Given(t, events...))
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func TestCreate(t *testing.T) {
	w, err := workspace.Create("w1", "  Team ", "d", "alice", workspace.PlanPro, false, T0)
	if err != nil {
		t.Fatal(err)
	}
	Then(t, w, created()...)
	if !w.IsAdmin("alice") || w.Name != "Team" {
		t.Errorf("state: %+v", w)
	}
	for _, c := range []struct {
		name, wsName, desc, plan, msg string
	}{
		{"no name", "", "", workspace.PlanPro, "Workspace name is required"},
		{"blank name", "  ", "", workspace.PlanPro, "Workspace name is required"},
		{"long name", strings.Repeat("n", workspace.MaxNameLength+1), "", workspace.PlanPro, ""},
		{"long description", "n", strings.Repeat("d", workspace.MaxDescriptionLength+1), workspace.PlanPro, ""},
		{"unknown plan", "n", "", "gold", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := workspace.Create("w1", c.wsName, c.desc, "alice", c.plan, false, T0)
			ThenError(t, err, domain.KindInvalid, c.msg)
		})
	}
}

func TestUpdate(t *testing.T) {
	t.Run("admin renames", func(t *testing.T) {
		w := given(t, created()...)
		if err := w.Update("alice", domain.Some(" Crew "), domain.Opt[string]{}, At(1)); err != nil {
			t.Fatal(err)
		}
		Then(t, w, &workspace.Updated{WorkspaceID: "w1", Name: domain.Some("Crew"), At: At(1)})
		if w.Name != "Crew" || w.Description != "d" {
			t.Errorf("state: %+v", w)
		}
	})
	t.Run("same name is not recorded as a rename", func(t *testing.T) {
		w := given(t, created()...)
		if err := w.Update("alice", domain.Some("Team"), domain.Some("new"), At(1)); err != nil {
			t.Fatal(err)
		}
		Then(t, w, &workspace.Updated{WorkspaceID: "w1", Description: domain.Some("new"), At: At(1)})
	})
	t.Run("member may not", func(t *testing.T) {
		w := given(t, withBob(workspace.RoleMember)...)
		ThenError(t, w.Update("bob", domain.Some("Mine"), domain.Opt[string]{}, At(2)), domain.KindForbidden, domain.MsgInsufficientPermissions)
		ThenNothing(t, w)
	})
	t.Run("stranger may not", func(t *testing.T) {
		w := given(t, created()...)
		ThenError(t, w.Update("eve", domain.Some("Mine"), domain.Opt[string]{}, At(2)), domain.KindForbidden, "")
	})
	t.Run("null name", func(t *testing.T) {
		w := given(t, created()...)
		ThenError(t, w.Update("alice", domain.NullOpt[string](), domain.Opt[string]{}, At(1)), domain.KindInvalid, "Workspace name is required")
	})
	t.Run("deleted", func(t *testing.T) {
		w := given(t, append(created(), &workspace.Deleted{WorkspaceID: "w1", Name: "Team", At: At(1)})...)
		ThenError(t, w.Update("alice", domain.Some("x"), domain.Opt[string]{}, At(2)), domain.KindNotFound, "Workspace not found")
	})
}

func TestDelete(t *testing.T) {
	w := given(t, withBob(workspace.RoleMember)...)
	ThenError(t, w.Delete("bob", At(2)), domain.KindForbidden, "")
	if err := w.Delete("alice", At(2)); err != nil {
		t.Fatal(err)
	}
	Then(t, w, &workspace.Deleted{WorkspaceID: "w1", Name: "Team", At: At(2)})
	if w.Exists() || w.IsMember("alice") || w.IsMember("bob") {
		t.Errorf("a deleted workspace keeps members: %+v", w.Members)
	}
	ThenError(t, w.Delete("alice", At(3)), domain.KindNotFound, "Workspace not found")
}

func TestMembers(t *testing.T) {
	t.Run("add with default role", func(t *testing.T) {
		w := given(t, created()...)
		if err := w.AddMember("alice", "bob", "bob@example.com", "", At(1)); err != nil {
			t.Fatal(err)
		}
		Then(t, w, &workspace.MemberAdded{WorkspaceID: "w1", UserID: "bob", Email: "bob@example.com", Role: workspace.RoleMember, At: At(1)})
	})
	t.Run("adding again without a role records nothing", func(t *testing.T) {
		w := given(t, withBob(workspace.RoleAdmin)...)
		if err := w.AddMember("alice", "bob", "", "", At(2)); err != nil {
			t.Fatal(err)
		}
		ThenNothing(t, w)
	})
	t.Run("adding again with the same role records nothing", func(t *testing.T) {
		w := given(t, withBob(workspace.RoleMember)...)
		if err := w.AddMember("alice", "bob", "", workspace.RoleMember, At(2)); err != nil {
			t.Fatal(err)
		}
		ThenNothing(t, w)
	})
	t.Run("adding again with another role changes it", func(t *testing.T) {
		w := given(t, withBob(workspace.RoleMember)...)
		if err := w.AddMember("alice", "bob", "", workspace.RoleAdmin, At(2)); err != nil {
			t.Fatal(err)
		}
		Then(t, w, &workspace.MemberRoleChanged{WorkspaceID: "w1", UserID: "bob", Role: workspace.RoleAdmin, At: At(2)})
	})
	t.Run("change role", func(t *testing.T) {
		w := given(t, withBob(workspace.RoleMember)...)
		if err := w.ChangeRole("alice", "bob", workspace.RoleAdmin, At(2)); err != nil {
			t.Fatal(err)
		}
		Then(t, w, &workspace.MemberRoleChanged{WorkspaceID: "w1", UserID: "bob", Role: workspace.RoleAdmin, At: At(2)})
		if !w.IsAdmin("bob") {
			t.Errorf("bob not admin")
		}
	})
	t.Run("remove", func(t *testing.T) {
		w := given(t, withBob(workspace.RoleMember)...)
		if err := w.RemoveMember("alice", "bob", At(2)); err != nil {
			t.Fatal(err)
		}
		Then(t, w, &workspace.MemberRemoved{WorkspaceID: "w1", UserID: "bob", At: At(2)})
		if w.IsMember("bob") {
			t.Errorf("bob still a member")
		}
	})
	t.Run("an admin leaves when another admin stays", func(t *testing.T) {
		w := given(t, withBob(workspace.RoleAdmin)...)
		if err := w.RemoveMember("bob", "alice", At(2)); err != nil {
			t.Fatal(err)
		}
		Then(t, w, &workspace.MemberRemoved{WorkspaceID: "w1", UserID: "alice", At: At(2)})
	})
	refusals := []struct {
		name string
		do   func(w *workspace.Workspace) error
		kind domain.Kind
		msg  string
	}{
		{"member adds", func(w *workspace.Workspace) error { return w.AddMember("bob", "carol", "", "", At(2)) }, domain.KindForbidden, domain.MsgInsufficientPermissions},
		{"member changes a role", func(w *workspace.Workspace) error { return w.ChangeRole("bob", "bob", workspace.RoleAdmin, At(2)) }, domain.KindForbidden, ""},
		{"member removes", func(w *workspace.Workspace) error { return w.RemoveMember("bob", "alice", At(2)) }, domain.KindForbidden, ""},
		{"no user", func(w *workspace.Workspace) error { return w.AddMember("alice", " ", "", "", At(2)) }, domain.KindInvalid, "user_id is required"},
		{"bad role", func(w *workspace.Workspace) error { return w.AddMember("alice", "carol", "", "owner", At(2)) }, domain.KindInvalid, "role must be admin or member"},
		{"bad new role", func(w *workspace.Workspace) error { return w.ChangeRole("alice", "bob", "root", At(2)) }, domain.KindInvalid, "role must be admin or member"},
		{"unknown member", func(w *workspace.Workspace) error { return w.ChangeRole("alice", "zed", workspace.RoleAdmin, At(2)) }, domain.KindNotFound, "Member not found"},
		{"remove unknown", func(w *workspace.Workspace) error { return w.RemoveMember("alice", "zed", At(2)) }, domain.KindNotFound, "Member not found"},
		{"last admin demoted", func(w *workspace.Workspace) error { return w.ChangeRole("alice", "alice", workspace.RoleMember, At(2)) }, domain.KindInvalid, "A workspace needs at least one admin"},
		{"last admin demoted by a re-add", func(w *workspace.Workspace) error {
			return w.AddMember("alice", "alice", "", workspace.RoleMember, At(2))
		}, domain.KindInvalid, "A workspace needs at least one admin"},
		{"last admin removed", func(w *workspace.Workspace) error { return w.RemoveMember("alice", "alice", At(2)) }, domain.KindInvalid, "A workspace needs at least one admin"},
	}
	for _, c := range refusals {
		t.Run(c.name, func(t *testing.T) {
			w := given(t, withBob(workspace.RoleMember)...)
			ThenError(t, c.do(w), c.kind, c.msg)
			ThenNothing(t, w)
		})
	}
}
