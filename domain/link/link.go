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
	if err := validateFields(fieldsOf(a)); err != nil {
		return err
	}
	if err := a.QRCodeOptions.Validate(); err != nil {
		return err
	}
	if err := a.Metadata.Validate(); err != nil {
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

// Kinds of text fields, by how they are checked.
const (
	fieldDeepLink = iota // a per-platform deep link: any app scheme
	fieldWebURL          // a URL of the schemes original_url allows, such as a logo
	fieldName            // short text
	fieldText            // long text
)

type textField struct {
	name  string
	kind  int
	value domain.Opt[string]
}

// fieldsOf lists the checked text fields of a create, in a fixed order so
// that the first problem reported is always the same.
func fieldsOf(a *Attributes) []textField {
	f := func(name string, kind int, v string) textField { return textField{name, kind, domain.Some(v)} }
	return []textField{
		f("ios_link", fieldDeepLink, a.IOSLink), f("android_link", fieldDeepLink, a.AndroidLink),
		f("windows_link", fieldDeepLink, a.WindowsLink), f("macos_link", fieldDeepLink, a.MacOSLink),
		f("app_logo", fieldWebURL, a.AppLogo),
		f("name", fieldName, a.Name), f("app", fieldName, a.App), f("utm_name", fieldName, a.UTMName),
		f("utm_source", fieldName, a.UTMSource), f("utm_medium", fieldName, a.UTMMedium),
		f("utm_campaign", fieldName, a.UTMCampaign), f("utm_term", fieldName, a.UTMTerm),
		f("utm_content", fieldName, a.UTMContent), f("utm_template_id", fieldName, a.UTMTemplateID),
		f("description", fieldText, a.Description), f("whatsapp_message", fieldText, a.WhatsappMessage),
		f("referrer", fieldText, a.Referrer), f("password_description", fieldText, a.PasswordDescription),
	}
}

// patchFieldsOf lists the checked text fields of an update.
func patchFieldsOf(p *Patch) []textField {
	return []textField{
		{"ios_link", fieldDeepLink, p.IOSLink}, {"android_link", fieldDeepLink, p.AndroidLink},
		{"windows_link", fieldDeepLink, p.WindowsLink}, {"macos_link", fieldDeepLink, p.MacOSLink},
		{"app_logo", fieldWebURL, p.AppLogo},
		{"name", fieldName, p.Name}, {"app", fieldName, p.App}, {"utm_name", fieldName, p.UTMName},
		{"utm_source", fieldName, p.UTMSource}, {"utm_medium", fieldName, p.UTMMedium},
		{"utm_campaign", fieldName, p.UTMCampaign}, {"utm_term", fieldName, p.UTMTerm},
		{"utm_content", fieldName, p.UTMContent}, {"utm_template_id", fieldName, p.UTMTemplateID},
		{"description", fieldText, p.Description}, {"whatsapp_message", fieldText, p.WhatsappMessage},
		{"referrer", fieldText, p.Referrer}, {"password_description", fieldText, p.PasswordDescription},
	}
}

func validateFields(fields []textField) error {
	for _, f := range fields {
		v, ok := f.value.Value()
		if !ok {
			continue
		}
		var err error
		switch f.kind {
		case fieldDeepLink:
			err = ValidateDeepLink(f.name, v)
		case fieldWebURL:
			err = ValidateOptionalURL(f.name, v)
		case fieldName:
			err = ValidateText(f.name, v, MaxNameLength)
		default:
			err = ValidateText(f.name, v, MaxTextLength)
		}
		if err != nil {
			return err
		}
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
	if err := validateFields(patchFieldsOf(p)); err != nil {
		return err
	}
	if p.QRCodeOptions.Set && !p.QRCodeOptions.Null {
		if err := p.QRCodeOptions.V.Validate(); err != nil {
			return err
		}
	}
	if p.Metadata.Set && !p.Metadata.Null {
		if err := p.Metadata.V.Validate(); err != nil {
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
