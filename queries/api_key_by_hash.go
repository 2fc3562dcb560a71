package queries

import "context"

// APIKeyByHash asks for the valid key whose secret hashes to Hash.
type APIKeyByHash struct {
	Hash string
}

// APIKeyByHashReadModel is what APIKeyByHash reads: the key, and for a key
// bound to a project, the project and its user's role in the project's
// workspace.
type APIKeyByHashReadModel interface {
	APIKeyByHash(ctx context.Context, hash string) (APIKey, bool, error)
	Project(ctx context.Context, id string) (Project, bool, error)
	Roles
}

// APIKeyByHashHandler answers APIKeyByHash. ok is false for an unknown or
// deactivated key, and for a key bound to a project that no longer grants
// it anything: the project is deleted, or the key's user is no longer a
// member of the project's workspace (docs/decisions.md, "References that
// stop existing"). Such a key is "Invalid API key" everywhere it is
// presented: Radar reads, collect, conversions and /v1 alike.
type APIKeyByHashHandler struct {
	ReadModel APIKeyByHashReadModel
}

// Handle answers the query.
func (h APIKeyByHashHandler) Handle(ctx context.Context, q APIKeyByHash) (APIKey, bool, error) {
	k, ok, err := h.ReadModel.APIKeyByHash(ctx, q.Hash)
	if err != nil || !ok || !k.IsActive {
		return APIKey{}, false, err
	}
	if k.ProjectID != "" {
		valid, err := projectKeyValid(ctx, h.ReadModel, k)
		if err != nil || !valid {
			return APIKey{}, false, err
		}
	}
	return k, true, nil
}

// projectKeyValid reports whether a key bound to a project may still act
// for it: the project exists and the key's user has a role in its
// workspace.
func projectKeyValid(ctx context.Context, rm APIKeyByHashReadModel, k APIKey) (bool, error) {
	p, ok, err := rm.Project(ctx, k.ProjectID)
	if err != nil || !ok {
		return false, err
	}
	role, err := rm.Role(ctx, p.WorkspaceID, k.UserID)
	return role != "", err
}
