package user_test

import (
	"testing"
	"time"

	"github.com/linkd/linkd/domain"
	. "github.com/linkd/linkd/domain/domaintest"
	"github.com/linkd/linkd/domain/user"
)

func TestCreate(t *testing.T) {
	for _, c := range []struct {
		name, id, email, hash string
		kind                  domain.Kind
	}{
		{"created", "alice", " alice@example.com ", "h", 0},
		{"no id", "", "alice@example.com", "h", domain.KindInvalid},
		{"id with a slash", "a/b", "alice@example.com", "h", domain.KindInvalid},
		{"no at sign", "alice", "alice.example.com", "h", domain.KindInvalid},
		{"nothing after the at sign", "alice", "alice@", "h", domain.KindInvalid},
		{"markup in the email", "alice", "<b>@example.com", "h", domain.KindInvalid},
		{"no hash", "alice", "alice@example.com", "", domain.KindInvalid},
	} {
		t.Run(c.name, func(t *testing.T) {
			u := &user.User{}
			err := u.Create(c.id, c.email, c.hash, T0)
			if domain.KindOf(err) != c.kind {
				t.Fatalf("error %v, want kind %d", err, c.kind)
			}
			if err != nil {
				if len(u.Pending()) != 0 {
					t.Fatalf("events recorded on error: %v", u.Pending())
				}
				return
			}
			got := u.Pending()
			want := &user.Created{UserID: "alice", Email: "alice@example.com", PasswordHash: "h", At: T0}
			if len(got) != 1 || *got[0].(*user.Created) != *want {
				t.Fatalf("events %v, want %v", got, want)
			}
		})
	}
}

func TestCreateTwice(t *testing.T) {
	u, err := user.Load([]domain.Event{&user.Created{UserID: "alice", Email: "a@example.com", PasswordHash: "h", At: T0}})
	if err != nil {
		t.Fatal(err)
	}
	if err := u.Create("alice", "a@example.com", "h", T0); domain.KindOf(err) != domain.KindConflict {
		t.Fatalf("got %v, want a conflict", err)
	}
}

func TestSetPassword(t *testing.T) {
	u, _ := user.Load([]domain.Event{&user.Created{UserID: "alice", Email: "a@example.com", PasswordHash: "h", At: T0}})
	if err := u.SetPassword("h2", T0); err != nil {
		t.Fatal(err)
	}
	if u.PasswordHash != "h2" || len(u.Pending()) != 1 {
		t.Fatalf("hash %q, pending %v", u.PasswordHash, u.Pending())
	}
	if err := (&user.User{}).SetPassword("h", T0); domain.KindOf(err) != domain.KindNotFound {
		t.Fatalf("unknown user: got %v", err)
	}
}

func TestCheckPassword(t *testing.T) {
	for pw, ok := range map[string]bool{"short": false, "long enough": true, "ééééééé": false, "éééééééé": true} {
		if err := user.CheckPassword(pw); (err == nil) != ok {
			t.Errorf("CheckPassword(%q) = %v", pw, err)
		}
	}
}

func TestInvitation(t *testing.T) {
	inv, err := user.Invite("h", "ws-1", "Bob@example.com", "member", "alice", T0)
	if err != nil {
		t.Fatal(err)
	}
	if inv.Email != "Bob@example.com" || !inv.ExpiresAt.Equal(T0.Add(user.InvitationTTL)) {
		t.Fatalf("invitation %+v", inv.Invited)
	}
	if _, err := user.Invite("h", "ws-1", "bob@example.com", "owner", "alice", T0); domain.KindOf(err) != domain.KindInvalid {
		t.Errorf("role owner: %v", err)
	}
	if err := inv.Accept("bob", T0.Add(user.InvitationTTL)); domain.KindOf(err) != domain.KindGone {
		t.Errorf("expired: %v", err)
	}
	if err := inv.Accept("bob", T0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := inv.Accept("carol", T0.Add(time.Hour)); domain.KindOf(err) != domain.KindGone {
		t.Errorf("used twice: %v", err)
	}
	if err := (&user.Invitation{}).Usable(T0); domain.KindOf(err) != domain.KindNotFound {
		t.Errorf("unknown: %v", err)
	}
}

func TestSession(t *testing.T) {
	s, err := user.StartSession("h", "alice", "a@example.com", T0)
	if err != nil {
		t.Fatal(err)
	}
	if !s.Valid(T0.Add(time.Hour)) || s.Valid(T0.Add(user.SessionTTL)) {
		t.Fatalf("validity over time")
	}
	s.End(T0.Add(time.Minute))
	s.End(T0.Add(2 * time.Minute))
	if s.Valid(T0.Add(time.Hour)) || len(s.Pending()) != 2 {
		t.Fatalf("ended session: valid %v, events %v", s.Valid(T0.Add(time.Hour)), s.Pending())
	}
}
