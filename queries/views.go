// Package queries holds the read side: one file per query, named after its
// result, each with the small read-model interface it needs. Queries read
// projections only; they never load aggregates or read the event store.
package queries

import (
	"time"

	"github.com/linkd/linkd/domain/link"
)

// Link is the read model of a link.
type Link struct {
	ID            string
	Code          string
	CreatedBy     string
	CreatedAt     time.Time
	UpdatedAt     time.Time
	IsArchived    bool
	Clicks        int64
	WorkspacePlan string
	link.Attributes
}

// Workspace is the read model of a workspace.
type Workspace struct {
	ID          string
	Name        string
	Description string
	OwnerID     string
	Plan        string
	IsDefault   bool
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

// Member of a workspace.
type Member struct {
	UserID   string
	Email    string
	Role     string
	JoinedAt time.Time
}

// Project is the read model of a project.
type Project struct {
	ID          string
	WorkspaceID string
	Name        string
	Description string
	Color       string
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

// Domain is the read model of a custom domain.
type Domain struct {
	ID            string
	WorkspaceID   string
	Domain        string
	Description   string
	IsVerified    bool
	DNSConfigured bool
	CNAMEAdded    bool
	LastChecked   *time.Time
	CreatedAt     time.Time
	UpdatedAt     time.Time
}

// APIKey is the read model of a key: never its secret, only a hash.
type APIKey struct {
	ID               string
	UserID           string
	Name             string
	Hash             string
	Prefix           string
	Kind             string
	Access           string
	Permissions      map[string]string
	ProjectID        string
	AllowedHostnames []string
	Operator         bool
	IsActive         bool
	CreatedAt        time.Time
}

// Page asks for one page of a list: by page number, or after/before a
// cursor.
type Page struct {
	Page     int
	PageSize int
	Cursor   string
}

// PageResult is one page of a list.
type PageResult[T any] struct {
	Items      []T
	Page       int
	PageSize   int
	HasNext    bool
	HasPrev    bool
	NextCursor string
	PrevCursor string
}

// LinkFilter selects links of a list.
type LinkFilter struct {
	WorkspaceIDs []string // the workspaces the caller may see
	ProjectID    string
	Archived     bool
	Ascending    bool
}
