package conversion

import (
	"bytes"
	"encoding/json"
	"strconv"
	"time"

	"github.com/linkd/linkd/domain/internal/jsonappend"
)

// The events of a lead or sale encode themselves, byte for byte as
// encoding/json would (json_test.go checks): every sale appends a
// SaleTracked, and half of them a CustomerCreated, where reflection was 2%
// of a sale's CPU. AppendJSON returns nil when metadata is not valid JSON,
// which encoding/json refuses: domain.EncodeEvent then reports its error.

// AppendJSON implements domain.JSONAppender.
func (e *CustomerCreated) AppendJSON(b []byte) []byte {
	b = append(b, `{"customer_id":`...)
	b = jsonappend.String(b, e.CustomerID)
	b = append(b, `,"workspace_id":`...)
	b = jsonappend.String(b, e.WorkspaceID)
	b = append(b, `,"external_id":`...)
	b = jsonappend.String(b, e.ExternalID)
	b = e.Profile.appendJSON(b)
	b = append(b, `,"at":`...)
	b = jsonappend.Time(b, e.At)
	return append(b, '}')
}

func (p *Profile) appendJSON(b []byte) []byte {
	b = jsonappend.Opt(b, `,"email":`, p.Email)
	b = jsonappend.Opt(b, `,"firstname":`, p.Firstname)
	b = jsonappend.Opt(b, `,"lastname":`, p.Lastname)
	b = jsonappend.Opt(b, `,"phone_number":`, p.PhoneNumber)
	return jsonappend.Opt(b, `,"avatar_url":`, p.AvatarURL)
}

func (c *Click) appendJSON(b []byte) []byte {
	b = append(b, `,"click_id":`...)
	b = jsonappend.String(b, c.ClickID)
	b = append(b, `,"link_id":`...)
	b = jsonappend.String(b, c.LinkID)
	b = append(b, `,"workspace_id":`...)
	b = jsonappend.String(b, c.WorkspaceID)
	b = jsonappend.Opt(b, `,"project_id":`, c.ProjectID)
	b = append(b, `,"clicked_at":`...)
	b = jsonappend.Time(b, c.ClickedAt)
	b = jsonappend.Opt(b, `,"click_country":`, c.Country)
	b = jsonappend.Opt(b, `,"click_device_type":`, c.DeviceType)
	b = jsonappend.Opt(b, `,"click_browser":`, c.Browser)
	b = jsonappend.Opt(b, `,"click_os":`, c.OS)
	b = jsonappend.Opt(b, `,"click_referrer":`, c.Referrer)
	if c.QR {
		b = append(b, `,"click_qr":true`...)
	}
	if c.Seq != 0 {
		b = append(b, `,"click_seq":`...)
		b = strconv.AppendUint(b, c.Seq, 10)
	}
	return b
}

// conversionHead appends what leads and sales begin with, up to the
// customer's external id.
func conversionHead(b []byte, conversionID, eventID, eventName string, c *Click, customerID, externalID string) []byte {
	b = append(b, `{"conversion_id":`...)
	b = jsonappend.String(b, conversionID)
	b = jsonappend.Opt(b, `,"event_id":`, eventID)
	b = append(b, `,"event_name":`...)
	b = jsonappend.String(b, eventName)
	b = c.appendJSON(b)
	b = append(b, `,"customer_id":`...)
	b = jsonappend.String(b, customerID)
	b = append(b, `,"customer_external_id":`...)
	return jsonappend.String(b, externalID)
}

// conversionTail appends what leads and sales end with, from first, and
// closes the object; nil when metadata is not valid JSON.
func conversionTail(b []byte, first bool, metadata json.RawMessage, ts time.Time) []byte {
	b = append(b, `,"first":`...)
	b = strconv.AppendBool(b, first)
	b, ok := appendMetadata(b, metadata)
	if !ok {
		return nil
	}
	b = append(b, `,"timestamp":`...)
	b = jsonappend.Time(b, ts)
	return append(b, '}')
}

// appendMetadata appends metadata as encoding/json writes a RawMessage:
// compacted, HTML-escaped. ok is false when it is not valid JSON.
func appendMetadata(b []byte, metadata json.RawMessage) (_ []byte, ok bool) {
	if len(metadata) == 0 {
		return b, true
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, metadata); err != nil {
		return nil, false
	}
	out := bytes.NewBuffer(append(b, `,"metadata":`...))
	json.HTMLEscape(out, compact.Bytes())
	return out.Bytes(), true
}

// AppendJSON implements domain.JSONAppender.
func (e *LeadTracked) AppendJSON(b []byte) []byte {
	b = conversionHead(b, e.ConversionID, e.EventID, e.EventName, &e.Click, e.CustomerID, e.CustomerExternalID)
	return conversionTail(b, e.First, e.Metadata, e.Timestamp)
}

// AppendJSON implements domain.JSONAppender.
func (e *SaleTracked) AppendJSON(b []byte) []byte {
	b = conversionHead(b, e.ConversionID, e.EventID, e.EventName, &e.Click, e.CustomerID, e.CustomerExternalID)
	b = append(b, `,"amount_minor":`...)
	b = strconv.AppendInt(b, e.AmountMinor, 10)
	b = append(b, `,"currency":`...)
	b = jsonappend.String(b, e.Currency)
	return conversionTail(b, e.First, e.Metadata, e.Timestamp)
}
