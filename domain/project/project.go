// Package project is the project aggregate: a named, coloured group of links
// inside a workspace.
package project

import (
	"fmt"
	"strings"
	"time"

	"github.com/linkd/linkd/domain"
	"github.com/linkd/linkd/domain/link"
)

const (
	EventCreated = "ProjectCreated"
	EventUpdated = "ProjectUpdated"
	EventDeleted = "ProjectDeleted"
)

// StreamPrefix is the category of project streams.
const StreamPrefix = "project-"

// Stream names the stream of project id.
func Stream(id string) string { return StreamPrefix + id }

// DefaultColor is the colour of a project created without one.
const DefaultColor = "#000000"

const (
	MaxNameLength        = 255
	MaxDescriptionLength = 4096
)

type Created struct {
	ProjectID   string    `json:"project_id"`
	WorkspaceID string    `json:"workspace_id"`
	Name        string    `json:"name"`
	Description string    `json:"description"`
	Color       string    `json:"color"`
	CreatedBy   string    `json:"created_by"`
	At          time.Time `json:"at"`
}

type Updated struct {
	ProjectID   string             `json:"project_id"`
	WorkspaceID string             `json:"workspace_id"`
	Name        domain.Opt[string] `json:"name,omitzero"`
	Description domain.Opt[string] `json:"description,omitzero"`
	Color       domain.Opt[string] `json:"color,omitzero"`
	At          time.Time          `json:"at"`
}

type Deleted struct {
	ProjectID   string    `json:"project_id"`
	WorkspaceID string    `json:"workspace_id"`
	Name        string    `json:"name"`
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

// Project is the write model of one project.
type Project struct {
	domain.Changes
	ID          string
	WorkspaceID string
	Name        string
	Description string
	Color       string
	CreatedBy   string
	CreatedAt   time.Time
	UpdatedAt   time.Time
	Deleted     bool
}

// Load rebuilds a project from its history.
func Load(events []domain.Event) (*Project, error) {
	p := &Project{}
	for _, e := range events {
		if err := p.apply(e); err != nil {
			return nil, err
		}
		p.Changes.Loaded()
	}
	return p, nil
}

// Exists reports whether the project was created and not deleted.
func (p *Project) Exists() bool { return p.ID != "" && !p.Deleted }

func (p *Project) apply(e domain.Event) error {
	switch e := e.(type) {
	case *Created:
		p.ID, p.WorkspaceID, p.Name, p.Description, p.Color, p.CreatedBy = e.ProjectID, e.WorkspaceID, e.Name, e.Description, e.Color, e.CreatedBy
		p.CreatedAt, p.UpdatedAt = e.At, e.At
	case *Updated:
		if v, ok := e.Name.Value(); ok {
			p.Name = v
		}
		if e.Description.Set {
			p.Description = e.Description.V
		}
		if v, ok := e.Color.Value(); ok {
			p.Color = v
		}
		p.UpdatedAt = e.At
	case *Deleted:
		p.Deleted, p.UpdatedAt = true, e.At
	default:
		return fmt.Errorf("project: unexpected event %T", e)
	}
	return nil
}

func (p *Project) record(e domain.Event) {
	if err := p.apply(e); err != nil {
		panic(err)
	}
	p.Changes.Record(e)
}

// ValidateName checks a project name.
func ValidateName(name string) error {
	return domain.ValidateName("Project", name, MaxNameLength)
}

// NormalizeColor validates a colour and returns it in upper case; empty
// gives the default.
func NormalizeColor(c string) (string, error) {
	if c == "" {
		return DefaultColor, nil
	}
	n, ok := link.NormalizeColor(c)
	if !ok {
		return "", domain.Invalid("Invalid color format. Use a hex colour such as #1A2B3C or #ABC")
	}
	return n, nil
}

// Create records a new project.
func Create(id, workspaceID, name, description, color, by string, now time.Time) (*Project, error) {
	name = strings.TrimSpace(name)
	if err := ValidateName(name); err != nil {
		return nil, err
	}
	if len(description) > MaxDescriptionLength {
		return nil, domain.Invalid("Project description is too long")
	}
	c, err := NormalizeColor(color)
	if err != nil {
		return nil, err
	}
	p := &Project{}
	p.record(&Created{ProjectID: id, WorkspaceID: workspaceID, Name: name, Description: description, Color: c, CreatedBy: by, At: now.UTC()})
	return p, nil
}

// Update changes the given fields.
func (p *Project) Update(name, description, color domain.Opt[string], now time.Time) error {
	if !p.Exists() {
		return domain.NotFound("Project not found")
	}
	if name.Set {
		if name.Null {
			return domain.Invalid("Project name is required")
		}
		name.V = strings.TrimSpace(name.V)
		if err := ValidateName(name.V); err != nil {
			return err
		}
	}
	if description.Set && len(description.V) > MaxDescriptionLength {
		return domain.Invalid("Project description is too long")
	}
	if color.Set {
		c, err := NormalizeColor(color.V)
		if err != nil {
			return err
		}
		color = domain.Some(c)
	}
	p.record(&Updated{ProjectID: p.ID, WorkspaceID: p.WorkspaceID, Name: name, Description: description, Color: color, At: now.UTC()})
	return nil
}

// Delete removes the project. Its links stay, without project.
func (p *Project) Delete(now time.Time) error {
	if !p.Exists() {
		return domain.NotFound("Project not found")
	}
	p.record(&Deleted{ProjectID: p.ID, WorkspaceID: p.WorkspaceID, Name: p.Name, At: now.UTC()})
	return nil
}
