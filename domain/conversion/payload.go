package conversion

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/linkd/linkd/domain"
)

// The errors of the conversion event interface (spec section 7).
const (
	MsgInvalidPayload    = "Invalid payload"
	MsgMissingExternalID = "Missing customer.externalId"
	MsgClickNotFound     = "Click not found for this trackingId"
	MsgClickNotYours     = "This click does not belong to your workspace"
)

// Limits of a conversion body.
const (
	MaxExternalIDBytes = 100
	MaxStringBytes     = 255 // the other customer strings, trackingId, eventName, eventId
	MaxMetadataBytes   = 10000
)

// Default event names.
const (
	DefaultLeadEventName = "Sign up"
	DefaultSaleEventName = "Purchase"
)

// Issue is one bad field of a body: its path (["customer", "email"]) and
// what is wrong with it.
type Issue struct {
	Path    []string `json:"path"`
	Message string   `json:"message"`
}

// PathString joins the path with dots: "customer.email".
func (i Issue) PathString() string { return strings.Join(i.Path, ".") }

// PayloadError is a refused conversion body: 400 with Message as "error"
// and Details as "details". It unwraps to a domain error of kind
// KindInvalid.
type PayloadError struct {
	Message string
	Details []Issue
}

func (e *PayloadError) Error() string {
	if len(e.Details) == 0 {
		return e.Message
	}
	parts := make([]string, len(e.Details))
	for i, d := range e.Details {
		parts[i] = d.PathString() + ": " + d.Message
	}
	return e.Message + " (" + strings.Join(parts, "; ") + ")"
}

func (e *PayloadError) Unwrap() error {
	return &domain.Error{Kind: domain.KindInvalid, Message: e.Message}
}

// Payload is a valid lead or sale body. AmountMinor and Currency are set
// for sales only.
type Payload struct {
	TrackingID string
	ExternalID string
	Profile    Profile
	// EventName is the caller's, else the default of the kind.
	EventName string
	// EventID is the caller's idempotency key; "" for none.
	EventID string
	// Metadata is the caller's object, compacted; nil when absent.
	Metadata    json.RawMessage
	AmountMinor int64
	Currency    string
}

// ParseLead decodes and validates the body of POST /api/events/lead.
func ParseLead(body []byte) (Payload, error) { return parse(body, false) }

// ParseSale decodes and validates the body of POST /api/events/sale.
func ParseSale(body []byte) (Payload, error) { return parse(body, true) }

// parse checks every field and reports every problem at once, in the order
// trackingId, customer (externalId, email, firstname, lastname,
// phoneNumber, avatarUrl), amount, currency, eventName, eventId, metadata.
//
// Unknown fields are ignored; null is the same as absent. When the only
// problem is a customer object without externalId (absent, null or ""),
// the error is MsgMissingExternalID; with other problems it is one detail
// of MsgInvalidPayload.
func parse(body []byte, sale bool) (Payload, error) {
	var p Payload
	if !domain.ValidJSONText(body) {
		return p, &PayloadError{Message: MsgInvalidPayload, Details: []Issue{InvalidTextIssue()}}
	}
	top, err := domain.DecodeObject(body)
	if err != nil {
		msg := "Malformed JSON"
		if json.Valid(body) { // valid JSON, but not an object
			msg = "Expected object, received " + kindOf(bytes.TrimSpace(body))
		}
		return p, &PayloadError{Message: MsgInvalidPayload, Details: []Issue{{Path: []string{}, Message: msg}}}
	}
	if top == nil { // the body is null
		return p, &PayloadError{Message: MsgInvalidPayload, Details: []Issue{{Path: []string{}, Message: "Expected object, received null"}}}
	}
	var c checker
	p.TrackingID, _ = c.str(top["trackingId"], true, MaxStringBytes, "trackingId")

	missingExternalID := false
	if raw := top["customer"]; present(raw) {
		if raw[0] != '{' {
			c.add("Expected object, received "+kindOf(raw), "customer")
		} else {
			cust, err := domain.DecodeObject(raw)
			if err != nil {
				c.add("Expected object", "customer") // cannot happen: raw is a valid object
			}
			if ext := cust["externalId"]; !present(ext) || string(ext) == `""` {
				missingExternalID = true
				c.add("Required", "customer", "externalId")
			} else {
				p.ExternalID, _ = c.str(ext, true, MaxExternalIDBytes, "customer", "externalId")
			}
			p.Profile.Email, _ = c.str(cust["email"], false, MaxStringBytes, "customer", "email")
			p.Profile.Firstname, _ = c.str(cust["firstname"], false, MaxStringBytes, "customer", "firstname")
			p.Profile.Lastname, _ = c.str(cust["lastname"], false, MaxStringBytes, "customer", "lastname")
			p.Profile.PhoneNumber, _ = c.str(cust["phoneNumber"], false, MaxStringBytes, "customer", "phoneNumber")
			p.Profile.AvatarURL, _ = c.str(cust["avatarUrl"], false, MaxStringBytes, "customer", "avatarUrl")
		}
	} else {
		c.add("Required", "customer")
	}

	if sale {
		p.Currency, p.AmountMinor = c.money(top["amount"], top["currency"])
	}

	p.EventName, _ = c.str(top["eventName"], false, MaxStringBytes, "eventName")
	if p.EventName == "" {
		p.EventName = DefaultLeadEventName
		if sale {
			p.EventName = DefaultSaleEventName
		}
	}
	p.EventID, _ = c.str(top["eventId"], false, MaxStringBytes, "eventId")
	p.Metadata = c.metadata(top["metadata"])

	switch {
	case len(c.issues) == 0:
		return p, nil
	case len(c.issues) == 1 && missingExternalID:
		return Payload{}, &PayloadError{Message: MsgMissingExternalID}
	default:
		return Payload{}, &PayloadError{Message: MsgInvalidPayload, Details: c.issues}
	}
}

// InvalidTextIssue is the detail of a body whose text would not decode
// unchanged: bytes that are not UTF-8, or a lone surrogate escape
// (\ud800), which a decoder would both turn into U+FFFD, so that two
// customers whose externalId differ there would become one.
func InvalidTextIssue() Issue {
	return Issue{Path: []string{}, Message: "Text must be valid UTF-8 without lone surrogates"}
}

// present reports whether a field was given with a value other than null.
func present(raw json.RawMessage) bool {
	return len(raw) > 0 && string(raw) != "null"
}

// kindOf names the JSON type of a valid value.
func kindOf(raw []byte) string {
	if len(raw) == 0 {
		return "nothing"
	}
	switch raw[0] {
	case '"':
		return "string"
	case '{':
		return "object"
	case '[':
		return "array"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	default:
		return "number"
	}
}

type checker struct{ issues []Issue }

func (c *checker) add(msg string, path ...string) {
	c.issues = append(c.issues, Issue{Path: path, Message: msg})
}

// str reads a string field. An absent or null field is "" (an issue when
// required); an empty string of a required field is an issue too.
func (c *checker) str(raw json.RawMessage, required bool, max int, path ...string) (string, bool) {
	if !present(raw) {
		if required {
			c.add("Required", path...)
		}
		return "", !required
	}
	if raw[0] != '"' {
		c.add("Expected string, received "+kindOf(raw), path...)
		return "", false
	}
	s, ok := domain.PlainJSONString(raw)
	if !ok {
		if err := json.Unmarshal(raw, &s); err != nil {
			c.add("Expected string", path...)
			return "", false
		}
	}
	if required && s == "" {
		c.add("Must not be empty", path...)
		return "", false
	}
	if len(s) > max {
		c.add(fmt.Sprintf("Must be at most %d bytes", max), path...)
		return "", false
	}
	return s, true
}

// money reads amount and currency together: the decimals allowed depend on
// the currency. Issues come in the order amount, currency.
func (c *checker) money(amount, currency json.RawMessage) (string, int64) {
	var cc checker
	cur, curOK := cc.str(currency, true, MaxStringBytes, "currency")
	if curOK {
		if err := ValidateCurrency(cur); err != nil {
			cc.add(err.Error(), "currency")
			curOK = false
		}
	}
	defer func() { c.issues = append(c.issues, cc.issues...) }()
	if !present(amount) {
		c.add("Required", "amount")
		return cur, 0
	}
	if k := kindOf(amount); k != "number" {
		c.add("Expected number, received "+k, "amount")
		return cur, 0
	}
	if !curOK {
		// Without a currency only the sign can be judged.
		if d, ok := parseJSONNumber(string(amount)); ok && (d.neg || d.mant == "") {
			c.add(MsgAmountPositive, "amount")
		}
		return cur, 0
	}
	minor, err := ParseAmount(string(amount), cur)
	if err != nil {
		c.add(err.Error(), "amount")
		return cur, 0
	}
	return cur, minor
}

// metadata reads the optional metadata object, compacted.
func (c *checker) metadata(raw json.RawMessage) json.RawMessage {
	if !present(raw) {
		return nil
	}
	if raw[0] != '{' {
		c.add("Expected object, received "+kindOf(raw), "metadata")
		return nil
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		c.add("Expected object", "metadata")
		return nil
	}
	if buf.Len() > MaxMetadataBytes {
		c.add(fmt.Sprintf("Must be at most %d bytes of JSON", MaxMetadataBytes), "metadata")
		return nil
	}
	return json.RawMessage(buf.Bytes())
}
