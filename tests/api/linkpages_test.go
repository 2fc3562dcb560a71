package api_test

import (
	"bytes"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/linkd/linkd/cmd/linkd/app"
	"github.com/linkd/linkd/cmd/linkd/app/apptest"
)

// Real user agents of link-preview fetchers, search crawlers, in-app
// browsers and people (issue 14).
var previewUAs = map[string]string{
	"Slack":      "Slackbot-LinkExpanding 1.0 (+https://api.slack.com/robots)",
	"Facebook":   "facebookexternalhit/1.1 (+http://www.facebook.com/externalhit_uatext.php)",
	"X":          "Twitterbot/1.0",
	"LinkedIn":   "LinkedInBot/1.0 (compatible; Mozilla/5.0; Apache-HttpClient +http://www.linkedin.com)",
	"WhatsApp":   "WhatsApp/2.23.20.0 A",
	"Discord":    "Mozilla/5.0 (compatible; Discordbot/2.0; +https://discordapp.com)",
	"Telegram":   "TelegramBot (like TwitterBot)",
	"iMessage":   "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_11_1) AppleWebKit/601.2.4 (KHTML, like Gecko) Version/9.0.1 Safari/601.2.4 facebookexternalhit/1.1 Facebot Twitterbot/1.0",
	"Googlebot":  "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
	"Googlebot2": "Mozilla/5.0 (Linux; Android 6.0.1; Nexus 5X Build/MMB29P) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.6478.126 Mobile Safari/537.36 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
	"Bingbot":    "Mozilla/5.0 (compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm)",
}

const (
	uaDesktop      = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36"
	uaIPhone       = "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1"
	uaInstagramIOS = "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148 Instagram 335.0.3.15.111 (iPhone15,3; iOS 17_5; en_US; en; scale=3.00; 1290x2796; 612165720)"
	uaFacebookAnd  = "Mozilla/5.0 (Linux; Android 14; SM-S918B Build/UP1A.231005.007; wv) AppleWebKit/537.36 (KHTML, like Gecko) Version/4.0 Chrome/125.0.6422.165 Mobile Safari/537.36 [FB_IAB/FB4A;FBAV/470.0.0.41.109;]"
	uaTikTokIOS    = "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148 musical_ly_35.1.0 JsSdk/2.0 NetType/WIFI Channel/App Store ByteLocale/en Region/US ByteFullLocale/en-US isDarkMode/0 WKWebView/1 RevealType/Dialog BytedanceWebview/d8a21c6"
	uaLinkedInIOS  = "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148 [LinkedInApp]/9.29.8653"
	uaCurl         = "curl/8.5.0"
)

// wantHTMLPage checks the headers every short-link page carries.
func wantHTMLPage(t *testing.T, what string, r apptest.Response, status int) {
	t.Helper()
	if r.Status != status {
		t.Fatalf("%s: status %d, want %d: %s", what, r.Status, status, r.Body)
	}
	if ct := r.Header.Get("Content-Type"); ct != "text/html; charset=utf-8" {
		t.Errorf("%s: Content-Type %q", what, ct)
	}
	if cc := r.Header.Get("Cache-Control"); cc != "no-store" {
		t.Errorf("%s: Cache-Control %q, want no-store", what, cc)
	}
	if csp := r.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") {
		t.Errorf("%s: Content-Security-Policy %q", what, csp)
	}
	if r.Header.Get("Location") != "" {
		t.Errorf("%s: a page with Location %q", what, r.Header.Get("Location"))
	}
}

// clicks reads a link's click count.
func clicks(t *testing.T, s *apptest.Server, key, id string) float64 {
	t.Helper()
	n, _ := obj(t, s.Do("GET", "/v1/links/"+id, key, nil), http.StatusOK)["clicks"].(float64)
	return n
}

func TestLinkPreviewsForFetchers(t *testing.T) {
	t.Parallel()
	s := start(t)
	alice := s.NewKey("alice", "full", nil)
	const title = `Spring <script>alert("t")</script> & "sale"`
	l := createLink(s, alice, map[string]any{
		"original_url": "https://shop.example/spring?a=1&b=2", "custom_code": "spring", "utm_source": "chat", "enable_conversion_tracking": false,
		"metadata": map[string]any{
			"title": title, "description": "50% off <b>everything</b>",
			"social_image": "https://cdn.example/card.png?x=1&y=\"2\"", "favicon": "https://cdn.example/fav.ico",
		},
	})
	plain := createLink(s, alice, map[string]any{"original_url": "https://plain.example/", "custom_code": "plain"})
	imageOnly := createLink(s, alice, map[string]any{"original_url": "https://img.example/", "custom_code": "img",
		"metadata": map[string]any{"title": "Only image", "image": "https://cdn.example/i.png"}})

	for name, ua := range previewUAs {
		for _, method := range []string{"GET", "HEAD"} {
			r := s.Do(method, "/spring", "", nil, "User-Agent", ua)
			wantHTMLPage(t, name+" "+method, r, http.StatusOK)
			if method == "HEAD" {
				if len(r.Body) != 0 {
					t.Errorf("%s HEAD: a body", name)
				}
				continue
			}
			body := string(r.Body)
			for _, want := range []string{
				`<meta property="og:title" content="Spring &lt;script&gt;alert(&#34;t&#34;)&lt;/script&gt; &amp; &#34;sale&#34;">`,
				`<meta name="twitter:title" content="Spring &lt;script&gt;alert(&#34;t&#34;)&lt;/script&gt; &amp; &#34;sale&#34;">`,
				`<meta property="og:description" content="50% off &lt;b&gt;everything&lt;/b&gt;">`,
				`<meta name="twitter:description" content="50% off &lt;b&gt;everything&lt;/b&gt;">`,
				`<meta property="og:image" content="https://cdn.example/card.png?x=1&amp;y=&#34;2&#34;">`,
				`<meta name="twitter:card" content="summary_large_image">`,
				`<link rel="icon" href="https://cdn.example/fav.ico">`,
				`<link rel="canonical" href="https://shop.example/spring?a=1&amp;b=2&amp;utm_source=chat">`,
				`<meta property="og:url" content="http://` + strings.TrimPrefix(s.URL, "http://") + `/spring">`,
				`<title>Spring &lt;script&gt;alert(&#34;t&#34;)&lt;/script&gt; &amp; &#34;sale&#34;</title>`,
			} {
				if !strings.Contains(body, want) {
					t.Errorf("%s: page lacks %s\n%s", name, want, body)
				}
			}
			if strings.Contains(body, "<script") || strings.Contains(body, "<b>") {
				t.Errorf("%s: unescaped markup: %s", name, body)
			}
		}
		// A link without metadata: the redirect, as before.
		if r := s.Do("GET", "/plain", "", nil, "User-Agent", ua); r.Status != http.StatusFound || r.Header.Get("Location") != "https://plain.example/" {
			t.Errorf("%s on a link without metadata: %d %q", name, r.Status, r.Header.Get("Location"))
		}
	}
	r := s.Do("GET", "/img", "", nil, "User-Agent", previewUAs["Slack"])
	wantHTMLPage(t, "image only", r, http.StatusOK)
	if !bytes.Contains(r.Body, []byte(`<meta property="og:image" content="https://cdn.example/i.png">`)) {
		t.Errorf("metadata.image is the card's image: %s", r.Body)
	}
	// A protected or expired link shows fetchers no preview: it would
	// reveal what the password protects, or a dead link's target.
	createLink(s, alice, map[string]any{"original_url": "https://secret.example/", "custom_code": "secret", "password": "pw",
		"metadata": map[string]any{"title": "Secret card"}})
	createLink(s, alice, map[string]any{"original_url": "https://old.example/", "custom_code": "old",
		"expiration_date": time.Now().Add(-time.Hour).UTC().Format(time.RFC3339), "metadata": map[string]any{"title": "Old card"}})
	for _, c := range []struct {
		code   string
		status int
	}{{"secret", http.StatusOK}, {"old", http.StatusGone}} {
		r := s.Do("GET", "/"+c.code, "", nil, "User-Agent", previewUAs["Facebook"])
		if r.Status != c.status || bytes.Contains(r.Body, []byte("og:title")) || bytes.Contains(r.Body, []byte(".example")) {
			t.Errorf("%s: %d %s", c.code, r.Status, r.Body)
		}
	}
	// No fetcher was counted.
	for _, id := range []string{str(l, "id"), str(plain, "id"), str(imageOnly, "id")} {
		if n := clicks(t, s, alice, id); n != 0 {
			t.Errorf("preview fetchers counted: %v clicks", n)
		}
	}
	// People, and scripts, still get the redirect, counted.
	for _, ua := range []string{uaDesktop, uaIPhone, uaCurl} {
		r := s.Do("GET", "/spring", "", nil, "User-Agent", ua)
		if r.Status != http.StatusFound || r.Header.Get("Location") != "https://shop.example/spring?a=1&b=2&utm_source=chat" {
			t.Errorf("%s: %d %q, want the redirect", ua, r.Status, r.Header.Get("Location"))
		}
	}
	if n := clicks(t, s, alice, str(l, "id")); n != 3 {
		t.Errorf("people's clicks: %v, want 3", n)
	}
}

func TestPublicStatistics(t *testing.T) {
	t.Parallel()
	s := start(t)
	alice := s.NewKey("alice", "full", nil)
	pub := createLink(s, alice, map[string]any{"original_url": "https://pub.example/", "custom_code": "pub",
		"name": `Launch <i>day</i>`, "has_public_stat": true})
	priv := createLink(s, alice, map[string]any{"original_url": "https://priv.example/", "custom_code": "priv"})
	fresh := createLink(s, alice, map[string]any{"original_url": "https://fresh.example/", "custom_code": "fresh", "has_public_stat": true})
	for _, ua := range []string{uaIPhone, uaIPhone, uaDesktop} {
		if r := s.Do("GET", "/pub", "", nil, "User-Agent", ua); r.Status != http.StatusFound {
			t.Fatalf("click: %d", r.Status)
		}
	}
	s.Do("GET", "/priv", "", nil, "User-Agent", uaDesktop)
	today := time.Now().UTC().Format(time.DateOnly)

	for i := 0; i < 2; i++ { // reading counts no click
		m := obj(t, s.Do("GET", "/v1/links/code/pub/stats", "", nil), http.StatusOK)
		if str(m, "link_id") != str(pub, "id") || str(m, "code") != "pub" || !strings.HasSuffix(str(m, "short_url"), "/pub") {
			t.Errorf("public stats: %v", m)
		}
		sum, _ := m["summary"].(map[string]any)
		if sum["total_clicks"] != 3.0 || str(sum, "link_id") != str(pub, "id") {
			t.Errorf("summary: %v", sum)
		}
		for _, k := range []string{"top_countries", "top_devices", "top_browsers", "qr_code_usage", "date_range"} {
			if _, ok := sum[k]; !ok {
				t.Errorf("summary lacks %q", k)
			}
		}
		if td, _ := sum["top_devices"].([]any); len(td) != 2 || str(td[0].(map[string]any), "name") != "mobile" || td[0].(map[string]any)["count"] != 2.0 {
			t.Errorf("top_devices: %v", sum["top_devices"])
		}
		for _, k := range []string{"leads", "sales", "revenue"} {
			if _, ok := sum[k]; ok {
				t.Errorf("public summary shows conversions (%q)", k)
			}
		}
		daily, _ := m["daily"].([]any)
		if len(daily) != 1 {
			t.Fatalf("daily: %v", m["daily"])
		}
		d := daily[0].(map[string]any)
		if str(d, "click_date") != today || d["total_clicks"] != 3.0 || d["ios_clicks"] != 2.0 || str(d, "link_id") != str(pub, "id") {
			t.Errorf("daily record: %v", d)
		}
		for _, k := range []string{"workspace_id", "revenue"} {
			if _, ok := d[k]; ok {
				t.Errorf("public record shows %q", k)
			}
		}
	}
	if n := clicks(t, s, alice, str(pub, "id")); n != 3 {
		t.Errorf("clicks after reading statistics: %v, want 3", n)
	}
	// A link never clicked: zeros.
	m := obj(t, s.Do("GET", "/v1/links/code/fresh/stats", "", nil), http.StatusOK)
	if sum := m["summary"].(map[string]any); sum["total_clicks"] != 0.0 || len(m["daily"].([]any)) != 0 {
		t.Errorf("fresh link: %v", m)
	}
	_, _ = fresh, priv

	// Without has_public_stat: exactly what an unknown code gets.
	unknown := s.Do("GET", "/v1/links/code/nope/stats", "", nil)
	wantError(t, unknown, http.StatusNotFound, msgLinkNotFound)
	private := s.Do("GET", "/v1/links/code/priv/stats", "", nil)
	wantError(t, private, http.StatusNotFound, msgLinkNotFound)
	if !bytes.Equal(unknown.Body, private.Body) {
		t.Errorf("a private link answers %s, an unknown code %s", private.Body, unknown.Body)
	}
	// A key changes nothing: the endpoint is the public one.
	wantError(t, s.Do("GET", "/v1/links/code/priv/stats", alice, nil), http.StatusNotFound, msgLinkNotFound)

	// Date rules of spec 4.6.
	wantError(t, s.Do("GET", "/v1/links/code/pub/stats?start_date=2026-03-10&end_date=2026-03-01", "", nil), http.StatusBadRequest, "")
	wantError(t, s.Do("GET", "/v1/links/code/pub/stats?start_date=2026-01-01&end_date=2026-03-01", "", nil), http.StatusBadRequest, "Date range cannot exceed 30 days. Current range: 59 days")
	wantError(t, s.Do("GET", "/v1/links/code/pub/stats?max_days=31", "", nil), http.StatusBadRequest, "")
	old := obj(t, s.Do("GET", "/v1/links/code/pub/stats?start_date=2020-01-01", "", nil), http.StatusOK)
	if sum := old["summary"].(map[string]any); sum["total_clicks"] != 0.0 || str(sum["date_range"].(map[string]any), "end") != "2020-01-31" {
		t.Errorf("start_date alone covers 30 days: %v", sum)
	}
	if m := obj(t, s.Do("GET", "/v1/links/code/pub/stats?max_days=1", "", nil), http.StatusOK); len(m["daily"].([]any)) != 1 {
		t.Errorf("max_days=1 keeps today: %v", m["daily"])
	}

	// The page.
	page := s.Do("GET", "/pub+", "", nil, "User-Agent", uaDesktop)
	wantHTMLPage(t, "/pub+", page, http.StatusOK)
	for _, want := range []string{`<b id="total">3</b>`, `Launch &lt;i&gt;day&lt;/i&gt;`, today, "/pub</p>", ">mobile<", ">2<"} {
		if !strings.Contains(string(page.Body), want) {
			t.Errorf("page lacks %q:\n%s", want, page.Body)
		}
	}
	if strings.Contains(string(page.Body), "<i>") || strings.Contains(string(page.Body), "pub.example") {
		t.Errorf("page shows markup or the target: %s", page.Body)
	}
	if n := clicks(t, s, alice, str(pub, "id")); n != 3 {
		t.Errorf("clicks after the page: %v, want 3", n)
	}
	notFound := s.Do("GET", "/nope", "", nil, "User-Agent", uaDesktop)
	for _, p := range []string{"/priv+", "/nope+"} {
		r := s.Do("GET", p, "", nil, "User-Agent", uaDesktop)
		wantHTMLPage(t, p, r, http.StatusNotFound)
		if !bytes.Equal(r.Body, notFound.Body) {
			t.Errorf("%s answers %s, an unknown code %s", p, r.Body, notFound.Body)
		}
	}
	if r := s.Do("POST", "/pub+", "", nil); r.Status != http.StatusMethodNotAllowed {
		t.Errorf("POST /pub+: %d", r.Status)
	}
	if r := s.Do("GET", "/pub+?start_date=2026-03-10&end_date=2026-03-01", "", nil); r.Status != http.StatusBadRequest {
		t.Errorf("page with a bad range: %d", r.Status)
	}
	// The short link itself is unchanged.
	if r := s.Do("GET", "/pub", "", nil, "User-Agent", uaDesktop); r.Status != http.StatusFound {
		t.Errorf("/pub: %d", r.Status)
	}
}

// Public statistics count against one limit per client address: the JSON
// and the page together, known codes and unknown alike.
func TestPublicStatisticsRateLimit(t *testing.T) {
	t.Parallel()
	s := start(t)
	alice := s.NewKey("alice", "full", nil)
	createLink(s, alice, map[string]any{"original_url": "https://pub.example/", "custom_code": "pub", "has_public_stat": true})
	const limit = 60 // api.PublicStatsLimit per minute
	began := time.Now()
	for i := 0; i < limit; i++ {
		path := []string{"/v1/links/code/pub/stats", "/pub+", "/v1/links/code/nope/stats"}[i%3]
		r := s.Do("GET", path, "", nil)
		if r.Status == http.StatusTooManyRequests {
			t.Fatalf("request %d (%s) refused", i+1, path)
		}
		if got := r.Header.Get("X-RateLimit-Limit"); got != strconv.Itoa(limit) {
			t.Fatalf("X-RateLimit-Limit %q", got)
		}
	}
	// The limit gives one request back every minute/limit: a loaded
	// machine that took seconds over the loop may pass that many more
	// before the limit answers.
	extra := int(time.Since(began)/(time.Minute/limit)) + 1
	r := s.Do("GET", "/v1/links/code/pub/stats", "", nil)
	for i := 0; r.Status != http.StatusTooManyRequests && i < extra; i++ {
		r = s.Do("GET", "/v1/links/code/pub/stats", "", nil)
	}
	wantError(t, r, http.StatusTooManyRequests, msgRateLimited)
	if ra, err := strconv.Atoi(r.Header.Get("Retry-After")); err != nil || ra < 1 {
		t.Errorf("Retry-After %q", r.Header.Get("Retry-After"))
	}
	wantHTMLPage(t, "page over the limit", s.Do("GET", "/pub+", "", nil), http.StatusTooManyRequests)
	// Another address has its own limit; the short link is not limited.
	if r := s.Do("GET", "/v1/links/code/pub/stats", "", nil, "X-Forwarded-For", "8.8.8.8"); r.Status != http.StatusTooManyRequests {
		// The test server trusts no proxy: X-Forwarded-For is ignored and
		// the caller is still 127.0.0.1.
		t.Errorf("an untrusted X-Forwarded-For escaped the limit: %d", r.Status)
	}
	if r := s.Do("GET", "/pub", "", nil, "User-Agent", uaDesktop); r.Status != http.StatusFound {
		t.Errorf("the short link is limited too: %d", r.Status)
	}
}

func TestAppLinkPage(t *testing.T) {
	t.Parallel()
	s := start(t)
	alice := s.NewKey("alice", "full", nil)
	l := createLink(s, alice, map[string]any{
		"original_url": "https://app.example/item/7", "custom_code": "item", "app": `Shop <App> & "Co"`,
		"app_logo": "https://cdn.example/logo.png", "ios_link": "shopapp://item/7?ref=a&b=1", "android_link": "intent://item/7#Intent;scheme=shopapp;package=com.shop;end",
		"enable_conversion_tracking": true,
	})
	id := str(l, "id")
	cases := []struct {
		name, ua, open string
	}{
		{"Instagram iOS", uaInstagramIOS, "shopapp://item/7?ref=a&amp;b=1"},
		{"Facebook Android", uaFacebookAnd, "intent://item/7#Intent;scheme=shopapp;package=com.shop;end"},
		{"TikTok iOS", uaTikTokIOS, "shopapp://item/7?ref=a&amp;b=1"},
		{"LinkedIn iOS", uaLinkedInIOS, "shopapp://item/7?ref=a&amp;b=1"},
	}
	for _, c := range cases {
		r := s.Do("GET", "/item", "", nil, "User-Agent", c.ua)
		wantHTMLPage(t, c.name, r, http.StatusOK)
		body := string(r.Body)
		for _, want := range []string{
			`<title>Open in Shop &lt;App&gt; &amp; &#34;Co&#34;</title>`,
			`<h1>Open in Shop &lt;App&gt; &amp; &#34;Co&#34;</h1>`,
			`<a class="btn" id="open" href="` + c.open + `">`,
			`<img class="logo" src="https://cdn.example/logo.png"`,
			`<a id="web" href="https://app.example/item/7?svc_tid=`,
		} {
			if !strings.Contains(body, want) {
				t.Errorf("%s: page lacks %s\n%s", c.name, want, body)
			}
		}
		if strings.Contains(body, "<App>") {
			t.Errorf("%s: unescaped app name", c.name)
		}
		if csp := r.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "img-src https://cdn.example") {
			t.Errorf("%s: CSP %q does not allow the logo", c.name, csp)
		}
		// The page is the click: its svc_tid cookie names it.
		var tid string
		for _, ck := range (&http.Response{Header: r.Header}).Cookies() {
			if ck.Name == "svc_tid" {
				tid = ck.Value
			}
		}
		if tid == "" || !strings.Contains(body, "svc_tid="+url.QueryEscape(tid)) {
			t.Errorf("%s: tracking cookie %q not in the fallback", c.name, tid)
		}
	}
	if n := clicks(t, s, alice, id); n != float64(len(cases)) {
		t.Errorf("clicks %v, want %d (each page view once)", n, len(cases))
	}
	// Outside in-app browsers: the redirect to the platform's link.
	for _, c := range []struct{ name, ua, want string }{
		{"Safari iPhone", uaIPhone, "shopapp://item/7?ref=a&b=1"},
		{"desktop", uaDesktop, "https://app.example/item/7"},
	} {
		r := s.Do("GET", "/item", "", nil, "User-Agent", c.ua)
		if r.Status != http.StatusFound || !strings.HasPrefix(r.Header.Get("Location"), c.want) {
			t.Errorf("%s: %d %q", c.name, r.Status, r.Header.Get("Location"))
		}
	}
	if n := clicks(t, s, alice, id); n != float64(len(cases)+2) {
		t.Errorf("clicks %v, want %d", n, len(cases)+2)
	}

	// An https deep link opens its web page in these browsers: the page only
	// when the link names its app. Without an app logo, an initial.
	web := createLink(s, alice, map[string]any{"original_url": "https://w.example/", "custom_code": "uni",
		"ios_link": "https://apps.apple.com/app/id1", "enable_conversion_tracking": false})
	if r := s.Do("GET", "/uni", "", nil, "User-Agent", uaInstagramIOS); r.Status != http.StatusFound || r.Header.Get("Location") != "https://apps.apple.com/app/id1" {
		t.Errorf("https deep link without app: %d %q", r.Status, r.Header.Get("Location"))
	}
	named := createLink(s, alice, map[string]any{"original_url": "https://w.example/", "custom_code": "named", "app": "Wapp",
		"ios_link": "https://wapp.example/open/1", "enable_conversion_tracking": false})
	r := s.Do("GET", "/named", "", nil, "User-Agent", uaInstagramIOS)
	wantHTMLPage(t, "named https deep link", r, http.StatusOK)
	if !bytes.Contains(r.Body, []byte(`<div class="initial" aria-hidden="true">W</div>`)) || !bytes.Contains(r.Body, []byte(`href="https://wapp.example/open/1"`)) {
		t.Errorf("named app page: %s", r.Body)
	}
	if csp := r.Header.Get("Content-Security-Policy"); strings.Contains(csp, "img-src") {
		t.Errorf("CSP without a logo: %q", csp)
	}
	// Android in Instagram without an android_link: nothing to open.
	if r := s.Do("GET", "/named", "", nil, "User-Agent", uaFacebookAnd); r.Status != http.StatusFound {
		t.Errorf("no deep link for the platform: %d", r.Status)
	}
	_, _ = web, named
}

func TestWhatsAppMessage(t *testing.T) {
	t.Parallel()
	s := start(t)
	alice := s.NewKey("alice", "full", nil)
	const msg = "Hi! Is the 50% offer & free delivery still on?"
	const enc = "Hi%21%20Is%20the%2050%25%20offer%20%26%20free%20delivery%20still%20on%3F"
	cases := []struct{ code, target, want string }{
		{"wa1", "https://wa.me/15551234567", "https://wa.me/15551234567?text=" + enc},
		{"wa2", "https://api.whatsapp.com/send?phone=15551234567", "https://api.whatsapp.com/send?phone=15551234567&text=" + enc},
		{"wa3", "whatsapp://send?phone=15551234567", "whatsapp://send?phone=15551234567&text=" + enc},
		{"wa4", "https://wa.me/15551234567?text=Own%20words", "https://wa.me/15551234567?text=Own%20words"},
		{"wa5", "https://example.com/chat", "https://example.com/chat"},
	}
	for _, c := range cases {
		createLink(s, alice, map[string]any{"original_url": c.target, "custom_code": c.code, "whatsapp_message": msg, "enable_conversion_tracking": false})
		r := s.Do("GET", "/"+c.code, "", nil, "User-Agent", uaIPhone)
		if r.Status != http.StatusFound || r.Header.Get("Location") != c.want {
			t.Errorf("%s: %d Location %q, want %q", c.target, r.Status, r.Header.Get("Location"), c.want)
		}
		if u, err := url.Parse(r.Header.Get("Location")); err == nil && c.code <= "wa3" && u.Query().Get("text") != msg {
			t.Errorf("%s: text decodes to %q", c.target, u.Query().Get("text"))
		}
	}
	// A WhatsApp deep link of the platform gets it too.
	createLink(s, alice, map[string]any{"original_url": "https://site.example/", "custom_code": "wa6",
		"ios_link": "whatsapp://send?phone=1", "whatsapp_message": "hello", "enable_conversion_tracking": false})
	if r := s.Do("GET", "/wa6", "", nil, "User-Agent", uaIPhone); r.Header.Get("Location") != "whatsapp://send?phone=1&text=hello" {
		t.Errorf("iOS WhatsApp deep link: %q", r.Header.Get("Location"))
	}
	if r := s.Do("GET", "/wa6", "", nil, "User-Agent", uaDesktop); r.Header.Get("Location") != "https://site.example/" {
		t.Errorf("desktop: %q", r.Header.Get("Location"))
	}
}

// Public statistics follow the Host as short links do: a verified custom
// domain's code is its own link, and the default domain's link of the same
// code is another.
func TestPublicStatisticsOnCustomDomain(t *testing.T) {
	t.Parallel()
	addr := dnsServer(t, map[string]string{"go.shop.example.": "short.example.net."})
	s := start(t, func(c *app.Config) { c.DNSServer = addr; c.DefaultDomain = "short.example.net" })
	alice := s.NewKey("alice", "full", nil)
	dom := str(s.MustCreate("/v1/domains", alice, map[string]any{"domain": "go.shop.example"}), "id")
	if v := obj(t, s.Do("GET", "/v1/domains/"+dom+"/verify", alice, nil), http.StatusOK); v["is_verified"] != true {
		t.Skipf("domain not verified: %v", v)
	}
	custom := createLink(s, alice, map[string]any{"original_url": "https://c.example/", "custom_code": "promo", "domain_id": dom, "has_public_stat": true})
	def := createLink(s, alice, map[string]any{"original_url": "https://d.example/", "custom_code": "promo", "has_public_stat": true})
	s.Do("GET", "/promo", "", nil, "User-Agent", uaDesktop, "Host", "go.shop.example")
	s.Do("GET", "/promo", "", nil, "User-Agent", uaDesktop, "Host", "go.shop.example")
	s.Do("GET", "/promo", "", nil, "User-Agent", uaDesktop, "Host", "short.example.net")
	for _, c := range []struct {
		host, id, shortURL string
		total              float64
	}{{"go.shop.example", str(custom, "id"), "http://go.shop.example/promo", 2}, {"short.example.net", str(def, "id"), "http://short.example.net/promo", 1}} {
		m := obj(t, s.Do("GET", "/v1/links/code/promo/stats", "", nil, "Host", c.host), http.StatusOK)
		if str(m, "link_id") != c.id || str(m, "short_url") != c.shortURL || m["summary"].(map[string]any)["total_clicks"] != c.total {
			t.Errorf("%s: %v", c.host, m)
		}
		page := s.Do("GET", "/promo+", "", nil, "Host", c.host)
		wantHTMLPage(t, c.host, page, http.StatusOK)
		if !strings.Contains(string(page.Body), c.shortURL) {
			t.Errorf("%s: the page does not name %s", c.host, c.shortURL)
		}
	}
}
