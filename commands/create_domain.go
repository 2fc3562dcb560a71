package commands

import (
	"context"

	"github.com/linkd/linkd/domain"
	"github.com/linkd/linkd/domain/customdomain"
	"github.com/linkd/linkd/domain/reservation"
)

// CreateDomain adds a custom domain to a workspace. A domain name belongs
// to one workspace at most.
type CreateDomain struct {
	Actor       Actor
	WorkspaceID string
	Domain      string
	Description string
}

type CreateDomainHandler struct{ *Deps }

func (h CreateDomainHandler) Handle(ctx context.Context, c CreateDomain) (*customdomain.Domain, Result, error) {
	var res Result
	name, err := customdomain.NormalizeName(c.Domain)
	if err != nil {
		return nil, res, err
	}
	wsID := c.WorkspaceID
	if wsID == "" {
		w, r, err := EnsureDefaultWorkspaceHandler(h).Handle(ctx, EnsureDefaultWorkspace{Actor: c.Actor})
		if err != nil {
			return nil, res, err
		}
		res.merge(r)
		wsID = w.ID
	} else if err := adminOf(ctx, h.Deps, c.Actor, wsID); err != nil {
		return nil, res, err
	}
	id := h.newID()
	d, err := customdomain.Create(id, wsID, name, c.Description, c.Actor.UserID, h.now())
	if err != nil {
		return nil, res, err
	}
	r, held, err := reserve(ctx, h.Deps, c.Actor, reservation.KindDomainName, name, name, id, wsID, domainAlive(h.Deps))
	if err != nil {
		return nil, res, err
	}
	if held != nil {
		if held.Scope == wsID {
			return nil, res, domain.Conflict("Domain already exists in this workspace")
		}
		return nil, res, domain.Conflict("Domain is already in use by another workspace")
	}
	res.merge(r)
	r, err = save(ctx, h.Store, customdomain.Stream(id), d, metaOf(c.Actor))
	if err != nil {
		return nil, res, err
	}
	res.merge(r)
	return d, res, nil
}
