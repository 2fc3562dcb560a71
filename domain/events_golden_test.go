package domain_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/linkd/linkd/domain"
	"github.com/linkd/linkd/domain/apikey"
	"github.com/linkd/linkd/domain/click"
	"github.com/linkd/linkd/domain/conversion"
	"github.com/linkd/linkd/domain/customdomain"
	"github.com/linkd/linkd/domain/link"
	"github.com/linkd/linkd/domain/pixel"
	"github.com/linkd/linkd/domain/project"
	"github.com/linkd/linkd/domain/radar"
	"github.com/linkd/linkd/domain/reservation"
	"github.com/linkd/linkd/domain/user"
	"github.com/linkd/linkd/domain/utmtemplate"
	"github.com/linkd/linkd/domain/webhook"
	"github.com/linkd/linkd/domain/workspace"
)

// The JSON of stored events is a public contract: wire names and fields
// never change (a breaking change gets a new name and an upcaster). These
// golden files pin both. After a deliberate, compatible addition, refresh
// them with
//
//	go test ./domain -run TestEventGolden -update
var update = flag.Bool("update", false, "rewrite testdata/*.golden from the current encoding")

var (
	at  = time.Date(2025, 3, 14, 15, 9, 26, 535897000, time.UTC)
	exp = time.Date(2025, 6, 12, 15, 9, 26, 0, time.UTC)
)

func p[T any](v T) *T { return &v }

func fullAttributes() link.Attributes {
	return link.Attributes{
		WorkspaceID: "ws-1", ProjectID: p("prj-1"), DomainID: p("dom-1"), PixelID: p("px-1"),
		OriginalURL: "https://example.com/landing", Name: "Spring sale", Description: "Offers", App: "Shop",
		AppLogo: "https://cdn.example.com/logo.png", AndroidLink: "shop://p/1", IOSLink: "https://apps.example.com/ios",
		WindowsLink: "https://win.example.com", MacOSLink: "https://mac.example.com", WhatsappMessage: "Look!",
		Metadata:      &link.Preview{Title: p("T"), Description: p("D"), Favicon: p("https://e.com/f.ico"), SocialImage: p("https://e.com/s.png"), Image: p("")},
		QRCodeOptions: &link.QRCodeOptions{Size: p(300), Color: p("#112233"), BackgroundColor: p("#FFF"), Logo: p("https://e.com/l.png"), LogoSize: p(60), ErrorCorrectionLevel: p("Q")},
		UTMName:       "n", UTMSource: "s", UTMMedium: "m", UTMCampaign: "c", UTMTerm: "t", UTMContent: "k", UTMTemplateID: "tpl-1",
		Referrer: "https://ref.example.com", PasswordEnc: "v1:ciphertext", PasswordDescription: "Ask",
		ExcludedCountries: []link.ExcludedCountry{{Code: "US", Label: p("United States"), Phone: p("1"), Suggested: p(false), Lang: p("en"), Continent: p("NA")}},
		HasPublicStat:     true, EnableConversionTracking: true, ExpirationDate: &exp, ExpirationClickCount: p(int64(1000)),
	}
}

// samples holds one event of every registered wire name, every field set.
func samples() map[string]domain.Event {
	okStatus, next := 200, at.Add(5*time.Minute)
	hit := radar.Hit{ProjectID: "prj-1", VisitorID: "v-1", URL: "https://site.example/a?b=c", Hostname: "site.example", Pathname: "/a",
		Referrer: "https://ref.example", Browser: "Chrome", OS: "macOS", Device: "desktop", Country: "DE", At: at,
		WorkspaceID: "ws-1", Source: "go.example/spring", ClickID: "clk-1", LinkID: "lnk-1"}
	profile := conversion.Profile{Email: "a@example.com", Firstname: "Ada", Lastname: "L", PhoneNumber: "+4912345", AvatarURL: "https://e.com/a.png"}
	clk := conversion.Click{ClickID: "clk-1", LinkID: "lnk-1", WorkspaceID: "ws-1", ProjectID: "prj-1", ClickedAt: exp,
		Country: "DE", DeviceType: "mobile", Browser: "Safari", OS: "iOS", Referrer: "news.example"}
	list := []domain.Event{
		&link.Created{LinkID: "lnk-1", Code: "spring", CreatedBy: "alice", At: at, Attributes: fullAttributes()},
		&link.Updated{LinkID: "lnk-1", By: "alice", At: at, Changes: link.Patch{
			WorkspaceID: domain.Some("ws-2"), ProjectID: domain.NullOpt[string](), PixelID: domain.Some("px-2"), OriginalURL: domain.Some("https://example.com/new"),
			Code: domain.Some("summer"), Name: domain.Some("Summer"), Description: domain.Some(""), App: domain.Some("A"), AppLogo: domain.Some("https://e.com/2.png"),
			AndroidLink: domain.Some("a://b"), IOSLink: domain.Some("i://b"), WindowsLink: domain.Some("w://b"), MacOSLink: domain.Some("m://b"),
			WhatsappMessage: domain.Some("hi"), Metadata: domain.Some(link.Preview{Title: p("T2")}), QRCodeOptions: domain.NullOpt[link.QRCodeOptions](),
			UTMName: domain.Some("n2"), UTMSource: domain.Some("s2"), UTMMedium: domain.Some("m2"), UTMCampaign: domain.Some("c2"), UTMTerm: domain.Some("t2"),
			UTMContent: domain.Some("k2"), UTMTemplateID: domain.Some("tpl-2"), Referrer: domain.Some("r"), PasswordEnc: domain.Some(""),
			PasswordDescription: domain.Some("pd"), ExcludedCountries: domain.Some([]link.ExcludedCountry{{Code: "FR", Label: p("France"), Phone: p("33")}}),
			HasPublicStat: domain.Some(false), EnableConversionTracking: domain.Some(false), ExpirationDate: domain.Some(exp), ExpirationClickCount: domain.NullOpt[int64](),
		}},
		&link.Archived{LinkID: "lnk-1", At: at},
		&link.Unarchived{LinkID: "lnk-1", At: at},
		&link.Deleted{LinkID: "lnk-1", WorkspaceID: "ws-1", Code: "spring", DomainID: p("dom-1"), At: at},
		&workspace.Created{WorkspaceID: "ws-1", Name: "Team", Description: "d", OwnerID: "alice", Plan: "pro", IsDefault: true, At: at},
		&workspace.Updated{WorkspaceID: "ws-1", Name: domain.Some("Crew"), Description: domain.Some(""), At: at},
		&workspace.Deleted{WorkspaceID: "ws-1", Name: "Crew", At: at},
		&workspace.MemberAdded{WorkspaceID: "ws-1", UserID: "bob", Email: "bob@example.com", Role: "member", At: at},
		&workspace.MemberRoleChanged{WorkspaceID: "ws-1", UserID: "bob", Role: "admin", At: at},
		&workspace.MemberRemoved{WorkspaceID: "ws-1", UserID: "bob", At: at},
		&project.Created{ProjectID: "prj-1", WorkspaceID: "ws-1", Name: "Launch", Description: "d", Color: "#ABC", CreatedBy: "alice", At: at},
		&project.Updated{ProjectID: "prj-1", WorkspaceID: "ws-1", Name: domain.Some("Relaunch"), Description: domain.Some("e"), Color: domain.Some("#000000"), At: at},
		&project.Deleted{ProjectID: "prj-1", WorkspaceID: "ws-1", Name: "Relaunch", At: at},
		&customdomain.Created{DomainID: "dom-1", WorkspaceID: "ws-1", Domain: "go.example.com", Description: "d", CreatedBy: "alice", At: at},
		&customdomain.Updated{DomainID: "dom-1", Description: domain.Some("e"), At: at},
		&customdomain.Checked{DomainID: "dom-1", CNAMERecord: "go.example.com", ExpectedValue: "short.example", ActualValue: "short.example.",
			Status: "valid", DNSConfigured: true, CNAMEAdded: true, At: at},
		&customdomain.Verified{DomainID: "dom-1", Domain: "go.example.com", At: at},
		&customdomain.Deleted{DomainID: "dom-1", WorkspaceID: "ws-1", Domain: "go.example.com", At: at},
		&apikey.Created{KeyID: "key-1", UserID: "alice", Name: "ci", Kind: "secret", Access: "limited",
			Permissions: apikey.Permissions{"domains": "none", "links": "write", "projects": "read", "workspaces": "none", "analytics": "read"},
			ProjectID:   "prj-1", AllowedHostnames: []string{"shop.example.com"}, Hash: "hmac-sha256:abc", Prefix: "svc_sk_abcde", Operator: true, At: at},
		&apikey.Deactivated{KeyID: "key-1", UserID: "alice", By: "admin", At: at},
		&reservation.Reserved{Name: "spring", Owner: "lnk-1", Scope: "ws-1", At: at},
		&reservation.Released{Name: "spring", Owner: "lnk-1", At: at},
		&click.Recorded{ClickID: "clk-1", LinkID: "lnk-1", WorkspaceID: "ws-1", ProjectID: "prj-1", DomainID: "dom-1", Code: "spring", Timestamp: at,
			Source: "redirect", QR: true, Visitor: "vh", Browser: "Safari", BrowserVersion: "17.4", OS: "iOS", OSVersion: "17.4", DeviceType: "mobile",
			Device: "iPhone", FromApp: true, App: "Instagram", Language: "de", Referrer: "ref.example", ReferrerURL: "https://ref.example/x",
			Country: "DE", Continent: "EU", City: "Berlin", Region: "BE", Destination: "https://example.com/landing?utm_source=s",
			TrackingID: "clk-1", TrackingExpiresAt: &exp},
		&conversion.CustomerCreated{CustomerID: "cus-1", WorkspaceID: "ws-1", ExternalID: "user-42", Profile: profile, At: at},
		&conversion.CustomerUpdated{CustomerID: "cus-1", WorkspaceID: "ws-1", ExternalID: "user-42", Profile: profile, At: at},
		&conversion.LeadTracked{ConversionID: "cnv-1", EventID: "evt-1", EventName: "Sign up", Click: clk, CustomerID: "cus-1",
			CustomerExternalID: "user-42", First: true, Metadata: json.RawMessage(`{"plan":"trial","nested":{"a":[1,2.50,"x"]}}`), Timestamp: at},
		&conversion.SaleTracked{ConversionID: "cnv-2", EventID: "evt-2", EventName: "Purchase", Click: clk, CustomerID: "cus-1",
			CustomerExternalID: "user-42", AmountMinor: 2999, Currency: "eur", First: true, Metadata: json.RawMessage(`{"order":"o-1"}`), Timestamp: at},
		&radar.PageviewRecorded{Hit: hit},
		&radar.EventRecorded{Hit: hit, Name: "signup", Props: map[string]string{"plan": "pro"}},
		&radar.VisitorIdentified{Hit: hit, Name: "Ada", Email: "ada@example.com"},
		&utmtemplate.Created{TemplateID: "tpl-1", WorkspaceID: "ws-1", Name: "Newsletter", CreatedBy: "alice", At: at,
			Values: utmtemplate.Values{Source: "news", Medium: "email", Campaign: "spring", Term: "shoes", Content: "banner", Name: "spring-sale"}},
		&utmtemplate.Updated{TemplateID: "tpl-1", WorkspaceID: "ws-1", Name: domain.Some("Weekly"), At: at, Patch: utmtemplate.Patch{
			Source: domain.Some("weekly"), Medium: domain.NullOpt[string](), Campaign: domain.Some("summer"), Term: domain.Some(""),
			Content: domain.Some("footer"), Name: domain.Some("summer-sale")}},
		&utmtemplate.Deleted{TemplateID: "tpl-1", WorkspaceID: "ws-1", At: at},
		&pixel.Created{ID: "px-1", WorkspaceID: "ws-1", Name: "Retargeting", Type: "meta", PixelID: "1234567890123456", CreatedBy: "alice", At: at},
		&pixel.Updated{ID: "px-1", WorkspaceID: "ws-1", Name: domain.Some("Analytics"), Type: domain.Some("google"), PixelID: domain.Some("G-ABC123"), At: at},
		&pixel.Deleted{ID: "px-1", WorkspaceID: "ws-1", At: at},
		&user.Created{UserID: "alice", Email: "alice@example.com", PasswordHash: "$argon2id$v=19$m=19456,t=2,p=1$c2FsdA$aGFzaA", At: at},
		&user.Invited{TokenHash: "4f2a", WorkspaceID: "ws-1", Email: "bob@example.com", Role: "member", InvitedBy: "alice", ExpiresAt: exp, At: at},
		&user.InvitationAccepted{TokenHash: "4f2a", UserID: "bob", At: at},
		&user.SessionStarted{SessionHash: "9c1d", UserID: "alice", Email: "alice@example.com", At: at},
		&user.SessionEnded{SessionHash: "9c1d", UserID: "alice", At: at},
		&user.PasswordSet{UserID: "alice", PasswordHash: "$argon2id$v=19$m=19456,t=2,p=1$c2FsdA$aGFzaA", At: at},
		&webhook.Created{ID: "wh-1", WorkspaceID: "ws-1", URL: "https://hooks.example/linkd", Events: []string{"link.clicked", "sale.created"},
			LinkIDs: []string{"lnk-1"}, Description: "CRM", SecretEnc: "v1.c2VjcmV0", CreatedBy: "alice", At: at},
		&webhook.Updated{ID: "wh-1", WorkspaceID: "ws-1", URL: domain.Some("https://hooks.example/v2"), Events: domain.Some([]string{"lead.created"}),
			LinkIDs: domain.Some([]string{}), Description: domain.Some("CRM v2"), IsActive: domain.Some(true), At: at},
		&webhook.Disabled{ID: "wh-1", WorkspaceID: "ws-1", Reason: "gone", At: at},
		&webhook.Deleted{ID: "wh-1", WorkspaceID: "ws-1", At: at},
		&webhook.ReplayRequested{ID: "wh-1", WorkspaceID: "ws-1", Start: at.Add(-24 * time.Hour), End: at, At: at},
		&webhook.AttemptsRecorded{ID: "wh-1", Deliverer: "d5f1c2", Attempts: []webhook.Attempt{
			{MessageID: "msg_0123", EventType: "link.clicked", Attempt: 1, Status: "succeeded", ResponseStatus: &okStatus, ResponseBody: "ok", DurationMS: 12, At: at},
			{MessageID: "msg_4567", EventType: "sale.created", Attempt: 2, Status: "failed", ResponseBody: "", DurationMS: 15000, At: at, NextAttemptAt: &next},
		}},
	}
	out := map[string]domain.Event{}
	for _, e := range list {
		out[e.EventType()] = e
	}
	return out
}

func TestEventGolden(t *testing.T) {
	s := samples()
	names := domain.EventTypes()
	if !sort.StringsAreSorted(names) {
		t.Errorf("EventTypes is not sorted")
	}
	for _, name := range names {
		if _, ok := s[name]; !ok {
			t.Errorf("event %s has no golden sample: add one to samples()", name)
		}
	}
	for name, e := range s {
		t.Run(name, func(t *testing.T) {
			wire, data, err := domain.EncodeEvent(e)
			if err != nil {
				t.Fatal(err)
			}
			if wire != name {
				t.Fatalf("wire name %q", wire)
			}
			var pretty bytes.Buffer
			if err := json.Indent(&pretty, data, "", "  "); err != nil {
				t.Fatal(err)
			}
			pretty.WriteByte('\n')
			path := filepath.Join("testdata", name+".golden")
			if *update {
				if err := os.MkdirAll("testdata", 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, pretty.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if !bytes.Equal(pretty.Bytes(), want) {
				t.Errorf("%s changed its JSON:\n got  %s\n want %s", name, pretty.Bytes(), want)
			}
			// The golden JSON decodes back to the same event: old events
			// stay readable.
			back, err := domain.DecodeEvent(name, want)
			if err != nil {
				t.Fatalf("decode golden: %v", err)
			}
			again, err := json.Marshal(back)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(again, data) {
				t.Errorf("golden JSON does not round-trip:\n got  %s\n want %s", again, data)
			}
		})
	}
	// No golden file is left without its event.
	files, _ := filepath.Glob(filepath.Join("testdata", "*.golden"))
	for _, f := range files {
		name := filepath.Base(f)
		name = name[:len(name)-len(".golden")]
		if _, ok := s[name]; !ok {
			t.Errorf("%s has no registered event: a wire name disappeared", f)
		}
	}
}

func TestUnknownEvent(t *testing.T) {
	if _, err := domain.DecodeEvent("NoSuchEvent", []byte(`{}`)); err == nil {
		t.Fatal("an unknown wire name decoded")
	}
	if _, err := domain.DecodeEvent(link.EventCreated, []byte(`{"link_id": 5}`)); err == nil {
		t.Fatal("a malformed event decoded")
	}
}
