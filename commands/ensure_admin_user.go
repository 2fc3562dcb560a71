package commands

import (
	"context"
	"crypto/rand"
	"encoding/base64"

	"github.com/linkd/linkd/domain"
	"github.com/linkd/linkd/domain/reservation"
)

// EnsureAdminUser makes the operator user "admin" on first start, with
// LINKD_ADMIN_EMAIL and LINKD_INITIAL_ADMIN_PASSWORD, or a generated
// password. The claim "adminuser-admin" makes it happen once.
type EnsureAdminUser struct {
	Email    string
	Password string
}

type EnsureAdminUserHandler struct {
	*Deps
	Passwords PasswordHasher
}

// Handle returns the generated password when one was made ("" otherwise).
func (h EnsureAdminUserHandler) Handle(ctx context.Context, c EnsureAdminUser) (string, Result, error) {
	a := Actor{UserID: OperatorUser, Operator: true}
	r, err := loadReservation(ctx, h.Store, reservation.KindAdminUser, OperatorUser)
	if err != nil {
		return "", Result{}, err
	}
	if r.Holding {
		return "", Result{}, nil // made on an earlier start
	}
	u, err := loadUser(ctx, h.Store, OperatorUser)
	if err != nil {
		return "", Result{}, err
	}
	var res Result
	generated := ""
	if !u.Exists() {
		password := c.Password
		if password == "" {
			password = NewPassword()
			generated = password
		}
		email := c.Email
		if email == "" {
			email = "admin@localhost"
		}
		_, res, err = createUser(ctx, h.Deps, h.Passwords, a, OperatorUser, email, password)
		if domain.KindOf(err) == domain.KindConflict {
			// Another instance starting at the same time made it.
			return "", Result{}, nil
		}
		if err != nil {
			return "", Result{}, err
		}
	}
	r2, _, err := reserve(ctx, h.Deps, a, reservation.KindAdminUser, OperatorUser, "admin", OperatorUser, "", nil)
	if err != nil {
		return "", Result{}, err
	}
	res.merge(r2)
	return generated, res, nil
}

// NewPassword is a random password of 20 characters (120 bits).
func NewPassword() string {
	b := make([]byte, 15)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}
