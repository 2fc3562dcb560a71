package commands

import (
	"context"

	"github.com/linkd/linkd/domain"
	"github.com/linkd/linkd/domain/reservation"
	"github.com/linkd/linkd/domain/user"
)

// SignIn checks a user's email and password.
type SignIn struct {
	Email    string
	Password string
}

type SignInHandler struct {
	*Deps
	Passwords PasswordHasher
}

// ErrBadCredentials is SignIn's answer to an unknown email or a wrong
// password: both alike, so that nobody learns which emails exist.
var ErrBadCredentials = &domain.Error{Kind: domain.KindUnauthorized, Message: "Wrong email or password"}

// Handle returns the user whose email and password these are.
func (h SignInHandler) Handle(ctx context.Context, c SignIn) (*user.User, error) {
	email, err := user.NormalizeEmail(c.Email)
	if err != nil || c.Password == "" || len(c.Password) > user.MaxPasswordLength {
		return nil, ErrBadCredentials
	}
	r, err := loadReservation(ctx, h.Store, reservation.KindUserEmail, user.EmailKey(email))
	if err != nil {
		return nil, err
	}
	if !r.Holding {
		// Spend the time a check takes, so that an unknown email answers
		// no faster than a wrong password.
		_, _ = h.Passwords.Hash(c.Password)
		return nil, ErrBadCredentials
	}
	u, err := loadUser(ctx, h.Store, r.Owner)
	if err != nil {
		return nil, err
	}
	if !u.Exists() {
		return nil, ErrBadCredentials
	}
	ok, err := h.Passwords.Verify(u.PasswordHash, c.Password)
	if err != nil || !ok {
		return nil, ErrBadCredentials
	}
	return u, nil
}
