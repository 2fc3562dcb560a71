package queries

import (
	"context"
	"time"

	"github.com/linkd/linkd/domain/pixel"
	"github.com/linkd/linkd/domain/utmtemplate"
)

// The UTM templates and tracking pixels of workspaces (extensions:
// /v1/utm-templates, /v1/pixels), and what a link's utm_template_id and
// pixel_id resolve to when it is followed.

// UTMTemplate is the read model of a UTM template.
type UTMTemplate struct {
	ID          string
	WorkspaceID string
	Name        string
	Values      utmtemplate.Values
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

// Pixel is the read model of a tracking pixel.
type Pixel struct {
	ID          string
	WorkspaceID string
	Name        string
	Type        string
	PixelID     string // the platform's id
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

// Target is where the link sends a visitor on platform (Attributes.Target),
// with the values of its UTM template (TemplateValues, resolved by the read
// model) for every utm_* the link does not set itself.
func (l *Link) Target(platform string) string {
	t, _ := l.targetRoute(platform)
	return t
}

// targetRoute is Target, with the prepared route it came from (nil when
// the link has none: worked out now).
func (l *Link) targetRoute(platform string) (string, *route) {
	if r := l.route(platform); r != nil {
		return r.target, r
	}
	return l.target(platform), nil
}

// target works out Target.
func (l *Link) target(platform string) string {
	t := l.TemplateValues
	if t == nil {
		return l.Attributes.Target(platform)
	}
	a := l.Attributes
	for _, f := range [...]struct {
		own *string
		tpl string
	}{
		{&a.UTMSource, t.Source}, {&a.UTMMedium, t.Medium}, {&a.UTMCampaign, t.Campaign},
		{&a.UTMTerm, t.Term}, {&a.UTMContent, t.Content}, {&a.UTMName, t.Name},
	} {
		if *f.own == "" {
			*f.own = f.tpl
		}
	}
	return a.Target(platform)
}

// UTMTemplateByID asks for a template of a workspace the user is in.
type UTMTemplateByID struct {
	ID     string
	UserID string
}

// UTMTemplatesReadModel is what the template queries read.
type UTMTemplatesReadModel interface {
	visibleWorkspacesReadModel
	UTMTemplate(ctx context.Context, id string) (UTMTemplate, bool, error)
	UTMTemplates(ctx context.Context, workspaceIDs []string, p Page) (PageResult[UTMTemplate], error)
}

// UTMTemplateByIDHandler answers UTMTemplateByID: 404 when the template does
// not exist, 403 (insufficient permissions) when the user is not in its
// workspace.
type UTMTemplateByIDHandler struct{ ReadModel UTMTemplatesReadModel }

// Handle answers the query.
func (h UTMTemplateByIDHandler) Handle(ctx context.Context, q UTMTemplateByID) (UTMTemplate, error) {
	return memberRead(ctx, h.ReadModel, q.UserID, func() (UTMTemplate, bool, error) { return h.ReadModel.UTMTemplate(ctx, q.ID) },
		func(t UTMTemplate) string { return t.WorkspaceID }, utmtemplate.MsgNotFound)
}

// UTMTemplatesPage asks for one page of the templates a user may see: of
// one workspace, or of all of theirs.
type UTMTemplatesPage struct {
	UserID      string
	WorkspaceID string
	Page        Page
}

// UTMTemplatesPageHandler answers UTMTemplatesPage.
type UTMTemplatesPageHandler struct{ ReadModel UTMTemplatesReadModel }

// Handle answers the query.
func (h UTMTemplatesPageHandler) Handle(ctx context.Context, q UTMTemplatesPage) (PageResult[UTMTemplate], error) {
	ws, err := visibleWorkspaces(ctx, h.ReadModel, q.WorkspaceID, q.UserID)
	if err != nil {
		return PageResult[UTMTemplate]{}, err
	}
	return h.ReadModel.UTMTemplates(ctx, ws, q.Page)
}

// PixelByID asks for a pixel of a workspace the user is in.
type PixelByID struct {
	ID     string
	UserID string
}

// PixelsReadModel is what the pixel queries read.
type PixelsReadModel interface {
	visibleWorkspacesReadModel
	Pixel(ctx context.Context, id string) (Pixel, bool, error)
	Pixels(ctx context.Context, workspaceIDs []string, p Page) (PageResult[Pixel], error)
}

// PixelByIDHandler answers PixelByID (404, or 403 outside the user's
// workspaces).
type PixelByIDHandler struct{ ReadModel PixelsReadModel }

// Handle answers the query.
func (h PixelByIDHandler) Handle(ctx context.Context, q PixelByID) (Pixel, error) {
	return memberRead(ctx, h.ReadModel, q.UserID, func() (Pixel, bool, error) { return h.ReadModel.Pixel(ctx, q.ID) },
		func(p Pixel) string { return p.WorkspaceID }, pixel.MsgNotFound)
}

// PixelsPage asks for one page of the pixels a user may see.
type PixelsPage struct {
	UserID      string
	WorkspaceID string
	Page        Page
}

// PixelsPageHandler answers PixelsPage.
type PixelsPageHandler struct{ ReadModel PixelsReadModel }

// Handle answers the query.
func (h PixelsPageHandler) Handle(ctx context.Context, q PixelsPage) (PageResult[Pixel], error) {
	ws, err := visibleWorkspaces(ctx, h.ReadModel, q.WorkspaceID, q.UserID)
	if err != nil {
		return PageResult[Pixel]{}, err
	}
	return h.ReadModel.Pixels(ctx, ws, q.Page)
}
