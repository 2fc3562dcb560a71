// Package conversion holds conversions attributed to a click: leads and
// sales reported through the conversion event interface, and the customers
// they belong to.
//
// A customer is an aggregate per workspace and external id, with its own
// stream (CustomerStream). A lead or sale is recorded in its customer's
// stream, in the same append as the customer's creation or update, so that
// deciding whether a sale is the customer's first and recording it are one
// atomic step. The stream holds CustomerCreated, CustomerUpdated,
// LeadTracked and SaleTracked.
//
// An eventId, the caller's idempotency key, is reserved forever in the
// write model (a reservation stream per workspace and eventId, see
// EventIDKey), owned by the conversion id it was first given to.
package conversion

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"time"

	"github.com/linkd/linkd/domain"
)

// Wire names.
const (
	EventCustomerCreated = "CustomerCreated"
	EventCustomerUpdated = "CustomerUpdated"
	EventLeadTracked     = "LeadTracked"
	EventSaleTracked     = "SaleTracked"
)

// CustomerStreamPrefix starts the name of every customer stream.
const CustomerStreamPrefix = "customer-"

// CustomerCategory is the category of customer streams: the topic that
// projections of customers, leads and sales consume.
const CustomerCategory = "customer"

// CustomerStream names the stream of the customer with externalID in a
// workspace: "customer-<workspace id>-<sha256 of externalID, hex>". The
// external id is the caller's and may hold any bytes; its hash is safe in
// every store, topic key and log line.
func CustomerStream(workspaceID, externalID string) string {
	return CustomerStreamPrefix + workspaceID + "-" + hashHex(externalID)
}

// EventIDKey is the reservation key of an eventId in a workspace:
// "<workspace id>-<sha256 of eventId, hex>" (the stream is
// reservation.Stream(reservation.KindConversionEvent, key)).
func EventIDKey(workspaceID, eventID string) string {
	return workspaceID + "-" + hashHex(eventID)
}

func hashHex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// Profile is what a caller says about a customer besides its external id.
// Every field is optional.
type Profile struct {
	Email       string `json:"email,omitempty"`
	Firstname   string `json:"firstname,omitempty"`
	Lastname    string `json:"lastname,omitempty"`
	PhoneNumber string `json:"phone_number,omitempty"`
	AvatarURL   string `json:"avatar_url,omitempty"`
}

// Click is the click a conversion is attributed to, as the click-id lookup
// resolved its tracking id.
type Click struct {
	ClickID     string    `json:"click_id"`
	LinkID      string    `json:"link_id"`
	WorkspaceID string    `json:"workspace_id"`
	ProjectID   string    `json:"project_id,omitempty"`
	ClickedAt   time.Time `json:"clicked_at"`
	// What analysts segment conversions by, as the click recorded it, so
	// that projections need no other read model (and replays agree).
	Country    string `json:"click_country,omitempty"`
	DeviceType string `json:"click_device_type,omitempty"`
	Browser    string `json:"click_browser,omitempty"`
	OS         string `json:"click_os,omitempty"`
	Referrer   string `json:"click_referrer,omitempty"`
	// QR says whether the click was a QR scan.
	QR bool `json:"click_qr,omitempty"`
	// Seq is the click's version in its link's click stream plus one
	// (0: not known, for conversions recorded before linkd kept it): where
	// the whole click is read when it is needed (the click of
	// lead.created and sale.created), not on the conversion's path.
	Seq uint64 `json:"click_seq,omitempty"`
}

// CustomerCreated: a workspace saw a customer for the first time.
type CustomerCreated struct {
	CustomerID  string `json:"customer_id"`
	WorkspaceID string `json:"workspace_id"`
	ExternalID  string `json:"external_id"`
	Profile
	At time.Time `json:"at"`
}

// CustomerUpdated: a later event gave new non-empty profile values. Only
// the fields that changed are set; an empty field is unchanged.
type CustomerUpdated struct {
	CustomerID  string `json:"customer_id"`
	WorkspaceID string `json:"workspace_id"`
	ExternalID  string `json:"external_id"`
	Profile
	At time.Time `json:"at"`
}

// LeadTracked: a click turned into a lead of a customer. First marks the
// customer's first lead, whose click the customer keeps.
type LeadTracked struct {
	// ConversionID is linkd's id of the conversion.
	ConversionID string `json:"conversion_id"`
	// EventID is the caller's idempotency key, when given.
	EventID   string `json:"event_id,omitempty"`
	EventName string `json:"event_name"`
	Click
	CustomerID         string          `json:"customer_id"`
	CustomerExternalID string          `json:"customer_external_id"`
	First              bool            `json:"first"`
	Metadata           json.RawMessage `json:"metadata,omitempty"`
	Timestamp          time.Time       `json:"timestamp"`
}

// SaleTracked: a click turned into a sale of a customer. AmountMinor is in
// minor units of Currency (cents for usd, yen for jpy). First marks the
// customer's first sale.
type SaleTracked struct {
	ConversionID string `json:"conversion_id"`
	EventID      string `json:"event_id,omitempty"`
	EventName    string `json:"event_name"`
	Click
	CustomerID         string          `json:"customer_id"`
	CustomerExternalID string          `json:"customer_external_id"`
	AmountMinor        int64           `json:"amount_minor"`
	Currency           string          `json:"currency"`
	First              bool            `json:"first"`
	Metadata           json.RawMessage `json:"metadata,omitempty"`
	Timestamp          time.Time       `json:"timestamp"`
}

func (CustomerCreated) EventType() string { return EventCustomerCreated }
func (CustomerUpdated) EventType() string { return EventCustomerUpdated }
func (LeadTracked) EventType() string     { return EventLeadTracked }
func (SaleTracked) EventType() string     { return EventSaleTracked }

func init() {
	domain.Register(func() domain.Event { return &CustomerCreated{} })
	domain.Register(func() domain.Event { return &CustomerUpdated{} })
	domain.Register(func() domain.Event { return &LeadTracked{} })
	domain.Register(func() domain.Event { return &SaleTracked{} })
}
