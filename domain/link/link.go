// Package link is the link aggregate: a short code on a domain that leads to
// a URL, with its options. Clicks are not part of it: they live in their own
// streams (domain/click) so that a link's history stays small.
package link

import (
	"fmt"
	"time"

	"github.com/linkd/linkd/domain"
)

// Link is the write model of one link.
type Link struct {
	domain.Changes

	ID        string
	Code      string
	CreatedBy string
	CreatedAt time.Time
	UpdatedAt time.Time
	Archived  bool
	Deleted   bool
	Attributes
}

// Load rebuilds a link from its history.
func Load(events []domain.Event) (*Link, error) {
	l := &Link{}
	for _, e := range events {
		if err := l.apply(e); err != nil {
			return nil, err
		}
		l.Changes.Loaded()
	}
	return l, nil
}

// Exists reports whether the link was created and not deleted.
func (l *Link) Exists() bool { return l.ID != "" && !l.Deleted }

func (l *Link) apply(e domain.Event) error {
	switch e := e.(type) {
	case *Created:
		l.ID, l.Code, l.CreatedBy = e.LinkID, e.Code, e.CreatedBy
		l.CreatedAt, l.UpdatedAt = e.At, e.At
		l.Attributes = e.Attributes
	case *Updated:
		ApplyPatch(&l.Attributes, &l.Code, e.Changes)
		l.UpdatedAt = e.At
	case *Archived:
		l.Archived, l.UpdatedAt = true, e.At
	case *Unarchived:
		l.Archived, l.UpdatedAt = false, e.At
	case *Deleted:
		l.Deleted, l.UpdatedAt = true, e.At
	default:
		return fmt.Errorf("link: unexpected event %T", e)
	}
	return nil
}

func (l *Link) record(e domain.Event) {
	if err := l.apply(e); err != nil {
		panic(err) // recording an event of another aggregate is a programming error
	}
	l.Changes.Record(e)
}

// ValidateAttributes checks every field of a create.
func ValidateAttributes(a *Attributes) error {
	if err := ValidateURL(a.OriginalURL); err != nil {
		return err
	}
	for field, u := range map[string]string{
		"ios_link": a.IOSLink, "android_link": a.AndroidLink, "windows_link": a.WindowsLink,
		"macos_link": a.MacOSLink, "app_logo": a.AppLogo,
	} {
		if err := ValidateOptionalURL(field, u); err != nil {
			return err
		}
	}
	for field, s := range map[string]string{
		"name": a.Name, "app": a.App, "utm_name": a.UTMName, "utm_source": a.UTMSource,
		"utm_medium": a.UTMMedium, "utm_campaign": a.UTMCampaign, "utm_term": a.UTMTerm,
		"utm_content": a.UTMContent, "utm_template_id": a.UTMTemplateID,
	} {
		if err := ValidateText(field, s, MaxNameLength); err != nil {
			return err
		}
	}
	for field, s := range map[string]string{
		"description": a.Description, "whatsapp_message": a.WhatsappMessage,
		"referrer": a.Referrer, "password_description": a.PasswordDescription,
	} {
		if err := ValidateText(field, s, MaxTextLength); err != nil {
			return err
		}
	}
	if err := a.QRCodeOptions.Validate(); err != nil {
		return err
	}
	if err := ValidateCountries(a.ExcludedCountries, false); err != nil {
		return err
	}
	if a.ExpirationClickCount != nil && *a.ExpirationClickCount < 1 {
		return domain.Invalid("expiration_click_count must be at least 1")
	}
	return nil
}

// Create records a new link.
func Create(id, code, createdBy string, attrs Attributes, now time.Time) (*Link, error) {
	if id == "" {
		return nil, domain.Invalid("link id is required")
	}
	if err := ValidateCode(code); err != nil {
		return nil, err
	}
	if err := ValidateAttributes(&attrs); err != nil {
		return nil, err
	}
	if attrs.WorkspaceID == "" {
		return nil, domain.Invalid("workspace_id is required")
	}
	l := &Link{}
	l.record(&Created{LinkID: id, Code: code, CreatedBy: createdBy, At: now.UTC(), Attributes: attrs})
	return l, nil
}

// ValidatePatch checks the fields an update sets.
func ValidatePatch(p *Patch) error {
	if v, ok := p.OriginalURL.Value(); ok || p.OriginalURL.Set {
		if err := ValidateURL(v); err != nil {
			return err
		}
	}
	if v, ok := p.Code.Value(); ok || p.Code.Set {
		if err := ValidateCode(v); err != nil {
			return err
		}
	}
	if p.WorkspaceID.Set && p.WorkspaceID.Null {
		return domain.Invalid("workspace_id cannot be null")
	}
	for field, o := range map[string]domain.Opt[string]{
		"ios_link": p.IOSLink, "android_link": p.AndroidLink, "windows_link": p.WindowsLink,
		"macos_link": p.MacOSLink, "app_logo": p.AppLogo,
	} {
		if err := ValidateOptionalURL(field, o.V); err != nil {
			return err
		}
	}
	for field, o := range map[string]domain.Opt[string]{
		"name": p.Name, "app": p.App, "utm_name": p.UTMName, "utm_source": p.UTMSource,
		"utm_medium": p.UTMMedium, "utm_campaign": p.UTMCampaign, "utm_term": p.UTMTerm,
		"utm_content": p.UTMContent, "utm_template_id": p.UTMTemplateID,
	} {
		if err := ValidateText(field, o.V, MaxNameLength); err != nil {
			return err
		}
	}
	for field, o := range map[string]domain.Opt[string]{
		"description": p.Description, "whatsapp_message": p.WhatsappMessage,
		"referrer": p.Referrer, "password_description": p.PasswordDescription,
	} {
		if err := ValidateText(field, o.V, MaxTextLength); err != nil {
			return err
		}
	}
	if p.QRCodeOptions.Set && !p.QRCodeOptions.Null {
		if err := p.QRCodeOptions.V.Validate(); err != nil {
			return err
		}
	}
	if p.ExcludedCountries.Set {
		if err := ValidateCountries(p.ExcludedCountries.V, true); err != nil {
			return err
		}
	}
	if v, ok := p.ExpirationClickCount.Value(); ok && v < 1 {
		return domain.Invalid("expiration_click_count must be at least 1")
	}
	return nil
}

// Update applies a partial change. Only fields that differ are recorded; an
// update that changes nothing records nothing.
func (l *Link) Update(p Patch, by string, now time.Time) error {
	if !l.Exists() {
		return domain.NotFound("Link not found")
	}
	if err := ValidatePatch(&p); err != nil {
		return err
	}
	l.record(&Updated{LinkID: l.ID, Changes: p, By: by, At: now.UTC()})
	return nil
}

// SetArchived archives or unarchives the link; nothing happens when it is
// already in that state.
func (l *Link) SetArchived(archived bool, now time.Time) error {
	if !l.Exists() {
		return domain.NotFound("Link not found")
	}
	if l.Archived == archived {
		return nil
	}
	if archived {
		l.record(&Archived{LinkID: l.ID, At: now.UTC()})
	} else {
		l.record(&Unarchived{LinkID: l.ID, At: now.UTC()})
	}
	return nil
}

// Delete removes the link.
func (l *Link) Delete(now time.Time) error {
	if !l.Exists() {
		return domain.NotFound("Link not found")
	}
	l.record(&Deleted{LinkID: l.ID, WorkspaceID: l.WorkspaceID, Code: l.Code, DomainID: l.DomainID, At: now.UTC()})
	return nil
}
