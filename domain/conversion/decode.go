package conversion

import (
	"strconv"
	"time"

	"github.com/linkd/linkd/domain"
)

// The events of a lead or sale read what linkd writes for them without
// encoding/json (domain.PlainDecoder): every projector applies every sale.
// A flat object of their own keys, spelled as their tags, with plain
// strings, booleans and integers (domain.ScanFlatObject) is read here;
// anything else (metadata, an escape, another key, null) is left to
// encoding/json, with the event untouched. decode_test.go and FuzzDecode
// hold the two to the same result.

// DecodePlain implements domain.PlainDecoder.
func (e *CustomerCreated) DecodePlain(b []byte) bool {
	var d CustomerCreated
	ok := domain.ScanFlatObject(b, func(key, val, raw []byte) bool {
		switch string(key) {
		case "customer_id":
			return setString(&d.CustomerID, val)
		case "workspace_id":
			return setString(&d.WorkspaceID, val)
		case "external_id":
			return setString(&d.ExternalID, val)
		case "at":
			return setTime(&d.At, val, raw)
		}
		return d.Profile.set(key, val)
	})
	if ok {
		*e = d
	}
	return ok
}

func (p *Profile) set(key, val []byte) bool {
	switch string(key) {
	case "email":
		return setString(&p.Email, val)
	case "firstname":
		return setString(&p.Firstname, val)
	case "lastname":
		return setString(&p.Lastname, val)
	case "phone_number":
		return setString(&p.PhoneNumber, val)
	case "avatar_url":
		return setString(&p.AvatarURL, val)
	}
	return false
}

func (c *Click) set(key, val, raw []byte) bool {
	switch string(key) {
	case "click_id":
		return setString(&c.ClickID, val)
	case "link_id":
		return setString(&c.LinkID, val)
	case "workspace_id":
		return setString(&c.WorkspaceID, val)
	case "project_id":
		return setString(&c.ProjectID, val)
	case "clicked_at":
		return setTime(&c.ClickedAt, val, raw)
	case "click_country":
		return setString(&c.Country, val)
	case "click_device_type":
		return setString(&c.DeviceType, val)
	case "click_browser":
		return setString(&c.Browser, val)
	case "click_os":
		return setString(&c.OS, val)
	case "click_referrer":
		return setString(&c.Referrer, val)
	case "click_qr":
		return setBool(&c.QR, val, raw)
	case "click_seq":
		return setUint(&c.Seq, val, raw)
	}
	return false
}

// conversionFields are the keys leads and sales share.
type conversionFields struct {
	conversionID, eventID, eventName, customerID, externalID *string
	click                                                    *Click
	first                                                    *bool
	timestamp                                                *time.Time
}

func (f conversionFields) set(key, val, raw []byte) bool {
	switch string(key) {
	case "conversion_id":
		return setString(f.conversionID, val)
	case "event_id":
		return setString(f.eventID, val)
	case "event_name":
		return setString(f.eventName, val)
	case "customer_id":
		return setString(f.customerID, val)
	case "customer_external_id":
		return setString(f.externalID, val)
	case "first":
		return setBool(f.first, val, raw)
	case "timestamp":
		return setTime(f.timestamp, val, raw)
	}
	return f.click.set(key, val, raw)
}

// DecodePlain implements domain.PlainDecoder.
func (e *LeadTracked) DecodePlain(b []byte) bool {
	var d LeadTracked
	f := conversionFields{&d.ConversionID, &d.EventID, &d.EventName, &d.CustomerID, &d.CustomerExternalID, &d.Click, &d.First, &d.Timestamp}
	if !domain.ScanFlatObject(b, f.set) {
		return false
	}
	*e = d
	return true
}

// DecodePlain implements domain.PlainDecoder.
func (e *SaleTracked) DecodePlain(b []byte) bool {
	var d SaleTracked
	f := conversionFields{&d.ConversionID, &d.EventID, &d.EventName, &d.CustomerID, &d.CustomerExternalID, &d.Click, &d.First, &d.Timestamp}
	ok := domain.ScanFlatObject(b, func(key, val, raw []byte) bool {
		switch string(key) {
		case "amount_minor":
			if val != nil || raw[0] == 't' || raw[0] == 'f' {
				return false
			}
			n, err := strconv.ParseInt(string(raw), 10, 64)
			d.AmountMinor = n
			return err == nil
		case "currency":
			return setString(&d.Currency, val)
		}
		return f.set(key, val, raw)
	})
	if ok {
		*e = d
	}
	return ok
}

// setString sets a string field from a plain string value (val is nil for
// a literal, which encoding/json would refuse for a string).
func setString(f *string, val []byte) bool {
	if val == nil {
		return false
	}
	*f = string(val)
	return true
}

func setBool(f *bool, val, raw []byte) bool {
	if val != nil {
		return false
	}
	switch string(raw) {
	case "true":
		*f = true
	case "false":
		*f = false
	default:
		return false
	}
	return true
}

// setTime reads a time as encoding/json does (time.Time's UnmarshalJSON
// of the quoted string).
func setTime(f *time.Time, val, raw []byte) bool {
	return val != nil && f.UnmarshalJSON(raw) == nil
}

// setUint reads a JSON number that is a plain non-negative integer (what
// encoding/json reads into a uint64); anything else is left to it.
func setUint(f *uint64, val, raw []byte) bool {
	if val != nil || len(raw) == 0 || len(raw) > 1 && raw[0] == '0' {
		return false
	}
	n, err := strconv.ParseUint(string(raw), 10, 64) // base 10: digits only, no sign
	if err != nil {
		return false
	}
	*f = n
	return true
}
