package enrich

import (
	"fmt"
	"net/http"
	"net/netip"
	"strings"
)

// ParseTrustedProxies parses a comma-separated list of CIDRs and bare IP
// addresses (the LINKD_TRUSTED_PROXIES setting), such as
// "10.0.0.0/8, 192.168.1.10, fd00::/8". Empty items are ignored; an empty
// string gives no prefixes. A bare address becomes a single-address prefix,
// and host bits of a CIDR are cleared.
func ParseTrustedProxies(s string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for item := range strings.SplitSeq(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		if strings.Contains(item, "/") {
			p, err := netip.ParsePrefix(item)
			if err != nil {
				return nil, fmt.Errorf("enrich: trusted proxy %q: %w", item, err)
			}
			if p.Addr().Is4In6() && p.Bits() >= 96 {
				p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
			}
			out = append(out, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(item)
		if err != nil {
			return nil, fmt.Errorf("enrich: trusted proxy %q: %w", item, err)
		}
		if a.Zone() != "" {
			return nil, fmt.Errorf("enrich: trusted proxy %q: zones are not allowed", item)
		}
		a = a.Unmap()
		out = append(out, netip.PrefixFrom(a, a.BitLen()))
	}
	return out, nil
}

// ClientIP returns the address of the client that made r.
//
// It is the peer address (RemoteAddr), unless that peer is inside one of the
// trusted prefixes (a reverse proxy or load balancer of ours). Then
// X-Forwarded-For is read from the right, the entry appended by the nearest
// proxy first: trusted addresses are skipped and the first untrusted one is
// the client. Entries to its left were written by the client or by proxies
// we do not know, and are ignored: they can be forged.
//
// When the walk meets a malformed entry, or every entry is trusted, the last
// address reached (the trusted hop nearest to the client) is returned. The
// result has no zone and IPv4-mapped IPv6 addresses are unmapped. The zero
// Addr is returned when RemoteAddr cannot be parsed.
func ClientIP(r *http.Request, trusted []netip.Prefix) netip.Addr {
	remote, ok := parseHostAddr(r.RemoteAddr)
	if !ok {
		return netip.Addr{}
	}
	if !isTrusted(remote, trusted) {
		return remote
	}
	xff := r.Header["X-Forwarded-For"]
	last := remote
	// Several X-Forwarded-For header lines form one list, in order.
	for h := len(xff) - 1; h >= 0; h-- {
		list := xff[h]
		for list != "" {
			var item string
			if i := strings.LastIndexByte(list, ','); i >= 0 {
				item, list = list[i+1:], list[:i]
			} else {
				item, list = list, ""
			}
			item = strings.TrimSpace(item)
			if item == "" {
				continue
			}
			a, ok := parseHostAddr(item)
			if !ok {
				return last
			}
			if !isTrusted(a, trusted) {
				return a
			}
			last = a
		}
	}
	return last
}

// parseHostAddr parses "ip", "ip:port", "[ipv6]:port" or "[ipv6]".
func parseHostAddr(s string) (netip.Addr, bool) {
	if s == "" {
		return netip.Addr{}, false
	}
	var a netip.Addr
	var err error
	switch {
	case s[0] == '[':
		end := strings.IndexByte(s, ']')
		if end < 0 {
			return netip.Addr{}, false
		}
		rest := s[end+1:]
		if rest != "" && (rest[0] != ':' || !isPort(rest[1:])) {
			return netip.Addr{}, false
		}
		a, err = netip.ParseAddr(s[1:end])
	case strings.Count(s, ":") == 1: // IPv4 with a port
		host, port, _ := strings.Cut(s, ":")
		if !isPort(port) {
			return netip.Addr{}, false
		}
		a, err = netip.ParseAddr(host)
	default:
		a, err = netip.ParseAddr(s)
	}
	if err != nil {
		return netip.Addr{}, false
	}
	return a.WithZone("").Unmap(), true
}

func isPort(s string) bool {
	if s == "" || len(s) > 5 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func isTrusted(a netip.Addr, trusted []netip.Prefix) bool {
	for _, p := range trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}
