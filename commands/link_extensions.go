package commands

import (
	"context"

	"github.com/linkd/linkd/domain"
	"github.com/linkd/linkd/domain/link"
	"github.com/linkd/linkd/domain/pixel"
	"github.com/linkd/linkd/domain/utmtemplate"
	"github.com/linkd/linkd/domain/workspace"
)

// The UTM templates and pixels of a workspace (extensions: /v1/utm-templates
// and /v1/pixels) are managed as projects are: by the workspace's admins,
// on a plan that has the feature; members use them in their links.

func loadTemplate(ctx context.Context, s EventStore, id string) (*utmtemplate.Template, error) {
	events, err := readAll(ctx, s, utmtemplate.Stream(id))
	if err != nil {
		return nil, err
	}
	return utmtemplate.Load(events)
}

func loadPixel(ctx context.Context, s EventStore, id string) (*pixel.Pixel, error) {
	events, err := readAll(ctx, s, pixel.Stream(id))
	if err != nil {
		return nil, err
	}
	return pixel.Load(events)
}

// extensionWorkspace is the workspace a new template, pixel or webhook
// goes to (the actor's default one when none is named): the actor
// administers it and its plan has feature ("" for a thing every plan has).
func extensionWorkspace(ctx context.Context, d *Deps, a Actor, workspaceID, feature string) (*workspace.Workspace, Result, error) {
	var res Result
	var w *workspace.Workspace
	var err error
	if workspaceID == "" {
		w, res, err = EnsureDefaultWorkspaceHandler{d}.Handle(ctx, EnsureDefaultWorkspace{Actor: a})
	} else {
		w, err = memberWorkspace(ctx, d.Store, a, workspaceID)
	}
	if err != nil {
		return nil, res, err
	}
	if !w.IsAdmin(a.UserID) {
		return nil, res, domain.ErrInsufficientPermissions()
	}
	if feature != "" && w.Plan == workspace.PlanFree {
		return nil, res, domain.PlanRequired(feature)
	}
	return w, res, nil
}

// extensionAdmin checks that the actor administers the workspace of an
// existing template or pixel; changing one (not deleting it) also needs
// the feature in the plan.
func extensionAdmin(ctx context.Context, d *Deps, a Actor, workspaceID, notFound, feature string) error {
	w, err := memberWorkspace(ctx, d.Store, a, workspaceID)
	if err != nil {
		if domain.KindOf(err) == domain.KindNotFound {
			return domain.NotFound("%s", notFound)
		}
		if domain.KindOf(err) == domain.KindForbidden {
			return domain.ErrInsufficientPermissions()
		}
		return err
	}
	if !w.IsAdmin(a.UserID) {
		return domain.ErrInsufficientPermissions()
	}
	if feature != "" && w.Plan == workspace.PlanFree {
		return domain.PlanRequired(feature)
	}
	return nil
}

// checkTemplateRef checks that a link may name template id: it exists and
// belongs to the link's workspace.
func checkTemplateRef(ctx context.Context, d *Deps, workspaceID, id string) error {
	t, err := loadTemplate(ctx, d.Store, id)
	if err != nil {
		return err
	}
	if !t.Exists() {
		return domain.NotFound(utmtemplate.MsgNotFound)
	}
	if t.WorkspaceID != workspaceID {
		return domain.Forbidden(domain.MsgAccessDeniedWorkspace)
	}
	return nil
}

// checkPixelRef checks that a link may name pixel id.
func checkPixelRef(ctx context.Context, d *Deps, workspaceID, id string) error {
	p, err := loadPixel(ctx, d.Store, id)
	if err != nil {
		return err
	}
	if !p.Exists() {
		return domain.NotFound(pixel.MsgNotFound)
	}
	if p.WorkspaceID != workspaceID {
		return domain.Forbidden(domain.MsgAccessDeniedWorkspace)
	}
	return nil
}

// checkExtensionRefs checks the template and pixel of a new link.
func checkExtensionRefs(ctx context.Context, d *Deps, a *link.Attributes) error {
	if a.UTMTemplateID != "" {
		if err := checkTemplateRef(ctx, d, a.WorkspaceID, a.UTMTemplateID); err != nil {
			return err
		}
	}
	if a.PixelID != nil && *a.PixelID != "" {
		if err := checkPixelRef(ctx, d, a.WorkspaceID, *a.PixelID); err != nil {
			return err
		}
	}
	return nil
}

// checkExtensionPatch checks the template and pixel an update names. A
// value the link already has is taken as it is, even when its template or
// pixel was deleted since: a client may send a link back as it read it. A
// link moving to another workspace leaves its template and pixel behind,
// as it leaves its project.
func checkExtensionPatch(ctx context.Context, d *Deps, l *link.Link, targetWorkspace string, p *link.Patch) error {
	moving := targetWorkspace != l.WorkspaceID
	if v, ok := p.UTMTemplateID.Value(); ok && v != "" {
		if v != l.UTMTemplateID || moving {
			if err := checkTemplateRef(ctx, d, targetWorkspace, v); err != nil {
				return err
			}
		}
	} else if !p.UTMTemplateID.Set && moving && l.UTMTemplateID != "" {
		p.UTMTemplateID = domain.Some("")
	}
	current := ""
	if l.PixelID != nil {
		current = *l.PixelID
	}
	if v, ok := p.PixelID.Value(); ok && v != "" {
		if v != current || moving {
			if err := checkPixelRef(ctx, d, targetWorkspace, v); err != nil {
				return err
			}
		}
	} else if !p.PixelID.Set && moving && current != "" {
		p.PixelID = domain.NullOpt[string]()
	}
	return nil
}
