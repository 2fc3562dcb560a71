package core

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/cockroachdb/pebble/v2"

	"github.com/linkd/linkd/domain"
	"github.com/linkd/linkd/domain/apikey"
	"github.com/linkd/linkd/domain/click"
	"github.com/linkd/linkd/domain/conversion"
	"github.com/linkd/linkd/domain/customdomain"
	"github.com/linkd/linkd/domain/link"
	"github.com/linkd/linkd/domain/pixel"
	"github.com/linkd/linkd/domain/project"
	"github.com/linkd/linkd/domain/utmtemplate"
	"github.com/linkd/linkd/domain/workspace"
	"github.com/linkd/linkd/eventstore"
	"github.com/linkd/linkd/internal/storage/sidedb"
	"github.com/linkd/linkd/internal/storage/sqlitedb"
	"github.com/linkd/linkd/projections"
)

// Apply implements projections.Projector.
func (s *Store) Apply(ctx context.Context, events []projections.Event) error {
	if len(events) == 0 {
		return nil
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	journeys := s.journeys.NewBatch()
	defer journeys.Close()
	a := &applier{Batch: sqlitedb.NewBatch(ctx, tx), journeys: journeys}
	maxPos := eventstore.Start
	clicks := map[string]clickAgg{}
	for i := range events {
		re := &events[i]
		if maxPos.Less(re.Position) {
			maxPos = re.Position
		}
		if strings.HasPrefix(re.Stream, click.StreamPrefix) {
			// Clicks are counted per batch: the count is the highest
			// version seen plus one.
			id := strings.TrimPrefix(re.Stream, click.StreamPrefix)
			c := clicks[id]
			if n := int64(re.Version) + 1; n > c.count {
				c.count = n
				c.last = re.Time.UnixNano()
			}
			clicks[id] = c
			continue
		}
		if err := a.apply(re); err != nil {
			return fmt.Errorf("core: %s@%d (%s): %w", re.Stream, re.Version, re.Type, err)
		}
	}
	behind, flushed := s.clicks.on, false
	if behind {
		// clicks.go: written once a second; the checkpoint moves only
		// when nothing is left pending.
		if s.addClicks(clicks) {
			if err := upsertClicks(ctx, tx, s.clicks.m); err != nil {
				return err
			}
			flushed = true
		}
	} else if err := upsertClicks(ctx, tx, clicks); err != nil {
		return err
	}
	if !behind || flushed || len(s.clicks.m) == 0 { // only this goroutine writes m
		if err := a.SaveCheckpoint(maxPos); err != nil {
			return err
		}
	}
	// Durable before the checkpoint commits: idempotent writes
	// (journeys.go).
	if err := sidedb.Commit(journeys); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	if flushed {
		s.clearClicks()
	}
	s.clicks.applied = maxPos
	changes := a.changes
	for id := range clicks {
		changes = append(changes, Change{Kind: "clicks", ID: id})
	}
	s.notify(changes)
	return nil
}

type clickAgg struct{ count, last int64 }

type applier struct {
	*sqlitedb.Batch
	changes  []Change
	journeys *pebble.Batch
	key, val []byte
}

// rowVersion returns the version a table's row reflects, -1 when absent.
func (a *applier) rowVersion(table, id string) (int64, error) {
	var v int64
	err := a.QueryRow("SELECT version FROM "+table+" WHERE id = ?", id).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return -1, nil
	}
	return v, err
}

func (a *applier) apply(re *projections.Event) error {
	table, kind := "", ""
	switch eventstore.Category(re.Stream) {
	case "link":
		table, kind = "links", "link"
	case "workspace":
		table, kind = "workspaces", "workspace"
	case "project":
		table, kind = "projects", "project"
	case "domain":
		table, kind = "domains", "domain"
	case "apikey":
		table, kind = "api_keys", "apikey"
	case conversion.CustomerCategory:
		return a.applyCustomer(re)
	case utmtemplate.Category, pixel.Category:
		return a.applyExtension(re)
	default:
		return nil
	}
	id := strings.TrimPrefix(re.Stream, kind+"-")
	v, err := a.rowVersion(table, id)
	if err != nil {
		return err
	}
	if int64(re.Version) <= v {
		return nil // applied before
	}
	e, err := re.Decode()
	if errors.Is(err, domain.ErrUnknownEvent) {
		return a.bump(table, id, re.Version) // a newer binary's event: skip it, keep the version
	}
	if err != nil {
		return err
	}
	at := re.Time.UnixNano()
	switch e := e.(type) {
	case *link.Created:
		err = a.linkCreated(e, re.Version)
	case *link.Updated:
		err = a.linkUpdated(e, re.Version)
	case *link.Archived:
		err = a.Exec(`UPDATE links SET is_archived = 1, updated_at = ?, version = ? WHERE id = ?`, e.At.UnixNano(), re.Version, id)
	case *link.Unarchived:
		err = a.Exec(`UPDATE links SET is_archived = 0, updated_at = ?, version = ? WHERE id = ?`, e.At.UnixNano(), re.Version, id)
	case *link.Deleted:
		err = a.Exec(`UPDATE links SET deleted = 1, updated_at = ?, version = ? WHERE id = ?`, e.At.UnixNano(), re.Version, id)
	case *workspace.Created:
		err = a.Exec(`INSERT INTO workspaces (id, name, description, owner_id, plan, is_default, created_at, updated_at, version)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`, id, e.Name, e.Description, e.OwnerID, e.Plan, e.IsDefault, e.At.UnixNano(), e.At.UnixNano(), re.Version)
	case *workspace.Updated:
		err = a.workspaceUpdated(e, re.Version)
	case *workspace.Deleted:
		if err = a.Exec(`UPDATE workspaces SET deleted = 1, updated_at = ?, version = ? WHERE id = ?`, e.At.UnixNano(), re.Version, id); err == nil {
			err = a.Exec(`DELETE FROM members WHERE workspace_id = ?`, id)
		}
	case *workspace.MemberAdded:
		if err = a.Exec(`INSERT INTO members (workspace_id, user_id, email, role, joined_at) VALUES (?, ?, ?, ?, ?)
			ON CONFLICT(workspace_id, user_id) DO UPDATE SET role = excluded.role`, id, e.UserID, e.Email, e.Role, e.At.UnixNano()); err == nil {
			err = a.bump(table, id, re.Version)
		}
	case *workspace.MemberRoleChanged:
		if err = a.Exec(`UPDATE members SET role = ? WHERE workspace_id = ? AND user_id = ?`, e.Role, id, e.UserID); err == nil {
			err = a.bump(table, id, re.Version)
		}
	case *workspace.MemberRemoved:
		if err = a.Exec(`DELETE FROM members WHERE workspace_id = ? AND user_id = ?`, id, e.UserID); err == nil {
			err = a.bump(table, id, re.Version)
		}
	case *project.Created:
		err = a.Exec(`INSERT INTO projects (id, workspace_id, name, description, color, created_at, updated_at, version)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, id, e.WorkspaceID, e.Name, e.Description, e.Color, e.At.UnixNano(), e.At.UnixNano(), re.Version)
	case *project.Updated:
		err = a.projectUpdated(e, re.Version)
	case *project.Deleted:
		err = a.Exec(`UPDATE projects SET deleted = 1, updated_at = ?, version = ? WHERE id = ?`, e.At.UnixNano(), re.Version, id)
	case *customdomain.Created:
		err = a.Exec(`INSERT INTO domains (id, workspace_id, domain, description, is_verified, dns_configured, cname_added, created_at, updated_at, version)
			VALUES (?, ?, ?, ?, 0, 0, 0, ?, ?, ?)`, id, e.WorkspaceID, e.Domain, e.Description, e.At.UnixNano(), e.At.UnixNano(), re.Version)
	case *customdomain.Updated:
		if e.Description.Set {
			err = a.Exec(`UPDATE domains SET description = ?, updated_at = ?, version = ? WHERE id = ?`, e.Description.V, e.At.UnixNano(), re.Version, id)
		} else {
			err = a.Exec(`UPDATE domains SET updated_at = ?, version = ? WHERE id = ?`, e.At.UnixNano(), re.Version, id)
		}
	case *customdomain.Checked:
		err = a.Exec(`UPDATE domains SET dns_configured = (is_verified OR ?), cname_added = (is_verified OR ?), last_checked = ?, updated_at = ?, version = ? WHERE id = ?`,
			e.DNSConfigured, e.CNAMEAdded, e.At.UnixNano(), e.At.UnixNano(), re.Version, id)
	case *customdomain.Verified:
		err = a.Exec(`UPDATE domains SET is_verified = 1, dns_configured = 1, cname_added = 1, version = ? WHERE id = ?`, re.Version, id)
	case *customdomain.Deleted:
		err = a.Exec(`UPDATE domains SET deleted = 1, updated_at = ?, version = ? WHERE id = ?`, e.At.UnixNano(), re.Version, id)
	case *apikey.Created:
		perms, _ := json.Marshal(e.Permissions)
		hosts, _ := json.Marshal(e.AllowedHostnames)
		err = a.Exec(`INSERT INTO api_keys (id, user_id, name, hash, prefix, kind, access, permissions, project_id, allowed_hostnames, operator, is_active, created_at, version)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1, ?, ?)`, id, e.UserID, e.Name, e.Hash, e.Prefix, e.Kind, e.Access, string(perms), e.ProjectID, string(hosts), e.Operator, e.At.UnixNano(), re.Version)
	case *apikey.Deactivated:
		err = a.Exec(`UPDATE api_keys SET is_active = 0, version = ? WHERE id = ?`, re.Version, id)
	default:
		err = a.bump(table, id, re.Version)
	}
	if err != nil {
		return err
	}
	_ = at
	a.changes = append(a.changes, Change{Kind: kind, ID: id})
	return nil
}

func (a *applier) bump(table, id string, version uint64) error {
	return a.Exec("UPDATE "+table+" SET version = ? WHERE id = ?", version, id)
}

func (a *applier) linkCreated(e *link.Created, version uint64) error {
	doc, err := json.Marshal(e.Attributes)
	if err != nil {
		return err
	}
	return a.Exec(`INSERT INTO links (id, workspace_id, project_id, domain_id, code, created_by, created_at, updated_at, is_archived, doc, version)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, 0, ?, ?)`,
		e.LinkID, e.WorkspaceID, nullable(e.ProjectID), nullable(e.DomainID), e.Code, e.CreatedBy, e.At.UnixNano(), e.At.UnixNano(), string(doc), version)
}

func (a *applier) linkUpdated(e *link.Updated, version uint64) error {
	var docText, code string
	err := a.QueryRow(`SELECT doc, code FROM links WHERE id = ?`, e.LinkID).Scan(&docText, &code)
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	}
	if err != nil {
		return err
	}
	var attrs link.Attributes
	if err := json.Unmarshal([]byte(docText), &attrs); err != nil {
		return err
	}
	link.ApplyPatch(&attrs, &code, e.Changes)
	doc, err := json.Marshal(attrs)
	if err != nil {
		return err
	}
	return a.Exec(`UPDATE links SET workspace_id = ?, project_id = ?, domain_id = ?, code = ?, updated_at = ?, doc = ?, version = ? WHERE id = ?`,
		attrs.WorkspaceID, nullable(attrs.ProjectID), nullable(attrs.DomainID), code, e.At.UnixNano(), string(doc), version, e.LinkID)
}

func (a *applier) workspaceUpdated(e *workspace.Updated, version uint64) error {
	if v, ok := e.Name.Value(); ok {
		if err := a.Exec(`UPDATE workspaces SET name = ? WHERE id = ?`, v, e.WorkspaceID); err != nil {
			return err
		}
	}
	if e.Description.Set {
		if err := a.Exec(`UPDATE workspaces SET description = ? WHERE id = ?`, e.Description.V, e.WorkspaceID); err != nil {
			return err
		}
	}
	return a.Exec(`UPDATE workspaces SET updated_at = ?, version = ? WHERE id = ?`, e.At.UnixNano(), version, e.WorkspaceID)
}

func (a *applier) projectUpdated(e *project.Updated, version uint64) error {
	if v, ok := e.Name.Value(); ok {
		if err := a.Exec(`UPDATE projects SET name = ? WHERE id = ?`, v, e.ProjectID); err != nil {
			return err
		}
	}
	if e.Description.Set {
		if err := a.Exec(`UPDATE projects SET description = ? WHERE id = ?`, e.Description.V, e.ProjectID); err != nil {
			return err
		}
	}
	if v, ok := e.Color.Value(); ok {
		if err := a.Exec(`UPDATE projects SET color = ? WHERE id = ?`, v, e.ProjectID); err != nil {
			return err
		}
	}
	return a.Exec(`UPDATE projects SET updated_at = ?, version = ? WHERE id = ?`, e.At.UnixNano(), version, e.ProjectID)
}

func nullable(p *string) any {
	if p == nil || *p == "" {
		return nil
	}
	return *p
}

// clickRows is how many links one statement updates.
const clickRows = 200

// upsertClicks raises the click counts of links, many rows per statement:
// a busy batch touches hundreds of links, and one statement per link
// would cost more than the rest of the batch.
func upsertClicks(ctx context.Context, tx *sql.Tx, clicks map[string]clickAgg) error {
	args := make([]any, 0, 3*min(len(clicks), clickRows))
	var q strings.Builder
	flush := func() error {
		if len(args) == 0 {
			return nil
		}
		q.Reset()
		q.WriteString("INSERT INTO link_clicks (link_id, clicks, last_click) VALUES ")
		for i := 0; i < len(args)/3; i++ {
			if i > 0 {
				q.WriteString(", ")
			}
			q.WriteString("(?, ?, ?)")
		}
		q.WriteString(` ON CONFLICT(link_id) DO UPDATE SET clicks = max(clicks, excluded.clicks), last_click = max(last_click, excluded.last_click)`)
		_, err := tx.ExecContext(ctx, q.String(), args...)
		args = args[:0]
		return err
	}
	for id, c := range clicks {
		args = append(args, id, c.count, c.last)
		if len(args) == 3*clickRows {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	return flush()
}
