package commands

import (
	"context"

	"github.com/linkd/linkd/domain"
	"github.com/linkd/linkd/domain/link"
	"github.com/linkd/linkd/domain/reservation"
	"github.com/linkd/linkd/domain/workspace"
)

// UpdateLink changes the given fields of a link. Members change their own
// links; admins any link of the workspace.
type UpdateLink struct {
	Actor  Actor
	LinkID string
	Patch  link.Patch
	// Password in plain text: set, or cleared with null or "".
	Password   domain.Opt[string]
	IsArchived *bool
}

type UpdateLinkHandler struct{ *Deps }

func (h UpdateLinkHandler) Handle(ctx context.Context, c UpdateLink) (*link.Link, Result, error) {
	a := c.Actor
	var res Result
	var l *link.Link
	var oldDomain *string
	var oldCode string
	r, err := retry(ctx, func() (Result, error) {
		var err error
		l, err = loadLink(ctx, h.Store, c.LinkID)
		if err != nil {
			return Result{}, err
		}
		if !l.Exists() {
			return Result{}, domain.NotFound("Link not found")
		}
		w, err := loadWorkspace(ctx, h.Store, l.WorkspaceID)
		if err != nil {
			return Result{}, err
		}
		if err := canEditLink(w, l, a); err != nil {
			return Result{}, err
		}
		p := c.Patch
		if err := link.ValidatePatch(&p); err != nil {
			return Result{}, err
		}
		target := w
		if v, ok := p.WorkspaceID.Value(); ok && v != l.WorkspaceID {
			target, err = memberWorkspace(ctx, h.Store, a, v)
			if err != nil {
				return Result{}, err
			}
		} else {
			p.WorkspaceID = domain.Opt[string]{}
		}
		if target.Plan == workspace.PlanFree {
			if err := freePlanUpdate(l, p, c.Password); err != nil {
				return Result{}, err
			}
		}
		projectID, domainID := l.ProjectID, l.DomainID
		if p.ProjectID.Set {
			projectID = p.ProjectID.Ptr()
		}
		if target.ID != l.WorkspaceID && !p.ProjectID.Set && projectID != nil {
			// A project belongs to one workspace: moving the link leaves it.
			p.ProjectID = domain.NullOpt[string]()
			projectID = nil
		}
		if err := checkRefs(ctx, h.Deps, target.ID, projectID, nil); err != nil {
			return Result{}, err
		}
		if err := checkExtensionPatch(ctx, h.Deps, l, target.ID, &p); err != nil {
			return Result{}, err
		}
		if target.ID != l.WorkspaceID && domainID != nil {
			return Result{}, domain.Invalid("A link on a custom domain cannot move to another workspace")
		}
		if c.Password.Set {
			if v, ok := c.Password.Value(); ok && v != "" {
				if len(v) > link.MaxPasswordBytes {
					return Result{}, domain.Invalid("password is too long")
				}
				enc, err := h.Cipher.Encrypt(v)
				if err != nil {
					return Result{}, err
				}
				p.PasswordEnc = domain.Some(enc)
			} else {
				p.PasswordEnc = domain.Some("")
			}
		}
		oldDomain, oldCode = l.DomainID, l.Code
		newCode, codeChanged := p.Code.Value()
		codeChanged = codeChanged && newCode != l.Code
		if !codeChanged {
			p.Code = domain.Opt[string]{}
		}
		if codeChanged {
			r, held, err := reserve(ctx, h.Deps, a, reservation.KindShortCode, codeKey(l.DomainID, newCode), newCode, l.ID, "", linkAlive(h.Deps))
			if err != nil {
				return Result{}, err
			}
			if held != nil {
				return Result{}, domain.Conflict("Custom code already exists")
			}
			res.merge(r)
		}
		if !patchEmpty(p) {
			if err := l.Update(p, a.UserID, h.now()); err != nil {
				return Result{}, err
			}
		}
		if c.IsArchived != nil {
			if err := l.SetArchived(*c.IsArchived, h.now()); err != nil {
				return Result{}, err
			}
		}
		if len(l.Pending()) == 0 {
			return Result{}, nil
		}
		return save(ctx, h.Store, link.Stream(l.ID), l, metaOf(a))
	})
	if err != nil {
		return nil, res, err
	}
	res.merge(r)
	if l.Code != oldCode {
		r, err := release(ctx, h.Deps, a, reservation.KindShortCode, codeKey(oldDomain, oldCode), l.ID)
		if err != nil {
			return nil, res, err
		}
		res.merge(r)
	}
	return l, res, nil
}

func patchEmpty(p link.Patch) bool {
	var zero link.Patch
	b1, _ := jsonMarshal(p)
	b2, _ := jsonMarshal(zero)
	return string(b1) == string(b2)
}

func freePlanUpdate(l *link.Link, p link.Patch, password domain.Opt[string]) error {
	if v, ok := password.Value(); ok && v != "" {
		return domain.PlanRequired(featurePassword)
	}
	if _, ok := p.ExpirationDate.Value(); ok {
		return domain.PlanRequired(featureExpiration)
	}
	if _, ok := p.ExpirationClickCount.Value(); ok {
		return domain.PlanRequired(featureExpiration)
	}
	if v, ok := p.UTMTemplateID.Value(); ok && v != "" {
		return domain.PlanRequired(featureUTMTpl)
	}
	if v, ok := p.PixelID.Value(); ok && v != "" {
		return domain.PlanRequired(featurePixel)
	}
	if v, ok := p.Metadata.Value(); ok && !v.IsEmpty() {
		return domain.PlanRequired(featureMetadata)
	}
	if v, ok := p.OriginalURL.Value(); ok && v != l.OriginalURL {
		return domain.PlanRequired(featureChangeURL)
	}
	return nil
}

// canEditLink: admins edit every link of their workspace, members their
// own. A link of a workspace the actor is not in is a resource not owned:
// 403 "Insufficient permissions for this operation" (spec section 5), as
// reading it is.
func canEditLink(w *workspace.Workspace, l *link.Link, a Actor) error {
	switch w.Role(a.UserID) {
	case workspace.RoleAdmin:
		return nil
	case workspace.RoleMember:
		if l.CreatedBy == a.UserID {
			return nil
		}
	}
	return domain.ErrInsufficientPermissions()
}
