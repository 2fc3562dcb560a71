package dnscheck

import (
	"strings"
	"testing"
)

func TestNormalizeDomain(t *testing.T) {
	t.Parallel()
	label63 := strings.Repeat("a", 63)
	// 4 labels of 63 + 3 dots = 255 > 253; 61+63+63+63+3 = 253 exactly.
	long253 := strings.Repeat("b", 61) + "." + label63 + "." + label63 + "." + label63
	cases := []struct {
		name    string
		in      string
		want    string
		wantErr string // substring of the error; "" means no error
	}{
		{name: "simple", in: "links.example.com", want: "links.example.com"},
		{name: "upper case lowered", in: "Go.Customer.COM", want: "go.customer.com"},
		{name: "trailing dot dropped", in: "go.customer.com.", want: "go.customer.com"},
		{name: "surrounding spaces trimmed", in: "  go.customer.com\n", want: "go.customer.com"},
		{name: "two labels", in: "example.io", want: "example.io"},
		{name: "digits and hyphens", in: "a-1.b2-c.example", want: "a-1.b2-c.example"},
		{name: "punycode accepted", in: "xn--bcher-kva.example", want: "xn--bcher-kva.example"},
		{name: "punycode TLD", in: "shop.xn--p1ai", want: "shop.xn--p1ai"},
		{name: "63 character label", in: label63 + ".com", want: label63 + ".com"},
		{name: "253 characters", in: long253, want: long253},

		{name: "empty", in: "", wantErr: "domain is required"},
		{name: "blank", in: "   ", wantErr: "domain is required"},
		{name: "https scheme", in: "https://go.customer.com", wantErr: "without a scheme"},
		{name: "path", in: "go.customer.com/abc", wantErr: "without a path"},
		{name: "query", in: "go.customer.com?x=1", wantErr: "without a path, query"},
		{name: "port", in: "go.customer.com:8080", wantErr: "must not include a port"},
		{name: "stray colon", in: "go:customer:com", wantErr: "invalid character ':'"},
		{name: "user info", in: "me@go.customer.com", wantErr: "without user information"},
		{name: "inner space", in: "go customer.com", wantErr: "must not contain spaces"},
		{name: "inner tab", in: "go.\tcustomer.com", wantErr: "must not contain spaces"},
		{name: "single label", in: "localhost", wantErr: "at least two labels"},
		{name: "empty label", in: "go..customer.com", wantErr: "empty label"},
		{name: "leading dot", in: ".customer.com", wantErr: "empty label"},
		{name: "only dots", in: "..", wantErr: "empty label"},
		{name: "two trailing dots", in: "customer.com..", wantErr: "empty label"},
		{name: "label too long", in: label63 + "a.com", wantErr: "64 characters long, at most 63"},
		{name: "name too long", in: "c" + long253, wantErr: "254 characters long, at most 253"},
		{name: "leading hyphen", in: "-go.customer.com", wantErr: "must not start or end with a hyphen"},
		{name: "trailing hyphen", in: "go-.customer.com", wantErr: "must not start or end with a hyphen"},
		{name: "underscore", in: "go_links.customer.com", wantErr: `contains '_'`},
		{name: "wildcard", in: "*.customer.com", wantErr: `contains '*'`},
		{name: "IPv4 address", in: "192.0.2.1", wantErr: "is an IP address"},
		{name: "IPv6 address", in: "[2001:db8::1]", wantErr: "is an IP address"},
		{name: "numeric TLD", in: "foo.123", wantErr: "must not be all digits"},
		{name: "unicode name suggests punycode", in: "bücher.example", wantErr: `punycode form "xn--bcher-kva.example"`},
		{name: "reserved hyphens", in: "ab--cd.example", wantErr: "reserved for punycode"},
		{name: "broken punycode", in: "xn--a.example", wantErr: "not valid punycode"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := NormalizeDomain(tc.in)
			if tc.wantErr == "" {
				if err != nil || got != tc.want {
					t.Fatalf("NormalizeDomain(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
				}
				return
			}
			if err == nil {
				t.Fatalf("NormalizeDomain(%q) = %q, want an error containing %q", tc.in, got, tc.wantErr)
			}
			if !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("NormalizeDomain(%q) error %q, want it to contain %q", tc.in, err, tc.wantErr)
			}
		})
	}
}
