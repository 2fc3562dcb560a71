// Package utmtemplate is the UTM template aggregate: a named set of UTM
// values of a workspace that links name by utm_template_id. A link gets,
// at redirect time, the template's value of every utm_* it does not set
// itself (docs/decisions.md, "UTM templates and pixels").
package utmtemplate

import (
	"fmt"
	"strings"
	"time"

	"github.com/linkd/linkd/domain"
	"github.com/linkd/linkd/domain/link"
)

// Wire names: never change.
const (
	EventCreated = "UtmTemplateCreated"
	EventUpdated = "UtmTemplateUpdated"
	EventDeleted = "UtmTemplateDeleted"
)

// Category is the stream category of templates.
const Category = "utmtemplate"

// StreamPrefix is the prefix of template streams.
const StreamPrefix = Category + "-"

// Stream names the stream of template id.
func Stream(id string) string { return StreamPrefix + id }

// MaxNameLength bounds a template's name.
const MaxNameLength = 255

// MsgNotFound is the refusal of an unknown (or deleted) template.
const MsgNotFound = "UTM template not found"

// Values are the UTM values a template gives; "" leaves one unset.
type Values struct {
	Source   string `json:"utm_source"`
	Medium   string `json:"utm_medium"`
	Campaign string `json:"utm_campaign"`
	Term     string `json:"utm_term"`
	Content  string `json:"utm_content"`
	Name     string `json:"utm_name"`
}

// Patch holds the values an update sets.
type Patch struct {
	Source   domain.Opt[string] `json:"utm_source,omitzero"`
	Medium   domain.Opt[string] `json:"utm_medium,omitzero"`
	Campaign domain.Opt[string] `json:"utm_campaign,omitzero"`
	Term     domain.Opt[string] `json:"utm_term,omitzero"`
	Content  domain.Opt[string] `json:"utm_content,omitzero"`
	Name     domain.Opt[string] `json:"utm_name,omitzero"`
}

type Created struct {
	TemplateID  string `json:"template_id"`
	WorkspaceID string `json:"workspace_id"`
	Name        string `json:"name"`
	Values
	CreatedBy string    `json:"created_by"`
	At        time.Time `json:"at"`
}

type Updated struct {
	TemplateID  string             `json:"template_id"`
	WorkspaceID string             `json:"workspace_id"`
	Name        domain.Opt[string] `json:"name,omitzero"`
	Patch
	At time.Time `json:"at"`
}

type Deleted struct {
	TemplateID  string    `json:"template_id"`
	WorkspaceID string    `json:"workspace_id"`
	At          time.Time `json:"at"`
}

func (Created) EventType() string { return EventCreated }
func (Updated) EventType() string { return EventUpdated }
func (Deleted) EventType() string { return EventDeleted }

func init() {
	domain.Register(func() domain.Event { return &Created{} })
	domain.Register(func() domain.Event { return &Updated{} })
	domain.Register(func() domain.Event { return &Deleted{} })
}

// Apply sets the values a patch gives (null clears one).
func (v *Values) Apply(p Patch) {
	for _, f := range v.fields(&p) {
		if f.opt.Set {
			*f.dst = f.opt.V
		}
	}
}

type valueField struct {
	name string
	dst  *string
	opt  domain.Opt[string]
}

func (v *Values) fields(p *Patch) []valueField {
	return []valueField{
		{"utm_source", &v.Source, p.Source}, {"utm_medium", &v.Medium, p.Medium},
		{"utm_campaign", &v.Campaign, p.Campaign}, {"utm_term", &v.Term, p.Term},
		{"utm_content", &v.Content, p.Content}, {"utm_name", &v.Name, p.Name},
	}
}

// Template is the write model of one template.
type Template struct {
	domain.Changes
	ID          string
	WorkspaceID string
	Name        string
	Values      Values
	CreatedBy   string
	CreatedAt   time.Time
	UpdatedAt   time.Time
	Deleted     bool
}

// Load rebuilds a template from its history.
func Load(events []domain.Event) (*Template, error) {
	t := &Template{}
	for _, e := range events {
		if err := t.apply(e); err != nil {
			return nil, err
		}
		t.Changes.Loaded()
	}
	return t, nil
}

// Exists reports whether the template was created and not deleted.
func (t *Template) Exists() bool { return t.ID != "" && !t.Deleted }

func (t *Template) apply(e domain.Event) error {
	switch e := e.(type) {
	case *Created:
		t.ID, t.WorkspaceID, t.Name, t.Values, t.CreatedBy = e.TemplateID, e.WorkspaceID, e.Name, e.Values, e.CreatedBy
		t.CreatedAt, t.UpdatedAt = e.At, e.At
	case *Updated:
		if v, ok := e.Name.Value(); ok {
			t.Name = v
		}
		t.Values.Apply(e.Patch)
		t.UpdatedAt = e.At
	case *Deleted:
		t.Deleted, t.UpdatedAt = true, e.At
	default:
		return fmt.Errorf("utmtemplate: unexpected event %T", e)
	}
	return nil
}

func (t *Template) record(e domain.Event) {
	if err := t.apply(e); err != nil {
		panic(err)
	}
	t.Changes.Record(e)
}

// ValidateName checks a template name.
func ValidateName(name string) error {
	return domain.ValidateName("UTM template", name, MaxNameLength)
}

func validatePatch(p *Patch) error {
	var v Values
	for _, f := range v.fields(p) {
		if s, ok := f.opt.Value(); ok {
			if err := link.ValidateText(f.name, s, link.MaxNameLength); err != nil {
				return err
			}
		}
	}
	return nil
}

// Create records a new template.
func Create(id, workspaceID, name string, values Values, by string, now time.Time) (*Template, error) {
	name = strings.TrimSpace(name)
	if err := ValidateName(name); err != nil {
		return nil, err
	}
	p := values.patch()
	if err := validatePatch(&p); err != nil {
		return nil, err
	}
	t := &Template{}
	t.record(&Created{TemplateID: id, WorkspaceID: workspaceID, Name: name, Values: values, CreatedBy: by, At: now.UTC()})
	return t, nil
}

func (v Values) patch() Patch {
	return Patch{Source: domain.Some(v.Source), Medium: domain.Some(v.Medium), Campaign: domain.Some(v.Campaign),
		Term: domain.Some(v.Term), Content: domain.Some(v.Content), Name: domain.Some(v.Name)}
}

// Update changes the given fields; a null value clears it.
func (t *Template) Update(name domain.Opt[string], values Patch, now time.Time) error {
	if !t.Exists() {
		return domain.NotFound(MsgNotFound)
	}
	if name.Set {
		if name.Null {
			return domain.Invalid("UTM template name is required")
		}
		name.V = strings.TrimSpace(name.V)
		if err := ValidateName(name.V); err != nil {
			return err
		}
	}
	if err := validatePatch(&values); err != nil {
		return err
	}
	t.record(&Updated{TemplateID: t.ID, WorkspaceID: t.WorkspaceID, Name: name, Patch: values, At: now.UTC()})
	return nil
}

// Delete removes the template. Links that name it keep working, without
// its values.
func (t *Template) Delete(now time.Time) error {
	if !t.Exists() {
		return domain.NotFound(MsgNotFound)
	}
	t.record(&Deleted{TemplateID: t.ID, WorkspaceID: t.WorkspaceID, At: now.UTC()})
	return nil
}
