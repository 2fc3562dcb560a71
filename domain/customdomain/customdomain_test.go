package customdomain_test

import (
	"strings"
	"testing"

	"github.com/linkd/linkd/domain"
	"github.com/linkd/linkd/domain/customdomain"
	. "github.com/linkd/linkd/domain/domaintest"
)

func created() *customdomain.Created {
	return &customdomain.Created{DomainID: "d1", WorkspaceID: "w1", Domain: "go.example.com", Description: "links", CreatedBy: "alice", At: T0}
}

func given(t *testing.T, events ...domain.Event) *customdomain.Domain {
	t.Helper()
	d, err := customdomain.Load(Given(t, events...))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

var valid = customdomain.CheckResult{CNAMERecord: "go.example.com", ExpectedValue: "short.example", ActualValue: "short.example.", Status: "valid", DNSConfigured: true, CNAMEAdded: true, Valid: true}
var pending = customdomain.CheckResult{CNAMERecord: "go.example.com", ExpectedValue: "short.example", Status: "pending"}

func checked(r customdomain.CheckResult, n int) *customdomain.Checked {
	return &customdomain.Checked{DomainID: "d1", CNAMERecord: r.CNAMERecord, ExpectedValue: r.ExpectedValue, ActualValue: r.ActualValue,
		Status: r.Status, DNSConfigured: r.DNSConfigured, CNAMEAdded: r.CNAMEAdded, At: At(n)}
}

func TestCreate(t *testing.T) {
	d, err := customdomain.Create("d1", "w1", "go.example.com", "links", "alice", T0)
	if err != nil {
		t.Fatal(err)
	}
	Then(t, d, created())
	if d.IsVerified || d.DNSConfigured || d.CNAMEAdded || d.LastChecked != nil {
		t.Errorf("a new domain is verified: %+v", d)
	}
	_, err = customdomain.Create("d1", "w1", "", "", "alice", T0)
	ThenError(t, err, domain.KindInvalid, "Domain is required")
	_, err = customdomain.Create("d1", "w1", "go.example.com", strings.Repeat("d", customdomain.MaxDescriptionLength+1), "alice", T0)
	ThenError(t, err, domain.KindInvalid, "")
}

func TestUpdate(t *testing.T) {
	d := given(t, created())
	if err := d.Update(domain.Some("new"), At(1)); err != nil {
		t.Fatal(err)
	}
	Then(t, d, &customdomain.Updated{DomainID: "d1", Description: domain.Some("new"), At: At(1)})
	if d.Description != "new" || d.Name != "go.example.com" {
		t.Errorf("state: %+v", d)
	}
	d = given(t, created(), &customdomain.Deleted{DomainID: "d1", At: At(1)})
	ThenError(t, d.Update(domain.Some("x"), At(2)), domain.KindNotFound, "Domain not found")
}

func TestVerification(t *testing.T) {
	t.Run("a valid check verifies", func(t *testing.T) {
		d := given(t, created())
		if err := d.RecordCheck(valid, At(1)); err != nil {
			t.Fatal(err)
		}
		Then(t, d, checked(valid, 1), &customdomain.Verified{DomainID: "d1", Domain: "go.example.com", At: At(1)})
		if !d.IsVerified || !d.DNSConfigured || !d.CNAMEAdded || !d.LastChecked.Equal(At(1)) {
			t.Errorf("state: %+v", d)
		}
	})
	t.Run("a pending check records the check only", func(t *testing.T) {
		d := given(t, created())
		if err := d.RecordCheck(pending, At(1)); err != nil {
			t.Fatal(err)
		}
		Then(t, d, checked(pending, 1))
		if d.IsVerified || d.LastChecked == nil {
			t.Errorf("state: %+v", d)
		}
	})
	t.Run("verified stays verified", func(t *testing.T) {
		d := given(t, created(), checked(valid, 1), &customdomain.Verified{DomainID: "d1", Domain: "go.example.com", At: At(1)})
		if err := d.RecordCheck(pending, At(2)); err != nil {
			t.Fatal(err)
		}
		Then(t, d, checked(pending, 2))
		if !d.IsVerified || !d.DNSConfigured || !d.CNAMEAdded {
			t.Errorf("a failed later check unverified: %+v", d)
		}
		d.ClearPending()
		if err := d.RecordCheck(valid, At(3)); err != nil {
			t.Fatal(err)
		}
		Then(t, d, checked(valid, 3)) // no second DomainVerified
	})
	t.Run("deleted", func(t *testing.T) {
		d := given(t, created(), &customdomain.Deleted{DomainID: "d1", At: At(1)})
		ThenError(t, d.RecordCheck(valid, At(2)), domain.KindNotFound, "Domain not found")
	})
}

func TestDelete(t *testing.T) {
	d := given(t, created())
	if err := d.Delete(At(1)); err != nil {
		t.Fatal(err)
	}
	Then(t, d, &customdomain.Deleted{DomainID: "d1", WorkspaceID: "w1", Domain: "go.example.com", At: At(1)})
	ThenError(t, d.Delete(At(2)), domain.KindNotFound, "Domain not found")
}

func TestNormalizeName(t *testing.T) {
	for in, want := range map[string]string{
		"go.example.com": "go.example.com", " Go.Example.COM. ": "go.example.com", "xn--bcher-kva.example": "xn--bcher-kva.example",
		"a-b.c-d.io": "a-b.c-d.io", "x.y.z.example.co.uk": "x.y.z.example.co.uk",
	} {
		got, err := customdomain.NormalizeName(in)
		if err != nil || got != want {
			t.Errorf("NormalizeName(%q) = %q %v, want %q", in, got, err, want)
		}
	}
	_, err := customdomain.NormalizeName("  ")
	ThenError(t, err, domain.KindInvalid, "Domain is required")
	for _, in := range []string{"localhost", "example", "http://x.com", "x.com/a", "x.com:80", "-x.com", "x-.com", "x..com", ".x.com",
		"x_y.com", "1.2.3.4", "x.123", "bücher.example", strings.Repeat("a", 64) + ".com", strings.Repeat("a.", 127) + "com"} {
		_, err := customdomain.NormalizeName(in)
		ThenError(t, err, domain.KindInvalid, "Invalid domain name")
	}
}
