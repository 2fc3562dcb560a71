package commands

import (
	"context"
	"errors"

	"github.com/linkd/linkd/domain"
	"github.com/linkd/linkd/domain/customdomain"
	"github.com/linkd/linkd/domain/link"
	"github.com/linkd/linkd/domain/project"
	"github.com/linkd/linkd/domain/reservation"
	"github.com/linkd/linkd/eventstore"
)

func deleteLink(ctx context.Context, d *Deps, a Actor, id string) (Result, error) {
	var l *link.Link
	res, err := retry(ctx, func() (Result, error) {
		var err error
		l, err = loadLink(ctx, d.Store, id)
		if err != nil {
			return Result{}, err
		}
		if err := l.Delete(d.now()); err != nil {
			return Result{}, err
		}
		return save(ctx, d.Store, link.Stream(id), l, metaOf(a))
	})
	if err != nil {
		return res, err
	}
	r, err := release(ctx, d, a, reservation.KindShortCode, codeKey(l.DomainID, l.Code), l.ID)
	res.merge(r)
	return res, err
}

func deleteProject(ctx context.Context, d *Deps, a Actor, id string) (Result, error) {
	var p *project.Project
	res, err := retry(ctx, func() (Result, error) {
		var err error
		p, err = loadProject(ctx, d.Store, id)
		if err != nil {
			return Result{}, err
		}
		if err := p.Delete(d.now()); err != nil {
			return Result{}, err
		}
		return save(ctx, d.Store, project.Stream(id), p, metaOf(a))
	})
	if err != nil {
		return res, err
	}
	r, err := release(ctx, d, a, reservation.KindProjectName, projectNameKey(p.WorkspaceID, p.Name), p.ID)
	res.merge(r)
	return res, err
}

func deleteDomain(ctx context.Context, d *Deps, a Actor, id string) (Result, error) {
	var x *customdomain.Domain
	res, err := retry(ctx, func() (Result, error) {
		var err error
		x, err = loadDomain(ctx, d.Store, id)
		if err != nil {
			return Result{}, err
		}
		if err := x.Delete(d.now()); err != nil {
			return Result{}, err
		}
		return save(ctx, d.Store, customdomain.Stream(id), x, metaOf(a))
	})
	if err != nil {
		return res, err
	}
	r, err := release(ctx, d, a, reservation.KindDomainName, x.Name, x.ID)
	res.merge(r)
	return res, err
}

// detachLinks clears the project of links that belonged to a deleted
// project, so that the link streams agree with the read model.
func detachLinks(ctx context.Context, d *Deps, a Actor, projectID string, ids []string) (Result, error) {
	var res Result
	for _, id := range ids {
		r, err := retry(ctx, func() (Result, error) {
			l, err := loadLink(ctx, d.Store, id)
			if err != nil {
				return Result{}, err
			}
			if !l.Exists() || l.ProjectID == nil || *l.ProjectID != projectID {
				return Result{}, nil
			}
			if err := l.Update(link.Patch{ProjectID: domain.NullOpt[string]()}, a.UserID, d.now()); err != nil {
				return Result{}, err
			}
			return save(ctx, d.Store, link.Stream(id), l, metaOf(a))
		})
		if err != nil && !errors.Is(err, eventstore.ErrStreamNotFound) {
			return res, err
		}
		res.merge(r)
	}
	return res, nil
}
