// Package webhook is the webhook aggregate: a workspace's subscription of
// an HTTP endpoint to some of its events (link changes, clicks, leads,
// sales), delivered signed as Standard Webhooks (DECISIONS.md, "Webhooks
// (extension)"). The secret is kept encrypted, as link passwords are.
package webhook

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/linkd/linkd/domain"
)

// Wire names: never change.
const (
	EventCreated  = "WebhookCreated"
	EventUpdated  = "WebhookUpdated"
	EventDisabled = "WebhookDisabled"
	EventDeleted  = "WebhookDeleted"
	// EventReplayRequested is in a stream of its own (ReplayStream): a
	// request does not change the webhook.
	EventReplayRequested = "WebhookReplayRequested"
	// EventAttemptsRecorded is in a stream of its own (AttemptsStream).
	EventAttemptsRecorded = "WebhookAttemptsRecorded"
)

// Category is the stream category of webhooks.
const Category = "webhook"

// StreamPrefix is the prefix of webhook streams.
const StreamPrefix = Category + "-"

// Stream names the stream of webhook id.
func Stream(id string) string { return StreamPrefix + id }

// ReplayCategory is the stream category of replay requests: with many
// instances on a store without a shared queue, the one that delivers
// makes the messages of a replay asked of any (ADR 0114).
const ReplayCategory = "webhookreplay"

// ReplayStream names the stream of webhook id's replay requests.
func ReplayStream(id string) string { return ReplayCategory + "-" + id }

// AttemptsCategory is the stream category of the attempts the instance
// that delivers records for the deliveries log of the others (ADR 0114).
const AttemptsCategory = "webhookattempts"

// AttemptsStream names the stream of webhook id's recorded attempts.
func AttemptsStream(id string) string { return AttemptsCategory + "-" + id }

// The event types a webhook subscribes to.
const (
	TypeLinkCreated = "link.created"
	TypeLinkUpdated = "link.updated"
	TypeLinkDeleted = "link.deleted"
	TypeLinkClicked = "link.clicked"
	TypeLeadCreated = "lead.created"
	TypeSaleCreated = "sale.created"
)

// Types lists every event type, in the order refusals name them.
var Types = []string{TypeLinkCreated, TypeLinkUpdated, TypeLinkDeleted, TypeLinkClicked, TypeLeadCreated, TypeSaleCreated}

// Why a webhook was turned off.
const (
	ReasonGone     = "gone"     // the receiver answered 410
	ReasonFailures = "failures" // five days of nothing but failures
)

// Limits.
const (
	MaxURLLength         = 2048
	MaxDescriptionLength = 1000
	MaxLinkIDs           = 1000
)

// MsgNotFound is the refusal of an unknown (or deleted) webhook.
const MsgNotFound = "Webhook not found"

type Created struct {
	ID          string    `json:"id"`
	WorkspaceID string    `json:"workspace_id"`
	URL         string    `json:"url"`
	Events      []string  `json:"events"`
	LinkIDs     []string  `json:"link_ids"`
	Description string    `json:"description"`
	SecretEnc   string    `json:"secret_enc"`
	CreatedBy   string    `json:"created_by"`
	At          time.Time `json:"at"`
}

type Updated struct {
	ID          string               `json:"id"`
	WorkspaceID string               `json:"workspace_id"`
	URL         domain.Opt[string]   `json:"url,omitzero"`
	Events      domain.Opt[[]string] `json:"events,omitzero"`
	LinkIDs     domain.Opt[[]string] `json:"link_ids,omitzero"`
	Description domain.Opt[string]   `json:"description,omitzero"`
	IsActive    domain.Opt[bool]     `json:"is_active,omitzero"`
	At          time.Time            `json:"at"`
}

// Disabled: deliveries turned the webhook off (Reason).
type Disabled struct {
	ID          string    `json:"id"`
	WorkspaceID string    `json:"workspace_id"`
	Reason      string    `json:"reason"`
	At          time.Time `json:"at"`
}

type Deleted struct {
	ID          string    `json:"id"`
	WorkspaceID string    `json:"workspace_id"`
	At          time.Time `json:"at"`
}

// ReplayRequested: the events from Start to End are to be sent to the
// webhook again (POST /v1/webhooks/{id}/replay).
type ReplayRequested struct {
	ID          string    `json:"id"`
	WorkspaceID string    `json:"workspace_id"`
	Start       time.Time `json:"start"`
	End         time.Time `json:"end"`
	At          time.Time `json:"at"`
}

func (ReplayRequested) EventType() string { return EventReplayRequested }

// AttemptsRecorded: attempts to deliver a webhook's messages, made by the
// instance Deliverer, for the deliveries log of every instance.
type AttemptsRecorded struct {
	ID        string    `json:"id"`
	Deliverer string    `json:"deliverer"`
	Attempts  []Attempt `json:"attempts"`
}

// Attempt is one line of a webhook's deliveries log.
type Attempt struct {
	MessageID      string     `json:"message_id"`
	EventType      string     `json:"event_type"`
	Attempt        int        `json:"attempt"`
	Status         string     `json:"status"`
	ResponseStatus *int       `json:"response_status,omitempty"`
	ResponseBody   string     `json:"response_body"`
	DurationMS     int64      `json:"duration_ms"`
	At             time.Time  `json:"at"`
	NextAttemptAt  *time.Time `json:"next_attempt_at,omitempty"`
}

func (AttemptsRecorded) EventType() string { return EventAttemptsRecorded }

func (Created) EventType() string  { return EventCreated }
func (Updated) EventType() string  { return EventUpdated }
func (Disabled) EventType() string { return EventDisabled }
func (Deleted) EventType() string  { return EventDeleted }

func init() {
	domain.Register(func() domain.Event { return &Created{} })
	domain.Register(func() domain.Event { return &Updated{} })
	domain.Register(func() domain.Event { return &Disabled{} })
	domain.Register(func() domain.Event { return &Deleted{} })
	domain.Register(func() domain.Event { return &ReplayRequested{} })
	domain.Register(func() domain.Event { return &AttemptsRecorded{} })
}

// Webhook is the write model of one webhook.
type Webhook struct {
	domain.Changes
	ID          string
	WorkspaceID string
	URL         string
	Events      []string
	LinkIDs     []string
	Description string
	SecretEnc   string
	CreatedBy   string
	IsActive    bool
	CreatedAt   time.Time
	UpdatedAt   time.Time
	Deleted     bool
}

// Load rebuilds a webhook from its history.
func Load(events []domain.Event) (*Webhook, error) {
	w := &Webhook{}
	for _, e := range events {
		if err := w.apply(e); err != nil {
			return nil, err
		}
		w.Changes.Loaded()
	}
	return w, nil
}

// Exists reports whether the webhook was created and not deleted.
func (w *Webhook) Exists() bool { return w.ID != "" && !w.Deleted }

func (w *Webhook) apply(e domain.Event) error {
	switch e := e.(type) {
	case *Created:
		w.ID, w.WorkspaceID, w.URL, w.Description, w.SecretEnc, w.CreatedBy = e.ID, e.WorkspaceID, e.URL, e.Description, e.SecretEnc, e.CreatedBy
		w.Events, w.LinkIDs = slices.Clone(e.Events), slices.Clone(e.LinkIDs)
		w.IsActive, w.CreatedAt, w.UpdatedAt = true, e.At, e.At
	case *Updated:
		if v, ok := e.URL.Value(); ok {
			w.URL = v
		}
		if v, ok := e.Events.Value(); ok {
			w.Events = slices.Clone(v)
		}
		if e.LinkIDs.Set {
			w.LinkIDs = slices.Clone(e.LinkIDs.V)
		}
		if v, ok := e.Description.Value(); ok {
			w.Description = v
		}
		if v, ok := e.IsActive.Value(); ok {
			w.IsActive = v
		}
		w.UpdatedAt = e.At
	case *Disabled:
		w.IsActive, w.UpdatedAt = false, e.At
	case *Deleted:
		w.Deleted, w.UpdatedAt = true, e.At
	default:
		return fmt.Errorf("webhook: unexpected event %T", e)
	}
	return nil
}

func (w *Webhook) record(e domain.Event) {
	if err := w.apply(e); err != nil {
		panic(err)
	}
	w.Changes.Record(e)
}

// NormalizeURL checks a destination's form: an absolute http or https URL
// with a host. Whether the host's addresses may be called is the
// delivery's guard (internal/ssrf), asked by the command.
func NormalizeURL(raw string) (string, error) {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return "", domain.Invalid("Webhook url is required")
	}
	if len(raw) > MaxURLLength {
		return "", domain.Invalid("Webhook url is too long (at most %d characters)", MaxURLLength)
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.Hostname() == "" {
		return "", domain.Invalid("Invalid URL format")
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return "", domain.Invalid("Webhook url must use http or https")
	}
	if u.User != nil {
		return "", domain.Invalid("Webhook url must not carry credentials")
	}
	u.Fragment = ""
	return u.String(), nil
}

// NormalizeEvents checks a list of event types: at least one, each known;
// repeats are dropped and the order is kept.
func NormalizeEvents(events []string) ([]string, error) {
	if len(events) == 0 {
		return nil, domain.Invalid("events must name at least one of %s", strings.Join(Types, ", "))
	}
	out := make([]string, 0, len(events))
	for _, e := range events {
		e = strings.TrimSpace(e)
		if !slices.Contains(Types, e) {
			return nil, domain.Invalid("Unknown event type %q. Use %s", e, strings.Join(Types, ", "))
		}
		if !slices.Contains(out, e) {
			out = append(out, e)
		}
	}
	return out, nil
}

// NormalizeLinkIDs checks a link filter; nil and empty mean every link.
func NormalizeLinkIDs(ids []string) ([]string, error) {
	if len(ids) > MaxLinkIDs {
		return nil, domain.Invalid("link_ids names at most %d links", MaxLinkIDs)
	}
	out := make([]string, 0, len(ids))
	for _, id := range ids {
		id = strings.TrimSpace(id)
		if id == "" {
			return nil, domain.Invalid("link_ids must not hold empty ids")
		}
		if !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out, nil
}

// ValidateDescription bounds a description.
func ValidateDescription(d string) error {
	if len(d) > MaxDescriptionLength {
		return domain.Invalid("Webhook description is too long (at most %d characters)", MaxDescriptionLength)
	}
	return nil
}

func normalizeDescription(d string) (string, error) { return d, ValidateDescription(d) }

// Create records a new webhook; url, events and link ids are normalized by
// the caller (NormalizeURL, NormalizeEvents, NormalizeLinkIDs) and checked
// again here.
func Create(id, workspaceID, rawURL string, events, linkIDs []string, description, secretEnc, by string, now time.Time) (*Webhook, error) {
	u, err := NormalizeURL(rawURL)
	if err != nil {
		return nil, err
	}
	if events, err = NormalizeEvents(events); err != nil {
		return nil, err
	}
	if linkIDs, err = NormalizeLinkIDs(linkIDs); err != nil {
		return nil, err
	}
	if err := ValidateDescription(description); err != nil {
		return nil, err
	}
	w := &Webhook{}
	w.record(&Created{ID: id, WorkspaceID: workspaceID, URL: u, Events: events, LinkIDs: linkIDs, Description: description,
		SecretEnc: secretEnc, CreatedBy: by, At: now.UTC()})
	return w, nil
}

// Patch is what an update may change.
type Patch struct {
	URL         domain.Opt[string]
	Events      domain.Opt[[]string]
	LinkIDs     domain.Opt[[]string]
	Description domain.Opt[string]
	IsActive    domain.Opt[bool]
}

// Update changes the given fields. link_ids null or [] clears the filter;
// url and events cannot be cleared.
func (w *Webhook) Update(p Patch, now time.Time) error {
	if !w.Exists() {
		return domain.NotFound(MsgNotFound)
	}
	e := &Updated{ID: w.ID, WorkspaceID: w.WorkspaceID, At: now.UTC()}
	var err error
	if e.URL, err = p.URL.Normalize(NormalizeURL); err != nil { // null: "required"
		return err
	}
	if e.Events, err = p.Events.Normalize(NormalizeEvents); err != nil { // null: "at least one"
		return err
	}
	if e.LinkIDs, err = p.LinkIDs.Normalize(NormalizeLinkIDs); err != nil { // null clears it
		return err
	}
	if e.Description, err = p.Description.Normalize(normalizeDescription); err != nil { // null clears it
		return err
	}
	if p.IsActive.Set {
		if p.IsActive.Null {
			return domain.Invalid("is_active must be true or false")
		}
		e.IsActive = domain.Some(p.IsActive.V)
	}
	w.record(e)
	return nil
}

// Disable turns an active webhook off; an inactive one stays as it is.
func (w *Webhook) Disable(reason string, now time.Time) error {
	if !w.Exists() {
		return domain.NotFound(MsgNotFound)
	}
	if !w.IsActive {
		return nil
	}
	w.record(&Disabled{ID: w.ID, WorkspaceID: w.WorkspaceID, Reason: reason, At: now.UTC()})
	return nil
}

// Delete removes the webhook: nothing more is delivered to it.
func (w *Webhook) Delete(now time.Time) error {
	if !w.Exists() {
		return domain.NotFound(MsgNotFound)
	}
	w.record(&Deleted{ID: w.ID, WorkspaceID: w.WorkspaceID, At: now.UTC()})
	return nil
}
