package queries

import (
	"context"

	"github.com/linkd/linkd/domain"
)

// LinkByID asks for one link as a user may see it.
type LinkByID struct {
	ID     string
	UserID string
}

// LinkByIDReadModel is what LinkByID reads.
type LinkByIDReadModel interface {
	Link(ctx context.Context, id string) (Link, bool, error)
	Roles
}

// LinkByIDHandler answers LinkByID: 404 when the link does not exist, 403
// (insufficient permissions) when it is in a workspace the user is not in.
type LinkByIDHandler struct {
	ReadModel LinkByIDReadModel
}

// Handle answers the query.
func (h LinkByIDHandler) Handle(ctx context.Context, q LinkByID) (Link, error) {
	l, ok, err := h.ReadModel.Link(ctx, q.ID)
	if err != nil {
		return l, err
	}
	if !ok {
		return l, domain.NotFound(msgLinkNotFound)
	}
	if _, err := requireMember(ctx, h.ReadModel, l.WorkspaceID, q.UserID, domain.ErrInsufficientPermissions()); err != nil {
		return l, err
	}
	return l, nil
}
