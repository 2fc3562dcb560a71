package dnscheck

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"unicode"

	"golang.org/x/net/idna"
)

// Limits of a domain name (RFC 1035 section 2.3.4, in presentation form
// without the trailing dot).
const (
	MaxLabelLength  = 63
	MaxDomainLength = 253
)

// NormalizeDomain checks that s is a host name fit for a custom domain and
// returns it in canonical form: lower case, without a trailing dot.
// Surrounding white space is trimmed.
//
// Accepted: at least two labels of ASCII letters, digits and inner hyphens,
// each 1-63 characters, at most 253 in all, a top-level label that is not
// all digits. Internationalised names must be given in their punycode form
// ("xn--bcher-kva.example"); a Unicode name is refused with an error that
// suggests that form. Refused with a specific message: schemes, paths,
// ports, user info, white space, wildcards, IP addresses, empty labels.
func NormalizeDomain(s string) (string, error) {
	orig := s
	s = strings.TrimSpace(s)
	if s == "" {
		return "", errors.New("domain is required")
	}
	switch {
	case strings.Contains(s, "://"):
		return "", fmt.Errorf("domain %q must be a host name only, without a scheme such as https://", orig)
	case strings.ContainsAny(s, "/?#"):
		return "", fmt.Errorf("domain %q must be a host name only, without a path, query or fragment", orig)
	case strings.Contains(s, "@"):
		return "", fmt.Errorf("domain %q must be a host name only, without user information", orig)
	case strings.IndexFunc(s, unicode.IsSpace) >= 0:
		return "", fmt.Errorf("domain %q must not contain spaces", orig)
	}
	if _, err := netip.ParseAddr(strings.Trim(s, "[]")); err == nil {
		return "", fmt.Errorf("domain %q is an IP address, not a domain name", orig)
	}
	if strings.Contains(s, ":") {
		if _, _, err := net.SplitHostPort(s); err == nil {
			return "", fmt.Errorf("domain %q must not include a port", orig)
		}
		return "", fmt.Errorf("domain %q contains an invalid character ':'", orig)
	}
	if strings.IndexFunc(s, func(r rune) bool { return r > unicode.MaxASCII }) >= 0 {
		if ascii, err := idna.Lookup.ToASCII(s); err == nil && ascii != s {
			return "", fmt.Errorf("domain %q is not ASCII: give its punycode form %q", orig, strings.TrimSuffix(ascii, "."))
		}
		return "", fmt.Errorf("domain %q is not ASCII and has no valid punycode form", orig)
	}

	s = strings.ToLower(strings.TrimSuffix(s, "."))
	if len(s) > MaxDomainLength {
		return "", fmt.Errorf("domain is %d characters long, at most %d allowed", len(s), MaxDomainLength)
	}
	labels := strings.Split(s, ".")
	if len(labels) < 2 {
		return "", fmt.Errorf("domain %q must have at least two labels, such as links.example.com", orig)
	}
	for _, l := range labels {
		if err := checkLabel(l); err != nil {
			return "", fmt.Errorf("domain %q: %w", orig, err)
		}
	}
	if strings.Trim(labels[len(labels)-1], "0123456789") == "" {
		return "", fmt.Errorf("domain %q: the top-level label %q must not be all digits", orig, labels[len(labels)-1])
	}
	return s, nil
}

func checkLabel(l string) error {
	switch {
	case l == "":
		return errors.New("empty label (two dots in a row, or a leading dot)")
	case len(l) > MaxLabelLength:
		return fmt.Errorf("label %q is %d characters long, at most %d allowed", l, len(l), MaxLabelLength)
	case l[0] == '-' || l[len(l)-1] == '-':
		return fmt.Errorf("label %q must not start or end with a hyphen", l)
	}
	for i := 0; i < len(l); i++ {
		c := l[i]
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-') {
			return fmt.Errorf("label %q contains %q: only letters, digits and hyphens are allowed", l, c)
		}
	}
	if len(l) >= 4 && l[2:4] == "--" {
		if !strings.HasPrefix(l, "xn--") {
			return fmt.Errorf("label %q has hyphens in the third and fourth positions, reserved for punycode (xn--)", l)
		}
		if _, err := idna.Lookup.ToUnicode(l); err != nil {
			return fmt.Errorf("label %q is not valid punycode", l)
		}
	}
	return nil
}

// CanonicalHost returns the host of a "host" or "host:port" (also
// "[v6]:port") in lower case without a trailing dot: the form CNAME targets
// are compared in.
func CanonicalHost(hostport string) string {
	h := strings.TrimSpace(hostport)
	if host, _, err := net.SplitHostPort(h); err == nil {
		h = host
	}
	h = strings.TrimSuffix(strings.Trim(h, "[]"), ".")
	return strings.ToLower(h)
}
