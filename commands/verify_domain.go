package commands

import (
	"context"

	"github.com/linkd/linkd/domain/customdomain"
)

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
