package commands

import (
	"context"
	"errors"
	"time"

	"github.com/linkd/linkd/domain"
	"github.com/linkd/linkd/domain/apikey"
	"github.com/linkd/linkd/domain/customdomain"
	"github.com/linkd/linkd/domain/link"
	"github.com/linkd/linkd/domain/project"
	"github.com/linkd/linkd/domain/reservation"
	"github.com/linkd/linkd/domain/workspace"
)

func loadLink(ctx context.Context, s EventStore, id string) (*link.Link, error) {
	events, err := readAll(ctx, s, link.Stream(id))
	if err != nil {
		return nil, err
	}
	return link.Load(events)
}

func loadWorkspace(ctx context.Context, s EventStore, id string) (*workspace.Workspace, error) {
	events, err := readAll(ctx, s, workspace.Stream(id))
	if err != nil {
		return nil, err
	}
	return workspace.Load(events)
}

func loadProject(ctx context.Context, s EventStore, id string) (*project.Project, error) {
	events, err := readAll(ctx, s, project.Stream(id))
	if err != nil {
		return nil, err
	}
	return project.Load(events)
}

func loadDomain(ctx context.Context, s EventStore, id string) (*customdomain.Domain, error) {
	events, err := readAll(ctx, s, customdomain.Stream(id))
	if err != nil {
		return nil, err
	}
	return customdomain.Load(events)
}

func loadKey(ctx context.Context, s EventStore, id string) (*apikey.Key, error) {
	events, err := readAll(ctx, s, apikey.Stream(id))
	if err != nil {
		return nil, err
	}
	return apikey.Load(events)
}

func loadReservation(ctx context.Context, s EventStore, kind, key string) (*reservation.Reservation, error) {
	events, err := readAll(ctx, s, reservation.Stream(kind, key))
	if err != nil {
		return nil, err
	}
	return reservation.Load(events)
}

// memberWorkspace loads a workspace the actor may use: 404 when it does
// not exist, 403 "Access denied to this workspace" when the actor is not a
// member.
func memberWorkspace(ctx context.Context, s EventStore, a Actor, id string) (*workspace.Workspace, error) {
	w, err := loadWorkspace(ctx, s, id)
	if err != nil {
		return nil, err
	}
	if !w.Exists() {
		return nil, domain.NotFound("Workspace not found")
	}
	if !w.IsMember(a.UserID) {
		return nil, domain.Forbidden(domain.MsgAccessDeniedWorkspace)
	}
	return w, nil
}

// ownerAlive tells whether the holder of a reservation still exists, so
// that a claim left behind by a crash can be taken over.
type ownerAlive func(ctx context.Context, owner string) (bool, error)

// staleAfter is how old a claim whose owner does not exist must be before
// it can be taken over: younger claims may belong to a creation in flight.
const staleAfter = time.Minute

// reserve claims a name for owner. It returns the holder when another owner
// holds it.
func reserve(ctx context.Context, d *Deps, a Actor, kind, key, name, owner, scope string, alive ownerAlive) (Result, *reservation.HeldByOther, error) {
	var held *reservation.HeldByOther
	res, err := retry(ctx, func() (Result, error) {
		held = nil
		r, err := loadReservation(ctx, d.Store, kind, key)
		if err != nil {
			return Result{}, err
		}
		takeOver := false
		if r.Holding && r.Owner != owner && alive != nil && d.now().Sub(r.Since) > staleAfter {
			ok, err := alive(ctx, r.Owner)
			if err != nil {
				return Result{}, err
			}
			takeOver = !ok
		}
		if err := r.Reserve(name, owner, scope, takeOver, d.now()); err != nil {
			var h *reservation.HeldByOther
			if errors.As(err, &h) {
				held = h
				return Result{}, nil
			}
			return Result{}, err
		}
		return save(ctx, d.Store, reservation.Stream(kind, key), r, metaOf(a))
	})
	return res, held, err
}

// release frees a name owner holds.
func release(ctx context.Context, d *Deps, a Actor, kind, key, owner string) (Result, error) {
	return retry(ctx, func() (Result, error) {
		r, err := loadReservation(ctx, d.Store, kind, key)
		if err != nil {
			return Result{}, err
		}
		r.Release(owner, d.now())
		return save(ctx, d.Store, reservation.Stream(kind, key), r, metaOf(a))
	})
}

func linkAlive(d *Deps) ownerAlive {
	return func(ctx context.Context, id string) (bool, error) {
		l, err := loadLink(ctx, d.Store, id)
		if err != nil {
			return false, err
		}
		return l.Exists(), nil
	}
}

func workspaceAlive(d *Deps) ownerAlive {
	return func(ctx context.Context, id string) (bool, error) {
		w, err := loadWorkspace(ctx, d.Store, id)
		if err != nil {
			return false, err
		}
		return w.Exists(), nil
	}
}

func projectAlive(d *Deps) ownerAlive {
	return func(ctx context.Context, id string) (bool, error) {
		p, err := loadProject(ctx, d.Store, id)
		if err != nil {
			return false, err
		}
		return p.Exists(), nil
	}
}

func domainAlive(d *Deps) ownerAlive {
	return func(ctx context.Context, id string) (bool, error) {
		x, err := loadDomain(ctx, d.Store, id)
		if err != nil {
			return false, err
		}
		return x.Exists(), nil
	}
}

// adminOf checks that the actor administers a workspace: projects and
// domains are managed by admins; members only use them.
func adminOf(ctx context.Context, d *Deps, a Actor, workspaceID string) error {
	w, err := memberWorkspace(ctx, d.Store, a, workspaceID)
	if err != nil {
		return err
	}
	if !w.IsAdmin(a.UserID) {
		return domain.ErrInsufficientPermissions()
	}
	return nil
}
