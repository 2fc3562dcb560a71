// Package conversion holds the events of conversions attributed to a click:
// leads and sales reported through the conversion event interface. Each
// click id has its own stream, "conversion-<click id>", so that a click's
// conversions keep their order and an eventId is recorded once.
package conversion

import (
	"time"

	"github.com/linkd/linkd/domain"
)

const (
	EventLeadTracked = "LeadTracked"
	EventSaleTracked = "SaleTracked"
)

// StreamPrefix is the category of conversion streams.
const StreamPrefix = "conversion-"

// Stream names the conversion stream of a click id.
func Stream(clickID string) string { return StreamPrefix + clickID }

// Customer is the converting customer as the caller describes them.
type Customer struct {
	ExternalID  string `json:"externalId"`
	Email       string `json:"email,omitempty"`
	Firstname   string `json:"firstname,omitempty"`
	Lastname    string `json:"lastname,omitempty"`
	PhoneNumber string `json:"phoneNumber,omitempty"`
	AvatarURL   string `json:"avatarUrl,omitempty"`
}

// LeadTracked: a click turned into a lead.
type LeadTracked struct {
	EventID     string            `json:"event_id,omitempty"`
	ClickID     string            `json:"click_id"`
	LinkID      string            `json:"link_id"`
	WorkspaceID string            `json:"workspace_id"`
	Customer    Customer          `json:"customer"`
	Metadata    map[string]string `json:"metadata,omitempty"`
	At          time.Time         `json:"at"`
}

// SaleTracked: a click turned into a sale. Amount is in minor units of
// Currency (cents for usd, yen for jpy).
type SaleTracked struct {
	EventID     string            `json:"event_id,omitempty"`
	ClickID     string            `json:"click_id"`
	LinkID      string            `json:"link_id"`
	WorkspaceID string            `json:"workspace_id"`
	Customer    Customer          `json:"customer"`
	AmountMinor int64             `json:"amount_minor"`
	Currency    string            `json:"currency"`
	Metadata    map[string]string `json:"metadata,omitempty"`
	At          time.Time         `json:"at"`
}

func (LeadTracked) EventType() string { return EventLeadTracked }
func (SaleTracked) EventType() string { return EventSaleTracked }

func init() {
	domain.Register(func() domain.Event { return &LeadTracked{} })
	domain.Register(func() domain.Event { return &SaleTracked{} })
}
