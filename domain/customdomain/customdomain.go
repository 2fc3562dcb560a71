// Package customdomain is the aggregate of a workspace's own short-link
// domain, verified by a DNS CNAME pointing at the default domain.
package customdomain

import (
	"fmt"
	"time"

	"github.com/linkd/linkd/domain"
)

const (
	EventCreated  = "DomainCreated"
	EventUpdated  = "DomainUpdated"
	EventChecked  = "DomainVerificationChecked"
	EventVerified = "DomainVerified"
	EventDeleted  = "DomainDeleted"
)

// StreamPrefix is the category of domain streams.
const StreamPrefix = "domain-"

// Stream names the stream of domain id.
func Stream(id string) string { return StreamPrefix + id }

const MaxDescriptionLength = 4096

type Created struct {
	DomainID    string    `json:"domain_id"`
	WorkspaceID string    `json:"workspace_id"`
	Domain      string    `json:"domain"`
	Description string    `json:"description"`
	CreatedBy   string    `json:"created_by"`
	At          time.Time `json:"at"`
}

type Updated struct {
	DomainID    string             `json:"domain_id"`
	Description domain.Opt[string] `json:"description,omitzero"`
	At          time.Time          `json:"at"`
}

// Checked records one DNS check and its outcome.
type Checked struct {
	DomainID      string    `json:"domain_id"`
	CNAMERecord   string    `json:"cname_record"`
	ExpectedValue string    `json:"expected_value"`
	ActualValue   string    `json:"actual_value"`
	Status        string    `json:"status"`
	DNSConfigured bool      `json:"dns_configured"`
	CNAMEAdded    bool      `json:"cname_added"`
	At            time.Time `json:"at"`
}

// Verified: the domain passed a check for the first time; it stays verified.
type Verified struct {
	DomainID string    `json:"domain_id"`
	Domain   string    `json:"domain"`
	At       time.Time `json:"at"`
}

type Deleted struct {
	DomainID    string    `json:"domain_id"`
	WorkspaceID string    `json:"workspace_id"`
	Domain      string    `json:"domain"`
	At          time.Time `json:"at"`
}

func (Created) EventType() string  { return EventCreated }
func (Updated) EventType() string  { return EventUpdated }
func (Checked) EventType() string  { return EventChecked }
func (Verified) EventType() string { return EventVerified }
func (Deleted) EventType() string  { return EventDeleted }

func init() {
	domain.Register(func() domain.Event { return &Created{} })
	domain.Register(func() domain.Event { return &Updated{} })
	domain.Register(func() domain.Event { return &Checked{} })
	domain.Register(func() domain.Event { return &Verified{} })
	domain.Register(func() domain.Event { return &Deleted{} })
}

// Domain is the write model of one custom domain.
type Domain struct {
	domain.Changes
	ID            string
	WorkspaceID   string
	Name          string
	Description   string
	CreatedBy     string
	CreatedAt     time.Time
	UpdatedAt     time.Time
	IsVerified    bool
	DNSConfigured bool
	CNAMEAdded    bool
	LastChecked   *time.Time
	Deleted       bool
}

// Load rebuilds a domain from its history.
func Load(events []domain.Event) (*Domain, error) {
	d := &Domain{}
	for _, e := range events {
		if err := d.apply(e); err != nil {
			return nil, err
		}
		d.Changes.Loaded()
	}
	return d, nil
}

// Exists reports whether the domain was created and not deleted.
func (d *Domain) Exists() bool { return d.ID != "" && !d.Deleted }

func (d *Domain) apply(e domain.Event) error {
	switch e := e.(type) {
	case *Created:
		d.ID, d.WorkspaceID, d.Name, d.Description, d.CreatedBy = e.DomainID, e.WorkspaceID, e.Domain, e.Description, e.CreatedBy
		d.CreatedAt, d.UpdatedAt = e.At, e.At
	case *Updated:
		if e.Description.Set {
			d.Description = e.Description.V
		}
		d.UpdatedAt = e.At
	case *Checked:
		d.DNSConfigured, d.CNAMEAdded = e.DNSConfigured, e.CNAMEAdded
		if d.IsVerified {
			d.DNSConfigured, d.CNAMEAdded = true, true
		}
		at := e.At
		d.LastChecked = &at
		d.UpdatedAt = e.At
	case *Verified:
		d.IsVerified, d.DNSConfigured, d.CNAMEAdded = true, true, true
	case *Deleted:
		d.Deleted, d.UpdatedAt = true, e.At
	default:
		return fmt.Errorf("customdomain: unexpected event %T", e)
	}
	return nil
}

func (d *Domain) record(e domain.Event) {
	if err := d.apply(e); err != nil {
		panic(err)
	}
	d.Changes.Record(e)
}

// Create records a new, unverified domain. name is already normalised.
func Create(id, workspaceID, name, description, by string, now time.Time) (*Domain, error) {
	if name == "" {
		return nil, domain.Invalid("Domain is required")
	}
	if len(description) > MaxDescriptionLength {
		return nil, domain.Invalid("Domain description is too long")
	}
	d := &Domain{}
	d.record(&Created{DomainID: id, WorkspaceID: workspaceID, Domain: name, Description: description, CreatedBy: by, At: now.UTC()})
	return d, nil
}

// Update changes the description.
func (d *Domain) Update(description domain.Opt[string], now time.Time) error {
	if !d.Exists() {
		return domain.NotFound("Domain not found")
	}
	if len(description.V) > MaxDescriptionLength {
		return domain.Invalid("Domain description is too long")
	}
	d.record(&Updated{DomainID: d.ID, Description: description, At: now.UTC()})
	return nil
}

// CheckResult is what a DNS check found.
type CheckResult struct {
	CNAMERecord, ExpectedValue, ActualValue, Status string
	DNSConfigured, CNAMEAdded, Valid                bool
}

// RecordCheck records a DNS check; a valid one verifies the domain for good.
func (d *Domain) RecordCheck(r CheckResult, now time.Time) error {
	if !d.Exists() {
		return domain.NotFound("Domain not found")
	}
	now = now.UTC()
	d.record(&Checked{DomainID: d.ID, CNAMERecord: r.CNAMERecord, ExpectedValue: r.ExpectedValue,
		ActualValue: r.ActualValue, Status: r.Status, DNSConfigured: r.DNSConfigured, CNAMEAdded: r.CNAMEAdded, At: now})
	if r.Valid && !d.IsVerified {
		d.record(&Verified{DomainID: d.ID, Domain: d.Name, At: now})
	}
	return nil
}

// Delete removes the domain.
func (d *Domain) Delete(now time.Time) error {
	if !d.Exists() {
		return domain.NotFound("Domain not found")
	}
	d.record(&Deleted{DomainID: d.ID, WorkspaceID: d.WorkspaceID, Domain: d.Name, At: now.UTC()})
	return nil
}
