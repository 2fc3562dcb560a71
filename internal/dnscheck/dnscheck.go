// Package dnscheck verifies custom domains: a domain is verified when its
// CNAME record points at the service's own host.
//
// Check asks DNS servers directly with github.com/miekg/dns: a CNAME query
// for the domain, then one for each target in turn (at most MaxChain hops)
// until the expected host is reached. This tells precisely what the
// domain's own record says; tells NXDOMAIN from "the name exists but has no
// CNAME" from a server failure; verifies a domain whose CNAME points at
// the expected host even when that host is itself an alias (of a load
// balancer, say); and is not affected by search domains or the hosts file.
//
// The servers asked are the one given to New (LINKD_DNS_SERVER) or, without
// one, the system's: the nameserver lines of /etc/resolv.conf, read at each
// Check. Where that file is missing or lists no server (Windows, say), Check
// falls back to net.DefaultResolver.LookupCNAME, which is less precise: the
// pure-Go resolver sends A, AAAA and CNAME questions at once and returns,
// for a chain, the first hop or the end of the chain depending on which
// answer arrives first (measured with Go 1.26). The fallback therefore
// repeats LookupCNAME from each name it returns until the chain ends, and
// is valid when the expected host is met on the way; an expected host that
// is itself an alias may be skipped over.
//
// UDP queries fall back to TCP when the answer is truncated; a UDP query
// that times out is sent once more while the time budget lasts; when
// several servers are configured, a failing one is followed by the next.
package dnscheck

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/miekg/dns"
)

// Status values of Result.Status.
const (
	StatusValid   = "valid"
	StatusPending = "pending"
	StatusInvalid = "invalid"
)

const (
	// DefaultTimeout bounds one Check, all its queries together; a shorter
	// deadline of the caller's context wins.
	DefaultTimeout = 5 * time.Second
	// QueryTimeout bounds one query attempt.
	QueryTimeout = 2 * time.Second
	// MaxChain is how many CNAME hops the direct path follows.
	MaxChain = 8
)

// Result is the outcome of one verification.
type Result struct {
	// CNAMERecord is the domain checked (lower case, no trailing dot).
	CNAMERecord string
	// ExpectedValue is the host the CNAME must point at (lower case, no
	// port, no trailing dot).
	ExpectedValue string
	// ActualValue is the CNAME target the DNS answered, lower case without
	// trailing dot: the expected host when it was found in the chain, else
	// the domain's own CNAME target (or, on the net.Resolver fallback, the
	// end of the chain); "" when the domain has no CNAME.
	ActualValue string
	// Status is StatusValid, StatusPending (no CNAME yet, unknown name,
	// timeout or server failure) or StatusInvalid (a CNAME that points
	// elsewhere).
	Status string
	// DNSConfigured: the name resolves to something (a CNAME or an address).
	DNSConfigured bool
	// CNAMEAdded: the name has a CNAME record.
	CNAMEAdded bool
	// Valid: ActualValue equals ExpectedValue.
	Valid bool
	// CheckedAt is when the check started, UTC.
	CheckedAt time.Time
	// Err is the lookup failure behind a pending status (timeout, server
	// failure, unreachable server), for logs; nil when DNS gave a definite
	// answer, NXDOMAIN included.
	Err error
}

// Resolver checks domains against one DNS server or the system's servers.
// It is safe for concurrent use.
type Resolver struct {
	server     string        // host:port given to New; "" for the system's
	resolvConf string        // where the system's servers are listed
	port       string        // port of the system's servers (tests change it)
	fallback   *net.Resolver // when the system lists no server
	timeout    time.Duration
}

// Option configures a Resolver.
type Option func(*Resolver)

// WithTimeout sets the time budget of one Check (default DefaultTimeout).
func WithTimeout(d time.Duration) Option {
	return func(r *Resolver) {
		if d > 0 {
			r.timeout = d
		}
	}
}

// New returns a Resolver asking server ("host:port"; a bare host or IP gets
// port 53), or the system's servers when server is empty.
func New(server string, opts ...Option) *Resolver {
	r := &Resolver{
		server:     serverAddr(server),
		resolvConf: "/etc/resolv.conf",
		port:       "53",
		fallback:   net.DefaultResolver,
		timeout:    DefaultTimeout,
	}
	for _, o := range opts {
		o(r)
	}
	return r
}

// Server returns the DNS server given to New, "" for the system's.
func (r *Resolver) Server() string { return r.server }

func serverAddr(s string) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return ""
	}
	if _, _, err := net.SplitHostPort(s); err == nil {
		return s
	}
	return net.JoinHostPort(strings.Trim(s, "[]"), "53")
}

// servers lists the servers to ask, nil when the fallback must be used.
func (r *Resolver) servers() []string {
	if r.server != "" {
		return []string{r.server}
	}
	conf, err := dns.ClientConfigFromFile(r.resolvConf)
	if err != nil || len(conf.Servers) == 0 {
		return nil
	}
	list := make([]string, len(conf.Servers))
	for i, s := range conf.Servers {
		list[i] = net.JoinHostPort(s, r.port)
	}
	return list
}

// Check looks up domain's CNAME and compares it with expectedHost (a host
// or host:port: port, case and trailing dot are ignored). It never fails:
// problems show as StatusPending with Err set.
func (r *Resolver) Check(ctx context.Context, domain, expectedHost string) Result {
	res := Result{
		CNAMERecord:   CanonicalHost(domain),
		ExpectedValue: CanonicalHost(expectedHost),
		Status:        StatusPending,
		CheckedAt:     time.Now().UTC(),
	}
	if res.CNAMERecord == "" {
		res.Err = errors.New("dnscheck: empty domain")
		return res
	}
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	if servers := r.servers(); len(servers) > 0 {
		r.checkDirect(ctx, servers, &res)
	} else {
		r.checkFallback(ctx, &res)
	}
	res.Valid = res.ActualValue != "" && res.ActualValue == res.ExpectedValue
	switch {
	case res.Valid:
		res.Status = StatusValid
	case res.CNAMEAdded && res.Err == nil:
		res.Status = StatusInvalid
	default:
		res.Status = StatusPending
	}
	return res
}

// checkDirect follows the CNAME chain hop by hop with CNAME queries.
func (r *Resolver) checkDirect(ctx context.Context, servers []string, res *Result) {
	seen := map[string]bool{res.CNAMERecord: true}
	name := res.CNAMERecord
	for hop := 0; hop < MaxChain; hop++ {
		target, exists, err := r.queryCNAME(ctx, servers, name)
		if err != nil {
			res.Err = err // pending: a later hop might have been the expected host
			return
		}
		if target == "" {
			if hop == 0 {
				res.DNSConfigured = exists && r.hasAddress(ctx, servers, name)
			}
			return
		}
		if hop == 0 {
			res.CNAMEAdded, res.DNSConfigured = true, true
			res.ActualValue = target
		}
		if target == res.ExpectedValue {
			res.ActualValue = target
			return
		}
		if seen[target] {
			return // a loop: invalid
		}
		seen[target] = true
		name = target
	}
}

// checkFallback follows the chain with net.Resolver.LookupCNAME, which
// returns some later name of the chain, or the name itself at its end.
func (r *Resolver) checkFallback(ctx context.Context, res *Result) {
	seen := map[string]bool{res.CNAMERecord: true}
	name := res.CNAMERecord
	for hop := 0; hop < MaxChain; hop++ {
		cname, err := r.fallback.LookupCNAME(ctx, name+".")
		if err != nil {
			var dnsErr *net.DNSError
			if errors.As(err, &dnsErr) && dnsErr.IsNotFound {
				return // end of the chain (or no such domain at hop 0)
			}
			res.Err = err
			return
		}
		if hop == 0 {
			res.DNSConfigured = true
		}
		cname = CanonicalHost(cname)
		if cname == "" || cname == name {
			return // the name itself: end of the chain
		}
		res.CNAMEAdded = true
		if seen[cname] {
			return // a loop: invalid
		}
		res.ActualValue = cname
		if cname == res.ExpectedValue {
			return
		}
		seen[cname] = true
		name = cname
	}
}

// queryCNAME asks for name's CNAME record. target is "" when there is none;
// exists reports whether the name exists at all (not NXDOMAIN).
func (r *Resolver) queryCNAME(ctx context.Context, servers []string, name string) (target string, exists bool, err error) {
	resp, err := r.query(ctx, servers, name, dns.TypeCNAME)
	if err != nil {
		return "", false, err
	}
	for _, rr := range resp.Answer {
		if c, ok := rr.(*dns.CNAME); ok && strings.EqualFold(c.Hdr.Name, dns.Fqdn(name)) {
			return CanonicalHost(c.Target), true, nil
		}
	}
	return "", resp.Rcode == dns.RcodeSuccess, nil
}

// hasAddress reports whether name has an A or AAAA record.
func (r *Resolver) hasAddress(ctx context.Context, servers []string, name string) bool {
	for _, t := range []uint16{dns.TypeA, dns.TypeAAAA} {
		resp, err := r.query(ctx, servers, name, t)
		if err != nil {
			continue
		}
		for _, rr := range resp.Answer {
			switch rr.(type) {
			case *dns.A, *dns.AAAA, *dns.CNAME:
				return true
			}
		}
	}
	return false
}

// query asks the servers in turn until one answers NOERROR or NXDOMAIN;
// other response codes and network failures are errors.
func (r *Resolver) query(ctx context.Context, servers []string, name string, qtype uint16) (*dns.Msg, error) {
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), qtype) // sets RD: the servers are recursive resolvers
	m.SetEdns0(1232, false)

	var errs []error
	for _, server := range servers {
		resp, err := r.ask(ctx, server, m)
		if err == nil && resp.Rcode != dns.RcodeSuccess && resp.Rcode != dns.RcodeNameError {
			err = fmt.Errorf("server answered %s", dns.RcodeToString[resp.Rcode])
		}
		if err == nil {
			return resp, nil
		}
		errs = append(errs, fmt.Errorf("dnscheck: %s %s at %s: %w", dns.TypeToString[qtype], name, server, err))
		if ctx.Err() != nil {
			break
		}
	}
	return nil, errors.Join(errs...)
}

// ask sends m to one server: UDP, once more on a timeout, TCP when the
// answer is truncated.
func (r *Resolver) ask(ctx context.Context, server string, m *dns.Msg) (*dns.Msg, error) {
	var (
		resp *dns.Msg
		err  error
	)
	for attempt := 0; attempt < 2; attempt++ {
		resp, err = exchange(ctx, server, m, "udp")
		if err == nil || ctx.Err() != nil || !isTimeout(err) {
			break
		}
	}
	if err == nil && resp.Truncated {
		resp, err = exchange(ctx, server, m, "tcp")
	}
	return resp, err
}

func exchange(ctx context.Context, server string, m *dns.Msg, network string) (*dns.Msg, error) {
	c := &dns.Client{Net: network, Timeout: QueryTimeout, UDPSize: 1232}
	resp, _, err := c.ExchangeContext(ctx, m, server)
	return resp, err
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
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
