package commands

import (
	"context"

	"github.com/linkd/linkd/domain"
	"github.com/linkd/linkd/domain/customdomain"
)

// domainFor loads a domain of a workspace the actor belongs to (admin when
// admin is true).
func domainFor(ctx context.Context, d *Deps, a Actor, id string, admin bool) (*customdomain.Domain, error) {
	x, err := loadDomain(ctx, d.Store, id)
	if err != nil {
		return nil, err
	}
	if !x.Exists() {
		return nil, domain.NotFound("Domain not found")
	}
	if admin {
		err = adminOf(ctx, d, a, x.WorkspaceID)
	} else {
		_, err = memberWorkspace(ctx, d.Store, a, x.WorkspaceID)
	}
	if err != nil {
		if domain.KindOf(err) == domain.KindNotFound {
			return nil, domain.NotFound("Domain not found")
		}
		return nil, err
	}
	return x, nil
}

// UpdateDomain changes the description.
type UpdateDomain struct {
	Actor       Actor
	DomainID    string
	Description domain.Opt[string]
}

type UpdateDomainHandler struct{ *Deps }

func (h UpdateDomainHandler) Handle(ctx context.Context, c UpdateDomain) (*customdomain.Domain, Result, error) {
	var x *customdomain.Domain
	res, err := retry(ctx, func() (Result, error) {
		var err error
		x, err = domainFor(ctx, h.Deps, c.Actor, c.DomainID, true)
		if err != nil {
			return Result{}, err
		}
		if err := x.Update(c.Description, h.now()); err != nil {
			return Result{}, err
		}
		return save(ctx, h.Store, customdomain.Stream(x.ID), x, metaOf(c.Actor))
	})
	return x, res, err
}
