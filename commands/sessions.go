package commands

import (
	"context"

	"github.com/linkd/linkd/domain/user"
)

// StartSession records a dashboard session of a user who signed in; hash
// is the hash of the session cookie's value.
func StartSession(ctx context.Context, d *Deps, hash, userID, email string) (Result, error) {
	s, err := user.StartSession(hash, userID, email, d.now())
	if err != nil {
		return Result{}, err
	}
	return save(ctx, d.Store, user.SessionStream(hash), s, metaOf(Actor{UserID: userID}))
}

// SessionByHash loads the session of a cookie's hash; ok is false when it
// does not sign anybody in (unknown, ended or expired).
func SessionByHash(ctx context.Context, d *Deps, hash string) (*user.Session, bool, error) {
	events, err := readAll(ctx, d.Store, user.SessionStream(hash))
	if err != nil {
		return nil, false, err
	}
	s, err := user.LoadSession(events)
	if err != nil {
		return nil, false, err
	}
	return s, s.Valid(d.now()), nil
}

// EndSession records a sign-out.
func EndSession(ctx context.Context, d *Deps, hash string) (Result, error) {
	return retry(ctx, func() (Result, error) {
		s, _, err := SessionByHash(ctx, d, hash)
		if err != nil {
			return Result{}, err
		}
		s.End(d.now())
		return save(ctx, d.Store, user.SessionStream(hash), s, metaOf(Actor{UserID: s.UserID}))
	})
}
