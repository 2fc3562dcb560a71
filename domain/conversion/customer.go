package conversion

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/linkd/linkd/domain"
)

// Customer is the write model of one customer of a workspace: its profile,
// the click of its first lead, and the conversions recorded for it.
type Customer struct {
	domain.Changes
	ID          string
	WorkspaceID string
	ExternalID  string
	Profile     Profile
	CreatedAt   time.Time
	// LeadClick is the click of the customer's first lead; zero before it.
	LeadClick Click
	Leads     int
	Sales     int
	// conversions are the ids of the conversions recorded, so that a
	// conversion completed by a retry is never recorded twice.
	conversions map[string]struct{}
	// recent are the ids of the last conversions recorded, kept by
	// snapshots too: a repeat of an eventId may record the conversion of
	// the call that reserved it, under its id, while that call still
	// holds a snapshot of the customer from before.
	recent [recentConversions]string
	next   int
}

// recentConversions is how many conversion ids a snapshot knows.
const recentConversions = 4

// LoadCustomer rebuilds a customer from its history; no events give a
// customer that does not exist yet.
func LoadCustomer(events []domain.Event) (*Customer, error) {
	c := &Customer{}
	for _, e := range events {
		if err := c.apply(e); err != nil {
			return nil, err
		}
		c.Changes.Loaded()
	}
	return c, nil
}

func (c *Customer) apply(e domain.Event) error {
	switch e := e.(type) {
	case *CustomerCreated:
		c.ID, c.WorkspaceID, c.ExternalID, c.Profile, c.CreatedAt = e.CustomerID, e.WorkspaceID, e.ExternalID, e.Profile, e.At
	case *CustomerUpdated:
		c.Profile = c.Profile.merge(e.Profile)
	case *LeadTracked:
		c.Leads++
		if e.First {
			c.LeadClick = e.Click
		}
		c.remember(e.ConversionID)
	case *SaleTracked:
		c.Sales++
		c.remember(e.ConversionID)
	default:
		return fmt.Errorf("conversion: unexpected customer event %T", e)
	}
	return nil
}

func (c *Customer) remember(conversionID string) {
	if c.conversions == nil {
		c.conversions = map[string]struct{}{}
	}
	c.conversions[conversionID] = struct{}{}
	c.recent[c.next] = conversionID
	c.next = (c.next + 1) % recentConversions
}

func (c *Customer) record(e domain.Event) {
	_ = c.apply(e)
	c.Changes.Record(e)
}

// Snapshot returns a copy of the customer at its version, without pending
// events and without the ids of the conversions it recorded, which grow
// with its history, but the last few: on the copy Has answers false for
// older ids, so it must only record conversions whose ids are new or
// were reserved by the caller just now. It is the state a cache of
// customers keeps (commands.CustomerCache): a few hundred bytes, whatever
// the history.
func (c *Customer) Snapshot() *Customer {
	cp := *c
	cp.conversions = nil
	cp.ClearPending()
	return &cp
}

// Exists reports whether the customer was created.
func (c *Customer) Exists() bool { return c.ID != "" }

// Has reports whether the conversion is recorded for this customer.
func (c *Customer) Has(conversionID string) bool {
	if _, ok := c.conversions[conversionID]; ok {
		return true
	}
	return conversionID != "" && slices.Contains(c.recent[:], conversionID)
}

// merge returns p with the non-empty values of q.
func (p Profile) merge(q Profile) Profile {
	set := func(dst *string, v string) {
		if v != "" {
			*dst = v
		}
	}
	set(&p.Email, q.Email)
	set(&p.Firstname, q.Firstname)
	set(&p.Lastname, q.Lastname)
	set(&p.PhoneNumber, q.PhoneNumber)
	set(&p.AvatarURL, q.AvatarURL)
	return p
}

// changes returns the fields of q that are non-empty and differ from p.
func (p Profile) changes(q Profile) Profile {
	var d Profile
	pick := func(dst *string, old, v string) {
		if v != "" && v != old {
			*dst = v
		}
	}
	pick(&d.Email, p.Email, q.Email)
	pick(&d.Firstname, p.Firstname, q.Firstname)
	pick(&d.Lastname, p.Lastname, q.Lastname)
	pick(&d.PhoneNumber, p.PhoneNumber, q.PhoneNumber)
	pick(&d.AvatarURL, p.AvatarURL, q.AvatarURL)
	return d
}

func (p Profile) validate() error {
	for _, f := range []struct{ name, v string }{
		{"email", p.Email}, {"firstname", p.Firstname}, {"lastname", p.Lastname},
		{"phoneNumber", p.PhoneNumber}, {"avatarUrl", p.AvatarURL},
	} {
		if len(f.v) > MaxStringBytes {
			return domain.Invalid("customer.%s must be at most %d bytes", f.name, MaxStringBytes)
		}
	}
	return nil
}

// Upsert creates the customer, or updates its profile with the values of p
// that are non-empty and differ (a later event's non-empty values win).
// id is used only when the customer is created. Nothing is recorded when
// nothing changes.
func (c *Customer) Upsert(id, workspaceID, externalID string, p Profile, now time.Time) error {
	if externalID == "" || len(externalID) > MaxExternalIDBytes {
		return domain.Invalid("customer.externalId must be 1 to %d bytes", MaxExternalIDBytes)
	}
	if err := p.validate(); err != nil {
		return err
	}
	if !c.Exists() {
		if id == "" || workspaceID == "" {
			return domain.Invalid("customer id and workspace id are required")
		}
		c.record(&CustomerCreated{CustomerID: id, WorkspaceID: workspaceID, ExternalID: externalID, Profile: p, At: now.UTC()})
		return nil
	}
	if c.WorkspaceID != workspaceID || c.ExternalID != externalID {
		// Two external ids whose hashes collide, or a stream read by the
		// wrong name: never merge two customers.
		return fmt.Errorf("conversion: customer stream of %s/%q holds %s/%q", workspaceID, externalID, c.WorkspaceID, c.ExternalID)
	}
	if d := c.Profile.changes(p); d != (Profile{}) {
		c.record(&CustomerUpdated{CustomerID: c.ID, WorkspaceID: c.WorkspaceID, ExternalID: c.ExternalID, Profile: d, At: now.UTC()})
	}
	return nil
}

// Conversion is what a lead and a sale have in common.
type Conversion struct {
	// ConversionID is linkd's id of the conversion; required.
	ConversionID string
	EventID      string
	// EventName "" means the default of the kind.
	EventName string
	Click     Click
	Metadata  json.RawMessage
	At        time.Time
}

// ErrAlreadyRecorded is returned when the conversion id is already recorded
// for the customer: a retry of a conversion that was completed.
var ErrAlreadyRecorded = errors.New("conversion: already recorded")

func (c *Customer) check(cv *Conversion, defaultName string) error {
	if !c.Exists() {
		return domain.Invalid("the customer does not exist")
	}
	if cv.ConversionID == "" {
		return domain.Invalid("conversion id is required")
	}
	if c.Has(cv.ConversionID) {
		return ErrAlreadyRecorded
	}
	if cv.Click.ClickID == "" || cv.Click.LinkID == "" {
		return domain.NotFound(MsgClickNotFound)
	}
	if cv.Click.WorkspaceID != c.WorkspaceID {
		return domain.Forbidden(MsgClickNotYours)
	}
	if cv.EventName == "" {
		cv.EventName = defaultName
	}
	if len(cv.EventName) > MaxStringBytes || len(cv.EventID) > MaxStringBytes {
		return domain.Invalid("eventName and eventId must be at most %d bytes", MaxStringBytes)
	}
	if len(cv.Metadata) > 0 {
		var buf bytes.Buffer
		if err := json.Compact(&buf, cv.Metadata); err != nil || buf.Bytes()[0] != '{' {
			return domain.Invalid("metadata must be a JSON object")
		}
		if buf.Len() > MaxMetadataBytes {
			return domain.Invalid("metadata must be at most %d bytes of JSON", MaxMetadataBytes)
		}
		cv.Metadata = buf.Bytes()
	}
	cv.At = cv.At.UTC()
	cv.Click.ClickedAt = cv.Click.ClickedAt.UTC()
	return nil
}

// TrackLead records a lead of the customer, who must exist (Upsert first,
// in the same append). The customer's first lead is marked First and its
// click becomes the customer's.
func (c *Customer) TrackLead(cv Conversion) error {
	if err := c.check(&cv, DefaultLeadEventName); err != nil {
		return err
	}
	c.record(&LeadTracked{
		ConversionID: cv.ConversionID, EventID: cv.EventID, EventName: cv.EventName, Click: cv.Click,
		CustomerID: c.ID, CustomerExternalID: c.ExternalID, First: c.Leads == 0, Metadata: cv.Metadata, Timestamp: cv.At,
	})
	return nil
}

// TrackSale records a sale of the customer, who must exist. The customer's
// first sale is marked First. amountMinor is in minor units of currency.
func (c *Customer) TrackSale(cv Conversion, amountMinor int64, currency string) error {
	if err := c.check(&cv, DefaultSaleEventName); err != nil {
		return err
	}
	if err := ValidateSaleAmount(amountMinor, currency); err != nil {
		return err
	}
	c.record(&SaleTracked{
		ConversionID: cv.ConversionID, EventID: cv.EventID, EventName: cv.EventName, Click: cv.Click,
		CustomerID: c.ID, CustomerExternalID: c.ExternalID, AmountMinor: amountMinor, Currency: currency,
		First: c.Sales == 0, Metadata: cv.Metadata, Timestamp: cv.At,
	})
	return nil
}

// ValidateSaleAmount checks an amount already in minor units: a known
// lowercase currency, more than zero, at most MaxAmountMinor.
func ValidateSaleAmount(amountMinor int64, currency string) error {
	if err := ValidateCurrency(currency); err != nil {
		return domain.Invalid("%s", err.Error())
	}
	if amountMinor <= 0 {
		return domain.Invalid(MsgAmountPositive)
	}
	if amountMinor > MaxAmountMinor {
		return domain.Invalid(MsgAmountTooLarge)
	}
	return nil
}
