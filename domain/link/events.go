package link

import (
	"time"

	"github.com/linkd/linkd/domain"
)

// Wire names of the link events. They never change.
const (
	EventCreated    = "LinkCreated"
	EventUpdated    = "LinkUpdated"
	EventArchived   = "LinkArchived"
	EventUnarchived = "LinkUnarchived"
	EventDeleted    = "LinkDeleted"
)

// StreamPrefix is the category of link streams: "link-<id>".
const StreamPrefix = "link-"

// Stream names the stream of link id.
func Stream(id string) string { return StreamPrefix + id }

// Attributes are the settable fields of a link.
type Attributes struct {
	WorkspaceID              string            `json:"workspace_id"`
	ProjectID                *string           `json:"project_id"`
	DomainID                 *string           `json:"domain_id"`
	PixelID                  *string           `json:"pixel_id"`
	OriginalURL              string            `json:"original_url"`
	Name                     string            `json:"name"`
	Description              string            `json:"description"`
	App                      string            `json:"app"`
	AppLogo                  string            `json:"app_logo"`
	AndroidLink              string            `json:"android_link"`
	IOSLink                  string            `json:"ios_link"`
	WindowsLink              string            `json:"windows_link"`
	MacOSLink                string            `json:"macos_link"`
	WhatsappMessage          string            `json:"whatsapp_message"`
	Metadata                 *Preview          `json:"metadata"`
	QRCodeOptions            *QRCodeOptions    `json:"qr_code_options"`
	UTMName                  string            `json:"utm_name"`
	UTMSource                string            `json:"utm_source"`
	UTMMedium                string            `json:"utm_medium"`
	UTMCampaign              string            `json:"utm_campaign"`
	UTMTerm                  string            `json:"utm_term"`
	UTMContent               string            `json:"utm_content"`
	UTMTemplateID            string            `json:"utm_template_id"`
	Referrer                 string            `json:"referrer"`
	PasswordEnc              string            `json:"password_enc,omitempty"`
	PasswordDescription      string            `json:"password_description"`
	ExcludedCountries        []ExcludedCountry `json:"excluded_countries"`
	HasPublicStat            bool              `json:"has_public_stat"`
	EnableConversionTracking bool              `json:"enable_conversion_tracking"`
	ExpirationDate           *time.Time        `json:"expiration_date"`
	ExpirationClickCount     *int64            `json:"expiration_click_count"`
}

// Created: a link came into being with its short code.
type Created struct {
	LinkID    string    `json:"link_id"`
	Code      string    `json:"code"`
	CreatedBy string    `json:"created_by"`
	At        time.Time `json:"at"`
	Attributes
}

// Patch lists the fields an update changes; absent fields stay.
type Patch struct {
	WorkspaceID              domain.Opt[string]            `json:"workspace_id,omitzero"`
	ProjectID                domain.Opt[string]            `json:"project_id,omitzero"`
	PixelID                  domain.Opt[string]            `json:"pixel_id,omitzero"`
	OriginalURL              domain.Opt[string]            `json:"original_url,omitzero"`
	Code                     domain.Opt[string]            `json:"code,omitzero"`
	Name                     domain.Opt[string]            `json:"name,omitzero"`
	Description              domain.Opt[string]            `json:"description,omitzero"`
	App                      domain.Opt[string]            `json:"app,omitzero"`
	AppLogo                  domain.Opt[string]            `json:"app_logo,omitzero"`
	AndroidLink              domain.Opt[string]            `json:"android_link,omitzero"`
	IOSLink                  domain.Opt[string]            `json:"ios_link,omitzero"`
	WindowsLink              domain.Opt[string]            `json:"windows_link,omitzero"`
	MacOSLink                domain.Opt[string]            `json:"macos_link,omitzero"`
	WhatsappMessage          domain.Opt[string]            `json:"whatsapp_message,omitzero"`
	Metadata                 domain.Opt[Preview]           `json:"metadata,omitzero"`
	QRCodeOptions            domain.Opt[QRCodeOptions]     `json:"qr_code_options,omitzero"`
	UTMName                  domain.Opt[string]            `json:"utm_name,omitzero"`
	UTMSource                domain.Opt[string]            `json:"utm_source,omitzero"`
	UTMMedium                domain.Opt[string]            `json:"utm_medium,omitzero"`
	UTMCampaign              domain.Opt[string]            `json:"utm_campaign,omitzero"`
	UTMTerm                  domain.Opt[string]            `json:"utm_term,omitzero"`
	UTMContent               domain.Opt[string]            `json:"utm_content,omitzero"`
	UTMTemplateID            domain.Opt[string]            `json:"utm_template_id,omitzero"`
	Referrer                 domain.Opt[string]            `json:"referrer,omitzero"`
	PasswordEnc              domain.Opt[string]            `json:"password_enc,omitzero"`
	PasswordDescription      domain.Opt[string]            `json:"password_description,omitzero"`
	ExcludedCountries        domain.Opt[[]ExcludedCountry] `json:"excluded_countries,omitzero"`
	HasPublicStat            domain.Opt[bool]              `json:"has_public_stat,omitzero"`
	EnableConversionTracking domain.Opt[bool]              `json:"enable_conversion_tracking,omitzero"`
	ExpirationDate           domain.Opt[time.Time]         `json:"expiration_date,omitzero"`
	ExpirationClickCount     domain.Opt[int64]             `json:"expiration_click_count,omitzero"`
}

// Updated: some fields of a link changed.
type Updated struct {
	LinkID  string    `json:"link_id"`
	Changes Patch     `json:"changes"`
	By      string    `json:"by,omitempty"`
	At      time.Time `json:"at"`
}

// Archived and Unarchived toggle is_archived.
type Archived struct {
	LinkID string    `json:"link_id"`
	At     time.Time `json:"at"`
}

type Unarchived struct {
	LinkID string    `json:"link_id"`
	At     time.Time `json:"at"`
}

// Deleted: the link is gone; its code is free again.
type Deleted struct {
	LinkID      string    `json:"link_id"`
	WorkspaceID string    `json:"workspace_id"`
	Code        string    `json:"code"`
	DomainID    *string   `json:"domain_id"`
	At          time.Time `json:"at"`
}

func (Created) EventType() string    { return EventCreated }
func (Updated) EventType() string    { return EventUpdated }
func (Archived) EventType() string   { return EventArchived }
func (Unarchived) EventType() string { return EventUnarchived }
func (Deleted) EventType() string    { return EventDeleted }

func init() {
	domain.Register(func() domain.Event { return &Created{} })
	domain.Register(func() domain.Event { return &Updated{} })
	domain.Register(func() domain.Event { return &Archived{} })
	domain.Register(func() domain.Event { return &Unarchived{} })
	domain.Register(func() domain.Event { return &Deleted{} })
}

// ApplyPatch changes a in place by the fields p sets.
func ApplyPatch(a *Attributes, code *string, p Patch) {
	setStr := func(dst *string, o domain.Opt[string]) {
		if o.Set {
			*dst = o.V
		}
	}
	setPtr := func(dst **string, o domain.Opt[string]) {
		if o.Set {
			*dst = o.Ptr()
		}
	}
	setStr(&a.WorkspaceID, p.WorkspaceID)
	setPtr(&a.ProjectID, p.ProjectID)
	setPtr(&a.PixelID, p.PixelID)
	setStr(&a.OriginalURL, p.OriginalURL)
	setStr(code, p.Code)
	setStr(&a.Name, p.Name)
	setStr(&a.Description, p.Description)
	setStr(&a.App, p.App)
	setStr(&a.AppLogo, p.AppLogo)
	setStr(&a.AndroidLink, p.AndroidLink)
	setStr(&a.IOSLink, p.IOSLink)
	setStr(&a.WindowsLink, p.WindowsLink)
	setStr(&a.MacOSLink, p.MacOSLink)
	setStr(&a.WhatsappMessage, p.WhatsappMessage)
	if p.Metadata.Set {
		a.Metadata = p.Metadata.Ptr()
	}
	if p.QRCodeOptions.Set {
		a.QRCodeOptions = p.QRCodeOptions.Ptr()
	}
	setStr(&a.UTMName, p.UTMName)
	setStr(&a.UTMSource, p.UTMSource)
	setStr(&a.UTMMedium, p.UTMMedium)
	setStr(&a.UTMCampaign, p.UTMCampaign)
	setStr(&a.UTMTerm, p.UTMTerm)
	setStr(&a.UTMContent, p.UTMContent)
	setStr(&a.UTMTemplateID, p.UTMTemplateID)
	setStr(&a.Referrer, p.Referrer)
	setStr(&a.PasswordEnc, p.PasswordEnc)
	setStr(&a.PasswordDescription, p.PasswordDescription)
	if p.ExcludedCountries.Set {
		a.ExcludedCountries = p.ExcludedCountries.V
	}
	if p.HasPublicStat.Set {
		a.HasPublicStat = p.HasPublicStat.V
	}
	if p.EnableConversionTracking.Set {
		a.EnableConversionTracking = p.EnableConversionTracking.V
	}
	if p.ExpirationDate.Set {
		a.ExpirationDate = p.ExpirationDate.Ptr()
	}
	if p.ExpirationClickCount.Set {
		a.ExpirationClickCount = p.ExpirationClickCount.Ptr()
	}
}
