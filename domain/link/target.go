package link

import (
	"net/url"
	"strings"
)

// Platforms a visitor can be on, for choosing a per-platform deep link.
// The enrichment of a request names one of them (internal/enrich).
const (
	PlatformIOS     = "ios"
	PlatformAndroid = "android"
	PlatformWindows = "windows"
	PlatformMacOS   = "macos"
	PlatformOther   = "other"
)

// Target is where the link sends a visitor on platform: the deep link for
// that platform when one is set (blank counts as unset), else the original
// URL; with the link's UTM values added to an http(s) target.
func (a *Attributes) Target(platform string) string {
	var t string
	switch platform {
	case PlatformIOS:
		t = a.IOSLink
	case PlatformAndroid:
		t = a.AndroidLink
	case PlatformWindows:
		t = a.WindowsLink
	case PlatformMacOS:
		t = a.MacOSLink
	}
	if strings.TrimSpace(t) == "" {
		t = a.OriginalURL
	}
	var utm [][2]string
	for _, kv := range [...][2]string{
		{"utm_source", a.UTMSource}, {"utm_medium", a.UTMMedium}, {"utm_campaign", a.UTMCampaign},
		{"utm_term", a.UTMTerm}, {"utm_content", a.UTMContent}, {"utm_name", a.UTMName},
	} {
		if kv[1] != "" {
			utm = append(utm, kv)
		}
	}
	if len(utm) == 0 {
		return t
	}
	return AddParams(t, utm)
}

// ExcludesCountry reports whether visitors from country (ISO 3166-1
// alpha-2, any case) are refused. An unknown country ("") never is.
func (a *Attributes) ExcludesCountry(country string) bool {
	if country == "" {
		return false
	}
	for _, c := range a.ExcludedCountries {
		if strings.EqualFold(c.Code, country) {
			return true
		}
	}
	return false
}

// AddParams appends query parameters to an http(s) URL, replacing any of
// the same names and leaving the rest of its query as it was. Other
// schemes (mailto:, tel:, app deep links) come back exactly as given.
func AddParams(target string, params [][2]string) string {
	lower := strings.ToLower(target)
	if !strings.HasPrefix(lower, "http://") && !strings.HasPrefix(lower, "https://") {
		return target
	}
	q := splitQuery(target)
	var kept []string
	for _, pair := range q.pairs {
		name := pairName(pair)
		drop := false
		for _, p := range params {
			if name == p[0] {
				drop = true
				break
			}
		}
		if !drop {
			kept = append(kept, pair)
		}
	}
	for _, p := range params {
		kept = append(kept, url.QueryEscape(p[0])+"="+url.QueryEscape(p[1]))
	}
	return q.with(kept)
}

// query is a URL cut around its query: what precedes it, its name=value
// pairs as written (empty ones left out), and its fragment with its '#'.
type query struct {
	base  string
	pairs []string
	frag  string
}

func splitQuery(target string) query {
	var q query
	if i := strings.IndexByte(target, '#'); i >= 0 {
		target, q.frag = target[:i], target[i:]
	}
	base, raw, _ := strings.Cut(target, "?")
	q.base = base
	if raw != "" {
		for _, pair := range strings.Split(raw, "&") {
			if pair != "" {
				q.pairs = append(q.pairs, pair)
			}
		}
	}
	return q
}

// with is the URL with pairs as its query.
func (q query) with(pairs []string) string {
	return q.base + "?" + strings.Join(pairs, "&") + q.frag
}

// pairName is a query pair's name, unescaped when it can be.
func pairName(pair string) string {
	name, _, _ := strings.Cut(pair, "=")
	if n, err := url.QueryUnescape(name); err == nil {
		return n
	}
	return name
}
