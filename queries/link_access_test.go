package queries

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/linkd/linkd/domain/link"
)

type fakeLinks struct {
	domains map[string]string // host -> domain id
	links   map[string]*Link  // domainID + "/" + code
}

func (f fakeLinks) VerifiedDomainID(_ context.Context, host string) (string, bool, error) {
	id, ok := f.domains[host]
	return id, ok, nil
}

func (f fakeLinks) LinkByCode(_ context.Context, domainID, code string) (*Link, error) {
	return f.links[domainID+"/"+code], nil
}

type fakeClicks map[string]int64

func (f fakeClicks) Clicks(_ context.Context, id string) (int64, error) { return f[id], nil }

// fakeThrottle allows two wrong attempts per client and link.
type fakeThrottle map[string]int

func (f fakeThrottle) Try(_ context.Context, client, linkID string, _ time.Time) bool {
	if f[client+"|"+linkID] >= 2 {
		return false
	}
	f[client+"|"+linkID]++
	return true
}
func (f fakeThrottle) Undo(_ context.Context, client, linkID string, _ time.Time) {
	f[client+"|"+linkID]--
}
func (f fakeThrottle) Window() time.Duration { return 90 * time.Second }

// rot is a "cipher" that stores "enc:" + the password.
type rot struct{}

func (rot) Decrypt(s string) (string, error) {
	if len(s) < 4 || s[:4] != "enc:" {
		return "", errors.New("not encrypted")
	}
	return s[4:], nil
}

func ptr[T any](v T) *T { return &v }

func TestLinkAccessDecides(t *testing.T) {
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	mk := func(id string, a link.Attributes) *Link {
		if a.OriginalURL == "" {
			a.OriginalURL = "https://target.example/p"
		}
		return &Link{ID: id, Code: id, Attributes: a}
	}
	links := fakeLinks{
		domains: map[string]string{"go.brand.example": "d1"},
		links: map[string]*Link{
			"/plain":     mk("plain", link.Attributes{UTMSource: "news"}),
			"/deep":      mk("deep", link.Attributes{IOSLink: "myapp://open", AndroidLink: "https://play.example/x"}),
			"/past":      mk("past", link.Attributes{ExpirationDate: ptr(now)}),
			"/future":    mk("future", link.Attributes{ExpirationDate: ptr(now.Add(time.Second))}),
			"/limit":     mk("limit", link.Attributes{ExpirationClickCount: ptr(int64(3))}),
			"/limitpw":   mk("limitpw", link.Attributes{ExpirationClickCount: ptr(int64(3)), PasswordEnc: "enc:s3cret"}),
			"/used":      mk("used", link.Attributes{ExpirationClickCount: ptr(int64(2))}),
			"/excluded":  mk("excluded", link.Attributes{ExcludedCountries: []link.ExcludedCountry{{Code: "DE"}}}),
			"/exclpw":    mk("exclpw", link.Attributes{ExcludedCountries: []link.ExcludedCountry{{Code: "DE"}}, PasswordEnc: "enc:s3cret"}),
			"/pw":        mk("pw", link.Attributes{PasswordEnc: "enc:s3cret"}),
			"/pastpw":    mk("pastpw", link.Attributes{PasswordEnc: "enc:s3cret", ExpirationDate: ptr(now.Add(-time.Hour))}),
			"d1/branded": mk("branded", link.Attributes{}),
		},
	}
	clicks := fakeClicks{"limit": 3, "limitpw": 3, "used": 1}
	links.links["/used"].Clicks = 2 // the read model already knows
	h := LinkAccessHandler{
		ReadModel: links, Clicks: clicks, Throttle: fakeThrottle{}, Cipher: rot{},
		DefaultHost: "short.example",
	}
	pw := func(s string) *string { return &s }
	cases := []struct {
		name   string
		q      LinkAccess
		want   Outcome
		target string
	}{
		{"unknown code", LinkAccess{Code: "nope", Counted: true}, NotFound, ""},
		{"granted with UTM", LinkAccess{Code: "plain", Counted: true}, Granted, "https://target.example/p?utm_source=news"},
		{"default host with a port", LinkAccess{Host: "Short.Example:8080", Code: "plain", Counted: true}, Granted, "https://target.example/p?utm_source=news"},
		{"unknown host serves the default domain", LinkAccess{Host: "10.0.0.1:80", Code: "plain", Counted: true}, Granted, "https://target.example/p?utm_source=news"},
		{"custom domain", LinkAccess{Host: "GO.brand.example.", Code: "branded", Counted: true}, Granted, "https://target.example/p"},
		{"custom domain's code not on the default", LinkAccess{Code: "branded", Counted: true}, NotFound, ""},
		{"default domain's code not on a custom one", LinkAccess{Host: "go.brand.example", Code: "plain", Counted: true}, NotFound, ""},
		{"ios deep link", LinkAccess{Code: "deep", Counted: true, Platform: link.PlatformIOS}, Granted, "myapp://open"},
		{"android deep link", LinkAccess{Code: "deep", Counted: true, Platform: link.PlatformAndroid}, Granted, "https://play.example/x"},
		{"desktop gets the original", LinkAccess{Code: "deep", Counted: true, Platform: link.PlatformWindows}, Granted, "https://target.example/p"},
		{"expired at its date exactly", LinkAccess{Code: "past", Counted: true}, Expired, ""},
		{"a second before its date", LinkAccess{Code: "future", Counted: true}, Granted, "https://target.example/p"},
		{"counted access leaves the limit to the click", LinkAccess{Code: "limit", Counted: true}, Granted, "https://target.example/p"},
		{"uncounted access asks the exact count", LinkAccess{Code: "limit", Counted: false}, Expired, ""},
		{"password link asks the exact count", LinkAccess{Code: "limitpw", Counted: true, Password: pw("s3cret")}, Expired, ""},
		{"read model already used up", LinkAccess{Code: "used", Counted: false}, Expired, ""},
		{"excluded country on the short URL", LinkAccess{Code: "excluded", Counted: true, Country: "de"}, Excluded, ""},
		{"other country", LinkAccess{Code: "excluded", Counted: true, Country: "FR"}, Granted, "https://target.example/p"},
		{"unknown country", LinkAccess{Code: "excluded", Counted: true}, Granted, "https://target.example/p"},
		{"the public read ignores excluded countries", LinkAccess{Code: "excluded", Channel: PublicRead, Counted: true, Country: "DE"}, Granted, "https://target.example/p"},
		{"excluded before the password", LinkAccess{Code: "exclpw", Counted: true, Country: "DE"}, Excluded, ""},
		{"expired before the password", LinkAccess{Code: "pastpw", Counted: true}, Expired, ""},
		{"password required", LinkAccess{Code: "pw", Counted: true}, PasswordRequired, ""},
		{"right password", LinkAccess{Code: "pw", Counted: true, Password: pw("s3cret"), Client: "a"}, Granted, "https://target.example/p"},
		{"wrong password", LinkAccess{Code: "pw", Counted: true, Password: pw("guess"), Client: "b"}, PasswordWrong, ""},
		{"empty password is wrong", LinkAccess{Code: "pw", Counted: true, Password: pw(""), Client: "b"}, PasswordWrong, ""},
		{"then throttled, even the right one", LinkAccess{Code: "pw", Counted: true, Password: pw("s3cret"), Client: "b"}, PasswordThrottled, ""},
		{"another client is not", LinkAccess{Code: "pw", Counted: true, Password: pw("s3cret"), Client: "c"}, Granted, "https://target.example/p"},
	}
	for _, c := range cases {
		c.q.At = now
		a, err := h.Handle(context.Background(), c.q)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if a.Outcome != c.want || a.Target != c.target {
			t.Errorf("%s: outcome %d target %q, want %d %q", c.name, a.Outcome, a.Target, c.want, c.target)
		}
		if (a.Link == nil) != (c.want == NotFound) {
			t.Errorf("%s: link %v with outcome %d", c.name, a.Link, a.Outcome)
		}
		if a.Outcome == PasswordThrottled && a.RetryAfter != 90*time.Second {
			t.Errorf("%s: RetryAfter %v", c.name, a.RetryAfter)
		}
	}
}

func TestAccessWithTracking(t *testing.T) {
	cases := map[string]string{
		"https://a.example/p?x=1#f":      "https://a.example/p?x=1&svc_tid=tid#f",
		"https://a.example/?svc_tid=old": "https://a.example/?svc_tid=tid",
		"myapp://open":                   "myapp://open",
	}
	for target, want := range cases {
		if got := (Access{Target: target}).WithTracking("tid"); got != want {
			t.Errorf("WithTracking(%q) = %q, want %q", target, got, want)
		}
		if got := (Access{Target: target}).WithTracking(""); got != target {
			t.Errorf("WithTracking without id changed %q to %q", target, got)
		}
	}
}
