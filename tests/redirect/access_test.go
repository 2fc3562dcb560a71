package redirect_test

import (
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/linkd/linkd/cmd/linkd/app"
	"github.com/linkd/linkd/domain/click"
)

// An unknown code answers a 404 HTML page; codes are case-sensitive;
// paths the listener serves itself are not short links.
func TestUnknownCodeAndReservedPaths(t *testing.T) {
	t.Parallel()
	s := start(t)
	s.newLink(t, map[string]any{"original_url": "https://known.example", "custom_code": "Known"})

	for _, path := range []string{"/nope", "/known", "/KNOWN", "/Known-", "/a_b-c", "/" + strings.Repeat("x", 50), "/favicon.ico", "/robots.txt"} {
		for _, ua := range []string{browserUA, uaGooglebot} {
			wantPage(t, "GET "+path, s.get(path, ua), http.StatusNotFound)
		}
		if r := s.visit("HEAD", path, "User-Agent", browserUA); r.Status != http.StatusNotFound {
			t.Errorf("HEAD %s: %d", path, r.Status)
		}
	}
	wantRedirect(t, "the exact code", s.get("/Known", browserUA), "https://known.example")

	// Reserved codes are refused at creation, and their paths keep their
	// own meaning.
	for _, code := range []string{"healthz", "metrics", "openapi.json", "radar.js", "v1", "api", "HEALTHZ", "favicon.ico"} {
		r := s.Do("POST", "/v1/links", op, map[string]any{"original_url": "https://x.example", "custom_code": code})
		if r.Status != http.StatusBadRequest {
			t.Errorf("custom_code %q: %d, want 400: %s", code, r.Status, r.Body)
		}
	}
	if r := s.get("/healthz", browserUA); r.Status != http.StatusOK || !strings.Contains(string(r.Body), "ok") {
		t.Errorf("/healthz: %d %s", r.Status, r.Body)
	}
	if r := s.get("/metrics", browserUA); r.Status != http.StatusOK || !strings.Contains(string(r.Body), "# TYPE") {
		t.Errorf("/metrics: %d", r.Status)
	}
	if r := s.get("/openapi.json", browserUA); r.Status != http.StatusOK || !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
		t.Errorf("/openapi.json: %d %s", r.Status, r.Header.Get("Content-Type"))
	}
	for _, path := range []string{"/v1", "/v1/", "/v1/links/code/", "/Known/", "/Known/x"} {
		if r := s.get(path, browserUA); r.Status == http.StatusFound {
			t.Errorf("%s is answered as a short link", path)
		}
	}
	// Other methods are not short-link accesses.
	for _, m := range []string{"PUT", "DELETE", "PATCH"} {
		if r := s.visit(m, "/Known", "User-Agent", browserUA); r.Status == http.StatusFound || r.Status < 400 {
			t.Errorf("%s /Known: %d", m, r.Status)
		}
	}
}

// ?qr=1 marks an access as a QR scan: counted, shown as scans_only in the
// daily record and as qr_code_usage in the summary.
func TestQRScans(t *testing.T) {
	t.Parallel()
	s := start(t)
	l := s.newLink(t, map[string]any{"original_url": "https://qr.example/menu?table=4", "custom_code": "menu"})
	id := str(l, "id")
	for i := 0; i < 3; i++ {
		wantRedirect(t, "scan", s.get("/menu?qr=1", uaIPhoneSafari), "https://qr.example/menu?table=4")
	}
	wantRedirect(t, "click", s.get("/menu", uaAndroidChrome), "https://qr.example/menu?table=4")
	for _, q := range []string{"?qr=0", "?qr=", "?qr=true", "?x=1", "?QR=1"} {
		wantRedirect(t, "not a scan "+q, s.get("/menu"+q, uaWindowsEdge), "https://qr.example/menu?table=4")
	}
	s.wantClicks(t, id, 9)
	d := s.day(t, id)
	if num(t, d, "total_clicks") != 9 || num(t, d, "scans_only") != 3 || num(t, d, "clicks_only") != 6 {
		t.Errorf("total %v scans_only %v clicks_only %v, want 9, 3, 6", d["total_clicks"], d["scans_only"], d["clicks_only"])
	}
	sum := s.summary(t, id)
	if num(t, sum, "qr_code_usage") != 3 || num(t, sum, "total_clicks") != 9 {
		t.Errorf("summary: qr_code_usage %v total %v", sum["qr_code_usage"], sum["total_clicks"])
	}
	// A bot scanning or a HEAD is not counted, scan or not.
	s.get("/menu?qr=1", uaGooglebot)
	s.visit("HEAD", "/menu?qr=1", "User-Agent", uaIPhoneSafari)
	if num(t, s.summary(t, id), "qr_code_usage") != 3 {
		t.Errorf("a bot's or HEAD scan was counted")
	}
	qr := 0
	for _, e := range s.events(t, id) {
		if e.QR {
			qr++
		}
	}
	if qr != 3 {
		t.Errorf("%d ClickRecorded with qr, want 3", qr)
	}
}

var clickIDPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{16,64}$`)

// With conversion tracking on, each counted click gets a click id, added
// to the target as svc_tid and set as a svc_tid cookie valid 90 days; the
// id is carried in the ClickRecorded event with its expiry, for leads and
// sales to be attributed later. Off: neither.
func TestConversionTracking(t *testing.T) {
	t.Parallel()
	s := start(t)
	on := s.newLink(t, map[string]any{"original_url": "https://shop.example/p?ref=1#top", "custom_code": "track",
		"enable_conversion_tracking": true, "utm_source": "ads"})
	off := s.newLink(t, map[string]any{"original_url": "https://shop.example/p", "custom_code": "notrack", "enable_conversion_tracking": false})
	mail := s.newLink(t, map[string]any{"original_url": "mailto:a@example.com", "custom_code": "trackmail", "enable_conversion_tracking": true})
	if on["enable_conversion_tracking"] != true || off["enable_conversion_tracking"] != false {
		t.Fatalf("enable_conversion_tracking not kept: %v %v", on["enable_conversion_tracking"], off["enable_conversion_tracking"])
	}

	seen := map[string]bool{}
	for i := 0; i < 3; i++ {
		before := time.Now().UTC()
		r := s.get("/track", browserUA)
		if r.Status != http.StatusFound {
			t.Fatalf("/track: %d", r.Status)
		}
		loc := r.Header.Get("Location")
		if !strings.HasPrefix(loc, "https://shop.example/p?") || !strings.HasSuffix(loc, "#top") {
			t.Errorf("Location %q", loc)
		}
		q := query(t, loc)
		tid := q.Get("svc_tid")
		if !clickIDPattern.MatchString(tid) || q.Get("ref") != "1" || q.Get("utm_source") != "ads" || len(q["svc_tid"]) != 1 {
			t.Fatalf("Location %q: svc_tid %q", loc, tid)
		}
		if seen[tid] {
			t.Errorf("click id %q given twice", tid)
		}
		seen[tid] = true
		var cookie *http.Cookie
		for _, c := range (&http.Response{Header: r.Header}).Cookies() {
			if c.Name == "svc_tid" {
				cookie = c
			}
		}
		if cookie == nil {
			t.Fatalf("no svc_tid cookie: %v", r.Header["Set-Cookie"])
		}
		if cookie.Value != tid || cookie.MaxAge != 90*24*3600 || cookie.Path != "/" {
			t.Errorf("svc_tid cookie: value %q (want %q) Max-Age %d Path %q", cookie.Value, tid, cookie.MaxAge, cookie.Path)
		}
		// The event carries the id and its expiry, 90 days after the click.
		evs := s.events(t, str(on, "id"))
		if len(evs) != i+1 {
			t.Fatalf("%d events after %d clicks", len(evs), i+1)
		}
		e := evs[i]
		if e.TrackingID != tid || e.TrackingExpiresAt == nil {
			t.Fatalf("event: tracking id %q (want %q), expires %v", e.TrackingID, tid, e.TrackingExpiresAt)
		}
		if got := e.TrackingExpiresAt.Sub(e.Timestamp); got != click.TrackingTTL || click.TrackingTTL != 90*24*time.Hour {
			t.Errorf("click id valid for %v, want 90 days", got)
		}
		if e.Timestamp.Before(before.Add(-time.Second)) || e.Timestamp.After(time.Now().Add(time.Second)) {
			t.Errorf("click timestamp %v", e.Timestamp)
		}
		// The destination recorded is the target with its UTM values; the
		// click id is the event's own field.
		if e.Destination != "https://shop.example/p?ref=1&utm_source=ads#top" {
			t.Errorf("destination %q", e.Destination)
		}
	}
	// Not counted, no click id: bots and HEAD.
	for _, r := range []struct {
		what string
		resp func() (int, string, []string)
	}{
		{"bot", func() (int, string, []string) {
			r := s.get("/track", uaGooglebot)
			return r.Status, r.Header.Get("Location"), r.Header["Set-Cookie"]
		}},
		{"HEAD", func() (int, string, []string) {
			r := s.visit("HEAD", "/track", "User-Agent", browserUA)
			return r.Status, r.Header.Get("Location"), r.Header["Set-Cookie"]
		}},
	} {
		st, loc, cookies := r.resp()
		if st != http.StatusFound || strings.Contains(loc, "svc_tid") || len(cookies) != 0 {
			t.Errorf("%s on a tracked link: %d %q %v", r.what, st, loc, cookies)
		}
	}
	s.wantClicks(t, str(on, "id"), 3)

	// Off: no parameter, no cookie, no id in the event.
	r := s.get("/notrack", browserUA)
	wantRedirect(t, "tracking off", r, "https://shop.example/p")
	if len(r.Header["Set-Cookie"]) != 0 {
		t.Errorf("cookie without tracking: %v", r.Header["Set-Cookie"])
	}
	if evs := s.events(t, str(off, "id")); len(evs) != 1 || evs[0].TrackingID != "" || evs[0].TrackingExpiresAt != nil {
		t.Errorf("event without tracking: %+v", evs)
	}
	// A target that is not a web URL keeps its form; the cookie still comes.
	r = s.get("/trackmail", browserUA)
	wantRedirect(t, "tracked mailto", r, "mailto:a@example.com")
	if c := r.Header.Get("Set-Cookie"); !strings.HasPrefix(c, "svc_tid=") {
		t.Errorf("tracked mailto: cookie %q", c)
	}
	if evs := s.events(t, str(mail, "id")); len(evs) != 1 || evs[0].TrackingID == "" {
		t.Errorf("tracked mailto event: %+v", evs)
	}
	// The public read counts a click but hands out no svc_tid: its click
	// has no tracking id (an id nobody was given could never convert).
	pub := s.newLink(t, map[string]any{"original_url": "https://shop.example/api", "custom_code": "trackapi", "enable_conversion_tracking": true})
	if r := s.get("/v1/links/code/trackapi", browserUA); r.Status != http.StatusOK || strings.Contains(string(r.Body), "svc_tid") ||
		len(r.Header["Set-Cookie"]) != 0 {
		t.Errorf("public read of a tracked link: %d %s %v", r.Status, r.Body, r.Header["Set-Cookie"])
	}
	if evs := s.events(t, str(pub, "id")); len(evs) != 1 || evs[0].TrackingID != "" || evs[0].TrackingExpiresAt != nil ||
		evs[0].ClickID == "" || evs[0].Source != click.SourceAPI {
		t.Errorf("public read event: %+v", evs)
	}
}

// Known crawlers and link-preview fetchers are redirected but not counted;
// people in the in-app browsers of Instagram, Facebook, TikTok are counted,
// with from_app and the app in the statistics; so are scripts (curl, HTTP
// libraries, load generators, no User-Agent): see TestScriptsAreCounted.
func TestBotsAndInAppBrowsers(t *testing.T) {
	t.Parallel()
	s := start(t)
	l := s.newLink(t, map[string]any{"original_url": "https://social.example/post", "custom_code": "post",
		"ios_link": "https://apps.apple.com/app/id1"})
	id := str(l, "id")
	bots := map[string]string{
		"Googlebot": uaGooglebot, "Googlebot smartphone": uaGooglebotPhone, "bingbot": uaBingbot,
		"Slackbot": uaSlackbot, "facebookexternalhit": uaFacebookHit, "iMessage preview": uaIMessagePreview,
		"Twitterbot": uaTwitterbot, "WhatsApp preview": uaWhatsAppPreview, "TelegramBot": uaTelegramBot,
		"Discordbot": uaDiscordbot, "LinkedInBot": uaLinkedInBot, "Snapchat preview": uaSnapchatPreview,
		"HeadlessChrome": uaHeadlessChrome, "Yeti (crawler list only)": uaYeti,
		"UptimeRobot": "Mozilla/5.0+(compatible; UptimeRobot/2.0; http://www.uptimerobot.com/)",
	}
	for name, ua := range bots {
		for i := 0; i < 2; i++ { // the second answer comes from the cached verdict
			r := s.get("/post", ua)
			if r.Status != http.StatusFound || r.Header.Get("Location") == "" {
				t.Errorf("%s: %d Location %q, want a redirect", name, r.Status, r.Header.Get("Location"))
			}
		}
		if r := s.get("/post?qr=1", ua); r.Status != http.StatusFound {
			t.Errorf("%s scan: %d", name, r.Status)
		}
	}
	s.wantClicks(t, id, 0)
	s.wantNoStats(t, id)

	// HEAD: the redirect's answer, not counted, whoever asks.
	for _, ua := range []string{browserUA, uaIPhoneSafari, uaInstagramIOS} {
		r := s.visit("HEAD", "/post", "User-Agent", ua)
		if r.Status != http.StatusFound || r.Header.Get("Location") == "" || len(r.Body) != 0 {
			t.Errorf("HEAD %s: %d Location %q body %q", ua, r.Status, r.Header.Get("Location"), r.Body)
		}
	}
	wantRedirect(t, "HEAD from an iPhone goes where the iPhone goes", s.visit("HEAD", "/post", "User-Agent", uaIPhoneSafari), "https://apps.apple.com/app/id1")
	s.wantClicks(t, id, 0)

	// In-app browsers are people.
	inApp := []struct{ ua, app string }{
		{uaInstagramIOS, "Instagram"}, {uaInstagramIOS, "Instagram"}, {uaFacebookAndroid, "Facebook"}, {uaTikTokIOS, "TikTok"},
	}
	for _, c := range inApp {
		if r := s.get("/post", c.ua); r.Status != http.StatusFound {
			t.Errorf("%s in-app: %d", c.app, r.Status)
		}
	}
	wantRedirect(t, "Instagram on iOS gets the iOS link", s.get("/post", uaInstagramIOS), "https://apps.apple.com/app/id1")
	s.get("/post", browserUA) // and one plain browser
	s.wantClicks(t, id, 6)
	d := s.day(t, id)
	wantCounts(t, d, "app_stats", map[string]int{"Instagram": 3, "Facebook": 1, "TikTok": 1})
	wantCounts(t, d, "from_app_stats", map[string]int{"true": 5, "false": 1})
	evs := s.events(t, id)
	apps := map[string]int{}
	for _, e := range evs {
		if e.FromApp {
			apps[e.App]++
		}
	}
	if apps["Instagram"] != 3 || apps["Facebook"] != 1 || apps["TikTok"] != 1 || len(evs) != 6 {
		t.Errorf("in-app clicks in the events: %v of %d", apps, len(evs))
	}
}

// A short link followed by a script is somebody's click: curl, HTTP
// libraries, load generators and requests without a User-Agent are
// redirected like browsers and counted (only known crawlers and preview
// fetchers are not; HEAD never is).
func TestScriptsAreCounted(t *testing.T) {
	t.Parallel()
	s := start(t)
	l := s.newLink(t, map[string]any{"original_url": "https://tool.example/landing", "custom_code": "tool",
		"utm_source": "news", "ios_link": "https://apps.apple.com/app/id1"})
	id := str(l, "id")
	scripts := []string{uaCurl, uaPythonRequests, "Go-http-client/1.1", uaEmpty, "Wget/1.21.4",
		"ApacheBench/2.3", "hey/0.0.1", "oha/1.4.5", "k6/0.52.0 (https://k6.io/)", "okhttp/4.12.0", "axios/1.7.2"}
	for _, ua := range scripts {
		wantRedirect(t, "script "+ua, s.get("/tool", ua), "https://tool.example/landing?utm_source=news")
	}
	if r := s.visit("HEAD", "/tool", "User-Agent", uaCurl); r.Status != http.StatusFound {
		t.Errorf("HEAD by curl: %d", r.Status)
	}
	s.get("/tool", uaGooglebot)
	s.wantClicks(t, id, len(scripts))
	if evs := s.events(t, id); len(evs) != len(scripts) {
		t.Errorf("%d ClickRecorded events, want %d", len(evs), len(scripts))
	}
	d := s.day(t, id)
	if n, _ := d["total_clicks"].(float64); int(n) != len(scripts) {
		t.Errorf("daily clicks %v, want %d", d["total_clicks"], len(scripts))
	}
}

// Reads follow writes, clicks included: once a redirect has answered, the
// link's clicks and its statistics show it.
func TestReadsFollowClicks(t *testing.T) {
	t.Parallel()
	s := start(t)
	l := s.newLink(t, map[string]any{"original_url": "https://rfw.example", "custom_code": "rfw"})
	id := str(l, "id")
	for i := 1; i <= 15; i++ {
		path := "/rfw"
		if i%5 == 0 {
			path += "?qr=1"
		}
		r := s.get(path, []string{browserUA, uaIPhoneSafari, uaAndroidChrome}[i%3])
		if r.Status != http.StatusFound {
			t.Fatalf("click %d: %d", i, r.Status)
		}
		if got := s.clicks(t, id); got != i {
			t.Errorf("after click %d the link shows %d clicks", i, got)
		}
		switch i % 3 {
		case 0:
			if d := s.day(t, id); num(t, d, "total_clicks") != i {
				t.Errorf("after click %d the daily record shows %v", i, d["total_clicks"])
			}
		case 1:
			if sum := s.summary(t, id); num(t, sum, "total_clicks") != i || num(t, sum, "qr_code_usage") != i/5 {
				t.Errorf("after click %d the summary shows %v clicks, %v scans", i, sum["total_clicks"], sum["qr_code_usage"])
			}
		case 2:
			r := s.Do("GET", "/v1/stats/workspaces/"+str(l, "workspace_id")+"/summary", op, nil)
			if r.Status != http.StatusOK || num(t, r.JSON(t), "total_clicks") != i {
				t.Errorf("after click %d the workspace summary: %d %s", i, r.Status, r.Body)
			}
		}
	}
	// A link listing shows the clicks too.
	r := s.Do("GET", "/v1/links?page_size=100", op, nil)
	if !strings.Contains(string(r.Body), `"clicks":`+strconv.Itoa(15)) {
		t.Errorf("link list does not show 15 clicks: %s", r.Body)
	}
}

// Changes to a link apply to its short URL at once, although redirects
// cache links: a new target, a new code, a deleted link.
func TestLinkChangesApplyAtOnce(t *testing.T) {
	t.Parallel()
	s := start(t)
	l := s.newLink(t, map[string]any{"original_url": "https://v1.example", "custom_code": "chg"})
	id := str(l, "id")
	put := func(body map[string]any) {
		t.Helper()
		if r := s.Do("PUT", "/v1/links/"+id, op, body); r.Status != http.StatusOK {
			t.Fatalf("PUT %v: %d %s", body, r.Status, r.Body)
		}
	}
	wantRedirect(t, "first", s.get("/chg", browserUA), "https://v1.example")
	put(map[string]any{"original_url": "https://v2.example"})
	wantRedirect(t, "new target", s.get("/chg", browserUA), "https://v2.example")
	put(map[string]any{"utm_campaign": "c1", "windows_link": "https://win.example"})
	wantRedirect(t, "new utm and windows link", s.get("/chg", browserUA), "https://win.example?utm_campaign=c1")
	put(map[string]any{"password": secretPassword})
	wantPage(t, "password added", s.get("/chg", browserUA), http.StatusOK, "<form")
	put(map[string]any{"password": nil})
	wantRedirect(t, "password removed", s.get("/chg", uaMacSafari), "https://v2.example?utm_campaign=c1")
	put(map[string]any{"excluded_countries": []map[string]any{{"code": "US", "label": "United States", "phone": "1"}}})
	wantRedirect(t, "excluded country elsewhere", s.get("/chg", uaMacSafari), "https://v2.example?utm_campaign=c1")
	put(map[string]any{"code": "chg2"})
	wantPage(t, "old code", s.get("/chg", browserUA), http.StatusNotFound)
	wantRedirect(t, "new code", s.get("/chg2", uaMacSafari), "https://v2.example?utm_campaign=c1")
	s.wantClicks(t, id, 6) // the password form was not a click
	put(map[string]any{"expiration_click_count": 6})
	wantPage(t, "limit lowered to the clicks so far", s.get("/chg2", browserUA), http.StatusGone)
	put(map[string]any{"expiration_click_count": 7})
	wantRedirect(t, "limit raised", s.get("/chg2", uaMacSafari), "https://v2.example?utm_campaign=c1")
	wantPage(t, "limit reached again", s.get("/chg2", uaMacSafari), http.StatusGone)
	s.wantClicks(t, id, 7)
	if r := s.Do("DELETE", "/v1/links/"+id, op, nil); r.Status != http.StatusOK {
		t.Fatalf("delete: %d", r.Status)
	}
	wantPage(t, "deleted link", s.get("/chg2", browserUA), http.StatusNotFound)
	if r := s.get("/v1/links/code/chg2", browserUA); r.Status != http.StatusNotFound {
		t.Errorf("public read of a deleted link: %d", r.Status)
	}
}

// Short URLs served over https mark the svc_tid cookie Secure.
func TestTrackingCookieSecureOnHTTPS(t *testing.T) {
	t.Parallel()
	s := start(t, func(c *app.Config) { c.PublicScheme = "https" })
	l := s.newLink(t, map[string]any{"original_url": "https://sec.example", "custom_code": "sec", "enable_conversion_tracking": true})
	if !strings.HasPrefix(str(l, "short_url"), "https://") {
		t.Errorf("short_url %q", str(l, "short_url"))
	}
	r := s.get("/sec", browserUA)
	c := r.Header.Get("Set-Cookie")
	if r.Status != http.StatusFound || !strings.HasPrefix(c, "svc_tid=") || !strings.Contains(c, "Secure") || !strings.Contains(c, "Max-Age=7776000") {
		t.Errorf("https short URL: %d cookie %q", r.Status, c)
	}
}

// An archived link keeps redirecting and counting (docs/decisions.md).
func TestArchivedLinkStillRedirects(t *testing.T) {
	t.Parallel()
	s := start(t)
	l := s.newLink(t, map[string]any{"original_url": "https://old-campaign.example", "custom_code": "spring"})
	id := str(l, "id")
	if r := s.Do("PUT", "/v1/links/"+id, op, map[string]any{"is_archived": true}); r.Status != http.StatusOK {
		t.Fatalf("archive: %d %s", r.Status, r.Body)
	}
	wantRedirect(t, "archived link", s.get("/spring", browserUA), "https://old-campaign.example")
	if r := s.get("/v1/links/code/spring", browserUA); r.Status != http.StatusOK {
		t.Errorf("public read of an archived link: %d %s", r.Status, r.Body)
	}
	s.wantClicks(t, id, 2)
}
