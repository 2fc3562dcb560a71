package apikey

import (
	"errors"
	"net"
	"net/netip"
	"net/url"
	"strings"
)

// MsgHostnameNotAllowed is the error of a publishable key used from a page
// whose hostname is not on the key's list (or from no page at all).
const MsgHostnameNotAllowed = "Hostname not in allowed list"

// A publishable key is accepted only from pages on its allowed_hostnames.
// Each entry is one of:
//
//   - an exact host name ("shop.example.com", "localhost") or IP address
//     ("127.0.0.1", "::1"), which matches that host only;
//   - "*.example.com", which matches every subdomain of example.com at any
//     depth ("a.example.com", "a.b.example.com") but not example.com itself:
//     list "example.com" as well to allow it. The part after "*." needs at
//     least two labels, so "*.com" is refused.
//
// Scheme and port are ignored on both sides; case and one trailing dot too.
// Host names are compared as ASCII: internationalised names are written in
// their punycode form ("xn--bcher-kva.example"), which is what browsers send.
//
// The page's hostname is taken from Origin, else from Referer. An Origin that
// is present decides alone: "null" (sandboxed frames, file: pages) or a
// malformed one is refused without looking at Referer. With neither header
// the request is refused.

// HostAllowed reports whether a request with these Origin and Referer
// header values may use a publishable key with the allowed list, and
// returns the request's normalised hostname ("" when it has none).
func HostAllowed(allowed []string, origin, referer string) (host string, ok bool) {
	host, ok = RequestHost(origin, referer)
	if !ok {
		return "", false
	}
	return host, HostMatches(allowed, host)
}

// RequestHost returns the normalised hostname of the page a request comes
// from: the host of Origin when that header is present, else of Referer.
// ok is false when the deciding header is absent, "null", malformed, or
// names no valid host.
func RequestHost(origin, referer string) (string, bool) {
	raw := strings.TrimSpace(origin)
	if raw == "" {
		raw = strings.TrimSpace(referer)
	}
	if raw == "" || raw == "null" {
		return "", false
	}
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return "", false
	}
	h, err := normalizeHost(u.Hostname())
	if err != nil {
		return "", false
	}
	return h, true
}

// HostMatches reports whether a normalised request host matches an entry
// of allowed. Entries are normalised as they are compared, so a list
// stored before normalisation existed still works; an invalid entry
// matches nothing.
func HostMatches(allowed []string, host string) bool {
	if host == "" {
		return false
	}
	_, ipErr := netip.ParseAddr(host)
	isIP := ipErr == nil
	for _, entry := range allowed {
		e, err := NormalizeAllowedHostname(entry)
		if err != nil {
			continue
		}
		if base, wild := strings.CutPrefix(e, "*."); wild {
			// host has no empty label, so whatever precedes ".base" is a
			// whole subdomain, never a look-alike such as "evil-base".
			if !isIP && strings.HasSuffix(host, "."+base) {
				return true
			}
			continue
		}
		if host == e {
			return true
		}
	}
	return false
}

// Errors of NormalizeAllowedHostname.
var (
	ErrHostnameEmpty    = errors.New("allowed hostname is empty")
	ErrHostnameInvalid  = errors.New("allowed hostname is not a valid host name or IP address")
	ErrHostnameUnicode  = errors.New("allowed hostname must be ASCII: write an internationalised name in its punycode (xn--) form")
	ErrHostnameWildcard = errors.New("a wildcard allowed hostname is *. followed by a domain of at least two labels, such as *.example.com")
)

// NormalizeAllowedHostname checks one entry of a key's allowed_hostnames
// and returns its normal form: lower case, without trailing dot, port or
// scheme ("https://Shop.Example.com:443/" gives "shop.example.com"), IPv6
// without brackets in its canonical form.
func NormalizeAllowedHostname(entry string) (string, error) {
	e := strings.ToLower(strings.TrimSpace(entry))
	if e == "" {
		return "", ErrHostnameEmpty
	}
	if base, wild := strings.CutPrefix(e, "*."); wild {
		h, err := normalizeHost(base)
		if err != nil {
			return "", err
		}
		if _, err := netip.ParseAddr(h); err == nil || !strings.Contains(h, ".") {
			return "", ErrHostnameWildcard
		}
		return "*." + h, nil
	}
	if strings.Contains(e, "*") {
		return "", ErrHostnameWildcard
	}
	if strings.Contains(e, "://") {
		u, err := url.Parse(e)
		if err != nil || u.Host == "" {
			return "", ErrHostnameInvalid
		}
		e = u.Hostname()
	} else if h, _, err := net.SplitHostPort(e); err == nil {
		e = h
	}
	return normalizeHost(e)
}

// normalizeHost checks a bare host (no port) and returns it in normal
// form.
func normalizeHost(h string) (string, error) {
	h = strings.ToLower(h)
	if strings.HasPrefix(h, "[") && strings.HasSuffix(h, "]") {
		h = h[1 : len(h)-1]
	}
	if a, err := netip.ParseAddr(h); err == nil {
		if a.Zone() != "" {
			return "", ErrHostnameInvalid
		}
		return a.Unmap().String(), nil
	}
	h = strings.TrimSuffix(h, ".")
	if h == "" || len(h) > 253 {
		return "", ErrHostnameInvalid
	}
	for _, label := range strings.Split(h, ".") {
		if label == "" || len(label) > 63 {
			return "", ErrHostnameInvalid
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			switch {
			case c >= 0x80:
				return "", ErrHostnameUnicode
			case c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '-', c == '_':
			default:
				return "", ErrHostnameInvalid
			}
		}
	}
	return h, nil
}
