package queries

import (
	"context"

	"github.com/linkd/linkd/domain/apikey"
)

// OriginAllowed asks whether a browser page at Host may call the
// client-side interfaces (CORS preflight): whether any active publishable
// key allows the host. A preflight carries no key; the request that
// follows is checked against its own key.
type OriginAllowed struct {
	Host string
}

// OriginAllowedReadModel is what OriginAllowed reads.
type OriginAllowedReadModel interface {
	PublishableHostnames(ctx context.Context) ([]string, error)
}

// OriginAllowedHandler answers OriginAllowed.
type OriginAllowedHandler struct {
	ReadModel OriginAllowedReadModel
}

// Handle answers the query.
func (h OriginAllowedHandler) Handle(ctx context.Context, q OriginAllowed) (bool, error) {
	if q.Host == "" {
		return false, nil
	}
	hosts, err := h.ReadModel.PublishableHostnames(ctx)
	if err != nil {
		return false, err
	}
	return apikey.HostMatches(hosts, q.Host), nil
}
