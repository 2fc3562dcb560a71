package dnstest

import (
	"testing"
	"time"

	"github.com/miekg/dns"
)

func ask(t *testing.T, addr, network, name string, qtype uint16) *dns.Msg {
	t.Helper()
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), qtype)
	c := &dns.Client{Net: network, Timeout: time.Second}
	resp, _, err := c.Exchange(m, addr)
	if err != nil {
		t.Fatalf("%s %s over %s: %v", dns.TypeToString[qtype], name, network, err)
	}
	return resp
}

func answers(m *dns.Msg) []string {
	var out []string
	for _, rr := range m.Answer {
		switch rr := rr.(type) {
		case *dns.CNAME:
			out = append(out, rr.Hdr.Name+" CNAME "+rr.Target)
		case *dns.A:
			out = append(out, rr.Hdr.Name+" A "+rr.A.String())
		case *dns.AAAA:
			out = append(out, rr.Hdr.Name+" AAAA "+rr.AAAA.String())
		}
	}
	return out
}

func TestServer(t *testing.T) {
	t.Parallel()
	srv := Start(t, map[string]string{
		"Go.Customer.Test": "mid.test.",
		"mid.test":         "links.example.com",
	})
	srv.SetAddr("links.example.com", "192.0.2.1", "2001:db8::1")
	srv.SetAddr("plain.test", "192.0.2.9")

	cases := []struct {
		name    string
		network string
		qname   string
		qtype   uint16
		rcode   int
		want    []string
	}{
		{name: "CNAME question gets one record", network: "udp", qname: "go.customer.test", qtype: dns.TypeCNAME,
			want: []string{"go.customer.test. CNAME mid.test."}},
		{name: "A question gets the chain", network: "udp", qname: "go.customer.test", qtype: dns.TypeA,
			want: []string{"go.customer.test. CNAME mid.test.", "mid.test. CNAME links.example.com.", "links.example.com. A 192.0.2.1"}},
		{name: "AAAA over TCP", network: "tcp", qname: "mid.test", qtype: dns.TypeAAAA,
			want: []string{"mid.test. CNAME links.example.com.", "links.example.com. AAAA 2001:db8::1"}},
		{name: "question case kept in the owner name", network: "udp", qname: "GO.customer.test", qtype: dns.TypeCNAME,
			want: []string{"GO.customer.test. CNAME mid.test."}},
		{name: "no CNAME on an address name", network: "udp", qname: "plain.test", qtype: dns.TypeCNAME},
		{name: "unknown name", network: "udp", qname: "nope.test", qtype: dns.TypeA, rcode: dns.RcodeNameError},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			resp := ask(t, srv.Addr(), tc.network, tc.qname, tc.qtype)
			if resp.Rcode != tc.rcode {
				t.Errorf("rcode = %s, want %s", dns.RcodeToString[resp.Rcode], dns.RcodeToString[tc.rcode])
			}
			got := answers(resp)
			if len(got) != len(tc.want) {
				t.Fatalf("answers = %q, want %q", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Errorf("answer %d = %q, want %q", i, got[i], tc.want[i])
				}
			}
		})
	}
}

func TestServerChanges(t *testing.T) {
	t.Parallel()
	srv := Start(t, nil)
	name := "later.customer.test"

	steps := []struct {
		name   string
		change func()
		rcode  int
		want   int // CNAME records in the answer
	}{
		{name: "absent", change: func() {}, rcode: dns.RcodeNameError},
		{name: "set", change: func() { srv.Set(name, "links.example.com") }, want: 1},
		{name: "servfail", change: func() { srv.ServFail(name, true) }, rcode: dns.RcodeServerFailure},
		{name: "servfail off", change: func() { srv.ServFail(name, false) }, want: 1},
		{name: "replaced by an address", change: func() { srv.SetAddr(name, "192.0.2.3") }},
		{name: "deleted", change: func() { srv.Delete(name) }, rcode: dns.RcodeNameError},
	}
	for _, s := range steps {
		s.change()
		resp := ask(t, srv.Addr(), "udp", name, dns.TypeCNAME)
		if resp.Rcode != s.rcode || len(resp.Answer) != s.want {
			t.Fatalf("%s: rcode %s, %d answers; want %s, %d", s.name,
				dns.RcodeToString[resp.Rcode], len(resp.Answer), dns.RcodeToString[s.rcode], s.want)
		}
	}

	srv.Drop(name, true)
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), dns.TypeA)
	c := &dns.Client{Timeout: 200 * time.Millisecond}
	if _, _, err := c.Exchange(m, srv.Addr()); err == nil {
		t.Errorf("dropped name was answered")
	}
	if got := srv.Queries(); got != len(steps)+1 {
		t.Errorf("Queries() = %d, want %d", got, len(steps)+1)
	}
}

// The server stops when its test ends.
func TestServerCleanup(t *testing.T) {
	t.Parallel()
	var addr string
	t.Run("inner", func(t *testing.T) {
		srv := Start(t, map[string]string{"a.test": "b.test"})
		addr = srv.Addr()
		ask(t, addr, "udp", "a.test", dns.TypeCNAME)
	})
	m := new(dns.Msg)
	m.SetQuestion("a.test.", dns.TypeCNAME)
	for _, network := range []string{"udp", "tcp"} {
		c := &dns.Client{Net: network, Timeout: 300 * time.Millisecond}
		if _, _, err := c.Exchange(m, addr); err == nil {
			t.Errorf("%s: server still answers after its test ended", network)
		}
	}
}
