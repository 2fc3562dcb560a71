package redirect_test

import (
	"bytes"
	"io"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/maxmind/mmdbwriter"
	"github.com/maxmind/mmdbwriter/mmdbtype"

	"github.com/linkd/linkd/cmd/linkd/app"
	"github.com/linkd/linkd/domain/click"
)

// visitCase is one click by a real browser, and what its ClickRecorded must
// say.
type visitCase struct {
	name                  string
	ua, lang, referer, ip string
	browser, version      string
	os, osVersion         string
	deviceType, device    string
	fromApp               bool
	app                   string
	language, referrer    string
	country, continent    string
}

var visitCases = []visitCase{
	{name: "iPhone Safari", ua: uaIPhoneSafari, lang: "en-US,en;q=0.9", referer: "https://www.google.com/search?q=x", ip: ipUS,
		browser: "Safari", version: "17.5", os: "iOS", osVersion: "17.5", deviceType: "mobile", device: "iPhone",
		language: "en", referrer: "google.com", country: "US", continent: "NA"},
	{name: "iPad Safari", ua: uaIPadSafari, lang: "de-DE,de;q=0.9,en;q=0.8", referer: "https://t.co/abc123", ip: ipGB,
		browser: "Safari", version: "17.5", os: "iOS", osVersion: "17.5", deviceType: "tablet", device: "iPad",
		language: "de", referrer: "t.co", country: "GB", continent: "EU"},
	{name: "Android Chrome", ua: uaAndroidChrome, lang: "pt-BR,pt;q=0.9,en-US;q=0.8", ip: ipBR,
		browser: "Chrome", version: "126.0.0.0", os: "Android", osVersion: "10", deviceType: "mobile", device: "Android",
		language: "pt", country: "BR", continent: "SA"},
	{name: "Android tablet", ua: uaAndroidTablet, lang: "es-ES,es;q=0.9", ip: ipGB,
		browser: "Chrome", version: "125.0.0.0", os: "Android", osVersion: "13", deviceType: "tablet", device: "Android tablet",
		language: "es", country: "GB", continent: "EU"},
	{name: "Windows Edge", ua: uaWindowsEdge, lang: "en-GB,en;q=0.9", referer: "https://www.bing.com/search?q=linkd", ip: ipGB,
		browser: "Edge", version: "126.0.2592.68", os: "Windows", osVersion: "10", deviceType: "desktop", device: "Windows PC",
		language: "en", referrer: "bing.com", country: "GB", continent: "EU"},
	{name: "macOS Safari", ua: uaMacSafari, lang: "ja-JP,ja;q=0.9", ip: ipJP,
		browser: "Safari", version: "17.5", os: "macOS", osVersion: "10.15.7", deviceType: "desktop", device: "Mac",
		language: "ja", country: "JP", continent: "AS"},
	{name: "Linux Firefox", ua: uaLinuxFirefox, lang: "nl-NL,nl;q=0.8,en-US;q=0.5", referer: "https://News.YCombinator.com:443/item?id=1", ip: ipNL,
		browser: "Firefox", version: "127.0", os: "Linux", deviceType: "desktop", device: "Linux PC",
		language: "nl", referrer: "news.ycombinator.com", country: "NL", continent: "EU"},
	{name: "Instagram in-app", ua: uaInstagramIOS, lang: "en-US", referer: "https://l.instagram.com/", ip: ipUS,
		browser: "Instagram", version: "335.0.3.15.111", os: "iOS", osVersion: "17.5", deviceType: "mobile", device: "iPhone",
		fromApp: true, app: "Instagram", language: "en", referrer: "l.instagram.com", country: "US", continent: "NA"},
	{name: "Facebook in-app", ua: uaFacebookAndroid, lang: "es-MX,es;q=0.9", referer: "http://m.facebook.com", ip: ipBR,
		browser: "Facebook", version: "470.0.0.41.109", os: "Android", osVersion: "14", deviceType: "mobile", device: "Android",
		fromApp: true, app: "Facebook", language: "es", referrer: "m.facebook.com", country: "BR", continent: "SA"},
	{name: "no Accept-Language, no Referer, local address", ua: uaWindowsChrome,
		browser: "Chrome", version: "126.0.0.0", os: "Windows", osVersion: "10", deviceType: "desktop", device: "Windows PC"},
}

var hexVisitor = regexp.MustCompile(`^[0-9a-f]{32}$`)

// Every counted click records browser and version, OS and version, device
// type, in-app browser and app, language (Accept-Language), referrer host
// (Referer), country and continent (of a trusted X-Forwarded-For) and a
// visitor key; the statistics add them up.
func TestEnrichmentInEventsAndStats(t *testing.T) {
	t.Parallel()
	s := start(t, trustLocal)
	l := s.newLink(t, map[string]any{"original_url": "https://enrich.example", "custom_code": "en"})
	id := str(l, "id")
	for _, c := range visitCases {
		h := []string{}
		if c.lang != "" {
			h = append(h, "Accept-Language", c.lang)
		}
		if c.referer != "" {
			h = append(h, "Referer", c.referer)
		}
		if c.ip != "" {
			h = append(h, "X-Forwarded-For", c.ip)
		}
		if r := s.get("/en", c.ua, h...); r.Status != 302 {
			t.Fatalf("%s: %d", c.name, r.Status)
		}
	}
	evs := s.events(t, id)
	if len(evs) != len(visitCases) {
		t.Fatalf("%d events for %d clicks", len(evs), len(visitCases))
	}
	for i, c := range visitCases {
		e := evs[i]
		got := visitCase{name: c.name, ua: c.ua, lang: c.lang, referer: c.referer, ip: c.ip,
			browser: e.Browser, version: e.BrowserVersion, os: e.OS, osVersion: e.OSVersion, deviceType: e.DeviceType, device: e.Device,
			fromApp: e.FromApp, app: e.App, language: e.Language, referrer: e.Referrer, country: e.Country, continent: e.Continent}
		if got != c {
			t.Errorf("%s:\n got %+v\nwant %+v", c.name, got, c)
		}
		if e.ReferrerURL != c.referer {
			t.Errorf("%s: referrer_url %q, want %q", c.name, e.ReferrerURL, c.referer)
		}
		if !hexVisitor.MatchString(e.Visitor) {
			t.Errorf("%s: visitor %q is not a 32-digit hex key", c.name, e.Visitor)
		}
		if e.LinkID != id || e.WorkspaceID != str(l, "workspace_id") || e.Code != "en" || e.Source != click.SourceRedirect || e.ClickID == "" {
			t.Errorf("%s: ids in the event: %+v", c.name, e)
		}
		if e.City != "" || e.Region != "" {
			t.Errorf("%s: city %q region %q without a city database", c.name, e.City, e.Region)
		}
	}

	d := s.day(t, id)
	if num(t, d, "total_clicks") != len(visitCases) {
		t.Errorf("total_clicks %v", d["total_clicks"])
	}
	wantCounts(t, d, "browser_stats", map[string]int{"Safari": 3, "Chrome": 3, "Edge": 1, "Firefox": 1, "Instagram": 1, "Facebook": 1})
	wantCounts(t, d, "os_stats", map[string]int{"iOS": 3, "Android": 3, "Windows": 2, "macOS": 1, "Linux": 1})
	wantCounts(t, d, "os_version_stats", map[string]int{"iOS 17.5": 3, "Android 10": 1, "Android 13": 1, "Android 14": 1, "Windows 10": 2, "macOS 10.15.7": 1})
	wantCounts(t, d, "device_type_stats", map[string]int{"mobile": 4, "tablet": 2, "desktop": 4})
	wantCounts(t, d, "device_stats", map[string]int{"mobile": 4, "tablet": 2, "desktop": 4})
	wantCounts(t, d, "lang_stats", map[string]int{"en": 3, "de": 1, "pt": 1, "es": 2, "ja": 1, "nl": 1})
	wantCounts(t, d, "country_stats", map[string]int{"US": 2, "GB": 3, "BR": 2, "JP": 1, "NL": 1})
	wantCounts(t, d, "continent_stats", map[string]int{"NA": 2, "EU": 4, "SA": 2, "AS": 1})
	wantCounts(t, d, "app_stats", map[string]int{"Instagram": 1, "Facebook": 1})
	wantCounts(t, d, "from_app_stats", map[string]int{"true": 2, "false": 8})
	wantCounts(t, d, "referrer_stats", map[string]int{"google.com": 1, "t.co": 1, "bing.com": 1, "news.ycombinator.com": 1, "l.instagram.com": 1, "m.facebook.com": 1})
	wantCounts(t, d, "city_stats", nil)
	if num(t, d, "ios_clicks") != 3 || num(t, d, "android_clicks") != 3 || num(t, d, "chrome_clicks") != 3 {
		t.Errorf("ios %v android %v chrome %v", d["ios_clicks"], d["android_clicks"], d["chrome_clicks"])
	}
	if num(t, d, "unique_visitors") != len(visitCases) {
		t.Errorf("unique_visitors %v, want %d", d["unique_visitors"], len(visitCases))
	}
	dos := counts(t, d, "device_and_os_stats")
	if dos["mobile iOS"] != 2 || dos["tablet iOS"] != 1 || dos["desktop Windows"] != 2 {
		t.Errorf("device_and_os_stats %v", dos)
	}
	sum := s.summary(t, id)
	if tc := sum["top_countries"].([]any); len(tc) == 0 || str(tc[0].(map[string]any), "name") != "GB" {
		t.Errorf("top_countries %v", tc)
	}
	if tb := sum["top_browsers"].([]any); len(tb) != 6 {
		t.Errorf("top_browsers %v", tb)
	}
}

// The unique-visitor key is a keyed hash of address and user agent: the
// same address and user agent twice on one day is one visitor; another user
// agent or another address is another visitor.
func TestUniqueVisitors(t *testing.T) {
	t.Parallel()
	s := start(t, trustLocal)
	l := s.newLink(t, map[string]any{"original_url": "https://uv.example", "custom_code": "uv"})
	id := str(l, "id")
	s.get("/uv", uaIPhoneSafari, "X-Forwarded-For", ipGB)
	s.get("/uv", uaIPhoneSafari, "X-Forwarded-For", ipGB, "Accept-Language", "fr", "Referer", "https://x.example/")
	s.get("/uv?qr=1", uaIPhoneSafari, "X-Forwarded-For", ipGB) // a scan by the same visitor
	if d := s.day(t, id); num(t, d, "unique_visitors") != 1 || num(t, d, "total_clicks") != 3 {
		t.Errorf("same address and user agent: unique %v total %v, want 1 and 3", d["unique_visitors"], d["total_clicks"])
	}
	s.get("/uv", uaMacSafari, "X-Forwarded-For", ipGB)
	if d := s.day(t, id); num(t, d, "unique_visitors") != 2 {
		t.Errorf("another user agent: unique %v, want 2", d["unique_visitors"])
	}
	s.get("/uv", uaIPhoneSafari, "X-Forwarded-For", ipUS)
	if d := s.day(t, id); num(t, d, "unique_visitors") != 3 {
		t.Errorf("another address: unique %v, want 3", d["unique_visitors"])
	}
	evs := s.events(t, id)
	if len(evs) != 5 || evs[0].Visitor != evs[1].Visitor || evs[0].Visitor != evs[2].Visitor ||
		evs[3].Visitor == evs[0].Visitor || evs[4].Visitor == evs[0].Visitor || evs[3].Visitor == evs[4].Visitor {
		t.Errorf("visitor keys: %v", visitors(evs))
	}
	// The key is keyed: it is not a plain hash of what the visitor sent.
	for _, e := range evs {
		if strings.Contains(e.Visitor, ipGB) || strings.Contains(e.Visitor, ipUS) {
			t.Errorf("visitor key shows the address: %q", e.Visitor)
		}
	}
	// The public read counts visitors the same way.
	s.get("/v1/links/code/uv", uaIPhoneSafari, "X-Forwarded-For", ipGB)
	if d := s.day(t, id); num(t, d, "unique_visitors") != 3 || num(t, d, "total_clicks") != 6 {
		t.Errorf("after a public read by a known visitor: unique %v total %v", d["unique_visitors"], d["total_clicks"])
	}
	// Workspace statistics count the same visitor on two links once.
	l2 := s.newLink(t, map[string]any{"original_url": "https://uv2.example", "custom_code": "uv2"})
	s.get("/uv2", uaIPhoneSafari, "X-Forwarded-For", ipGB)
	r := s.Do("GET", "/v1/stats/workspaces/"+str(l2, "workspace_id"), op, nil)
	if days := r.List(t); len(days) != 1 || num(t, days[0].(map[string]any), "unique_visitors") != 3 {
		t.Errorf("workspace daily records: %s, want one with 3 unique visitors", r.Body)
	}
}

func visitors(evs []click.Recorded) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.Visitor
	}
	return out
}

// With LINKD_GEOIP_DB naming an .mmdb city database, clicks record the
// city and region, and city_stats counts them.
func TestCityFromGeoIPDatabase(t *testing.T) {
	t.Parallel()
	db := writeCityDB(t, map[string][3]string{
		"81.2.69.0/24":   {"London", "England", "GB"},
		"200.160.0.0/16": {"São Paulo", "São Paulo", "BR"},
	})
	s := start(t, trustLocal, func(c *app.Config) { c.GeoIPDB = db })
	l := s.newLink(t, map[string]any{"original_url": "https://city.example", "custom_code": "city"})
	id := str(l, "id")
	s.get("/city", browserUA, "X-Forwarded-For", ipGB)
	s.get("/city", uaIPhoneSafari, "X-Forwarded-For", ipGB)
	s.get("/city", browserUA, "X-Forwarded-For", ipBR)
	s.get("/city", browserUA, "X-Forwarded-For", ipJP) // not in the database: country from the built-in data
	d := s.day(t, id)
	wantCounts(t, d, "city_stats", map[string]int{"London": 2, "São Paulo": 1})
	wantCounts(t, d, "country_stats", map[string]int{"GB": 2, "BR": 1, "JP": 1})
	evs := s.events(t, id)
	if len(evs) != 4 {
		t.Fatalf("%d events", len(evs))
	}
	if evs[0].City != "London" || evs[0].Region != "England" || evs[2].City != "São Paulo" || evs[3].City != "" {
		t.Errorf("cities: %q/%q %q %q", evs[0].City, evs[0].Region, evs[2].City, evs[3].City)
	}

	// A database that cannot be opened stops linkd from starting.
	bad := filepath.Join(t.TempDir(), "bad.mmdb")
	if err := os.WriteFile(bad, []byte("not a database"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := app.Defaults()
	cfg.DataDir, cfg.GeoIPDB = t.TempDir(), bad
	if a, err := app.Open(t.Context(), cfg, app.NewLogger(cfg, io.Discard), io.Discard); err == nil {
		a.Close()
		t.Errorf("linkd opened with an unreadable LINKD_GEOIP_DB")
	}
}

// writeCityDB writes a GeoLite2-City-shaped database of cidr -> city,
// region, country. mmdbwriter refuses reserved ranges, so the networks are
// public ones.
func writeCityDB(t *testing.T, recs map[string][3]string) string {
	t.Helper()
	tree, err := mmdbwriter.New(mmdbwriter.Options{DatabaseType: "GeoLite2-City", RecordSize: 24})
	if err != nil {
		t.Fatal(err)
	}
	name := func(s string) mmdbtype.Map { return mmdbtype.Map{"names": mmdbtype.Map{"en": mmdbtype.String(s)}} }
	for cidr, r := range recs {
		_, n, err := net.ParseCIDR(cidr)
		if err != nil {
			t.Fatal(err)
		}
		country := name(r[2])
		country["iso_code"] = mmdbtype.String(r[2])
		if err := tree.Insert(n, mmdbtype.Map{"city": name(r[0]), "subdivisions": mmdbtype.Slice{name(r[1])}, "country": country}); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(t.TempDir(), "city.mmdb")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tree.WriteTo(f); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// Raw IP addresses are never stored: after clicks, scans, public reads,
// password attempts and an excluded-country refusal from a distinctive
// public address, no file of the data directory (event log, SQLite read
// model, Pebble analytics) contains it.
func TestRawIPNeverStored(t *testing.T) {
	t.Parallel()
	const ip = "81.2.69.142"
	ip6 := "2a02:390:1:2:3:4:5:6"
	s := start(t, trustLocal)
	l := s.newLink(t, map[string]any{"original_url": "https://ip.example", "custom_code": "ip", "enable_conversion_tracking": true})
	pw := s.newLink(t, map[string]any{"original_url": "https://ip.example", "custom_code": "ippw", "password": secretPassword})
	s.newLink(t, map[string]any{"original_url": "https://ip.example", "custom_code": "ipgeo", "excluded_countries": []map[string]any{{"code": "GB"}}})
	for _, addr := range []string{ip, ip6} {
		for _, ua := range []string{browserUA, uaIPhoneSafari, uaInstagramIOS, uaGooglebot} {
			s.get("/ip", ua, "X-Forwarded-For", addr, "Referer", "https://ref.example/")
			s.get("/ip?qr=1", ua, "X-Forwarded-For", addr)
			s.get("/v1/links/code/ip", ua, "X-Forwarded-For", addr)
		}
		s.Do("POST", "/ippw", "", form("wrong"), "User-Agent", browserUA, "Content-Type", formContentType, "X-Forwarded-For", addr)
		s.Do("POST", "/ippw", "", form(secretPassword), "User-Agent", browserUA, "Content-Type", formContentType, "X-Forwarded-For", addr)
		s.get("/ipgeo", browserUA, "X-Forwarded-For", addr)
	}
	// Per address: 3 browsers redirected, 3 scans, 4 public reads (the
	// public read counts every access).
	if n := s.clicks(t, str(l, "id")); n != 20 {
		t.Fatalf("clicks %d, want 20", n)
	}
	s.wantClicks(t, str(pw, "id"), 2)
	d := s.day(t, str(l, "id"))
	if counts(t, d, "country_stats")["GB"] < 10 {
		t.Fatalf("the address was not used: %v", d["country_stats"])
	}
	for _, e := range s.events(t, str(l, "id")) {
		if strings.Contains(e.Visitor+e.ReferrerURL+e.Destination, "81.2.69") {
			t.Errorf("event carries the address: %+v", e)
		}
	}
	// Stop linkd so that every store has written and closed its files.
	s.Stop()
	needles := [][]byte{[]byte(ip), []byte(ip6), []byte("2a02:0390:0001"), []byte("::ffff:" + ip)}
	files := 0
	err := filepath.WalkDir(s.Config.DataDir, func(path string, de os.DirEntry, err error) error {
		if err != nil || de.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		files++
		for _, n := range needles {
			if bytes.Contains(b, n) {
				t.Errorf("%s contains the raw address %q", path, n)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 3 {
		t.Errorf("only %d files in the data directory", files)
	}
}
