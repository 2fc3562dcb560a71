package radarjs

import (
	"context"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/linkd/linkd/internal/testsupport/browser"
)

// hit is one body that the fake collect endpoint received.
type hit struct {
	Path        string         // where it was POSTed
	ContentType string         // of the request
	Type        string         `json:"type"`
	URL         string         `json:"url"`
	Referrer    *string        `json:"referrer"`
	VisitorID   string         `json:"visitorId"`
	Name        string         `json:"name"`
	Props       map[string]any `json:"props"`
	Email       string         `json:"email"`
	TrackingID  string         `json:"trackingId"`
	Key         string         `json:"key"`
}

func (h hit) String() string {
	b, _ := json.Marshal(h)
	return string(b)
}

// collector is a fake Radar collect endpoint: it records every body.
type collector struct {
	mu   sync.Mutex
	hits []hit
	bad  []string
}

func (c *collector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	h := hit{Path: r.URL.Path, ContentType: r.Header.Get("Content-Type")}
	err := json.Unmarshal(b, &h)
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case r.Method != http.MethodPost:
		c.bad = append(c.bad, r.Method+" "+r.URL.Path)
	case err != nil:
		c.bad = append(c.bad, fmt.Sprintf("%s: %v: %q", r.URL.Path, err, b))
	case !strings.HasPrefix(h.ContentType, "text/plain"):
		c.bad = append(c.bad, fmt.Sprintf("%s: Content-Type %q, want text/plain (no CORS preflight)", r.URL.Path, h.ContentType))
	}
	if err == nil {
		c.hits = append(c.hits, h)
	}
	w.WriteHeader(http.StatusAccepted)
}

// waitFor polls the recorded hits until n of them (with the key) match,
// and returns those; it fails t after the deadline.
func (c *collector) waitFor(t *testing.T, key, what string, n int, match func(hit) bool) []hit {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var got []hit
		c.mu.Lock()
		all := append([]hit(nil), c.hits...)
		bad := append([]string(nil), c.bad...)
		c.mu.Unlock()
		for _, b := range bad {
			t.Errorf("collect: %s", b)
		}
		for _, h := range all {
			if h.Key == key && match(h) {
				got = append(got, h)
			}
		}
		if len(got) >= n {
			return got
		}
		if time.Now().After(deadline) || len(bad) > 0 {
			var lines []string
			for _, h := range all {
				lines = append(lines, h.String())
			}
			t.Fatalf("no %s (%d of %d) within 10s; received:\n%s", what, len(got), n, strings.Join(lines, "\n"))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (c *collector) count(key string, match func(hit) bool) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, h := range c.hits {
		if h.Key == key && match(h) {
			n++
		}
	}
	return n
}

// The test page: the pre-load queue, the tag with its data attributes, an
// outbound and a download link, and a listener on window (it runs after
// the script's delegated one on document) that keeps clicks from
// navigating. With ?nobeacon, the page has no navigator.sendBeacon, so the
// script falls back to fetch.
var pageHTML = template.Must(template.New("page").Parse(`<!doctype html>
<html><head><title>Radar test</title>
{{if .NoBeacon}}<script>Object.defineProperty(navigator, "sendBeacon", {value: undefined})</script>{{end}}
<script>
window.radar = window.radar || function(){(window.radar.q = window.radar.q || []).push(arguments)};
radar('track', 'Queued', {a: 1});
</script>
<script defer src="/radar.js" data-key="{{.Key}}" data-outbound data-downloads{{if .API}} data-api="{{.API}}"{{end}}></script>
</head><body>
<a id="out" href="https://elsewhere.example/path?q=1">out</a>
<a id="dl" href="/files/report.pdf"><span id="dlspan">download</span></a>
<a id="in" href="/other">in</a>
<script>window.addEventListener("click", function (e) { e.preventDefault() })</script>
</body></html>`))

func newSite(t *testing.T) (*httptest.Server, *collector) {
	c := &collector{}
	mux := http.NewServeMux()
	mux.Handle("/radar.js", Handler())
	mux.Handle("POST /api/v1/radar/collect", c)
	mux.Handle("POST /custom/collect", c)
	mux.HandleFunc("GET /start", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, `<!doctype html><a id="go" href="/page?svc_tid=tid-123&amp;x=1">go</a>`)
	})
	page := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		q := r.URL.Query()
		key := q.Get("key")
		if key == "" {
			key = "svc_pk_test"
		}
		api := ""
		if q.Has("api") {
			api = "http://" + r.Host + "/custom/collect"
		}
		_ = pageHTML.Execute(w, map[string]any{"Key": key, "API": api, "NoBeacon": q.Has("nobeacon")})
	}
	mux.HandleFunc("GET /page", page)
	mux.HandleFunc("GET /next", page)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv, c
}

var hexID = regexp.MustCompile(`^[0-9a-f]{32}$`)

// TestBrowser loads the script in headless Chromium: one browser, a tab
// for each subtest.
func TestBrowser(t *testing.T) {
	began := time.Now()
	ctx := browser.Start(t)
	srv, c := newSite(t)
	newTab := func(t *testing.T) context.Context {
		tab, cancel := chromedp.NewContext(ctx)
		t.Cleanup(cancel)
		tab, cancel = context.WithTimeout(tab, 30*time.Second)
		t.Cleanup(cancel)
		return tab
	}
	eval := func(t *testing.T, tab context.Context, js string) {
		t.Helper()
		if _, err := chromedp.Run(tab, chromedp.Evaluate[any](js)); err != nil {
			t.Fatalf("%s: %v", js, err)
		}
	}
	do := func(t *testing.T, tab context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(tab, steps...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}

	t.Run("tracks", func(t *testing.T) {
		tab := newTab(t)
		const key = "svc_pk_test"
		landing := srv.URL + "/page?svc_tid=tid-123&x=1"
		next := srv.URL + "/next"
		// A click on a link of /start, so the page has a referrer.
		do(t, tab, "open /start and follow its link", chromedp.Navigate(srv.URL+"/start"), chromedp.Click(chromedp.CSS("#go")))

		first := c.waitFor(t, key, "page view of the landing page", 1, func(h hit) bool { return h.Type == "pageview" && h.URL == landing })[0]
		if first.Referrer == nil || *first.Referrer != srv.URL+"/start" {
			t.Errorf("first page view: referrer %v, want %s", first.Referrer, srv.URL+"/start")
		}
		vid := first.VisitorID
		if !hexID.MatchString(vid) {
			t.Errorf("visitorId %q: want 32 hex digits", vid)
		}
		if first.TrackingID != "tid-123" || first.Path != "/api/v1/radar/collect" {
			t.Errorf("first page view: %v", first)
		}
		q := c.waitFor(t, key, "queued event", 1, func(h hit) bool { return h.Type == "event" && h.Name == "Queued" })[0]
		if len(q.Props) != 1 || q.Props["a"] != float64(1) || q.VisitorID != vid || q.TrackingID != "tid-123" || q.URL != landing {
			t.Errorf("queued event: %v", q)
		}
		do(t, tab, "wait for the links", chromedp.WaitReady(chromedp.CSS("#dl")))

		eval(t, tab, `history.pushState({}, '', '/next')`)
		pv := c.waitFor(t, key, "page view of /next", 1, func(h hit) bool { return h.Type == "pageview" && h.URL == next })[0]
		if pv.VisitorID != vid || pv.TrackingID != "tid-123" || pv.Referrer == nil || *pv.Referrer != "" {
			t.Errorf("SPA page view: %v (want visitorId %s, trackingId tid-123, referrer \"\")", pv, vid)
		}

		eval(t, tab, `radar.track('Signup', {plan: 'pro', seats: 3, trial: false, skip: {x: 1}})`)
		ev := c.waitFor(t, key, "Signup event", 1, func(h hit) bool { return h.Type == "event" && h.Name == "Signup" })[0]
		want := map[string]any{"plan": "pro", "seats": float64(3), "trial": false}
		if fmt.Sprint(ev.Props) != fmt.Sprint(want) || ev.VisitorID != vid || ev.URL != next || ev.TrackingID != "tid-123" {
			t.Errorf("Signup: %v, want props %v", ev, want)
		}
		eval(t, tab, `radar('track', 'NoProps')`)
		if np := c.waitFor(t, key, "NoProps event", 1, func(h hit) bool { return h.Name == "NoProps" })[0]; np.Props != nil {
			t.Errorf("event without props sent props: %v", np)
		}

		eval(t, tab, `radar.identify({name: 'Ada', email: 'ada@example.com'})`)
		id := c.waitFor(t, key, "identify", 1, func(h hit) bool { return h.Type == "identify" })[0]
		if id.Name != "Ada" || id.Email != "ada@example.com" || id.VisitorID != vid {
			t.Errorf("identify: %v", id)
		}

		// The same URL again sends nothing: the marker event, sent after
		// it, arrives and no second page view of /next has.
		eval(t, tab, `history.replaceState({s: 1}, '', '/next'); radar.track('Marker')`)
		c.waitFor(t, key, "Marker event", 1, func(h hit) bool { return h.Name == "Marker" })
		if n := c.count(key, func(h hit) bool { return h.Type == "pageview" && h.URL == next }); n != 1 {
			t.Errorf("replaceState to the same URL: %d page views of /next, want 1", n)
		}

		do(t, tab, "click the outbound link", chromedp.Click(chromedp.CSS("#out")))
		out := c.waitFor(t, key, "outbound click", 1, func(h hit) bool { return h.Name == "Outbound Link: Click" })[0]
		if out.Props["url"] != "https://elsewhere.example/path?q=1" {
			t.Errorf("outbound click: %v", out)
		}
		do(t, tab, "click in the download link", chromedp.Click(chromedp.CSS("#dlspan")))
		dl := c.waitFor(t, key, "download click", 1, func(h hit) bool { return h.Name == "File Download" })[0]
		if dl.Props["url"] != srv.URL+"/files/report.pdf" {
			t.Errorf("download click: %v", dl)
		}
		do(t, tab, "click the internal link", chromedp.Click(chromedp.CSS("#in")))

		// A reload is a new page load: same visitor (localStorage), and the
		// tracking id though /next has none in its query.
		do(t, tab, "reload", chromedp.Reload())
		re := c.waitFor(t, key, "page view after the reload", 2, func(h hit) bool { return h.Type == "pageview" && h.URL == next })[1]
		if re.VisitorID != vid || re.TrackingID != "tid-123" {
			t.Errorf("after reload: %v, want visitorId %s and trackingId tid-123", re, vid)
		}
		// Every Queued event is one page load's replay: two loads, two.
		c.waitFor(t, key, "queued event of the reloaded page", 2, func(h hit) bool { return h.Name == "Queued" })

		for _, h := range c.waitFor(t, key, "all", 0, func(hit) bool { return true }) {
			if h.Type == "event" && h.Props["url"] == srv.URL+"/other" {
				t.Errorf("the internal link sent an event: %v", h)
			}
		}
	})

	t.Run("data-api", func(t *testing.T) {
		tab := newTab(t)
		const key = "svc_pk_api"
		do(t, tab, "open the page", chromedp.Navigate(srv.URL+"/page?api&key="+key))
		c.waitFor(t, key, "page view", 1, func(h hit) bool { return h.Type == "pageview" })
		c.waitFor(t, key, "queued event", 1, func(h hit) bool { return h.Name == "Queued" })
		for _, h := range c.waitFor(t, key, "all", 0, func(hit) bool { return true }) {
			if h.Path != "/custom/collect" {
				t.Errorf("with data-api, POSTed to %s: %v", h.Path, h)
			}
		}
	})

	t.Run("fetch without sendBeacon", func(t *testing.T) {
		tab := newTab(t)
		const key = "svc_pk_fetch"
		do(t, tab, "open the page", chromedp.Navigate(srv.URL+"/page?nobeacon&key="+key))
		c.waitFor(t, key, "page view", 1, func(h hit) bool { return h.Type == "pageview" })
		eval(t, tab, `radar.track('Fetched', {n: 1})`)
		c.waitFor(t, key, "event", 1, func(h hit) bool { return h.Name == "Fetched" })
	})

	// radar_ignore: the script loads and answers calls, and sends nothing
	// (it never calls sendBeacon, counted in the page).
	t.Run("radar_ignore", func(t *testing.T) {
		tab := newTab(t)
		const key = "svc_pk_ignored"
		do(t, tab, "open the page", chromedp.Navigate(srv.URL+"/page?key="+key))
		c.waitFor(t, key, "page view before opting out", 1, func(h hit) bool { return h.Type == "pageview" })
		eval(t, tab, `localStorage.radar_ignore = "true"`)
		do(t, tab, "reload", chromedp.Reload(), chromedp.WaitReady(chromedp.CSS("#dl")))
		n, err := chromedp.Run(tab, chromedp.Evaluate[int](`(function () {
			var n = 0, b = navigator.sendBeacon, f = window.fetch;
			navigator.sendBeacon = function () { n++; return b.apply(navigator, arguments) };
			window.fetch = function () { n++; return f.apply(window, arguments) };
			radar.track('Ignored'); radar.identify({name: 'X'}); history.pushState({}, '', '/ignored');
			return typeof radar.track == 'function' ? n : -1;
		})()`))
		if err != nil || n != 0 {
			t.Errorf("with radar_ignore: %d sends (%v), want 0", n, err)
		}
		eval(t, tab, `localStorage.removeItem("radar_ignore")`)
	})
	t.Logf("browser tests took %v", time.Since(began).Round(time.Millisecond))
}
