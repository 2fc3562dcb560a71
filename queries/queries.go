package queries

import (
	"context"
	"time"
)

// Queries are every query handler, built once from the read models by
// New. The API calls them; nothing else reads the read models.
type Queries struct {
	LinkByID      LinkByIDHandler
	LinksPage     LinksPageHandler
	LinkAccess    LinkAccessHandler
	ShortLinkHost ShortLinkHostHandler

	WorkspaceByID    WorkspaceByIDHandler
	UserWorkspaces   UserWorkspacesHandler
	WorkspaceMembers WorkspaceMembersHandler
	ProjectByID      ProjectByIDHandler
	ProjectsPage     ProjectsPageHandler
	DomainByID       DomainByIDHandler
	DomainsPage      DomainsPageHandler
	APIKeyByHash     APIKeyByHashHandler
	UserAPIKeys      UserAPIKeysHandler
	UTMTemplateByID  UTMTemplateByIDHandler
	UTMTemplatesPage UTMTemplatesPageHandler
	PixelByID        PixelByIDHandler
	PixelsPage       PixelsPageHandler

	WebhookByID       WebhookByIDHandler
	WebhooksPage      WebhooksPageHandler
	WebhookDeliveries WebhookDeliveriesHandler

	CustomersPage     CustomersPageHandler
	CustomerByID      CustomerByIDHandler
	ClickByTrackingID ClickByTrackingIDHandler
	OriginAllowed     OriginAllowedHandler
	Radar             RadarHandler

	DailyLinkStats      DailyLinkStatsHandler
	LinkSummary         LinkSummaryHandler
	DailyWorkspaceStats DailyWorkspaceStatsHandler
	WorkspaceSummary    WorkspaceSummaryHandler
	PublicLinkStats     PublicLinkStatsHandler
}

// CoreReadModel is what the core projection (projections/core) serves:
// links, workspaces, projects, domains and keys.
type CoreReadModel interface {
	LinkByIDReadModel
	LinksPageReadModel
	UserWorkspacesReadModel
	WorkspaceMembersReadModel
	ProjectByIDReadModel
	ProjectsPageReadModel
	DomainByIDReadModel
	DomainsPageReadModel
	APIKeyByHashReadModel
	UserAPIKeysReadModel
	OriginAllowedReadModel
	CustomersPageReadModel
	CustomerByIDReadModel
	UTMTemplatesReadModel
	PixelsReadModel
	DefaultWorkspace(ctx context.Context, userID string) (Workspace, bool, error)
}

// Sources are what the queries read, and the clock they read it at.
type Sources struct {
	Core  CoreReadModel
	Stats StatsReadModel
	// Links serves LinkAccess: a cache over Core in the API.
	Links LinkAccessReadModel
	// LinksFresh, with many instances, brings Links up to the changes of
	// the others before each access.
	LinksFresh Freshness
	Clicks     ClickCounter
	// ClickIndex finds the clicks that conversions name.
	ClickIndex ClickIndex
	// Radar serves the Radar reports.
	Radar RadarReadModel
	// Webhooks serves the webhook queries (projections/webhooks).
	Webhooks WebhooksReadModel
	Throttle PasswordThrottle
	Cipher   Decrypter
	Clock    interface{ Now() time.Time }
	// DefaultHost is the host (and port) of the default short domain.
	DefaultHost string
}

// New builds every query over its sources.
func New(s Sources) Queries {
	stats := struct {
		CoreReadModel
		StatsReadModel
	}{s.Core, s.Stats}
	return Queries{
		LinkByID:      LinkByIDHandler{ReadModel: s.Core},
		LinksPage:     LinksPageHandler{ReadModel: s.Core},
		LinkAccess:    LinkAccessHandler{ReadModel: s.Links, Fresh: s.LinksFresh, Clicks: s.Clicks, Throttle: s.Throttle, Cipher: s.Cipher, DefaultHost: HostOnly(s.DefaultHost)},
		ShortLinkHost: ShortLinkHostHandler{ReadModel: s.Core, DefaultHost: s.DefaultHost},

		WorkspaceByID:    WorkspaceByIDHandler{ReadModel: s.Core},
		UserWorkspaces:   UserWorkspacesHandler{ReadModel: s.Core},
		WorkspaceMembers: WorkspaceMembersHandler{ReadModel: s.Core},
		ProjectByID:      ProjectByIDHandler{ReadModel: s.Core},
		ProjectsPage:     ProjectsPageHandler{ReadModel: s.Core},
		DomainByID:       DomainByIDHandler{ReadModel: s.Core},
		DomainsPage:      DomainsPageHandler{ReadModel: s.Core},
		APIKeyByHash:     APIKeyByHashHandler{ReadModel: s.Core},
		UserAPIKeys:      UserAPIKeysHandler{ReadModel: s.Core},
		UTMTemplateByID:  UTMTemplateByIDHandler{ReadModel: s.Core},
		UTMTemplatesPage: UTMTemplatesPageHandler{ReadModel: s.Core},
		PixelByID:        PixelByIDHandler{ReadModel: s.Core},
		PixelsPage:       PixelsPageHandler{ReadModel: s.Core},

		WebhookByID:       WebhookByIDHandler{ReadModel: s.Webhooks, Roles: s.Core},
		WebhooksPage:      WebhooksPageHandler{ReadModel: s.Webhooks, Core: s.Core},
		WebhookDeliveries: WebhookDeliveriesHandler{ReadModel: s.Webhooks, Roles: s.Core},

		CustomersPage:     CustomersPageHandler{ReadModel: s.Core},
		CustomerByID:      CustomerByIDHandler{ReadModel: s.Core},
		ClickByTrackingID: ClickByTrackingIDHandler{ReadModel: s.ClickIndex, Clock: s.Clock},
		OriginAllowed:     OriginAllowedHandler{ReadModel: s.Core},
		Radar:             RadarHandler{ReadModel: s.Radar},

		DailyLinkStats:      DailyLinkStatsHandler{ReadModel: stats, Clock: s.Clock},
		LinkSummary:         LinkSummaryHandler{ReadModel: stats, Clock: s.Clock},
		DailyWorkspaceStats: DailyWorkspaceStatsHandler{ReadModel: stats, Clock: s.Clock},
		WorkspaceSummary:    WorkspaceSummaryHandler{ReadModel: stats, Clock: s.Clock},
		PublicLinkStats: PublicLinkStatsHandler{ReadModel: struct {
			LinkAccessReadModel
			StatsReadModel
		}{s.Links, s.Stats}, Clock: s.Clock, DefaultHost: HostOnly(s.DefaultHost)},
	}
}
