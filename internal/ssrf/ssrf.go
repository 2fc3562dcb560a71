// Package ssrf keeps outgoing requests (webhook deliveries) away from the
// machine and its private networks: loopback, private, link-local,
// unspecified and similar addresses are refused, after DNS resolution and
// again on the connection actually dialled, unless an operator allows
// them (LINKD_WEBHOOK_ALLOWED_NETWORKS).
package ssrf

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"syscall"
	"time"
)

// ErrForbidden is a destination whose address may not be called.
var ErrForbidden = errors.New("ssrf: destination address is not allowed")

// Guard decides which addresses may be called.
type Guard struct {
	allowed  []netip.Prefix
	resolver *net.Resolver
}

// ParseNetworks reads a comma-separated list of CIDRs (or single
// addresses).
func ParseNetworks(s string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		if !strings.Contains(f, "/") {
			a, err := netip.ParseAddr(f)
			if err != nil {
				return nil, fmt.Errorf("network %q: %w", f, err)
			}
			out = append(out, netip.PrefixFrom(a, a.BitLen()))
			continue
		}
		p, err := netip.ParsePrefix(f)
		if err != nil {
			return nil, fmt.Errorf("network %q: %w", f, err)
		}
		out = append(out, p.Masked())
	}
	return out, nil
}

// New makes a guard that allows the given networks besides every public
// address. resolver nil is the system's.
func New(allowed []netip.Prefix, resolver *net.Resolver) *Guard {
	if resolver == nil {
		resolver = net.DefaultResolver
	}
	return &Guard{allowed: allowed, resolver: resolver}
}

// Forbidden reports whether a is refused.
func (g *Guard) Forbidden(a netip.Addr) bool {
	a = a.Unmap()
	for _, p := range g.allowed {
		if p.Contains(a) {
			return false
		}
	}
	return a.IsLoopback() || a.IsPrivate() || a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast() ||
		a.IsInterfaceLocalMulticast() || a.IsUnspecified() || a.IsMulticast() || special(a)
}

// special are ranges that are neither public nor covered above: carrier
// NAT, "this network", benchmarking, documentation, reserved, IPv6
// unique-local and NAT64 of private IPv4.
var specials = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),
	netip.MustParsePrefix("100.64.0.0/10"),
	netip.MustParsePrefix("192.0.0.0/24"),
	netip.MustParsePrefix("198.18.0.0/15"),
	netip.MustParsePrefix("240.0.0.0/4"),
	netip.MustParsePrefix("255.255.255.255/32"),
	netip.MustParsePrefix("fc00::/7"),
	netip.MustParsePrefix("64:ff9b:1::/48"),
}

func special(a netip.Addr) bool {
	for _, p := range specials {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// Resolution tells what a host name resolved to.
type Resolution int

const (
	Allowed    Resolution = iota // every address may be called
	Refused                      // some address is refused
	Unresolved                   // the name does not resolve (now)
)

// CheckHost resolves host (a name or an address literal) and says whether
// it may be called: Refused when any of its addresses is forbidden.
func (g *Guard) CheckHost(ctx context.Context, host string) (Resolution, error) {
	if a, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
		if g.Forbidden(a) {
			return Refused, nil
		}
		return Allowed, nil
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	addrs, err := g.resolver.LookupNetIP(ctx, "ip", host)
	if err != nil || len(addrs) == 0 {
		return Unresolved, err
	}
	for _, a := range addrs {
		if g.Forbidden(a) {
			return Refused, nil
		}
	}
	return Allowed, nil
}

// Control is a net.Dialer Control function that refuses a connection to
// a forbidden address: what is dialled is checked, whatever DNS answered
// before (a name that changed its answer between the check and the dial).
func (g *Guard) Control(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("%w: %s", ErrForbidden, address)
	}
	if g.Forbidden(ap.Addr()) {
		return fmt.Errorf("%w: %s", ErrForbidden, ap.Addr())
	}
	return nil
}

// Dialer is a dialer that only connects to allowed addresses.
func (g *Guard) Dialer(timeout time.Duration) *net.Dialer {
	return &net.Dialer{Timeout: timeout, KeepAlive: 30 * time.Second, Control: g.Control, Resolver: g.resolver}
}
