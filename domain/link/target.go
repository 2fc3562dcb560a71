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
	if !hasPrefixFold(target, "http://") && !hasPrefixFold(target, "https://") {
		return target
	}
	// One pass and one allocation where nothing needs escaping: every
	// redirect of a link with UTM values or conversion tracking comes
	// here, twice with both.
	rest, frag := target, ""
	if i := strings.IndexByte(target, '#'); i >= 0 {
		rest, frag = target[:i], target[i:]
	}
	base, raw, _ := strings.Cut(rest, "?")
	var b strings.Builder
	n := len(target) + 1
	for _, p := range params {
		n += len(p[0]) + len(p[1]) + 2
	}
	b.Grow(n)
	b.WriteString(base)
	sep := byte('?')
	for raw != "" {
		var pair string
		pair, raw, _ = strings.Cut(raw, "&")
		if pair == "" || replaced(pairName(pair), params) {
			continue
		}
		b.WriteByte(sep)
		b.WriteString(pair)
		sep = '&'
	}
	for _, p := range params {
		b.WriteByte(sep)
		b.WriteString(url.QueryEscape(p[0]))
		b.WriteByte('=')
		b.WriteString(url.QueryEscape(p[1]))
		sep = '&'
	}
	if sep == '?' {
		b.WriteByte('?') // nothing kept and nothing added: as before, a bare '?'
	}
	b.WriteString(frag)
	return b.String()
}

// SplitParam splits target around the value of the query parameter name,
// as AddParams would add it: for every value v, AddParams(target,
// [][2]string{{name, v}}) is pre + url.QueryEscape(v) + post. ok is false
// for a target AddParams leaves as it is (not http(s)). A link followed
// many times splits its target once, and each redirect adds its tracking
// id with one concatenation.
func SplitParam(target, name string) (pre, post string, ok bool) {
	if !hasPrefixFold(target, "http://") && !hasPrefixFold(target, "https://") {
		return "", "", false
	}
	if i := strings.IndexByte(target, '#'); i >= 0 {
		post = target[i:]
	}
	full := AddParams(target, [][2]string{{name, ""}}) // ends in name + "=" + post
	return full[:len(full)-len(post)], post, true
}

// replaced reports whether params sets the query parameter name.
func replaced(name string, params [][2]string) bool {
	for _, p := range params {
		if name == p[0] {
			return true
		}
	}
	return false
}

// hasPrefixFold is strings.HasPrefix(strings.ToLower(s), prefix) for a
// lower-case ASCII prefix without 'i' or 'k' (which other letters lower
// to), without copying s.
func hasPrefixFold(s, prefix string) bool {
	if len(s) < len(prefix) {
		return false
	}
	for i := 0; i < len(prefix); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != prefix[i] {
			return false
		}
	}
	return true
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
