// Package redirect_test tests short links, /{code} on the default domain and
// on verified custom domains, black-box through real HTTP against a whole
// linkd started in process by apptest: target selection by device, UTM
// values, the password form, expiry, excluded countries, QR scans,
// conversion click ids, bots and HEAD requests, and the enrichment that each
// counted click carries into the statistics (DECISIONS.md "Links",
// "Domains", "Statistics"; spec 2.5, 4.5, 4.6, 5).
//
// Every test starts its own server, so tests run in parallel without seeing
// each other's clicks.
package redirect_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/linkd/linkd/cmd/linkd/app"
	"github.com/linkd/linkd/cmd/linkd/app/apptest"
	"github.com/linkd/linkd/domain/click"
	"github.com/linkd/linkd/internal/dnscheck/dnstest"
)

const op = apptest.OperatorKey

// Real user agents (the same ones internal/enrich pins in its golden file).
const (
	uaIPhoneSafari  = "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1"
	uaIPhoneChrome  = "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) CriOS/126.0.6478.54 Mobile/15E148 Safari/604.1"
	uaIPadSafari    = "Mozilla/5.0 (iPad; CPU OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1"
	uaAndroidChrome = "Mozilla/5.0 (Linux; Android 10; K) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Mobile Safari/537.36"
	uaAndroidTablet = "Mozilla/5.0 (Linux; Android 13; SM-X700) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/125.0.0.0 Safari/537.36"
	uaSamsung       = "Mozilla/5.0 (Linux; Android 14; SM-S918B) AppleWebKit/537.36 (KHTML, like Gecko) SamsungBrowser/25.0 Chrome/121.0.0.0 Mobile Safari/537.36"
	uaWindowsEdge   = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36 Edg/126.0.2592.68"
	uaWindowsChrome = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36"
	uaMacSafari     = "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Safari/605.1.15"
	uaMacChrome     = "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36"
	uaLinuxFirefox  = "Mozilla/5.0 (X11; Linux x86_64; rv:127.0) Gecko/20100101 Firefox/127.0"

	uaInstagramIOS     = "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148 Instagram 335.0.3.15.111 (iPhone15,3; iOS 17_5; en_US; en; scale=3.00; 1290x2796; 612165720)"
	uaFacebookAndroid  = "Mozilla/5.0 (Linux; Android 14; SM-S918B Build/UP1A.231005.007; wv) AppleWebKit/537.36 (KHTML, like Gecko) Version/4.0 Chrome/125.0.6422.165 Mobile Safari/537.36 [FB_IAB/FB4A;FBAV/470.0.0.41.109;]"
	uaTikTokIOS        = "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148 musical_ly_35.1.0 JsSdk/2.0 NetType/WIFI Channel/App Store ByteLocale/en Region/US ByteFullLocale/en-US isDarkMode/0 WKWebView/1 RevealType/Dialog BytedanceWebview/d8a21c6"
	uaGooglebot        = "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)"
	uaGooglebotPhone   = "Mozilla/5.0 (Linux; Android 6.0.1; Nexus 5X Build/MMB29P) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.6478.126 Mobile Safari/537.36 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)"
	uaBingbot          = "Mozilla/5.0 (compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm)"
	uaSlackbot         = "Slackbot-LinkExpanding 1.0 (+https://api.slack.com/robots)"
	uaFacebookHit      = "facebookexternalhit/1.1 (+http://www.facebook.com/externalhit_uatext.php)"
	uaIMessagePreview  = "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_11_1) AppleWebKit/601.2.4 (KHTML, like Gecko) Version/9.0.1 Safari/601.2.4 facebookexternalhit/1.1 Facebot Twitterbot/1.0"
	uaTwitterbot       = "Twitterbot/1.0"
	uaWhatsAppPreview  = "WhatsApp/2.23.20.0 A"
	uaTelegramBot      = "TelegramBot (like TwitterBot)"
	uaDiscordbot       = "Mozilla/5.0 (compatible; Discordbot/2.0; +https://discordapp.com)"
	uaLinkedInBot      = "LinkedInBot/1.0 (compatible; Mozilla/5.0; Apache-HttpClient +http://www.linkedin.com)"
	uaCurl             = "curl/8.5.0"
	uaPythonRequests   = "python-requests/2.32.3"
	uaHeadlessChrome   = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/126.0.0.0 Safari/537.36"
	uaYeti             = "Mozilla/5.0 (compatible; Yeti/1.1)" // known to the crawler list only
	uaSnapchatPreview  = "Mozilla/5.0 (Linux; Android 10; K) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/125.0.0.0 Mobile Safari/537.36 (compatible; Snap URL Preview Service; bot; snapchat; https://developers.snap.com/robots)"
	uaEmpty            = "" // sent as no User-Agent header at all
	browserUA          = uaWindowsChrome
	formContentType    = "application/x-www-form-urlencoded"
	defaultShortDomain = "lnk.test" // LINKD_DEFAULT_DOMAIN of the test servers
)

// Public addresses whose country the embedded database knows.
const (
	ipUS = "8.8.8.8"      // United States, North America
	ipGB = "81.2.69.142"  // United Kingdom, Europe
	ipBR = "200.160.2.3"  // Brazil, South America
	ipJP = "202.12.27.33" // Japan, Asia
	ipNL = "193.0.6.139"  // Netherlands, Europe
)

// server is a linkd under test with its own DNS server for domain checks.
type server struct {
	*apptest.Server
	DNS *dnstest.Server
}

// start runs a linkd for one test. Its default short domain is lnk.test (a
// request to 127.0.0.1 is served as the default domain too: any host that
// is not a verified custom domain is), and its DNS server is an in-process
// one that knows the names a test sets.
func start(t *testing.T, opts ...apptest.Option) *server {
	t.Helper()
	dns := dnstest.Start(t, nil)
	base := []apptest.Option{func(c *app.Config) { c.DNSServer = dns.Addr(); c.DefaultDomain = defaultShortDomain }}
	return &server{Server: apptest.Start(t, append(base, opts...)...), DNS: dns}
}

// trustLocal makes the test client (127.0.0.1) a trusted proxy, so that its
// X-Forwarded-For names the visitor.
func trustLocal(c *app.Config) { c.TrustedProxies = "127.0.0.1/32" }

// visit sends one request to a short link (or any path) without an API key.
// headers are name, value pairs; "User-Agent" with an empty value sends no
// User-Agent at all.
func (s *server) visit(method, path string, headers ...string) apptest.Response {
	return s.Do(method, path, "", nil, headers...)
}

// get is a GET of path by a browser with user agent ua.
func (s *server) get(path, ua string, headers ...string) apptest.Response {
	return s.visit("GET", path, append([]string{"User-Agent", ua}, headers...)...)
}

// newLink creates a link with the operator key and returns it.
func (s *server) newLink(t *testing.T, body map[string]any) map[string]any {
	t.Helper()
	if _, ok := body["enable_conversion_tracking"]; !ok {
		body["enable_conversion_tracking"] = false
	}
	return s.MustCreate("/v1/links", op, body)
}

// link reads a link by id.
func (s *server) link(t *testing.T, id string) map[string]any {
	t.Helper()
	r := s.Do("GET", "/v1/links/"+id, op, nil)
	if r.Status != http.StatusOK {
		t.Fatalf("GET link %s: %d %s", id, r.Status, r.Body)
	}
	return r.JSON(t)
}

// clicks reads a link's click count.
func (s *server) clicks(t *testing.T, id string) int {
	t.Helper()
	n, ok := s.link(t, id)["clicks"].(float64)
	if !ok {
		t.Fatalf("link %s has no numeric clicks", id)
	}
	return int(n)
}

// wantClicks checks a link's click count.
func (s *server) wantClicks(t *testing.T, id string, want int) {
	t.Helper()
	if got := s.clicks(t, id); got != want {
		t.Errorf("link %s: clicks = %d, want %d", id, got, want)
	}
}

// day returns the link's only daily statistics record (all clicks of a test
// fall on one UTC day, unless the test runs across midnight: then it is
// skipped rather than flaky).
func (s *server) day(t *testing.T, id string) map[string]any {
	t.Helper()
	r := s.Do("GET", "/v1/stats/links/"+id, op, nil)
	if r.Status != http.StatusOK {
		t.Fatalf("daily stats of %s: %d %s", id, r.Status, r.Body)
	}
	days := r.List(t)
	if len(days) == 2 {
		t.Skip("the clicks straddle midnight UTC")
	}
	if len(days) != 1 {
		t.Fatalf("daily stats of %s: %d records, want 1: %s", id, len(days), r.Body)
	}
	return days[0].(map[string]any)
}

// summary returns the link's statistics summary.
func (s *server) summary(t *testing.T, id string) map[string]any {
	t.Helper()
	r := s.Do("GET", "/v1/stats/links/"+id+"/summary", op, nil)
	if r.Status != http.StatusOK {
		t.Fatalf("summary of %s: %d %s", id, r.Status, r.Body)
	}
	return r.JSON(t)
}

// wantNoStats checks that a link was never clicked as far as the statistics
// know: 404 "No stats found for this link".
func (s *server) wantNoStats(t *testing.T, id string) {
	t.Helper()
	r := s.Do("GET", "/v1/stats/links/"+id, op, nil)
	if r.Status != http.StatusNotFound || r.Detail(t) != "No stats found for this link" {
		t.Errorf("stats of a never-clicked link: %d %s", r.Status, r.Body)
	}
}

// events returns the ClickRecorded events of a link, read from the event
// store (the facts each counted click carries).
func (s *server) events(t *testing.T, linkID string) []click.Recorded {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st := s.App.Store()
	if _, ok, err := st.StreamVersion(ctx, click.Stream(linkID)); err != nil {
		t.Fatal(err)
	} else if !ok {
		return nil
	}
	recs, err := st.ReadStream(ctx, click.Stream(linkID), 0, 100_000)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]click.Recorded, 0, len(recs))
	for _, re := range recs {
		if re.Type != click.EventRecorded {
			t.Fatalf("event %s in a click stream", re.Type)
		}
		var c click.Recorded
		if err := json.Unmarshal(re.Data, &c); err != nil {
			t.Fatalf("ClickRecorded %s: %v", re.Data, err)
		}
		out = append(out, c)
	}
	return out
}

func str(m map[string]any, k string) string {
	s, _ := m[k].(string)
	return s
}

// counts reads a {name: count} object of a statistics record.
func counts(t *testing.T, rec map[string]any, field string) map[string]int {
	t.Helper()
	m, ok := rec[field].(map[string]any)
	if !ok {
		t.Fatalf("%s is %T, want an object: %v", field, rec[field], rec[field])
	}
	out := map[string]int{}
	for k, v := range m {
		n, ok := v.(float64)
		if !ok {
			t.Fatalf("%s[%q] is %T", field, k, v)
		}
		if n != 0 {
			out[k] = int(n)
		}
	}
	return out
}

// wantCounts compares a {name: count} object with want (zero counts are
// ignored on both sides).
func wantCounts(t *testing.T, rec map[string]any, field string, want map[string]int) {
	t.Helper()
	got := counts(t, rec, field)
	for k, v := range want {
		if v == 0 {
			delete(want, k)
		}
	}
	if len(got) != len(want) {
		t.Errorf("%s = %v, want %v", field, got, want)
		return
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v, want %v", field, got, want)
			return
		}
	}
}

func num(t *testing.T, m map[string]any, k string) int {
	t.Helper()
	n, ok := m[k].(float64)
	if !ok {
		t.Fatalf("%s is %T (%v), want a number", k, m[k], m[k])
	}
	return int(n)
}

// wantRedirect checks a 302 to want, not cacheable by the browser (a cached
// redirect would never be counted again).
func wantRedirect(t *testing.T, what string, r apptest.Response, want string) {
	t.Helper()
	if r.Status != http.StatusFound {
		t.Errorf("%s: status %d, want 302: %s", what, r.Status, r.Body)
		return
	}
	if got := r.Header.Get("Location"); got != want {
		t.Errorf("%s: Location %q, want %q", what, got, want)
	}
	if cc := r.Header.Get("Cache-Control"); !strings.Contains(cc, "no-store") {
		t.Errorf("%s: Cache-Control %q lets the redirect be cached", what, cc)
	}
}

// wantPage checks an HTML answer of status whose body contains every text.
func wantPage(t *testing.T, what string, r apptest.Response, status int, texts ...string) {
	t.Helper()
	if r.Status != status {
		t.Errorf("%s: status %d, want %d: %s", what, r.Status, status, r.Body)
		return
	}
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/html") {
		t.Errorf("%s: Content-Type %q, want text/html", what, ct)
	}
	if loc := r.Header.Get("Location"); loc != "" {
		t.Errorf("%s: an HTML page with Location %q", what, loc)
	}
	body := string(r.Body)
	if !strings.Contains(strings.ToLower(body), "<html") {
		t.Errorf("%s: body is not an HTML page: %s", what, body)
	}
	for _, x := range texts {
		if !strings.Contains(body, x) {
			t.Errorf("%s: page lacks %q: %s", what, x, body)
		}
	}
}

// rawResult is one answer of a request sent from any goroutine.
type rawResult struct {
	Status   int
	Location string
	Err      error
}

// raw sends a request without a testing.T (safe in goroutines).
func raw(s *server, method, path string, headers ...string) rawResult {
	req, err := http.NewRequest(method, s.URL+path, nil)
	if err != nil {
		return rawResult{Err: err}
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := raceClient.Do(req)
	if err != nil {
		return rawResult{Err: err}
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return rawResult{Status: resp.StatusCode, Location: resp.Header.Get("Location")}
}

// raceClient sends the concurrent requests of races. It keeps no idle
// connections: a connection dialled for a request that another connection
// served would wait idle, never used, and the server's graceful shutdown
// waits 5 s for such never-used connections.
var raceClient = &http.Client{
	Timeout:       30 * time.Second,
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	Transport:     &http.Transport{DisableKeepAlives: true},
}

// race runs f n times at once, released together, and returns the answers.
func race(n int, f func(i int) rawResult) []rawResult {
	out := make([]rawResult, n)
	var wg sync.WaitGroup
	gate := make(chan struct{})
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			<-gate
			out[i] = f(i)
		}(i)
	}
	close(gate)
	wg.Wait()
	return out
}

// statuses counts the statuses of answers, failing on transport errors.
func statuses(t *testing.T, rs []rawResult) map[int]int {
	t.Helper()
	m := map[int]int{}
	for _, r := range rs {
		if r.Err != nil {
			t.Fatalf("request failed: %v", r.Err)
		}
		m[r.Status]++
	}
	return m
}

// query parses the query of a Location.
func query(t *testing.T, loc string) url.Values {
	t.Helper()
	u, err := url.Parse(loc)
	if err != nil {
		t.Fatalf("Location %q: %v", loc, err)
	}
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		t.Fatalf("Location %q has a malformed query: %v", loc, err)
	}
	return q
}

// form is a form-encoded password post body.
func form(password string) string { return url.Values{"password": {password}}.Encode() }
