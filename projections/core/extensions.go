package core

import (
	"context"
	"database/sql"
	"errors"
	"strings"

	"github.com/linkd/linkd/domain"
	"github.com/linkd/linkd/domain/pixel"
	"github.com/linkd/linkd/domain/utmtemplate"
	"github.com/linkd/linkd/eventstore"
	"github.com/linkd/linkd/projections"
	"github.com/linkd/linkd/queries"
)

// The UTM templates and tracking pixels of workspaces, from their streams.
// Like every row here, each remembers the version of its stream it
// reflects, so an event applied twice changes nothing. A change to either
// is announced as Change{Kind: KindUTMTemplate or KindPixel, ID}: the link
// cache forgets the links that resolved them.

// Change kinds of templates and pixels.
const (
	KindUTMTemplate = "utm_template"
	KindPixel       = "pixel"
)

var extensionSchema = []string{
	`CREATE TABLE IF NOT EXISTS utm_templates (
		id TEXT PRIMARY KEY,
		workspace_id TEXT NOT NULL,
		name TEXT NOT NULL,
		utm_source TEXT NOT NULL,
		utm_medium TEXT NOT NULL,
		utm_campaign TEXT NOT NULL,
		utm_term TEXT NOT NULL,
		utm_content TEXT NOT NULL,
		utm_name TEXT NOT NULL,
		created_at INTEGER NOT NULL,
		updated_at INTEGER NOT NULL,
		deleted INTEGER NOT NULL DEFAULT 0,
		version INTEGER NOT NULL)`,
	`CREATE INDEX IF NOT EXISTS utm_templates_ws ON utm_templates(workspace_id, deleted, created_at, id)`,
	`CREATE TABLE IF NOT EXISTS pixels (
		id TEXT PRIMARY KEY,
		workspace_id TEXT NOT NULL,
		name TEXT NOT NULL,
		type TEXT NOT NULL,
		pixel_id TEXT NOT NULL,
		created_at INTEGER NOT NULL,
		updated_at INTEGER NOT NULL,
		deleted INTEGER NOT NULL DEFAULT 0,
		version INTEGER NOT NULL)`,
	`CREATE INDEX IF NOT EXISTS pixels_ws ON pixels(workspace_id, deleted, created_at, id)`,
}

// applyExtension applies an event of a template or pixel stream, once.
func (a *applier) applyExtension(re *projections.Event) error {
	table, kind := "utm_templates", KindUTMTemplate
	if eventstore.Category(re.Stream) == pixel.Category {
		table, kind = "pixels", KindPixel
	}
	id := re.Stream[strings.IndexByte(re.Stream, '-')+1:]
	v, err := a.rowVersion(table, id)
	if err != nil {
		return err
	}
	if int64(re.Version) <= v {
		return nil // applied before
	}
	e, err := re.Decode()
	if errors.Is(err, domain.ErrUnknownEvent) {
		return a.bump(table, id, re.Version)
	}
	if err != nil {
		return err
	}
	switch e := e.(type) {
	case *utmtemplate.Created:
		x := e.Values
		err = a.Exec(`INSERT INTO utm_templates (id, workspace_id, name, utm_source, utm_medium, utm_campaign, utm_term, utm_content, utm_name, created_at, updated_at, version)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, id, e.WorkspaceID, e.Name, x.Source, x.Medium, x.Campaign, x.Term, x.Content, x.Name,
			e.At.UnixNano(), e.At.UnixNano(), re.Version)
	case *utmtemplate.Updated:
		err = a.templateUpdated(id, e, re.Version)
	case *utmtemplate.Deleted:
		err = a.Exec(`UPDATE utm_templates SET deleted = 1, updated_at = ?, version = ? WHERE id = ?`, e.At.UnixNano(), re.Version, id)
	case *pixel.Created:
		err = a.Exec(`INSERT INTO pixels (id, workspace_id, name, type, pixel_id, created_at, updated_at, version) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
			id, e.WorkspaceID, e.Name, e.Type, e.PixelID, e.At.UnixNano(), e.At.UnixNano(), re.Version)
	case *pixel.Updated:
		for _, f := range []struct {
			col string
			v   domain.Opt[string]
		}{{"name", e.Name}, {"type", e.Type}, {"pixel_id", e.PixelID}} {
			if s, ok := f.v.Value(); ok && err == nil {
				err = a.Exec(`UPDATE pixels SET `+f.col+` = ? WHERE id = ?`, s, id)
			}
		}
		if err == nil {
			err = a.Exec(`UPDATE pixels SET updated_at = ?, version = ? WHERE id = ?`, e.At.UnixNano(), re.Version, id)
		}
	case *pixel.Deleted:
		err = a.Exec(`UPDATE pixels SET deleted = 1, updated_at = ?, version = ? WHERE id = ?`, e.At.UnixNano(), re.Version, id)
	default:
		err = a.bump(table, id, re.Version)
	}
	if err != nil {
		return err
	}
	a.changes = append(a.changes, Change{Kind: kind, ID: id})
	return nil
}

func (a *applier) templateUpdated(id string, e *utmtemplate.Updated, version uint64) error {
	if v, ok := e.Name.Value(); ok {
		if err := a.Exec(`UPDATE utm_templates SET name = ? WHERE id = ?`, v, id); err != nil {
			return err
		}
	}
	p := e.Patch
	for _, f := range []struct {
		col string
		v   domain.Opt[string]
	}{{"utm_source", p.Source}, {"utm_medium", p.Medium}, {"utm_campaign", p.Campaign}, {"utm_term", p.Term}, {"utm_content", p.Content}, {"utm_name", p.Name}} {
		if f.v.Set { // null clears
			if err := a.Exec(`UPDATE utm_templates SET `+f.col+` = ? WHERE id = ?`, f.v.V, id); err != nil {
				return err
			}
		}
	}
	return a.Exec(`UPDATE utm_templates SET updated_at = ?, version = ? WHERE id = ?`, e.At.UnixNano(), version, id)
}

// liveWorkspace keeps the templates and pixels of deleted workspaces out
// of reads by id: they went with their workspace (lists only ever cover
// live workspaces).
const liveWorkspace = `workspace_id IN (SELECT id FROM workspaces WHERE deleted = 0)`

const templateCols = `id, workspace_id, name, utm_source, utm_medium, utm_campaign, utm_term, utm_content, utm_name, created_at, updated_at`

func scanTemplate(sc interface{ Scan(...any) error }, extra ...any) (queries.UTMTemplate, error) {
	var t queries.UTMTemplate
	var c, u int64
	v := &t.Values
	err := sc.Scan(append([]any{&t.ID, &t.WorkspaceID, &t.Name, &v.Source, &v.Medium, &v.Campaign, &v.Term, &v.Content, &v.Name, &c, &u}, extra...)...)
	t.CreatedAt, t.UpdatedAt = ts(c), ts(u)
	return t, err
}

// UTMTemplate returns a live template of a live workspace by id.
func (s *Store) UTMTemplate(ctx context.Context, id string) (queries.UTMTemplate, bool, error) {
	t, err := scanTemplate(s.r.QueryRowContext(ctx, `SELECT `+templateCols+` FROM utm_templates WHERE id = ? AND deleted = 0 AND `+liveWorkspace, id))
	if errors.Is(err, sql.ErrNoRows) {
		return t, false, nil
	}
	return t, err == nil, err
}

// UTMTemplates lists the templates of workspaces, newest first.
func (s *Store) UTMTemplates(ctx context.Context, workspaceIDs []string, p queries.Page) (queries.PageResult[queries.UTMTemplate], error) {
	in, args := inList(workspaceIDs)
	return paginate(ctx, s.r, `SELECT `+templateCols+`, created_at AS ca, id AS i FROM utm_templates`, "deleted = 0 AND workspace_id IN "+in, args, false, p,
		func(rows *sql.Rows) (queries.UTMTemplate, int64, string, error) {
			var t int64
			var id string
			x, err := scanTemplate(rows, &t, &id)
			return x, t, id, err
		})
}

const pixelCols = `id, workspace_id, name, type, pixel_id, created_at, updated_at`

func scanPixel(sc interface{ Scan(...any) error }, extra ...any) (queries.Pixel, error) {
	var p queries.Pixel
	var c, u int64
	err := sc.Scan(append([]any{&p.ID, &p.WorkspaceID, &p.Name, &p.Type, &p.PixelID, &c, &u}, extra...)...)
	p.CreatedAt, p.UpdatedAt = ts(c), ts(u)
	return p, err
}

// Pixel returns a live pixel of a live workspace by id.
func (s *Store) Pixel(ctx context.Context, id string) (queries.Pixel, bool, error) {
	p, err := scanPixel(s.r.QueryRowContext(ctx, `SELECT `+pixelCols+` FROM pixels WHERE id = ? AND deleted = 0 AND `+liveWorkspace, id))
	if errors.Is(err, sql.ErrNoRows) {
		return p, false, nil
	}
	return p, err == nil, err
}

// Pixels lists the pixels of workspaces, newest first.
func (s *Store) Pixels(ctx context.Context, workspaceIDs []string, p queries.Page) (queries.PageResult[queries.Pixel], error) {
	in, args := inList(workspaceIDs)
	return paginate(ctx, s.r, `SELECT `+pixelCols+`, created_at AS ca, id AS i FROM pixels`, "deleted = 0 AND workspace_id IN "+in, args, false, p,
		func(rows *sql.Rows) (queries.Pixel, int64, string, error) {
			var t int64
			var id string
			x, err := scanPixel(rows, &t, &id)
			return x, t, id, err
		})
}

// resolveExtensions sets the template values and the pixel of a link that
// names them (one read each, for those links only): a template or pixel of
// another workspace, or deleted, resolves to nothing.
func (s *Store) resolveExtensions(ctx context.Context, l *queries.Link) error {
	if id := l.UTMTemplateID; id != "" {
		t, ok, err := s.UTMTemplate(ctx, id)
		if err != nil {
			return err
		}
		if ok && t.WorkspaceID == l.WorkspaceID {
			l.TemplateValues = &t.Values
		}
	}
	if l.PixelID != nil && *l.PixelID != "" {
		p, ok, err := s.Pixel(ctx, *l.PixelID)
		if err != nil {
			return err
		}
		if ok && p.WorkspaceID == l.WorkspaceID {
			l.Pixel = &p
		}
	}
	return nil
}
