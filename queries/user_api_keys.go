package queries

import "context"

// UserAPIKeys asks for the keys of a user.
type UserAPIKeys struct {
	UserID string
}

// UserAPIKeysReadModel is what UserAPIKeys reads.
type UserAPIKeysReadModel interface {
	APIKeysOf(ctx context.Context, userID string) ([]APIKey, error)
}

// UserAPIKeysHandler answers UserAPIKeys.
type UserAPIKeysHandler struct {
	ReadModel UserAPIKeysReadModel
}

// Handle answers the query.
func (h UserAPIKeysHandler) Handle(ctx context.Context, q UserAPIKeys) ([]APIKey, error) {
	return h.ReadModel.APIKeysOf(ctx, q.UserID)
}
