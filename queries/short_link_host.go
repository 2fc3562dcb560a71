package queries

import "context"

// ShortLinkHost asks for the host of a link's short URL: its custom
// domain's name, or the default domain when it has none (or the domain is
// gone). Whoever may see the link may see its short URL, so this checks
// no access.
type ShortLinkHost struct {
	DomainID *string
}

// ShortLinkHostReadModel is what ShortLinkHost reads.
type ShortLinkHostReadModel interface {
	Domain(ctx context.Context, id string) (Domain, bool, error)
}

// ShortLinkHostHandler answers ShortLinkHost.
type ShortLinkHostHandler struct {
	ReadModel ShortLinkHostReadModel
	// DefaultHost is the host (and port) of the default short domain.
	DefaultHost string
}

// Handle answers the query.
func (h ShortLinkHostHandler) Handle(ctx context.Context, q ShortLinkHost) (string, error) {
	if q.DomainID == nil || *q.DomainID == "" {
		return h.DefaultHost, nil
	}
	d, ok, err := h.ReadModel.Domain(ctx, *q.DomainID)
	if err != nil || !ok {
		return h.DefaultHost, err
	}
	return d.Domain, nil
}
