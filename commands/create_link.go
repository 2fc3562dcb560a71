package commands

import (
	"context"
	"crypto/rand"
	"math/big"

	"github.com/linkd/linkd/domain"
	"github.com/linkd/linkd/domain/link"
	"github.com/linkd/linkd/domain/reservation"
	"github.com/linkd/linkd/domain/workspace"
)

// codeKey is the reservation key of a code on a domain: codes are unique per
// domain and case-sensitive.
func codeKey(domainID *string, code string) string {
	d := "default"
	if domainID != nil && *domainID != "" {
		d = *domainID
	}
	return d + "/" + code
}

// codeAlphabet leaves out characters that are easy to confuse (0 O o, 1 l I).
const codeAlphabet = "23456789abcdefghijkmnpqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ"

// GenerateCode returns a random code of n characters from codeAlphabet.
func GenerateCode(n int) string {
	b := make([]byte, n)
	max := big.NewInt(int64(len(codeAlphabet)))
	for i := range b {
		v, err := rand.Int(rand.Reader, max)
		if err != nil {
			panic(err)
		}
		b[i] = codeAlphabet[v.Int64()]
	}
	return string(b)
}

// Plan-gated features, by the names their refusals use.
const (
	featurePassword   = "password protection"
	featureExpiration = "link expiration"
	featureUTMTpl     = "UTM templates"
	featurePixel      = "tracking pixels"
	featureMetadata   = "custom link previews"
	featureChangeURL  = "changing the destination URL"
)

// CreateLink makes a link in a workspace (the caller's default one when
// none is given).
type CreateLink struct {
	Actor       Actor
	WorkspaceID string
	CustomCode  string
	// Password in plain text; it is encrypted before it is recorded.
	Password string
	// EnableConversionTracking nil means the plan's default.
	EnableConversionTracking *bool
	Attributes               link.Attributes
}

type CreateLinkHandler struct{ *Deps }

func (h CreateLinkHandler) Handle(ctx context.Context, c CreateLink) (*link.Link, Result, error) {
	a := c.Actor
	var res Result
	var w *workspace.Workspace
	wsID, err := h.workspaceOf(ctx, c)
	if err != nil {
		return nil, res, err
	}
	if wsID != "" {
		w, err = memberWorkspace(ctx, h.Store, a, wsID)
	} else {
		var r Result
		w, r, err = EnsureDefaultWorkspaceHandler(h).Handle(ctx, EnsureDefaultWorkspace{Actor: a})
		res.merge(r)
	}
	if err != nil {
		return nil, res, err
	}
	attrs := c.Attributes
	attrs.WorkspaceID = w.ID
	if err := link.ValidateAttributes(&attrs); err != nil {
		return nil, res, err
	}
	if w.Plan == workspace.PlanFree {
		if err := freePlanCreate(c); err != nil {
			return nil, res, err
		}
	}
	if c.EnableConversionTracking != nil {
		attrs.EnableConversionTracking = *c.EnableConversionTracking
	} else {
		attrs.EnableConversionTracking = w.Plan == workspace.PlanPro
	}
	if err := h.checkRefs(ctx, w.ID, attrs.ProjectID, attrs.DomainID); err != nil {
		return nil, res, err
	}
	if err := checkExtensionRefs(ctx, h.Deps, &attrs); err != nil {
		return nil, res, err
	}
	if c.Password != "" {
		if len(c.Password) > link.MaxPasswordBytes {
			return nil, res, domain.Invalid("password is too long")
		}
		enc, err := h.Cipher.Encrypt(c.Password)
		if err != nil {
			return nil, res, err
		}
		attrs.PasswordEnc = enc
	}
	id := h.newID()
	code, r, err := h.claimCode(ctx, a, attrs.DomainID, c.CustomCode, id)
	if err != nil {
		return nil, res, err
	}
	res.merge(r)
	l, err := link.Create(id, code, a.UserID, attrs, h.now())
	if err != nil {
		return nil, res, err
	}
	r, err = save(ctx, h.Store, link.Stream(id), l, metaOf(a))
	if err != nil {
		return nil, res, err
	}
	res.merge(r)
	return l, res, nil
}

// workspaceOf chooses the workspace of a new link: the one named, else
// the workspace of its project or custom domain, else "" for the caller's
// default workspace.
func (h CreateLinkHandler) workspaceOf(ctx context.Context, c CreateLink) (string, error) {
	if c.WorkspaceID != "" {
		return c.WorkspaceID, nil
	}
	if id := c.Attributes.ProjectID; id != nil && *id != "" {
		p, err := loadProject(ctx, h.Store, *id)
		if err != nil {
			return "", err
		}
		if p.Exists() {
			return p.WorkspaceID, nil
		}
	}
	if id := c.Attributes.DomainID; id != nil && *id != "" {
		d, err := loadDomain(ctx, h.Store, *id)
		if err != nil {
			return "", err
		}
		if d.Exists() {
			return d.WorkspaceID, nil
		}
	}
	return "", nil
}

func freePlanCreate(c CreateLink) error {
	at := c.Attributes
	switch {
	case c.Password != "":
		return domain.PlanRequired(featurePassword)
	case at.ExpirationDate != nil || at.ExpirationClickCount != nil:
		return domain.PlanRequired(featureExpiration)
	case at.UTMTemplateID != "":
		return domain.PlanRequired(featureUTMTpl)
	case at.PixelID != nil && *at.PixelID != "":
		return domain.PlanRequired(featurePixel)
	case !at.Metadata.IsEmpty():
		return domain.PlanRequired(featureMetadata)
	}
	return nil
}

// checkRefs checks that the project and domain a link names belong to its
// workspace.
func (h CreateLinkHandler) checkRefs(ctx context.Context, workspaceID string, projectID, domainID *string) error {
	return checkRefs(ctx, h.Deps, workspaceID, projectID, domainID)
}

func checkRefs(ctx context.Context, d *Deps, workspaceID string, projectID, domainID *string) error {
	if projectID != nil && *projectID != "" {
		p, err := loadProject(ctx, d.Store, *projectID)
		if err != nil {
			return err
		}
		if !p.Exists() {
			return domain.NotFound("Project not found")
		}
		if p.WorkspaceID != workspaceID {
			return domain.Forbidden(domain.MsgAccessDeniedWorkspace)
		}
	}
	if domainID != nil && *domainID != "" {
		x, err := loadDomain(ctx, d.Store, *domainID)
		if err != nil {
			return err
		}
		if !x.Exists() {
			return domain.NotFound("Domain not found")
		}
		if x.WorkspaceID != workspaceID {
			return domain.Forbidden(domain.MsgAccessDeniedWorkspace)
		}
	}
	return nil
}

// claimCode reserves the custom code, or a generated one.
func (h CreateLinkHandler) claimCode(ctx context.Context, a Actor, domainID *string, custom, owner string) (string, Result, error) {
	if custom != "" {
		if err := link.ValidateCode(custom); err != nil {
			return "", Result{}, err
		}
		res, held, err := reserve(ctx, h.Deps, a, reservation.KindShortCode, codeKey(domainID, custom), custom, owner, "", linkAlive(h.Deps))
		if err != nil {
			return "", Result{}, err
		}
		if held != nil {
			return "", Result{}, domain.Conflict("Custom code already exists")
		}
		return custom, res, nil
	}
	n := h.CodeLength
	if n <= 0 {
		n = 7
	}
	for attempt := 0; attempt < 16; attempt++ {
		code := GenerateCode(n + attempt/4)
		if link.IsReservedCode(code) {
			continue
		}
		res, held, err := reserve(ctx, h.Deps, a, reservation.KindShortCode, codeKey(domainID, code), code, owner, "", nil)
		if err != nil {
			return "", Result{}, err
		}
		if held == nil {
			return code, res, nil
		}
	}
	return "", Result{}, ErrConcurrency
}
