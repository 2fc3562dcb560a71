package commands

import (
	"context"

	"github.com/linkd/linkd/domain"
	"github.com/linkd/linkd/domain/apikey"
)

// DeactivateAPIKey makes a key invalid. Users deactivate their own keys;
// the operator any key; a workspace admin any key bound to a project of
// the workspace (a member's Radar or publishable key, say, after the
// member left).
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
		if err := h.mayDeactivate(ctx, c.Actor, k); err != nil {
			return Result{}, err
		}
		if err := k.Deactivate(c.Actor.UserID, h.now()); err != nil {
			return Result{}, err
		}
		return save(ctx, h.Store, apikey.Stream(k.KeyID), k, metaOf(c.Actor))
	})
}

// mayDeactivate: the key's own user, the operator, or an admin of the
// workspace of the project the key is bound to (deleted or not: its
// workspace still answers for it).
func (h DeactivateAPIKeyHandler) mayDeactivate(ctx context.Context, a Actor, k *apikey.Key) error {
	if k.UserID == a.UserID || a.Operator {
		return nil
	}
	if k.ProjectID == "" {
		return domain.ErrInsufficientPermissions()
	}
	p, err := loadProject(ctx, h.Store, k.ProjectID)
	if err != nil {
		return err
	}
	if p.WorkspaceID == "" {
		return domain.ErrInsufficientPermissions()
	}
	w, err := loadWorkspace(ctx, h.Store, p.WorkspaceID)
	if err != nil {
		return err
	}
	if !w.Exists() || !w.IsAdmin(a.UserID) {
		return domain.ErrInsufficientPermissions()
	}
	return nil
}
