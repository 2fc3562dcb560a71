package core

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/linkd/linkd/domain/apikey"
	"github.com/linkd/linkd/domain/click"
	"github.com/linkd/linkd/domain/customdomain"
	"github.com/linkd/linkd/domain/link"
	"github.com/linkd/linkd/domain/project"
	"github.com/linkd/linkd/domain/workspace"
	"github.com/linkd/linkd/eventstore"
	"github.com/linkd/linkd/queries"
)

func ts(n int64) time.Time { return time.Unix(0, n).UTC() }

const linkCols = `l.id, l.code, l.created_by, l.created_at, l.updated_at, l.is_archived, l.doc, COALESCE(c.clicks, 0), w.plan`
const linkFrom = `SELECT ` + linkCols + `, l.created_at, l.id FROM links l
	JOIN workspaces w ON w.id = l.workspace_id AND w.deleted = 0
	LEFT JOIN link_clicks c ON c.link_id = l.id`

func scanLink(sc interface{ Scan(...any) error }, extra ...any) (queries.Link, error) {
	var l queries.Link
	var created, updated int64
	var doc string
	dest := append([]any{&l.ID, &l.Code, &l.CreatedBy, &created, &updated, &l.IsArchived, &doc, &l.Clicks, &l.WorkspacePlan}, extra...)
	if err := sc.Scan(dest...); err != nil {
		return l, err
	}
	l.CreatedAt, l.UpdatedAt = ts(created), ts(updated)
	if err := json.Unmarshal([]byte(doc), &l.Attributes); err != nil {
		return l, err
	}
	return l, nil
}

func (s *Store) oneLink(ctx context.Context, where string, args ...any) (queries.Link, bool, error) {
	var t int64
	var id string
	row := s.r.QueryRowContext(ctx, linkFrom+" WHERE l.deleted = 0 AND "+where, args...)
	l, err := scanLink(row, &t, &id)
	if errors.Is(err, sql.ErrNoRows) {
		return l, false, nil
	}
	l.Clicks = max(l.Clicks, s.pendingCount(l.ID))
	return l, err == nil, err
}

// LinksToFollow returns live links with their UTM template's values and
// their pixel resolved, as LinkByCode does, read in one query: those of
// ids, or when ids is nil the n most recently created. It fills the short
// links' cache (api.LinkCache) at start and after links change, so that a
// link's first redirect does not wait for a query of its own.
func (s *Store) LinksToFollow(ctx context.Context, ids []string, n int) ([]queries.Link, error) {
	q, args := linkFrom+" WHERE l.deleted = 0", []any{}
	if ids != nil {
		if len(ids) == 0 {
			return nil, nil
		}
		in, a := inList(ids)
		q, args = q+" AND l.id IN "+in, a
	}
	q += " ORDER BY l.created_at DESC LIMIT ?"
	args = append(args, n)
	rows, err := s.r.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []queries.Link
	for rows.Next() {
		var t int64
		var id string
		l, err := scanLink(rows, &t, &id)
		if err != nil {
			return nil, err
		}
		l.Clicks = max(l.Clicks, s.pendingCount(l.ID))
		out = append(out, l)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	for i := range out {
		if err := s.resolveExtensions(ctx, &out[i]); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Link returns a link by id.
func (s *Store) Link(ctx context.Context, id string) (queries.Link, bool, error) {
	return s.oneLink(ctx, "l.id = ?", id)
}

// LinkByCode returns the link with a code on a domain ("" for the default
// domain), with its UTM template's values and its pixel resolved.
func (s *Store) LinkByCode(ctx context.Context, domainID, code string) (queries.Link, bool, error) {
	var l queries.Link
	var ok bool
	var err error
	if domainID == "" {
		l, ok, err = s.oneLink(ctx, "l.code = ? AND l.domain_id IS NULL", code)
	} else {
		l, ok, err = s.oneLink(ctx, "l.code = ? AND l.domain_id = ?", code, domainID)
	}
	if ok {
		err = s.resolveExtensions(ctx, &l)
	}
	return l, ok, err
}

// Links lists links by filter, one page.
func (s *Store) Links(ctx context.Context, f queries.LinkFilter, p queries.Page) (queries.PageResult[queries.Link], error) {
	in, args := inList(f.WorkspaceIDs)
	where := "l.deleted = 0 AND l.workspace_id IN " + in + " AND l.is_archived = ?"
	args = append(args, f.Archived)
	if f.ProjectID != "" {
		where += " AND l.project_id = ?"
		args = append(args, f.ProjectID)
	}
	// paginate orders by bare created_at and id: select from a subquery.
	sub := `SELECT id, code, created_by, created_at, updated_at, is_archived, doc, clicks, plan, created_at, id FROM (
		SELECT l.id AS id, l.code AS code, l.created_by AS created_by, l.created_at AS created_at, l.updated_at AS updated_at,
			l.is_archived AS is_archived, l.doc AS doc, COALESCE(c.clicks, 0) AS clicks, w.plan AS plan
		FROM links l JOIN workspaces w ON w.id = l.workspace_id AND w.deleted = 0
		LEFT JOIN link_clicks c ON c.link_id = l.id WHERE ` + where + `)`
	return paginate(ctx, s.r, sub, "1", args, f.Ascending, p,
		func(rows *sql.Rows) (queries.Link, int64, string, error) {
			var t int64
			var id string
			l, err := scanLink(rows, &t, &id)
			l.Clicks = max(l.Clicks, s.pendingCount(l.ID))
			return l, t, id, err
		})
}

// LinkClicks returns the click count of a link.
func (s *Store) LinkClicks(ctx context.Context, id string) (int64, error) {
	var n int64
	err := s.r.QueryRowContext(ctx, `SELECT clicks FROM link_clicks WHERE link_id = ?`, id).Scan(&n)
	if errors.Is(err, sql.ErrNoRows) {
		err = nil
	}
	return max(n, s.pendingCount(id)), err
}

const wsCols = `id, name, description, owner_id, plan, is_default, created_at, updated_at`

func scanWorkspace(sc interface{ Scan(...any) error }) (queries.Workspace, error) {
	var w queries.Workspace
	var c, u int64
	err := sc.Scan(&w.ID, &w.Name, &w.Description, &w.OwnerID, &w.Plan, &w.IsDefault, &c, &u)
	w.CreatedAt, w.UpdatedAt = ts(c), ts(u)
	return w, err
}

// Workspace returns a workspace by id.
func (s *Store) Workspace(ctx context.Context, id string) (queries.Workspace, bool, error) {
	w, err := scanWorkspace(s.r.QueryRowContext(ctx, `SELECT `+wsCols+` FROM workspaces WHERE id = ? AND deleted = 0`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return w, false, nil
	}
	return w, err == nil, err
}

// WorkspacesOf lists the workspaces a user belongs to, oldest first.
func (s *Store) WorkspacesOf(ctx context.Context, userID string) ([]queries.Workspace, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT w.id, w.name, w.description, w.owner_id, w.plan, w.is_default, w.created_at, w.updated_at
		FROM workspaces w JOIN members m ON m.workspace_id = w.id
		WHERE m.user_id = ? AND w.deleted = 0 ORDER BY w.created_at, w.id`, userID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []queries.Workspace{}
	for rows.Next() {
		w, err := scanWorkspace(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, w)
	}
	return out, rows.Err()
}

// WorkspaceIDsOf lists the ids of the workspaces a user belongs to.
func (s *Store) WorkspaceIDsOf(ctx context.Context, userID string) ([]string, error) {
	ws, err := s.WorkspacesOf(ctx, userID)
	if err != nil {
		return nil, err
	}
	ids := make([]string, len(ws))
	for i, w := range ws {
		ids[i] = w.ID
	}
	return ids, nil
}

// DefaultWorkspace returns the user's default workspace, if made: the one
// made as such, or, once it is deleted, the oldest remaining workspace the
// user created (the one the write side passes the default on to).
func (s *Store) DefaultWorkspace(ctx context.Context, userID string) (queries.Workspace, bool, error) {
	w, err := scanWorkspace(s.r.QueryRowContext(ctx, `SELECT `+wsCols+` FROM workspaces
		WHERE owner_id = ? AND deleted = 0 ORDER BY is_default DESC, created_at, id LIMIT 1`, userID))
	if errors.Is(err, sql.ErrNoRows) {
		return w, false, nil
	}
	return w, err == nil, err
}

// Role returns a user's role in a workspace, "" for none.
func (s *Store) Role(ctx context.Context, workspaceID, userID string) (string, error) {
	var role string
	err := s.r.QueryRowContext(ctx, `SELECT m.role FROM members m JOIN workspaces w ON w.id = m.workspace_id AND w.deleted = 0
		WHERE m.workspace_id = ? AND m.user_id = ?`, workspaceID, userID).Scan(&role)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	return role, err
}

// Members lists a workspace's members in joining order.
func (s *Store) Members(ctx context.Context, workspaceID string) ([]queries.Member, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT user_id, email, role, joined_at FROM members WHERE workspace_id = ? ORDER BY joined_at, user_id`, workspaceID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []queries.Member{}
	for rows.Next() {
		var m queries.Member
		var j int64
		if err := rows.Scan(&m.UserID, &m.Email, &m.Role, &j); err != nil {
			return nil, err
		}
		m.JoinedAt = ts(j)
		out = append(out, m)
	}
	return out, rows.Err()
}

const projectCols = `id, workspace_id, name, description, color, created_at, updated_at`

func scanProject(sc interface{ Scan(...any) error }, extra ...any) (queries.Project, error) {
	var p queries.Project
	var c, u int64
	err := sc.Scan(append([]any{&p.ID, &p.WorkspaceID, &p.Name, &p.Description, &p.Color, &c, &u}, extra...)...)
	p.CreatedAt, p.UpdatedAt = ts(c), ts(u)
	return p, err
}

// Project returns a project by id.
func (s *Store) Project(ctx context.Context, id string) (queries.Project, bool, error) {
	p, err := scanProject(s.r.QueryRowContext(ctx, `SELECT `+projectCols+` FROM projects WHERE id = ? AND deleted = 0`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return p, false, nil
	}
	return p, err == nil, err
}

// Projects lists the projects of workspaces, newest first.
func (s *Store) Projects(ctx context.Context, workspaceIDs []string, p queries.Page) (queries.PageResult[queries.Project], error) {
	in, args := inList(workspaceIDs)
	return paginate(ctx, s.r, `SELECT `+projectCols+`, created_at AS ca, id AS i FROM projects`, "deleted = 0 AND workspace_id IN "+in, args, false, p,
		func(rows *sql.Rows) (queries.Project, int64, string, error) {
			var t int64
			var id string
			pr, err := scanProject(rows, &t, &id)
			return pr, t, id, err
		})
}

const domainCols = `id, workspace_id, domain, description, is_verified, dns_configured, cname_added, last_checked, created_at, updated_at`

func scanDomain(sc interface{ Scan(...any) error }, extra ...any) (queries.Domain, error) {
	var d queries.Domain
	var c, u int64
	var lc sql.NullInt64
	err := sc.Scan(append([]any{&d.ID, &d.WorkspaceID, &d.Domain, &d.Description, &d.IsVerified, &d.DNSConfigured, &d.CNAMEAdded, &lc, &c, &u}, extra...)...)
	d.CreatedAt, d.UpdatedAt = ts(c), ts(u)
	if lc.Valid {
		t := ts(lc.Int64)
		d.LastChecked = &t
	}
	return d, err
}

// Domain returns a custom domain by id.
func (s *Store) Domain(ctx context.Context, id string) (queries.Domain, bool, error) {
	d, err := scanDomain(s.r.QueryRowContext(ctx, `SELECT `+domainCols+` FROM domains WHERE id = ? AND deleted = 0`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return d, false, nil
	}
	return d, err == nil, err
}

// VerifiedDomain returns the verified custom domain of a host name.
func (s *Store) VerifiedDomain(ctx context.Context, name string) (queries.Domain, bool, error) {
	d, err := scanDomain(s.r.QueryRowContext(ctx, `SELECT `+domainCols+` FROM domains WHERE domain = ? AND deleted = 0 AND is_verified = 1`, name))
	if errors.Is(err, sql.ErrNoRows) {
		return d, false, nil
	}
	return d, err == nil, err
}

// Domains lists the custom domains of workspaces, newest first.
func (s *Store) Domains(ctx context.Context, workspaceIDs []string, p queries.Page) (queries.PageResult[queries.Domain], error) {
	in, args := inList(workspaceIDs)
	return paginate(ctx, s.r, `SELECT `+domainCols+`, created_at AS ca, id AS i FROM domains`, "deleted = 0 AND workspace_id IN "+in, args, false, p,
		func(rows *sql.Rows) (queries.Domain, int64, string, error) {
			var t int64
			var id string
			d, err := scanDomain(rows, &t, &id)
			return d, t, id, err
		})
}

const keyCols = `id, user_id, name, hash, prefix, kind, access, permissions, project_id, allowed_hostnames, operator, is_active, created_at`

func scanKey(sc interface{ Scan(...any) error }) (queries.APIKey, error) {
	var k queries.APIKey
	var perms, hosts string
	var c int64
	if err := sc.Scan(&k.ID, &k.UserID, &k.Name, &k.Hash, &k.Prefix, &k.Kind, &k.Access, &perms, &k.ProjectID, &hosts, &k.Operator, &k.IsActive, &c); err != nil {
		return k, err
	}
	k.CreatedAt = ts(c)
	_ = json.Unmarshal([]byte(perms), &k.Permissions)
	_ = json.Unmarshal([]byte(hosts), &k.AllowedHostnames)
	return k, nil
}

// APIKeyByHash returns the key with a hash.
func (s *Store) APIKeyByHash(ctx context.Context, hash string) (queries.APIKey, bool, error) {
	k, err := scanKey(s.r.QueryRowContext(ctx, `SELECT `+keyCols+` FROM api_keys WHERE hash = ?`, hash))
	if errors.Is(err, sql.ErrNoRows) {
		return k, false, nil
	}
	return k, err == nil, err
}

// APIKeysOf lists a user's keys, oldest first.
func (s *Store) APIKeysOf(ctx context.Context, userID string) ([]queries.APIKey, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT `+keyCols+` FROM api_keys WHERE user_id = ? ORDER BY created_at, id`, userID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []queries.APIKey{}
	for rows.Next() {
		k, err := scanKey(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, k)
	}
	return out, rows.Err()
}

func (s *Store) ids(ctx context.Context, q string, args ...any) ([]string, error) {
	rows, err := s.r.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		out = append(out, id)
	}
	return out, rows.Err()
}

// WorkspaceLinkIDs implements commands.Contents.
func (s *Store) WorkspaceLinkIDs(ctx context.Context, id string) ([]string, error) {
	return s.ids(ctx, `SELECT id FROM links WHERE workspace_id = ? AND deleted = 0`, id)
}

// WorkspaceProjectIDs implements commands.Contents.
func (s *Store) WorkspaceProjectIDs(ctx context.Context, id string) ([]string, error) {
	return s.ids(ctx, `SELECT id FROM projects WHERE workspace_id = ? AND deleted = 0`, id)
}

// WorkspaceDomainIDs implements commands.Contents.
func (s *Store) WorkspaceDomainIDs(ctx context.Context, id string) ([]string, error) {
	return s.ids(ctx, `SELECT id FROM domains WHERE workspace_id = ? AND deleted = 0`, id)
}

// OwnWorkspaceIDs implements commands.Contents.
func (s *Store) OwnWorkspaceIDs(ctx context.Context, userID string) ([]string, error) {
	return s.ids(ctx, `SELECT id FROM workspaces WHERE owner_id = ? AND deleted = 0 ORDER BY created_at, id`, userID)
}

// DomainLinkIDs implements commands.Contents.
func (s *Store) DomainLinkIDs(ctx context.Context, id string) ([]string, error) {
	return s.ids(ctx, `SELECT id FROM links WHERE domain_id = ? AND deleted = 0`, id)
}

// ProjectLinkIDs implements commands.Contents.
func (s *Store) ProjectLinkIDs(ctx context.Context, id string) ([]string, error) {
	return s.ids(ctx, `SELECT id FROM links WHERE project_id = ? AND deleted = 0`, id)
}

// AppliedVersion implements projections.StreamTracker.
func (s *Store) AppliedVersion(ctx context.Context, stream string) (uint64, bool, error) {
	var table, id string
	switch cat := eventstore.Category(stream); cat {
	case "clicks":
		n, err := s.LinkClicks(ctx, strings.TrimPrefix(stream, click.StreamPrefix))
		if err != nil || n == 0 {
			return 0, false, err
		}
		return uint64(n - 1), true, nil
	case "link":
		table, id = "links", strings.TrimPrefix(stream, link.StreamPrefix)
	case "workspace":
		table, id = "workspaces", strings.TrimPrefix(stream, workspace.StreamPrefix)
	case "project":
		table, id = "projects", strings.TrimPrefix(stream, project.StreamPrefix)
	case "domain":
		table, id = "domains", strings.TrimPrefix(stream, customdomain.StreamPrefix)
	case "apikey":
		table, id = "api_keys", strings.TrimPrefix(stream, apikey.StreamPrefix)
	default:
		return 0, false, nil
	}
	var v int64
	err := s.r.QueryRowContext(ctx, "SELECT version FROM "+table+" WHERE id = ?", id).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, false, nil
	}
	return uint64(v), err == nil, err
}

// PublishableHostnames lists the allowed hostnames of every active
// publishable key (for CORS preflights, which carry no key).
func (s *Store) PublishableHostnames(ctx context.Context) ([]string, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT allowed_hostnames FROM api_keys WHERE kind = 'publishable' AND is_active`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	seen := map[string]bool{}
	out := []string{}
	for rows.Next() {
		var hosts string
		if err := rows.Scan(&hosts); err != nil {
			return nil, err
		}
		var hs []string
		_ = json.Unmarshal([]byte(hosts), &hs)
		for _, h := range hs {
			if !seen[h] {
				seen[h] = true
				out = append(out, h)
			}
		}
	}
	return out, rows.Err()
}
