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

// DNSChecker looks up a domain's CNAME.
type DNSChecker interface {
	Check(ctx context.Context, domainName, expectedHost string) customdomain.CheckResult
}

// VerifyDomain checks the domain's CNAME now and records the outcome.
type VerifyDomain struct {
	Actor    Actor
	DomainID string
}

type VerifyDomainHandler struct {
	*Deps
	DNS DNSChecker
	// ExpectedHost is the host of the default domain the CNAME must name.
	ExpectedHost string
}

func (h VerifyDomainHandler) Handle(ctx context.Context, c VerifyDomain) (*customdomain.Domain, customdomain.CheckResult, Result, error) {
	x, err := domainFor(ctx, h.Deps, c.Actor, c.DomainID, false)
	if err != nil {
		return nil, customdomain.CheckResult{}, Result{}, err
	}
	check := h.DNS.Check(ctx, x.Name, h.ExpectedHost)
	res, err := retry(ctx, func() (Result, error) {
		x, err = domainFor(ctx, h.Deps, c.Actor, c.DomainID, false)
		if err != nil {
			return Result{}, err
		}
		if err := x.RecordCheck(check, h.now()); err != nil {
			return Result{}, err
		}
		return save(ctx, h.Store, customdomain.Stream(x.ID), x, metaOf(c.Actor))
	})
	return x, check, res, err
}
