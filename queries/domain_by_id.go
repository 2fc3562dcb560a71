package queries

import (
	"context"

	"github.com/linkd/linkd/domain"
)

// DomainByID asks for a custom domain of a workspace the user is in.
type DomainByID struct {
	ID     string
	UserID string
}

// DomainByIDReadModel is what DomainByID reads.
type DomainByIDReadModel interface {
	Domain(ctx context.Context, id string) (Domain, bool, error)
	Roles
}

// DomainByIDHandler answers DomainByID: 404 when the domain does not
// exist, 403 (insufficient permissions) when the user is not in its
// workspace.
type DomainByIDHandler struct {
	ReadModel DomainByIDReadModel
}

// Handle answers the query.
func (h DomainByIDHandler) Handle(ctx context.Context, q DomainByID) (Domain, error) {
	d, ok, err := h.ReadModel.Domain(ctx, q.ID)
	if err != nil {
		return d, err
	}
	if !ok {
		return d, domain.NotFound(msgDomainNotFound)
	}
	_, err = requireMember(ctx, h.ReadModel, d.WorkspaceID, q.UserID, domain.ErrInsufficientPermissions())
	return d, err
}
