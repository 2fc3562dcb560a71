package commands_test

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"github.com/linkd/linkd/commands"
	"github.com/linkd/linkd/domain"
	"github.com/linkd/linkd/eventstore/embedded"
	"github.com/linkd/linkd/internal/password"
)

func userDeps(t *testing.T) *commands.Deps {
	t.Helper()
	store, err := embedded.Open(embedded.Options{Dir: t.TempDir(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	return &commands.Deps{Store: store}
}

func TestUsers(t *testing.T) {
	ctx := context.Background()
	d := userDeps(t)
	pw := password.Argon2id{}
	operator := commands.Actor{UserID: "admin", Operator: true}
	create := commands.CreateUserHandler{Deps: d, Passwords: pw}

	if _, _, err := create.Handle(ctx, commands.CreateUser{Actor: alice, UserID: "carol", Email: "carol@example.com", Password: "long enough"}); domain.KindOf(err) != domain.KindForbidden {
		t.Fatalf("a key that is not the operator's: %v", err)
	}
	if _, _, err := create.Handle(ctx, commands.CreateUser{Actor: operator, UserID: "carol", Email: "Carol@Example.com", Password: "long enough"}); err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]commands.CreateUser{
		"same id":                  {Actor: operator, UserID: "carol", Email: "other@example.com", Password: "long enough"},
		"same email in other case": {Actor: operator, UserID: "dave", Email: "carol@EXAMPLE.com", Password: "long enough"},
	} {
		if _, _, err := create.Handle(ctx, c); domain.KindOf(err) != domain.KindConflict {
			t.Errorf("%s: %v, want a conflict", name, err)
		}
	}
	if _, _, err := create.Handle(ctx, commands.CreateUser{Actor: operator, UserID: "dave", Email: "dave@example.com", Password: "short"}); domain.KindOf(err) != domain.KindInvalid {
		t.Errorf("short password: %v", err)
	}

	sign := commands.SignInHandler{Deps: d, Passwords: pw}
	u, err := sign.Handle(ctx, commands.SignIn{Email: "carol@example.com", Password: "long enough"})
	if err != nil || u.ID != "carol" {
		t.Fatalf("sign-in: %v %v", u, err)
	}
	for _, c := range []commands.SignIn{{Email: "carol@example.com", Password: "wrong one!"}, {Email: "nobody@example.com", Password: "long enough"}, {}} {
		if _, err := sign.Handle(ctx, c); err != commands.ErrBadCredentials {
			t.Errorf("%+v: %v", c, err)
		}
	}

	admin := commands.EnsureAdminUserHandler{Deps: d, Passwords: pw}
	generated, res, err := admin.Handle(ctx, commands.EnsureAdminUser{})
	if err != nil || generated == "" || !res.Wrote {
		t.Fatalf("first start: %q %v %v", generated, res, err)
	}
	if u, err := sign.Handle(ctx, commands.SignIn{Email: "admin@localhost", Password: generated}); err != nil || u.ID != "admin" {
		t.Fatalf("admin sign-in: %v %v", u, err)
	}
	again, res, err := admin.Handle(ctx, commands.EnsureAdminUser{Password: "another password"})
	if err != nil || again != "" || res.Wrote {
		t.Fatalf("second start: %q %v %v", again, res, err)
	}
}
