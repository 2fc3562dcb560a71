package commands

import (
	"context"
	"crypto/sha256"
	"encoding/hex"

	"github.com/linkd/linkd/domain"
	"github.com/linkd/linkd/domain/reservation"
	"github.com/linkd/linkd/domain/user"
)

// InvitationTokenHash is the hash that names an invitation's stream: the
// token itself is only in the link handed to the invited person.
func InvitationTokenHash(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// InviteMember makes a one-time invitation into a workspace; only its
// admins may. The token returned goes into the link (no mail is sent).
type InviteMember struct {
	Actor       Actor
	WorkspaceID string
	Email       string
	Role        string
}

type InviteMemberHandler struct{ *Deps }

func (h InviteMemberHandler) Handle(ctx context.Context, c InviteMember) (string, *user.Invitation, Result, error) {
	if c.Role == "" {
		c.Role = "member"
	}
	if err := adminOf(ctx, h.Deps, c.Actor, c.WorkspaceID); err != nil {
		return "", nil, Result{}, err
	}
	token := NewPassword() + NewPassword()
	inv, err := user.Invite(InvitationTokenHash(token), c.WorkspaceID, c.Email, c.Role, c.Actor.UserID, h.now())
	if err != nil {
		return "", nil, Result{}, err
	}
	res, err := save(ctx, h.Store, user.InvitationStream(inv.TokenHash), inv, metaOf(c.Actor))
	if err != nil {
		return "", nil, Result{}, err
	}
	return token, inv, res, nil
}

// InvitationByToken loads an invitation that can still be accepted.
func InvitationByToken(ctx context.Context, d *Deps, token string) (*user.Invitation, error) {
	if token == "" || len(token) > 100 {
		return nil, domain.NotFound("Invitation not found")
	}
	events, err := readAll(ctx, d.Store, user.InvitationStream(InvitationTokenHash(token)))
	if err != nil {
		return nil, err
	}
	inv, err := user.LoadInvitation(events)
	if err != nil {
		return nil, err
	}
	if err := inv.Usable(d.now()); err != nil {
		return nil, err
	}
	return inv, nil
}

// AcceptInvitation uses an invitation: a new person chooses a user id and
// a password and becomes a user; a person whose email is already a
// user's gives that user's password. Either way the user joins the
// workspace with the invitation's role, added as the admin who invited.
type AcceptInvitation struct {
	Token    string
	UserID   string // for a new user
	Password string
}

type AcceptInvitationHandler struct {
	*Deps
	Passwords PasswordHasher
}

// Handle returns the user who joined.
func (h AcceptInvitationHandler) Handle(ctx context.Context, c AcceptInvitation) (*user.User, Result, error) {
	inv, err := InvitationByToken(ctx, h.Deps, c.Token)
	if err != nil {
		return nil, Result{}, err
	}
	inviter := Actor{UserID: inv.InvitedBy}
	if err := adminOf(ctx, h.Deps, inviter, inv.WorkspaceID); err != nil {
		return nil, Result{}, domain.Gone("This invitation is no longer valid: who sent it is no longer an admin of the workspace")
	}
	r, err := loadReservation(ctx, h.Store, reservation.KindUserEmail, user.EmailKey(inv.Email))
	if err != nil {
		return nil, Result{}, err
	}
	var u *user.User
	var res Result
	if r.Holding {
		u, err = SignInHandler(h).Handle(ctx, SignIn{Email: inv.Email, Password: c.Password})
		if err != nil {
			return nil, Result{}, err
		}
	} else {
		u, res, err = createUser(ctx, h.Deps, h.Passwords, inviter, c.UserID, inv.Email, c.Password)
		if err != nil {
			return nil, Result{}, err
		}
	}
	r2, err := MembersHandler{h.Deps}.Add(ctx, AddMember{Actor: inviter, WorkspaceID: inv.WorkspaceID, UserID: u.ID, Email: u.Email, Role: inv.Role})
	if err != nil && domain.KindOf(err) != domain.KindConflict {
		return nil, Result{}, err
	}
	res.merge(r2)
	if err := inv.Accept(u.ID, h.now()); err != nil {
		return nil, Result{}, err
	}
	r3, err := save(ctx, h.Store, user.InvitationStream(inv.TokenHash), inv, metaOf(Actor{UserID: u.ID}))
	if err != nil {
		return nil, Result{}, err
	}
	res.merge(r3)
	return u, res, nil
}

// EmailTaken reports whether a user has email.
func EmailTaken(ctx context.Context, d *Deps, email string) (bool, error) {
	r, err := loadReservation(ctx, d.Store, reservation.KindUserEmail, user.EmailKey(email))
	if err != nil {
		return false, err
	}
	return r.Holding, nil
}
