package dnscheck

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/linkd/linkd/internal/dnscheck/dnstest"
)

const expected = "Links.Example.COM:8080" // as LINKD_DEFAULT_DOMAIN might be written

// fixture serves the same zone to every test.
func fixture(t *testing.T) *dnstest.Server {
	t.Helper()
	srv := dnstest.Start(t, map[string]string{
		"ok.customer.test":         "links.example.com",
		"Upper.Customer.Test.":     "LINKS.EXAMPLE.COM.",
		"elsewhere.customer.test":  "other.example.net",
		"chain.customer.test":      "mid.cdn.test",
		"mid.cdn.test":             "links.example.com",
		"chain-away.customer.test": "mid2.cdn.test",
		"mid2.cdn.test":            "other.example.net",
		"to-alias.customer.test":   "alias.example.com",
		"alias.example.com":        "lb.cloud.test",
		"loop1.customer.test":      "loop2.customer.test",
		"loop2.customer.test":      "loop1.customer.test",
		"dangling.customer.test":   "nowhere.test",
		"broken-mid.customer.test": "broken.cdn.test",
	})
	srv.SetAddr("links.example.com", "192.0.2.1", "2001:db8::1")
	srv.SetAddr("other.example.net", "198.51.100.7")
	srv.SetAddr("lb.cloud.test", "203.0.113.9")
	srv.SetAddr("a-only.customer.test", "192.0.2.55")
	srv.ServFail("broken.customer.test", true)
	srv.ServFail("broken.cdn.test", true)
	srv.Drop("slow.customer.test", true)
	return srv
}

// newWithResolvConf reads the system's servers from path, on port.
func newWithResolvConf(path, port string, opts ...Option) *Resolver {
	r := New("", opts...)
	r.resolvConf, r.port = path, port
	return r
}

// newFallback takes the net.Resolver path, every query sent to server.
func newFallback(server string, opts ...Option) *Resolver {
	r := New("", opts...)
	r.resolvConf = filepath.Join(os.TempDir(), "dnscheck-no-such-resolv.conf")
	r.fallback = &net.Resolver{
		PreferGo: true,
		Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, network, server)
		},
	}
	return r
}

// resolvConfFor writes a resolv.conf naming srv's address, returns its path
// and srv's port.
func resolvConfFor(t *testing.T, srv *dnstest.Server, extra ...string) (string, string) {
	t.Helper()
	host, port, err := net.SplitHostPort(srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	lines := append([]string{"search corp.invalid", "options ndots:5"}, extra...)
	lines = append(lines, "nameserver "+host)
	path := filepath.Join(t.TempDir(), "resolv.conf")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return path, port
}

type want struct {
	actual                       string
	status                       string
	configured, cnameAdded, fail bool
}

func TestCheck(t *testing.T) {
	t.Parallel()
	srv := fixture(t)
	conf, port := resolvConfFor(t, srv)
	paths := map[string]*Resolver{
		"server":      New(srv.Addr(), WithTimeout(time.Second)),
		"resolv.conf": newWithResolvConf(conf, port, WithTimeout(time.Second)),
		"fallback":    newFallback(srv.Addr(), WithTimeout(time.Second)),
	}
	cases := []struct {
		name     string
		domain   string
		expected string
		direct   want  // LINKD_DNS_SERVER or resolv.conf
		fallback *want // nil: same as direct
		skip     bool  // fallback result depends on answer order
	}{
		{name: "valid", domain: "ok.customer.test",
			direct: want{actual: "links.example.com", status: StatusValid, configured: true, cnameAdded: true}},
		{name: "valid, case and trailing dots ignored", domain: "UPPER.customer.test.",
			direct: want{actual: "links.example.com", status: StatusValid, configured: true, cnameAdded: true}},
		{name: "points elsewhere", domain: "elsewhere.customer.test",
			direct: want{actual: "other.example.net", status: StatusInvalid, configured: true, cnameAdded: true}},
		{name: "NXDOMAIN", domain: "missing.customer.test",
			direct: want{status: StatusPending}},
		{name: "address but no CNAME", domain: "a-only.customer.test",
			direct: want{status: StatusPending, configured: true}},
		{name: "chain reaching the expected host", domain: "chain.customer.test",
			direct: want{actual: "links.example.com", status: StatusValid, configured: true, cnameAdded: true}},
		{name: "chain going elsewhere shows the first hop", domain: "chain-away.customer.test",
			direct:   want{actual: "mid2.cdn.test", status: StatusInvalid, configured: true, cnameAdded: true},
			fallback: &want{actual: "other.example.net", status: StatusInvalid, configured: true, cnameAdded: true}},
		{name: "expected host is itself an alias", domain: "to-alias.customer.test", expected: "alias.example.com",
			direct: want{actual: "alias.example.com", status: StatusValid, configured: true, cnameAdded: true},
			// LookupCNAME returns alias.example.com or lb.cloud.test,
			// whichever answer comes first.
			skip: true},
		{name: "CNAME loop", domain: "loop1.customer.test",
			direct: want{actual: "loop2.customer.test", status: StatusInvalid, configured: true, cnameAdded: true}},
		{name: "dangling CNAME", domain: "dangling.customer.test",
			direct: want{actual: "nowhere.test", status: StatusInvalid, configured: true, cnameAdded: true}},
		{name: "server failure", domain: "broken.customer.test",
			direct: want{status: StatusPending, fail: true}},
		{name: "server failure in the chain", domain: "broken-mid.customer.test",
			// Whether the chain would have reached the expected host is
			// unknown: pending.
			direct: want{actual: "broken.cdn.test", status: StatusPending, configured: true, cnameAdded: true, fail: true}},
		{name: "no answer: timeout", domain: "slow.customer.test",
			direct: want{status: StatusPending, fail: true}},
		{name: "expected host given with port and dot", domain: "ok.customer.test", expected: "LINKS.example.com.:443",
			direct: want{actual: "links.example.com", status: StatusValid, configured: true, cnameAdded: true}},
	}
	for _, tc := range cases {
		for path, r := range paths {
			t.Run(tc.name+"/"+path, func(t *testing.T) {
				t.Parallel()
				w := tc.direct
				if path == "fallback" {
					if tc.skip {
						t.Skip("result depends on the order of concurrent answers")
					}
					if tc.fallback != nil {
						w = *tc.fallback
					}
				}
				exp := tc.expected
				if exp == "" {
					exp = expected
				}
				before := time.Now().UTC()
				got := r.Check(context.Background(), tc.domain, exp)

				if got.CNAMERecord != CanonicalHost(tc.domain) {
					t.Errorf("CNAMERecord = %q, want %q", got.CNAMERecord, CanonicalHost(tc.domain))
				}
				if got.ExpectedValue != CanonicalHost(exp) {
					t.Errorf("ExpectedValue = %q, want %q", got.ExpectedValue, CanonicalHost(exp))
				}
				if got.ActualValue != w.actual || got.Status != w.status ||
					got.DNSConfigured != w.configured || got.CNAMEAdded != w.cnameAdded {
					t.Errorf("got actual=%q status=%s configured=%v cname=%v (err %v)\nwant actual=%q status=%s configured=%v cname=%v",
						got.ActualValue, got.Status, got.DNSConfigured, got.CNAMEAdded, got.Err,
						w.actual, w.status, w.configured, w.cnameAdded)
				}
				if got.Valid != (w.status == StatusValid) {
					t.Errorf("Valid = %v with status %s", got.Valid, got.Status)
				}
				if (got.Err != nil) != w.fail {
					t.Errorf("Err = %v, want failure %v", got.Err, w.fail)
				}
				if got.CheckedAt.Before(before.Add(-time.Second)) || got.CheckedAt.Location() != time.UTC {
					t.Errorf("CheckedAt = %v, want about %v UTC", got.CheckedAt, before)
				}
			})
		}
	}
}

// A test can add the CNAME after the first check, as a user would.
func TestCheckRecordAddedLater(t *testing.T) {
	t.Parallel()
	srv := dnstest.Start(t, nil)
	r := New(srv.Addr())
	ctx := context.Background()

	steps := []struct {
		name   string
		change func()
		status string
	}{
		{name: "nothing yet", change: func() {}, status: StatusPending},
		{name: "pointed elsewhere", change: func() { srv.Set("late.customer.test", "wrong.example.com") }, status: StatusInvalid},
		{name: "fixed", change: func() { srv.Set("late.customer.test", "links.example.com") }, status: StatusValid},
		{name: "removed", change: func() { srv.Delete("late.customer.test") }, status: StatusPending},
	}
	for _, s := range steps {
		s.change()
		if got := r.Check(ctx, "late.customer.test", "links.example.com"); got.Status != s.status {
			t.Fatalf("%s: status = %s (%+v), want %s", s.name, got.Status, got, s.status)
		}
	}
	if srv.Queries() < len(steps) {
		t.Errorf("server saw %d queries, want at least %d", srv.Queries(), len(steps))
	}
}

func TestCheckTimeouts(t *testing.T) {
	t.Parallel()
	srv := fixture(t)
	cases := []struct {
		name   string
		r      *Resolver
		ctx    func() (context.Context, context.CancelFunc)
		within time.Duration
	}{
		{name: "resolver budget", r: New(srv.Addr(), WithTimeout(300*time.Millisecond)),
			ctx: func() (context.Context, context.CancelFunc) { return context.WithCancel(context.Background()) }, within: 2 * time.Second},
		{name: "shorter context deadline wins", r: New(srv.Addr()),
			ctx: func() (context.Context, context.CancelFunc) {
				return context.WithTimeout(context.Background(), 200*time.Millisecond)
			}, within: 2 * time.Second},
		{name: "fallback path honours the budget", r: newFallback(srv.Addr(), WithTimeout(300*time.Millisecond)),
			ctx: func() (context.Context, context.CancelFunc) { return context.WithCancel(context.Background()) }, within: 2 * time.Second},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := tc.ctx()
			defer cancel()
			start := time.Now()
			got := tc.r.Check(ctx, "slow.customer.test", "links.example.com")
			if took := time.Since(start); took > tc.within {
				t.Errorf("Check took %v, want under %v", took, tc.within)
			}
			if got.Status != StatusPending || got.Err == nil {
				t.Errorf("status = %s, err = %v; want pending with an error", got.Status, got.Err)
			}
		})
	}
}

func TestUnreachableServer(t *testing.T) {
	t.Parallel()
	// Port 9 on loopback: nothing listens, UDP gets "connection refused".
	r := New("127.0.0.1:9", WithTimeout(time.Second))
	got := r.Check(context.Background(), "ok.customer.test", "links.example.com")
	if got.Status != StatusPending || got.Err == nil || got.Valid {
		t.Errorf("got %+v, want pending with an error", got)
	}
}

func TestServerAddr(t *testing.T) {
	t.Parallel()
	cases := []struct{ name, in, want string }{
		{"empty is the system resolver", "", ""},
		{"host and port", "10.0.0.53:5353", "10.0.0.53:5353"},
		{"bare IPv4 gets port 53", "1.1.1.1", "1.1.1.1:53"},
		{"bare IPv6 gets port 53", "2606:4700::1111", "[2606:4700::1111]:53"},
		{"bracketed IPv6 with port", "[::1]:53", "[::1]:53"},
		{"name with port", "dns.example.net:53", "dns.example.net:53"},
		{"spaces trimmed", " 9.9.9.9 ", "9.9.9.9:53"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := New(tc.in).Server(); got != tc.want {
				t.Errorf("New(%q).Server() = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestCanonicalHost(t *testing.T) {
	t.Parallel()
	cases := []struct{ name, in, want string }{
		{"plain", "links.example.com", "links.example.com"},
		{"port", "links.example.com:8080", "links.example.com"},
		{"case and trailing dot", "Links.Example.COM.", "links.example.com"},
		{"dot and port", "links.example.com.:443", "links.example.com"},
		{"IPv4 with port", "127.0.0.1:8080", "127.0.0.1"},
		{"IPv6 with port", "[::1]:8080", "::1"},
		{"empty", "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := CanonicalHost(tc.in); got != tc.want {
				t.Errorf("CanonicalHost(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func BenchmarkCheck(b *testing.B) {
	srv := dnstest.Start(b, map[string]string{"ok.customer.test": "links.example.com"})
	r := New(srv.Addr())
	ctx := context.Background()
	for b.Loop() {
		if got := r.Check(ctx, "ok.customer.test", "links.example.com"); !got.Valid {
			b.Fatal(got)
		}
	}
}

// The system's servers come from resolv.conf; a dead one is skipped.
func TestResolvConfServers(t *testing.T) {
	t.Parallel()
	srv := dnstest.Start(t, map[string]string{"ok.customer.test": "links.example.com"})
	cases := []struct {
		name   string
		extra  []string
		status string
	}{
		{name: "one server", status: StatusValid},
		// Nothing listens on 127.0.0.2 at that port: refused, next server.
		{name: "dead server first", extra: []string{"nameserver 127.0.0.2"}, status: StatusValid},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path, port := resolvConfFor(t, srv, tc.extra...)
			got := newWithResolvConf(path, port, WithTimeout(3*time.Second)).Check(context.Background(), "ok.customer.test", "links.example.com")
			if got.Status != tc.status || got.Err != nil {
				t.Errorf("got %+v, want %s", got, tc.status)
			}
		})
	}
}

func TestCheckEmptyDomain(t *testing.T) {
	t.Parallel()
	got := New("127.0.0.1:9").Check(context.Background(), " ", "links.example.com")
	if got.Status != StatusPending || got.Err == nil || got.DNSConfigured {
		t.Errorf("got %+v, want pending with an error", got)
	}
}
