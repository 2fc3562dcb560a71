package radar

import "github.com/linkd/linkd/domain"

// DecodePlain implements domain.PlainDecoder for a page view: the event
// Radar's projections decode most (nine hits in ten). What linkd writes (a
// flat object of Hit's keys, every value a string without escapes) is read
// directly, in a fraction of encoding/json's time; anything else is left
// to it (false, e untouched). FuzzPageviewDecode holds the two to the same
// result.
func (e *PageviewRecorded) DecodePlain(b []byte) bool {
	var h Hit
	if !h.decodePlain(b) {
		return false
	}
	e.Hit = h
	return true
}

// decodePlain reads b when it is a flat object of Hit's own keys (as
// written) with plain string values (domain.ScanPlainObject), and reports
// whether it did. On false, h may hold some of b's values.
func (h *Hit) decodePlain(b []byte) bool {
	return domain.ScanPlainObject(b, h.set)
}

// set assigns the field written under key (exactly as Hit's tags spell
// it); raw is the quoted value. False for any other key, or a time that
// does not parse.
func (h *Hit) set(key []byte, val []byte, raw []byte) bool {
	var f *string
	switch string(key) {
	case "project_id":
		f = &h.ProjectID
	case "workspace_id":
		f = &h.WorkspaceID
	case "visitor_id":
		f = &h.VisitorID
	case "url":
		f = &h.URL
	case "hostname":
		f = &h.Hostname
	case "pathname":
		f = &h.Pathname
	case "referrer":
		f = &h.Referrer
	case "source":
		f = &h.Source
	case "country":
		f = &h.Country
	case "browser":
		f = &h.Browser
	case "os":
		f = &h.OS
	case "device":
		f = &h.Device
	case "click_id":
		f = &h.ClickID
	case "link_id":
		f = &h.LinkID
	case "at":
		return h.At.UnmarshalJSON(raw) == nil
	default:
		return false
	}
	*f = string(val)
	return true
}
