package commands

import (
	"context"

	"github.com/linkd/linkd/domain/user"
)

// The users' and sessions' part of the front door (commands.New): the
// dashboard signs people in, keeps their sessions and invites members
// through these.

// StartSessionCmd records a session of a user who signed in; Hash is the
// hash of the session cookie's value.
type StartSessionCmd struct {
	Hash, UserID, Email string
}

// EndSessionCmd records a sign-out of the session of Hash.
type EndSessionCmd struct {
	Hash string
}

// Invitation is what InviteMember answers: the one-time token (shown once)
// and the invitation.
type Invitation struct {
	Token      string
	Invitation *user.Invitation
}

// SessionByHash loads the session of a cookie's hash; ok is false when it
// signs nobody in (unknown, ended or expired).
func (c *Commands) SessionByHash(ctx context.Context, hash string) (*user.Session, bool, error) {
	return SessionByHash(ctx, c.deps, hash)
}

// InvitationByToken loads the invitation of a one-time token.
func (c *Commands) InvitationByToken(ctx context.Context, token string) (*user.Invitation, error) {
	return InvitationByToken(ctx, c.deps, token)
}

// EmailTaken reports whether a user has the email already.
func (c *Commands) EmailTaken(ctx context.Context, email string) (bool, error) {
	return EmailTaken(ctx, c.deps, email)
}

func (c Config) userCommands(dec decorator, cmds *Commands) {
	d := c.Deps
	cmds.CreateUser = decorate[CreateUser, *user.User](dec, "CreateUser", CreateUserHandler{Deps: d, Passwords: c.Passwords})
	cmds.SignIn = decorate[SignIn, *user.User](dec, "SignIn", handlerFunc[SignIn, *user.User](
		func(ctx context.Context, s SignIn) (*user.User, Result, error) {
			u, err := SignInHandler{Deps: d, Passwords: c.Passwords}.Handle(ctx, s)
			return u, Result{}, err
		}))
	cmds.StartSession = decorateDoer[StartSessionCmd](dec, "StartSession", doerFunc[StartSessionCmd](
		func(ctx context.Context, s StartSessionCmd) (Result, error) {
			return StartSession(ctx, d, s.Hash, s.UserID, s.Email)
		}))
	cmds.EndSession = decorateDoer[EndSessionCmd](dec, "EndSession", doerFunc[EndSessionCmd](
		func(ctx context.Context, s EndSessionCmd) (Result, error) { return EndSession(ctx, d, s.Hash) }))
	cmds.InviteMember = decorate[InviteMember, Invitation](dec, "InviteMember", handlerFunc[InviteMember, Invitation](
		func(ctx context.Context, i InviteMember) (Invitation, Result, error) {
			token, inv, res, err := InviteMemberHandler{Deps: d}.Handle(ctx, i)
			return Invitation{Token: token, Invitation: inv}, res, err
		}))
	cmds.AcceptInvitation = decorate[AcceptInvitation, *user.User](dec, "AcceptInvitation", AcceptInvitationHandler{Deps: d, Passwords: c.Passwords})
}
