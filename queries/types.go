package queries

// The results of queries. Adapters (projections/core, projections/analytics,
// projections/clickhouse) return these types, so they depend on queries and
// never the reverse.

import (
	"context"
	"time"

	"github.com/linkd/linkd/domain/link"
	"github.com/linkd/linkd/domain/utmtemplate"
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
	// TemplateValues are the values of the link's UTM template, and Pixel
	// its tracking pixel: resolved for the links that short URLs follow
	// (LinkAccess), nil otherwise and when the template or pixel is gone.
	TemplateValues *utmtemplate.Values
	Pixel          *Pixel
	// routes are its targets worked out in advance (PrepareRoutes), nil
	// until then.
	routes *routes
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

// DailyStats is one day of clicks of a link, or of a whole workspace
// (LinkID empty): the daily record of the interface (spec 2.7).
type DailyStats struct {
	Date           string    // YYYY-MM-DD, UTC
	LinkID         string    // empty for workspace records
	WorkspaceID    string    //
	LastUpdated    time.Time // time of the last click counted in it
	FirstClick     time.Time // time of the first click counted in it
	TotalClicks    int64
	UniqueVisitors int64
	QRScans        int64 // scans_only
	DirectClicks   int64 // clicks_only
	ChromeClicks   int64
	IOSClicks      int64
	AndroidClicks  int64
	// Breakdowns: name -> clicks.
	OS          map[string]int64 // os_stats
	OSVersion   map[string]int64 // os_version_stats ("iOS 17.4")
	City        map[string]int64 // city_stats
	Language    map[string]int64 // lang_stats
	Browser     map[string]int64 // browser_stats
	Country     map[string]int64 // country_stats (ISO alpha-2)
	Continent   map[string]int64 // continent_stats
	DeviceAndOS map[string]int64 // device_and_os_stats ("mobile iOS")
	App         map[string]int64 // app_stats
	DeviceType  map[string]int64 // device_type_stats and device_stats: mobile, desktop, tablet
	FromApp     map[string]int64 // from_app_stats: "true", "false"
	Referrer    map[string]int64 // referrer hosts (an extension)
	// Conversions recorded that day for the link's clicks (an extension):
	// leads, sales, and revenue per currency in minor units. A day with
	// conversions and no click has a record with only these.
	Leads   int64
	Sales   int64
	Revenue map[string]int64
}

// StatsReadModel is the whole statistics read model: what both statistics
// stores (projections/analytics, embedded, and projections/clickhouse/stats)
// implement, and what the contract suite projections/statstest holds them
// to. Each query declares the part of it that it reads.
type StatsReadModel interface {
	// LinkDaily returns the days of [from, to] (UTC dates, inclusive) on
	// which the link was clicked, in date order.
	LinkDaily(ctx context.Context, linkID string, from, to time.Time) ([]DailyStats, error)
	// WorkspaceDaily is the same over every link of a workspace.
	WorkspaceDaily(ctx context.Context, workspaceID string, from, to time.Time) ([]DailyStats, error)
	// LinkClicked reports whether the link was ever clicked.
	LinkClicked(ctx context.Context, linkID string) (bool, error)
}

// Customer is the read model of a conversion customer: a workspace's
// externalId, with the click of its first lead and its totals.
type Customer struct {
	ID          string
	WorkspaceID string
	ExternalID  string
	Email       string
	Firstname   string
	Lastname    string
	PhoneNumber string
	AvatarURL   string
	LinkID      string // the link of the first lead's click
	ClickID     string // the first lead's click
	Leads       int64
	Sales       int64
	Revenue     map[string]int64 // currency -> minor units
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

// CustomerEvent is a lead or a sale of a customer, with its click.
type CustomerEvent struct {
	Kind         string // "lead" or "sale"
	ConversionID string
	EventName    string
	LinkID       string
	ClickID      string
	ClickedAt    time.Time
	AmountMinor  int64  // sales
	Currency     string // sales
	First        bool
	Metadata     []byte // the caller's JSON object, nil when none
	Timestamp    time.Time
}
