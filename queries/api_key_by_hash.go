package queries

import "context"

// APIKeyByHash asks for the active key whose secret hashes to Hash.
type APIKeyByHash struct {
	Hash string
}

// APIKeyByHashReadModel is what APIKeyByHash reads.
type APIKeyByHashReadModel interface {
	APIKeyByHash(ctx context.Context, hash string) (APIKey, bool, error)
}

// APIKeyByHashHandler answers APIKeyByHash; ok is false for an unknown or
// deactivated key.
type APIKeyByHashHandler struct {
	ReadModel APIKeyByHashReadModel
}

// Handle answers the query.
func (h APIKeyByHashHandler) Handle(ctx context.Context, q APIKeyByHash) (APIKey, bool, error) {
	k, ok, err := h.ReadModel.APIKeyByHash(ctx, q.Hash)
	if err != nil || !ok || !k.IsActive {
		return APIKey{}, false, err
	}
	return k, true, nil
}
