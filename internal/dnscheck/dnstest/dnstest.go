// Package dnstest runs an in-process DNS server for tests: it answers from a
// table of CNAME and address records that a test can change while it runs,
// the way a recursive resolver would answer for those names.
//
//	srv := dnstest.Start(t, map[string]string{"go.customer.example": "links.example.com"})
//	r := dnscheck.New(srv.Addr())
//	srv.Set("late.customer.example", "links.example.com") // add a record later
package dnstest

import (
	"context"
	"net"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// TTL of every record served.
const TTL = 60

// Server is a DNS server on 127.0.0.1, UDP and TCP on the same port.
type Server struct {
	addr    string
	udp     *dns.Server
	tcp     *dns.Server
	queries atomic.Int64

	mu       sync.RWMutex
	cnames   map[string]string       // fqdn -> fqdn
	addrs    map[string][]netip.Addr // fqdn -> addresses
	servfail map[string]bool
	drop     map[string]bool
}

// Start starts a server answering CNAME records from records (name ->
// target; names in any case, with or without trailing dot) and stops it
// when the test ends. Names not in the table answer NXDOMAIN.
func Start(t testing.TB, records map[string]string) *Server {
	t.Helper()
	s := &Server{
		cnames:   map[string]string{},
		addrs:    map[string][]netip.Addr{},
		servfail: map[string]bool{},
		drop:     map[string]bool{},
	}
	for name, target := range records {
		s.Set(name, target)
	}

	pc, ln, err := listen()
	if err != nil {
		t.Fatalf("dnstest: listen: %v", err)
	}
	s.addr = pc.LocalAddr().String()
	handler := dns.HandlerFunc(s.serve)
	s.udp = &dns.Server{PacketConn: pc, Handler: handler}
	s.tcp = &dns.Server{Listener: ln, Handler: handler}
	for _, srv := range []*dns.Server{s.udp, s.tcp} {
		started := make(chan struct{})
		srv.NotifyStartedFunc = func() { close(started) }
		go func() { _ = srv.ActivateAndServe() }()
		select {
		case <-started:
		case <-time.After(5 * time.Second):
			t.Fatal("dnstest: server did not start")
		}
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = s.udp.ShutdownContext(ctx)
		_ = s.tcp.ShutdownContext(ctx)
	})
	return s
}

// listen opens UDP and TCP on the same free port of 127.0.0.1.
func listen() (net.PacketConn, net.Listener, error) {
	var lastErr error
	for range 20 {
		pc, err := net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			return nil, nil, err
		}
		ln, err := net.Listen("tcp", pc.LocalAddr().String())
		if err == nil {
			return pc, ln, nil
		}
		lastErr = err
		pc.Close()
	}
	return nil, nil, lastErr
}

// Addr is the server's "127.0.0.1:port", for LINKD_DNS_SERVER.
func (s *Server) Addr() string { return s.addr }

// Queries counts the questions received so far.
func (s *Server) Queries() int { return int(s.queries.Load()) }

func fqdn(name string) string { return dns.Fqdn(strings.ToLower(strings.TrimSpace(name))) }

// Set makes name a CNAME of target, replacing what name had. An empty
// target removes name's CNAME.
func (s *Server) Set(name, target string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := fqdn(name)
	if target == "" {
		delete(s.cnames, n)
		return
	}
	s.cnames[n] = fqdn(target)
	delete(s.addrs, n) // a CNAME owns its name alone
}

// SetAddr gives name A and AAAA records (IPv4 and IPv6 addresses in any
// mix), replacing its CNAME; no addresses removes them.
func (s *Server) SetAddr(name string, addrs ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := fqdn(name)
	if len(addrs) == 0 {
		delete(s.addrs, n)
		return
	}
	list := make([]netip.Addr, 0, len(addrs))
	for _, a := range addrs {
		list = append(list, netip.MustParseAddr(a))
	}
	s.addrs[n] = list
	delete(s.cnames, n)
}

// ServFail makes questions about name answer SERVFAIL (or not).
func (s *Server) ServFail(name string, on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.servfail[fqdn(name)] = on
}

// Drop makes questions about name go unanswered (or not), so that clients
// time out.
func (s *Server) Drop(name string, on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.drop[fqdn(name)] = on
}

// Delete removes every record and failure setting of name.
func (s *Server) Delete(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := fqdn(name)
	delete(s.cnames, n)
	delete(s.addrs, n)
	delete(s.servfail, n)
	delete(s.drop, n)
}

// serve answers like a recursive resolver: a CNAME question gets the
// name's CNAME record only; other questions get the CNAME chain followed
// by the final name's records of that type. NXDOMAIN when the (final) name
// has no record at all.
func (s *Server) serve(w dns.ResponseWriter, req *dns.Msg) {
	s.queries.Add(1)
	if len(req.Question) != 1 {
		m := new(dns.Msg)
		m.SetRcode(req, dns.RcodeFormatError)
		_ = w.WriteMsg(m)
		return
	}
	q := req.Question[0]
	name := fqdn(q.Name)

	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.drop[name] {
		return
	}
	m := new(dns.Msg)
	m.SetReply(req)
	m.RecursionAvailable = true
	if s.servfail[name] {
		m.Rcode = dns.RcodeServerFailure
		_ = w.WriteMsg(m)
		return
	}

	cur := q.Name // answers keep the question's spelling for the owner
	for hops := 0; ; hops++ {
		target, isCNAME := s.cnames[fqdn(cur)]
		if !isCNAME {
			break
		}
		m.Answer = append(m.Answer, &dns.CNAME{
			Hdr:    dns.RR_Header{Name: cur, Rrtype: dns.TypeCNAME, Class: dns.ClassINET, Ttl: TTL},
			Target: target,
		})
		if q.Qtype == dns.TypeCNAME || hops >= 16 {
			_ = w.WriteMsg(m)
			return
		}
		cur = target
	}
	addrs, exists := s.addrs[fqdn(cur)]
	if !exists {
		m.Rcode = dns.RcodeNameError
	}
	for _, a := range addrs {
		hdr := dns.RR_Header{Name: cur, Class: dns.ClassINET, Ttl: TTL}
		switch {
		case a.Is4() && (q.Qtype == dns.TypeA || q.Qtype == dns.TypeANY):
			hdr.Rrtype = dns.TypeA
			m.Answer = append(m.Answer, &dns.A{Hdr: hdr, A: a.AsSlice()})
		case a.Is6() && (q.Qtype == dns.TypeAAAA || q.Qtype == dns.TypeANY):
			hdr.Rrtype = dns.TypeAAAA
			m.Answer = append(m.Answer, &dns.AAAA{Hdr: hdr, AAAA: a.AsSlice()})
		}
	}
	_ = w.WriteMsg(m)
}
