package commands

import (
	"context"
	"crypto/rand"
	"encoding/base64"

	"github.com/linkd/linkd/domain"
	"github.com/linkd/linkd/domain/reservation"
	"github.com/linkd/linkd/domain/user"
)

// PasswordHasher hashes users' passwords and checks them
// (internal/password).
type PasswordHasher interface {
	Hash(password string) (string, error)
	Verify(hash, password string) (bool, error)
}

func loadUser(ctx context.Context, s EventStore, id string) (*user.User, error) {
	events, err := readAll(ctx, s, user.Stream(id))
	if err != nil {
		return nil, err
	}
	return user.Load(events)
}

func userAlive(d *Deps) ownerAlive {
	return func(ctx context.Context, id string) (bool, error) {
		u, err := loadUser(ctx, d.Store, id)
		if err != nil {
			return false, err
		}
		return u.Exists(), nil
	}
}

// CreateUser makes a user who signs in to the dashboard: only the operator
// key may (POST /v1/users).
type CreateUser struct {
	Actor    Actor
	UserID   string
	Email    string
	Password string
}

type CreateUserHandler struct {
	*Deps
	Passwords PasswordHasher
}

// Handle creates the user: 409 when the id or the email is taken.
func (h CreateUserHandler) Handle(ctx context.Context, c CreateUser) (*user.User, Result, error) {
	if !c.Actor.Operator {
		return nil, Result{}, domain.ErrInsufficientPermissions()
	}
	return createUser(ctx, h.Deps, h.Passwords, c.Actor, c.UserID, c.Email, c.Password)
}

func createUser(ctx context.Context, d *Deps, pw PasswordHasher, a Actor, id, email, password string) (*user.User, Result, error) {
	if err := user.CheckUserID(id); err != nil {
		return nil, Result{}, err
	}
	email, err := user.NormalizeEmail(email)
	if err != nil {
		return nil, Result{}, err
	}
	if err := user.CheckPassword(password); err != nil {
		return nil, Result{}, err
	}
	u, err := loadUser(ctx, d.Store, id)
	if err != nil {
		return nil, Result{}, err
	}
	if u.Exists() {
		return nil, Result{}, domain.Conflict("User already exists")
	}
	hash, err := pw.Hash(password)
	if err != nil {
		return nil, Result{}, err
	}
	if err := u.Create(id, email, hash, d.now()); err != nil {
		return nil, Result{}, err
	}
	res, held, err := reserve(ctx, d, a, reservation.KindUserEmail, user.EmailKey(email), email, id, "", userAlive(d))
	if err != nil {
		return nil, Result{}, err
	}
	if held != nil {
		return nil, Result{}, domain.Conflict("A user with this email already exists")
	}
	r2, err := save(ctx, d.Store, user.Stream(id), u, metaOf(a))
	if err != nil {
		return nil, Result{}, err
	}
	res.merge(r2)
	return u, res, nil
}

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

// UserByID loads a user from its stream (the dashboard's sessions name
// users by id).
func UserByID(ctx context.Context, d *Deps, id string) (*user.User, error) {
	u, err := loadUser(ctx, d.Store, id)
	if err != nil {
		return nil, err
	}
	if !u.Exists() {
		return nil, domain.NotFound("User not found")
	}
	return u, nil
}
