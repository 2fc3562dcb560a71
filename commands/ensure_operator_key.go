package commands

import (
	"context"

	"github.com/linkd/linkd/domain/apikey"
	"github.com/linkd/linkd/domain/reservation"
)

// OperatorUser is the user of the operator key.
const OperatorUser = "admin"

// EnsureOperatorKey creates the operator's full-access key for user
// "admin" on first start. The claim "operatorkey-admin" makes it happen
// once; a later start with another LINKD_INITIAL_API_KEY adds that key too.
type EnsureOperatorKey struct {
	// Key is LINKD_INITIAL_API_KEY, or empty to generate one.
	Key string
	// Exists tells whether a key with this hash is already known.
	Exists func(ctx context.Context, hash string) (bool, error)
}

type EnsureOperatorKeyHandler struct {
	*Deps
	Hasher        KeyHasher
	ServicePrefix string
}

// Handle returns the generated key when one was made ("" otherwise).
func (h EnsureOperatorKeyHandler) Handle(ctx context.Context, c EnsureOperatorKey) (string, Result, error) {
	a := Actor{UserID: OperatorUser, Operator: true}
	r, err := loadReservation(ctx, h.Store, reservation.KindOperatorKey, OperatorUser)
	if err != nil {
		return "", Result{}, err
	}
	secret := c.Key
	generated := false
	if secret == "" {
		if r.Holding {
			return "", Result{}, nil // made on an earlier start
		}
		secret, generated = NewKeySecret(h.ServicePrefix, apikey.KindSecret), true
	} else {
		hash := h.Hasher.Hash(secret)
		if c.Exists != nil {
			ok, err := c.Exists(ctx, hash)
			if err != nil {
				return "", Result{}, err
			}
			if ok {
				return "", Result{}, nil
			}
		}
	}
	id := h.newID()
	k, err := apikey.Create(apikey.Created{
		KeyID: id, UserID: OperatorUser, Name: "operator", Kind: apikey.KindSecret, Access: apikey.AccessFull,
		Hash: h.Hasher.Hash(secret), Prefix: displayPrefix(secret), Operator: true, At: h.now(),
	})
	if err != nil {
		return "", Result{}, err
	}
	res, _, err := reserve(ctx, h.Deps, a, reservation.KindOperatorKey, OperatorUser, "operator", id, "", nil)
	if err != nil {
		return "", Result{}, err
	}
	r2, err := save(ctx, h.Store, apikey.Stream(id), k, metaOf(a))
	if err != nil {
		return "", Result{}, err
	}
	res.merge(r2)
	if generated {
		return secret, res, nil
	}
	return "", res, nil
}
