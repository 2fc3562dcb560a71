package commands

import (
	"context"

	"github.com/linkd/linkd/domain"
)

// DeleteDomain removes a domain with its links and frees its name. The
// links go with it: their short URLs named the domain, which no longer
// serves them (docs/decisions.md).
type DeleteDomain struct {
	Actor    Actor
	DomainID string
}

type DeleteDomainHandler struct {
	*Deps
	Contents Contents
}

func (h DeleteDomainHandler) Handle(ctx context.Context, c DeleteDomain) (Result, error) {
	if _, err := domainFor(ctx, h.Deps, c.Actor, c.DomainID, true); err != nil {
		return Result{}, err
	}
	var res Result
	if h.Contents != nil {
		ids, err := h.Contents.DomainLinkIDs(ctx, c.DomainID)
		if err != nil {
			return res, err
		}
		for _, id := range ids {
			r, err := deleteLink(ctx, h.Deps, c.Actor, id)
			if err != nil && domain.KindOf(err) != domain.KindNotFound {
				return res, err
			}
			res.merge(r)
		}
	}
	r, err := deleteDomain(ctx, h.Deps, c.Actor, c.DomainID)
	res.merge(r)
	return res, err
}
