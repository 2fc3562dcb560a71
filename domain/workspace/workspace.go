// Package workspace is the workspace aggregate: a named space of links,
// projects and domains, with members and their roles, and a plan.
package workspace

import (
	"fmt"
	"strings"
	"time"

	"github.com/linkd/linkd/domain"
)

const (
	EventCreated           = "WorkspaceCreated"
	EventUpdated           = "WorkspaceUpdated"
	EventDeleted           = "WorkspaceDeleted"
	EventMemberAdded       = "WorkspaceMemberAdded"
	EventMemberRoleChanged = "WorkspaceMemberRoleChanged"
	EventMemberRemoved     = "WorkspaceMemberRemoved"
)

// StreamPrefix is the category of workspace streams.
const StreamPrefix = "workspace-"

// Stream names the stream of workspace id.
func Stream(id string) string { return StreamPrefix + id }

// Roles of members.
const (
	RoleAdmin  = "admin"
	RoleMember = "member"
)

// Plans.
const (
	PlanFree = "free"
	PlanPro  = "pro"
)

// ValidPlan reports whether p names a plan.
func ValidPlan(p string) bool { return p == PlanFree || p == PlanPro }

// Limits of the spec's open points, recorded in docs/decisions.md.
const (
	MaxNameLength        = 255
	MaxUserIDLength      = 255
	MaxEmailLength       = 255
	MaxDescriptionLength = 4096
)

type Created struct {
	WorkspaceID string    `json:"workspace_id"`
	Name        string    `json:"name"`
	Description string    `json:"description"`
	OwnerID     string    `json:"owner_id"`
	Plan        string    `json:"plan"`
	IsDefault   bool      `json:"is_default,omitempty"`
	At          time.Time `json:"at"`
}

type Updated struct {
	WorkspaceID string             `json:"workspace_id"`
	Name        domain.Opt[string] `json:"name,omitzero"`
	Description domain.Opt[string] `json:"description,omitzero"`
	At          time.Time          `json:"at"`
}

type Deleted struct {
	WorkspaceID string    `json:"workspace_id"`
	Name        string    `json:"name"`
	At          time.Time `json:"at"`
}

type MemberAdded struct {
	WorkspaceID string    `json:"workspace_id"`
	UserID      string    `json:"user_id"`
	Email       string    `json:"email"`
	Role        string    `json:"role"`
	At          time.Time `json:"at"`
}

type MemberRoleChanged struct {
	WorkspaceID string    `json:"workspace_id"`
	UserID      string    `json:"user_id"`
	Role        string    `json:"role"`
	At          time.Time `json:"at"`
}

type MemberRemoved struct {
	WorkspaceID string    `json:"workspace_id"`
	UserID      string    `json:"user_id"`
	At          time.Time `json:"at"`
}

func (Created) EventType() string           { return EventCreated }
func (Updated) EventType() string           { return EventUpdated }
func (Deleted) EventType() string           { return EventDeleted }
func (MemberAdded) EventType() string       { return EventMemberAdded }
func (MemberRoleChanged) EventType() string { return EventMemberRoleChanged }
func (MemberRemoved) EventType() string     { return EventMemberRemoved }

func init() {
	domain.Register(func() domain.Event { return &Created{} })
	domain.Register(func() domain.Event { return &Updated{} })
	domain.Register(func() domain.Event { return &Deleted{} })
	domain.Register(func() domain.Event { return &MemberAdded{} })
	domain.Register(func() domain.Event { return &MemberRoleChanged{} })
	domain.Register(func() domain.Event { return &MemberRemoved{} })
}

// Member of a workspace.
type Member struct {
	UserID   string
	Email    string
	Role     string
	JoinedAt time.Time
}

// Workspace is the write model of one workspace.
type Workspace struct {
	domain.Changes
	ID          string
	Name        string
	Description string
	OwnerID     string
	Plan        string
	IsDefault   bool
	CreatedAt   time.Time
	UpdatedAt   time.Time
	Deleted     bool
	Members     map[string]*Member
}

// Load rebuilds a workspace from its history.
func Load(events []domain.Event) (*Workspace, error) {
	w := &Workspace{Members: map[string]*Member{}}
	for _, e := range events {
		if err := w.apply(e); err != nil {
			return nil, err
		}
		w.Changes.Loaded()
	}
	return w, nil
}

// Exists reports whether the workspace was created and not deleted.
func (w *Workspace) Exists() bool { return w.ID != "" && !w.Deleted }

// Role returns the role of user, "" for a non-member.
func (w *Workspace) Role(userID string) string {
	if m, ok := w.Members[userID]; ok {
		return m.Role
	}
	return ""
}

// IsAdmin reports whether user administers the workspace.
func (w *Workspace) IsAdmin(userID string) bool { return w.Role(userID) == RoleAdmin }

// IsMember reports whether user belongs to the workspace in any role.
func (w *Workspace) IsMember(userID string) bool { return w.Role(userID) != "" }

func (w *Workspace) apply(e domain.Event) error {
	switch e := e.(type) {
	case *Created:
		w.ID, w.Name, w.Description, w.OwnerID, w.Plan, w.IsDefault = e.WorkspaceID, e.Name, e.Description, e.OwnerID, e.Plan, e.IsDefault
		w.CreatedAt, w.UpdatedAt = e.At, e.At
	case *Updated:
		if v, ok := e.Name.Value(); ok {
			w.Name = v
		}
		if e.Description.Set {
			w.Description = e.Description.V
		}
		w.UpdatedAt = e.At
	case *Deleted:
		w.Deleted, w.UpdatedAt = true, e.At
		w.Members = map[string]*Member{}
	case *MemberAdded:
		w.Members[e.UserID] = &Member{UserID: e.UserID, Email: e.Email, Role: e.Role, JoinedAt: e.At}
	case *MemberRoleChanged:
		if m, ok := w.Members[e.UserID]; ok {
			m.Role = e.Role
		}
	case *MemberRemoved:
		delete(w.Members, e.UserID)
	default:
		return fmt.Errorf("workspace: unexpected event %T", e)
	}
	return nil
}

func (w *Workspace) record(e domain.Event) {
	if err := w.apply(e); err != nil {
		panic(err)
	}
	w.Changes.Record(e)
}

// ValidateName checks a workspace name.
func ValidateName(name string) error {
	return domain.ValidateName("Workspace", name, MaxNameLength)
}

// Create records a new workspace whose owner is its first admin.
func Create(id, name, description, ownerID, plan string, isDefault bool, now time.Time) (*Workspace, error) {
	name = strings.TrimSpace(name)
	if err := ValidateName(name); err != nil {
		return nil, err
	}
	if len(description) > MaxDescriptionLength {
		return nil, domain.Invalid("Workspace description is too long")
	}
	if !ValidPlan(plan) {
		return nil, domain.Invalid("unknown plan %q", plan)
	}
	w := &Workspace{Members: map[string]*Member{}}
	now = now.UTC()
	w.record(&Created{WorkspaceID: id, Name: name, Description: description, OwnerID: ownerID, Plan: plan, IsDefault: isDefault, At: now})
	w.record(&MemberAdded{WorkspaceID: id, UserID: ownerID, Role: RoleAdmin, At: now})
	return w, nil
}

// Update changes name and description; only admins may.
func (w *Workspace) Update(by string, name, description domain.Opt[string], now time.Time) error {
	if !w.Exists() {
		return domain.NotFound("Workspace not found")
	}
	if !w.IsAdmin(by) {
		return domain.ErrInsufficientPermissions()
	}
	if name.Set {
		if name.Null {
			return domain.Invalid("Workspace name is required")
		}
		name.V = strings.TrimSpace(name.V)
		if err := ValidateName(name.V); err != nil {
			return err
		}
		if name.V == w.Name {
			name = domain.Opt[string]{}
		}
	}
	if description.Set && len(description.V) > MaxDescriptionLength {
		return domain.Invalid("Workspace description is too long")
	}
	w.record(&Updated{WorkspaceID: w.ID, Name: name, Description: description, At: now.UTC()})
	return nil
}

// Delete removes the workspace; only admins may.
func (w *Workspace) Delete(by string, now time.Time) error {
	if !w.Exists() {
		return domain.NotFound("Workspace not found")
	}
	if !w.IsAdmin(by) {
		return domain.ErrInsufficientPermissions()
	}
	w.record(&Deleted{WorkspaceID: w.ID, Name: w.Name, At: now.UTC()})
	return nil
}

// ValidRole reports whether r is a role.
func ValidRole(r string) bool { return r == RoleAdmin || r == RoleMember }

// AddMember adds user with role (member when role is empty); admins only.
// Adding an existing member without a role changes nothing; with a role it
// changes the role by the rules of ChangeRole.
func (w *Workspace) AddMember(by, userID, email, role string, now time.Time) error {
	if !w.Exists() {
		return domain.NotFound("Workspace not found")
	}
	if !w.IsAdmin(by) {
		return domain.ErrInsufficientPermissions()
	}
	if strings.TrimSpace(userID) == "" {
		return domain.Invalid("user_id is required")
	}
	if err := domain.CheckText("user_id", userID, MaxUserIDLength, false); err != nil {
		return err
	}
	if err := domain.CheckText("email", email, MaxEmailLength, false); err != nil {
		return err
	}
	if role != "" && !ValidRole(role) {
		return domain.Invalid("role must be admin or member")
	}
	if _, ok := w.Members[userID]; ok {
		if role == "" {
			return nil
		}
		return w.ChangeRole(by, userID, role, now)
	}
	if role == "" {
		role = RoleMember
	}
	w.record(&MemberAdded{WorkspaceID: w.ID, UserID: userID, Email: email, Role: role, At: now.UTC()})
	return nil
}

// ChangeRole sets a member's role; admins only. The last admin cannot stop
// being one.
func (w *Workspace) ChangeRole(by, userID, role string, now time.Time) error {
	if !w.Exists() {
		return domain.NotFound("Workspace not found")
	}
	if !w.IsAdmin(by) {
		return domain.ErrInsufficientPermissions()
	}
	if !ValidRole(role) {
		return domain.Invalid("role must be admin or member")
	}
	m, ok := w.Members[userID]
	if !ok {
		return domain.NotFound("Member not found")
	}
	if m.Role == role {
		return nil
	}
	if m.Role == RoleAdmin && w.admins() == 1 {
		return domain.Invalid("A workspace needs at least one admin")
	}
	w.record(&MemberRoleChanged{WorkspaceID: w.ID, UserID: userID, Role: role, At: now.UTC()})
	return nil
}

// RemoveMember removes a member; admins only. The last admin stays.
func (w *Workspace) RemoveMember(by, userID string, now time.Time) error {
	if !w.Exists() {
		return domain.NotFound("Workspace not found")
	}
	if !w.IsAdmin(by) {
		return domain.ErrInsufficientPermissions()
	}
	m, ok := w.Members[userID]
	if !ok {
		return domain.NotFound("Member not found")
	}
	if m.Role == RoleAdmin && w.admins() == 1 {
		return domain.Invalid("A workspace needs at least one admin")
	}
	w.record(&MemberRemoved{WorkspaceID: w.ID, UserID: userID, At: now.UTC()})
	return nil
}

func (w *Workspace) admins() int {
	n := 0
	for _, m := range w.Members {
		if m.Role == RoleAdmin {
			n++
		}
	}
	return n
}
