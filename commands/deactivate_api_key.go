package commands

import (
	"context"

	"github.com/linkd/linkd/domain"
	"github.com/linkd/linkd/domain/apikey"
)

// DeactivateAPIKey makes a key invalid. Users deactivate their own keys;
// the operator any key.
type DeactivateAPIKey struct {
	Actor Actor
	KeyID string
}

type DeactivateAPIKeyHandler struct{ *Deps }

func (h DeactivateAPIKeyHandler) Handle(ctx context.Context, c DeactivateAPIKey) (Result, error) {
	return retry(ctx, func() (Result, error) {
		k, err := loadKey(ctx, h.Store, c.KeyID)
		if err != nil {
			return Result{}, err
		}
		if !k.Exists() {
			return Result{}, domain.NotFound("API key not found")
		}
		if k.UserID != c.Actor.UserID && !c.Actor.Operator {
			return Result{}, domain.ErrInsufficientPermissions()
		}
		if err := k.Deactivate(c.Actor.UserID, h.now()); err != nil {
			return Result{}, err
		}
		return save(ctx, h.Store, apikey.Stream(k.KeyID), k, metaOf(c.Actor))
	})
}
