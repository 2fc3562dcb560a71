package commands

import (
	"context"

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
