// Package browser_test runs Radar end to end in a real browser: a whole
// linkd (apptest), a separate "customer's site" that includes radar.js from
// it, and headless Chromium (internal/testsupport/browser) visiting that
// site; the reports are read back over HTTP with a read key. Without a
// Chromium the tests skip.
package browser_test

import (
	"context"
	"encoding/json"
	"fmt"
	"html/template"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/linkd/linkd/cmd/linkd/app/apptest"
	"github.com/linkd/linkd/internal/testsupport/browser"
)

// desktopUA replaces Chromium's own user agent. Headless Chromium says
// "HeadlessChrome", which linkd rightly counts as an automated browser: it
// records none of its page views and counts none of its clicks. The test
// plays a person, so it sends the user agent of an ordinary desktop Chrome.
const desktopUA = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36"

// The customer's site: every page includes the tracker from linkd, as the
// snippet of docs/radar-tracker.md does. The page's origin is the site, the
// script's is linkd, so the tracker posts cross-origin, as in production.
var sitePage = template.Must(template.New("page").Parse(`<!doctype html>
<html><head><title>{{.Title}}</title>
<script defer src="{{.Linkd}}/radar.js" data-key="{{.Key}}"></script>
</head><body><h1 id="title">{{.Title}}</h1></body></html>`))

func newSite(t *testing.T, linkdURL, key string) *httptest.Server {
	mux := http.NewServeMux()
	serve := func(title string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			_ = sitePage.Execute(w, map[string]string{"Title": title, "Linkd": linkdURL, "Key": key})
		}
	}
	mux.HandleFunc("GET /{$}", serve("Home"))
	mux.HandleFunc("GET /landing", serve("Landing"))
	mux.HandleFunc("GET /next", serve("Next"))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// reports reads the Radar reports with a read key and keeps the last body
// of each, to show them when a wait fails.
type reports struct {
	s     *apptest.Server
	key   string
	rng   string // start=...&end=...
	paths []string
	last  map[string]string
	until time.Time // no wait goes past it
}

func (r *reports) get(t *testing.T, path string) map[string]any {
	t.Helper()
	full := path + "&" + r.rng
	if !strings.Contains(path, "?") {
		full = path + "?" + r.rng
	}
	resp := r.s.Do("GET", full, r.key, nil)
	if _, ok := r.last[path]; !ok {
		r.paths = append(r.paths, path)
	}
	r.last[path] = fmt.Sprintf("%d %s", resp.Status, strings.TrimSpace(string(resp.Body)))
	if resp.Status != http.StatusOK {
		t.Fatalf("GET %s: %d %s", full, resp.Status, resp.Body)
	}
	var m map[string]any
	if err := json.Unmarshal(resp.Body, &m); err != nil {
		t.Fatalf("GET %s: %v: %s", full, err, resp.Body)
	}
	return m
}

// waitFor reads the reports (check) until check finds nothing wrong, and
// fails t after timeout with what was still wrong and the last bodies.
func (r *reports) waitFor(t *testing.T, what string, timeout time.Duration, check func() []string) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	if deadline.After(r.until) {
		deadline, timeout = r.until, time.Until(r.until).Round(time.Millisecond)
	}
	for {
		problems := check()
		if len(problems) == 0 {
			return
		}
		if time.Now().After(deadline) {
			var b strings.Builder
			for _, p := range r.paths {
				fmt.Fprintf(&b, "\nGET %s:\n  %s", p, r.last[p])
			}
			t.Fatalf("%s: not within %v:\n  %s\nlast reports:%s", what, timeout, strings.Join(problems, "\n  "), b.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Helpers to read decoded JSON without panicking on an unexpected shape.
func obj(v any) map[string]any { m, _ := v.(map[string]any); return m }
func arr(v any) []any          { a, _ := v.([]any); return a }

// expect collects what differs from the wanted values.
type expect []string

func (e *expect) eq(what string, got, want any) {
	if fmt.Sprint(got) != fmt.Sprint(want) {
		*e = append(*e, fmt.Sprintf("%s = %v, want %v", what, got, want))
	}
}

func (e *expect) ok(what string, ok bool) {
	if !ok {
		*e = append(*e, what)
	}
}

// names returns the values of key k of a list of objects, sorted.
func names(list []any, k string) []string {
	var out []string
	for _, it := range list {
		out = append(out, fmt.Sprint(obj(it)[k]))
	}
	sort.Strings(out)
	return out
}

var hexID = regexp.MustCompile(`^[0-9a-f]{32}$`)

// TestRadarInBrowser: a visit with an SPA navigation, a custom event and
// identify, read back in every report; then, in a fresh browser profile (a
// new visitor), the journey from a click on a tracked short link through
// the real redirect to the landing page and a sale on its tracking id.
func TestRadarInBrowser(t *testing.T) {
	began := time.Now()
	budget := began.Add(45 * time.Second) // for the whole test, on failure too
	ctx := browser.Start(t)

	s := apptest.Start(t)
	alice := s.NewKey("alice", "full", nil)
	project, _ := s.MustCreate("/v1/projects", alice, map[string]any{"name": "Site"})["id"].(string)
	// The site's pages are on 127.0.0.1 (another port than linkd): the
	// browser sends Origin http://127.0.0.1:port, and the allowed list
	// compares host names without the port (domain/apikey/hostnames.go).
	pk, _ := s.MustCreate("/v1/api-keys", alice, map[string]any{"name": "tracker", "kind": "publishable", "project_id": project,
		"allowed_hostnames": []string{"127.0.0.1"}})["key"].(string)
	read, _ := s.MustCreate("/v1/api-keys", alice, map[string]any{"name": "reports", "access": "read_only", "project_id": project})["key"].(string)
	site := newSite(t, s.URL, pk)
	siteURL, _ := url.Parse(site.URL)
	if siteURL.Host == s.Host {
		t.Fatalf("site and linkd share the origin %s", site.URL)
	}

	rep := &reports{s: s, key: read, last: map[string]string{}, until: budget,
		rng: "start=" + began.Add(-time.Hour).UTC().Format(time.RFC3339) + "&end=" + began.Add(time.Hour).UTC().Format(time.RFC3339)}

	// tab opens a tab in the browser profile of parent, as a desktop Chrome.
	tab := func(parent context.Context, opts ...chromedp.ContextOption) context.Context {
		tctx, cancel := chromedp.NewContext(parent, opts...)
		t.Cleanup(cancel)
		tctx, cancel = context.WithDeadline(tctx, budget)
		t.Cleanup(cancel)
		ua := chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			_, err := cdp.Call(ctx, tg, emulation.SetUserAgentOverride, emulation.SetUserAgentOverrideParams{UserAgent: desktopUA})
			return err
		})
		if err := chromedp.Do(tctx, ua); err != nil {
			t.Fatalf("user agent: %v", err)
		}
		return tctx
	}
	eval := func(tctx context.Context, js string) string {
		t.Helper()
		v, err := chromedp.Run(tctx, chromedp.Evaluate[string](js))
		if err != nil {
			t.Fatalf("%s: %v", js, err)
		}
		return v
	}
	// loaded waits until radar.js has run on the page (window.radar is
	// then the loaded tracker, with .v set).
	loaded := func(tctx context.Context) {
		t.Helper()
		if err := chromedp.Do(tctx, chromedp.Poll[chromedp.Void](`window.radar && window.radar.v === 1 ? {} : null`, chromedp.WithPollingTimeout(10*time.Second))); err != nil {
			t.Fatalf("radar.js did not load: %v", err)
		}
	}

	// 1. A visit: page view, SPA navigation, custom event, identify.
	ada := tab(ctx)
	if err := chromedp.Do(ada, chromedp.Navigate(site.URL+"/")); err != nil {
		t.Fatalf("open the site: %v", err)
	}
	loaded(ada)
	if ua := eval(ada, `navigator.userAgent`); ua != desktopUA {
		t.Fatalf("user agent %q, want %q", ua, desktopUA)
	}
	eval(ada, `history.pushState({}, '', '/next'); radar.track('Signup', {plan: 'pro'}); radar.identify({name: 'Ada', email: 'ada@example.com'}); ''`)
	adaID := eval(ada, `localStorage.getItem('radar_vid')`)
	if !hexID.MatchString(adaID) {
		t.Fatalf("visitor id in localStorage: %q", adaID)
	}

	rep.waitFor(t, "the visit in the reports", 20*time.Second, func() []string {
		var e expect
		o := obj(rep.get(t, "/api/v1/radar/overview")["data"])
		e.eq("overview pageviews", o["pageviews"], 2)
		e.eq("overview people", o["people"], 1)
		e.eq("overview visits", o["visits"], 1)
		e.eq("overview events", o["events"], 1)
		b := obj(rep.get(t, "/api/v1/radar/breakdowns")["data"])
		pages := arr(obj(b["pages"])["top"])
		e.eq("breakdowns pages", names(pages, "pathname"), []string{"/", "/next"})
		for _, p := range pages {
			e.eq("people of page "+fmt.Sprint(obj(p)["pathname"]), obj(p)["people"], 1)
		}
		e.eq("breakdowns events", names(arr(b["events"]), "event_name"), []string{"Signup"})
		e.eq("breakdowns hostnames", fmt.Sprint(b["hostnames"]), "[127.0.0.1]")
		browsers := fmt.Sprint(obj(b["devices"])["browsers"])
		e.ok("breakdowns browsers "+browsers+" lack Chrome", strings.Contains(browsers, "Chrome"))
		ce := arr(rep.get(t, "/api/v1/radar/custom-events")["data"])
		e.eq("custom-events", len(ce), 1)
		ceJSON, _ := json.Marshal(ce)
		e.ok("custom-events "+string(ceJSON)+" lack Signup", strings.Contains(string(ceJSON), `"Signup"`))
		people := arr(rep.get(t, "/api/v1/radar/people")["data"])
		e.eq("people", names(people, "visitorId"), []string{adaID})
		if len(e) > 0 {
			return e
		}
		d := obj(rep.get(t, "/api/v1/radar/people/details?visitorId="+adaID)["data"])
		v := obj(d["visitor"])
		e.eq("visitor name", v["name"], "Ada")
		e.eq("visitor email", v["email"], "ada@example.com")
		e.eq("visitor status", v["status"], "identified")
		e.eq("visitor sessions", v["sessions"], 1)
		e.eq("visitor browser", v["browser"], "Chrome")
		e.eq("sessions", len(arr(d["sessions"])), 1)
		return e
	})

	// 2. The journey, in a fresh browser profile: its localStorage is
	// empty, so it is a new visitor, who comes through the short link.
	link := s.MustCreate("/v1/links", alice, map[string]any{"original_url": site.URL + "/landing", "enable_conversion_tracking": true})
	code, _ := link["code"].(string)
	if code == "" {
		t.Fatalf("link without code: %v", link)
	}
	grace := tab(ctx, chromedp.WithNewBrowserContext())
	if err := chromedp.Do(grace, chromedp.Navigate(s.URL+"/"+code)); err != nil {
		t.Fatalf("follow the short link: %v", err)
	}
	loaded(grace)
	landed, err := url.Parse(eval(grace, `location.href`))
	if err != nil || landed.Host != siteURL.Host || landed.Path != "/landing" {
		t.Fatalf("the short link led to %v (%v), want %s/landing?svc_tid=...", landed, err, site.URL)
	}
	tid := landed.Query().Get("svc_tid")
	if tid == "" {
		t.Fatalf("no svc_tid in %s", landed)
	}
	if got := eval(grace, `localStorage.getItem('radar_tid')`); got != tid {
		t.Errorf("radar_tid in localStorage %q, want %q", got, tid)
	}
	graceID := eval(grace, `localStorage.getItem('radar_vid')`)
	if !hexID.MatchString(graceID) || graceID == adaID {
		t.Fatalf("visitor id of the fresh profile %q (the first visitor is %s)", graceID, adaID)
	}

	// The landing page view joins the click: wait for it before the sale,
	// so the sale is seen joined to a visit.
	rep.waitFor(t, "the landing page view", 20*time.Second, func() []string {
		var e expect
		o := obj(rep.get(t, "/api/v1/radar/overview")["data"])
		e.eq("overview pageviews", o["pageviews"], 3)
		e.eq("overview people", o["people"], 2)
		b := obj(rep.get(t, "/api/v1/radar/breakdowns")["data"])
		e.eq("breakdowns pages", names(arr(obj(b["pages"])["top"]), "pathname"), []string{"/", "/landing", "/next"})
		if len(e) > 0 {
			return e // the visit may not be in yet: its details would be a 404
		}
		v := obj(obj(rep.get(t, "/api/v1/radar/people/details?visitorId="+graceID)["data"])["visitor"])
		src, _ := v["source"].(string)
		e.ok(fmt.Sprintf("visitor source %q does not name the short link %s", src, code), strings.HasSuffix(src, "/"+code))
		return e
	})

	sale := s.Do("POST", "/api/events/sale", alice, map[string]any{"trackingId": tid, "customer": map[string]any{"externalId": "cus_1"}, "amount": 49.99, "currency": "usd"})
	if sale.Status != http.StatusOK {
		t.Fatalf("sale: %d %s", sale.Status, sale.Body)
	}

	rep.waitFor(t, "the sale in the reports", 20*time.Second, func() []string {
		var e expect
		o := obj(rep.get(t, "/api/v1/radar/overview")["data"])
		e.eq("overview sales", o["sales"], 1)
		e.eq("overview revenue", o["revenue"], 49.99)
		e.eq("overview revenue_currency", o["revenue_currency"], "usd")
		e.eq("overview people", o["people"], 2)
		e.eq("overview conversion_rate", o["conversion_rate"], 50)
		d := obj(rep.get(t, "/api/v1/radar/people/details?visitorId="+graceID)["data"])
		v := obj(d["visitor"])
		e.eq("journey visitor revenue", v["revenue"], 49.99)
		src, _ := v["source"].(string)
		e.ok(fmt.Sprintf("journey visitor source %q does not name the short link %s", src, code), strings.HasSuffix(src, "/"+code))
		e.eq("journey visitor sessions", v["sessions"], 1)
		a := obj(obj(rep.get(t, "/api/v1/radar/people/details?visitorId="+adaID)["data"])["visitor"])
		e.eq("first visitor revenue", a["revenue"], 0)
		return e
	})
}
