package radar

import (
	"encoding/json"
	"fmt"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/linkd/linkd/domain"
	"github.com/linkd/linkd/domain/conversion"
)

// Limits of a collect body, in the spirit of Plausible's.
const (
	MaxBodyBytes     = 8 << 10
	MaxURLBytes      = 2000
	MaxNameBytes     = 120
	MaxProps         = 30
	MaxPropKeyBytes  = 300
	MaxPropValBytes  = 2000
	MaxVisitorBytes  = 128
	MaxStringBytes   = 255
	MaxTrackingBytes = 100
)

// Types of a collect body.
const (
	TypePageview = "pageview"
	TypeEvent    = "event"
	TypeIdentify = "identify"
)

// Payload is a valid collect body.
type Payload struct {
	Type       string
	URL        string
	Hostname   string
	Pathname   string
	Query      url.Values
	Referrer   string
	VisitorID  string
	Name       string
	Props      map[string]string
	Email      string
	TrackingID string
	// Key is the publishable key sent in the body (sendBeacon can set no
	// header).
	Key string
}

// ParsePayload validates a collect body and names every bad field at once
// (conversion.PayloadError, "Invalid payload" with details).
func ParsePayload(body []byte) (Payload, error) {
	var p Payload
	if !domain.ValidJSONText(body) {
		return p, invalid(conversion.InvalidTextIssue())
	}
	top, err := domain.DecodeObject(body)
	if err != nil { // trailing data included
		return p, invalid(conversion.Issue{Path: []string{}, Message: "Expected a JSON object"})
	}
	if top == nil {
		return p, invalid(conversion.Issue{Path: []string{}, Message: "Expected object, received null"})
	}
	var issues []conversion.Issue
	bad := func(path, msg string) { issues = append(issues, conversion.Issue{Path: []string{path}, Message: msg}) }
	str := func(name string, max int, required bool) string {
		raw, ok := top[name]
		if !ok || string(raw) == "null" {
			if required {
				bad(name, "Required")
			}
			return ""
		}
		s, ok := domain.PlainJSONString(raw)
		if !ok {
			if err := json.Unmarshal(raw, &s); err != nil {
				bad(name, "Expected string")
				return ""
			}
		}
		switch {
		case len(s) > max:
			bad(name, fmt.Sprintf("String must contain at most %d byte(s)", max))
		case domain.CheckText(name, s, max, false) != nil:
			bad(name, "Invalid characters")
		case required && strings.TrimSpace(s) == "":
			bad(name, "Required")
		}
		return s
	}
	p.Type = str("type", 16, true)
	switch p.Type {
	case TypePageview, TypeEvent, TypeIdentify, "":
	default:
		bad("type", `Expected "pageview", "event" or "identify"`)
	}
	hit := p.Type == TypePageview || p.Type == TypeEvent
	p.URL = str("url", MaxURLBytes, hit)
	if p.URL != "" {
		u, err := url.Parse(p.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" {
			bad("url", "Invalid url")
		} else {
			p.Hostname = strings.TrimPrefix(strings.ToLower(u.Hostname()), "www.")
			p.Pathname = u.EscapedPath()
			if p.Pathname == "" {
				p.Pathname = "/"
			}
			p.Query = u.Query()
		}
	}
	p.Referrer = str("referrer", MaxURLBytes, false)
	p.VisitorID = str("visitorId", MaxVisitorBytes, false)
	nameMax := MaxNameBytes
	if p.Type == TypeIdentify {
		nameMax = MaxStringBytes
	}
	p.Name = str("name", nameMax, p.Type == TypeEvent)
	p.Email = str("email", MaxStringBytes, false)
	p.TrackingID = str("trackingId", MaxTrackingBytes, false)
	p.Key = str("key", MaxStringBytes, false)
	if p.Type == TypeIdentify && p.Name == "" && p.Email == "" && len(issues) == 0 {
		bad("email", "identify needs a name or an email")
	}
	if raw, ok := top["props"]; ok && string(raw) != "null" {
		props, msg := parseProps(raw)
		if msg != "" {
			bad("props", msg)
		}
		p.Props = props
	}
	if len(issues) > 0 {
		sort.SliceStable(issues, func(i, j int) bool { return issues[i].Path[0] < issues[j].Path[0] })
		return Payload{}, invalid(issues...)
	}
	return p, nil
}

func invalid(issues ...conversion.Issue) error {
	return &conversion.PayloadError{Message: conversion.MsgInvalidPayload, Details: issues}
}

// parseProps reads a flat object of strings, numbers and booleans; the
// values are kept as strings.
func parseProps(raw json.RawMessage) (map[string]string, string) {
	m, err := domain.DecodeObject(raw)
	if err != nil || m == nil {
		return nil, "Expected object"
	}
	if len(m) > MaxProps {
		return nil, fmt.Sprintf("At most %d properties", MaxProps)
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		if k == "" || len(k) > MaxPropKeyBytes || domain.CheckText("props", k, MaxPropKeyBytes, false) != nil {
			return nil, "Invalid property name"
		}
		var val string
		switch {
		case len(v) > 0 && v[0] == '"':
			if err := json.Unmarshal(v, &val); err != nil || domain.CheckText("props", val, MaxPropValBytes, false) != nil {
				return nil, "Invalid property value at " + strconv.Quote(k)
			}
		case string(v) == "true" || string(v) == "false":
			val = string(v)
		default:
			var n json.Number
			if err := json.Unmarshal(v, &n); err != nil {
				return nil, "Property values must be strings, numbers or booleans (" + strconv.Quote(k) + ")"
			}
			val = n.String()
		}
		if len(val) > MaxPropValBytes {
			return nil, "Property value too long at " + strconv.Quote(k)
		}
		out[k] = val
	}
	return out, ""
}

// Source names where a visit came from: utm_source (or ref, source) of the
// page URL, else the referrer's host unless it is the page's own host; ""
// for direct.
func Source(p Payload) string {
	for _, k := range []string{"utm_source", "ref", "source"} {
		if v := strings.TrimSpace(p.Query.Get(k)); v != "" {
			if len(v) > MaxNameBytes {
				v = v[:MaxNameBytes]
			}
			if utf8.ValidString(v) {
				return v
			}
		}
	}
	if p.Referrer == "" {
		return ""
	}
	u, err := url.Parse(p.Referrer)
	if err != nil || u.Hostname() == "" {
		return ""
	}
	host := strings.TrimPrefix(strings.ToLower(u.Hostname()), "www.")
	if host == p.Hostname {
		return ""
	}
	return host
}
