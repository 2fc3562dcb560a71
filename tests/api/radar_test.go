package api_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/linkd/linkd/cmd/linkd/app/apptest"
)

// Radar (spec 2.9, 2.10, 4.7; DECISIONS.md "Radar"), through real HTTP:
// collection as the tracker sends it, the reports, and the journey from a
// short-link click to a visit to a sale.

const (
	chromeUA  = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36"
	safariUA  = "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1"
	googlebot = "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)"
)

type radarEnv struct {
	s     *apptest.Server
	clock interface{ Advance(time.Duration) time.Time }
	owner string // alice's full key
	read  string // a secret key bound to the project
	pk    string // a publishable key bound to the project
	day   string // today, YYYY-MM-DD
}

func newRadar(t *testing.T) *radarEnv {
	t.Helper()
	// Today at 09:00 UTC: the tests advance the clock by half an hour and
	// more, and read the day's reports; started at the real time, a run
	// after 23:29 UTC crossed midnight (the next day's visit fell outside
	// the range).
	clk := apptest.NewClock()
	now := clk.Now()
	clk.Set(time.Date(now.Year(), now.Month(), now.Day(), 9, 0, 0, 0, time.UTC))
	s := start(t, apptest.WithClock(clk))
	alice := s.NewKey("alice", "full", nil)
	project := str(s.MustCreate("/v1/projects", alice, map[string]any{"name": "Site"}), "id")
	pk := str(s.MustCreate("/v1/api-keys", alice, map[string]any{"name": "tracker", "kind": "publishable", "project_id": project,
		"allowed_hostnames": []string{"shop.example"}}), "key")
	read := str(s.MustCreate("/v1/api-keys", alice, map[string]any{"name": "reports", "access": "read_only", "project_id": project}), "key")
	return &radarEnv{s: s, clock: clk, owner: alice, read: read, pk: pk, day: clk.Now().Format(time.DateOnly)}
}

// collect sends a body as the tracker does: text/plain, the key inside.
func (e *radarEnv) collect(t *testing.T, ua string, body map[string]any) apptest.Response {
	t.Helper()
	if _, ok := body["key"]; !ok {
		body["key"] = e.pk
	}
	b, _ := json.Marshal(body)
	return e.s.Do("POST", "/api/v1/radar/collect", "", string(b), "Content-Type", "text/plain;charset=UTF-8",
		"Origin", "https://shop.example", "User-Agent", ua)
}

func (e *radarEnv) accepted(t *testing.T, ua string, body map[string]any) {
	t.Helper()
	if r := e.collect(t, ua, body); r.Status != http.StatusAccepted {
		t.Fatalf("collect %v: %d %s", body, r.Status, r.Body)
	}
}

func (e *radarEnv) get(t *testing.T, path string) map[string]any {
	t.Helper()
	r := e.s.Do("GET", path, e.read, nil)
	if r.Status != http.StatusOK {
		t.Fatalf("GET %s: %d %s", path, r.Status, r.Body)
	}
	return r.JSON(t)
}

func (e *radarEnv) rangeQ() string { return "start=" + e.day + "&end=" + e.day }

func num(t *testing.T, m map[string]any, k string) float64 {
	t.Helper()
	v, ok := m[k].(float64)
	if !ok {
		t.Fatalf("%s is %v (%T) in %v", k, m[k], m[k], m)
	}
	return v
}

func TestRadarCollectAndReport(t *testing.T) {
	t.Parallel()
	e := newRadar(t)
	// Ada: a page view, an SPA navigation, a custom event, identify.
	e.accepted(t, chromeUA, map[string]any{"type": "pageview", "url": "https://shop.example/?utm_source=newsletter", "referrer": "", "visitorId": "ada"})
	e.clock.Advance(90 * time.Second)
	e.accepted(t, chromeUA, map[string]any{"type": "pageview", "url": "https://shop.example/pricing", "visitorId": "ada"})
	e.accepted(t, chromeUA, map[string]any{"type": "event", "url": "https://shop.example/pricing", "visitorId": "ada", "name": "Signup", "props": map[string]any{"plan": "pro", "seats": 3}})
	e.accepted(t, chromeUA, map[string]any{"type": "identify", "visitorId": "ada", "name": "Ada Lovelace", "email": "ada@example.com"})
	// Bob, a second later: one page view from a referrer (a bounce).
	e.clock.Advance(time.Second)
	e.accepted(t, safariUA, map[string]any{"type": "pageview", "url": "https://www.shop.example/pricing", "referrer": "https://news.ycombinator.com/item?id=1", "visitorId": "bob"})
	// A crawler is answered and recorded nowhere.
	e.accepted(t, googlebot, map[string]any{"type": "pageview", "url": "https://shop.example/", "visitorId": "googlebot"})

	o := e.get(t, "/api/v1/radar/overview?"+e.rangeQ())["data"].(map[string]any)
	for k, want := range map[string]float64{"people": 2, "visits": 2, "pageviews": 3, "events": 1, "bounce_rate": 50, "avg_duration_s": 45, "sales": 0, "revenue": 0} {
		if got := num(t, o, k); got != want {
			t.Errorf("overview %s = %v, want %v", k, got, want)
		}
	}
	if o["avg_duration_mmss"] != "00:45" {
		t.Errorf("avg_duration_mmss %v", o["avg_duration_mmss"])
	}
	wantKeys(t, "overview", o, "people", "visits", "pageviews", "events", "revenue", "revenue_currency", "sales", "conversion_rate",
		"revenue_per_visitor", "bounce_rate", "avg_duration_s", "avg_duration_mmss")

	b := e.get(t, "/api/v1/radar/breakdowns?"+e.rangeQ())["data"].(map[string]any)
	pages := b["pages"].(map[string]any)["top"].([]any)
	if p := pages[0].(map[string]any); p["pathname"] != "/pricing" || p["people"] != 2.0 {
		t.Errorf("top page %v", pages)
	}
	sources := fmt.Sprint(b["sources"])
	for _, want := range []string{"newsletter", "news.ycombinator.com"} {
		if !strings.Contains(sources, want) {
			t.Errorf("sources %s lack %s", sources, want)
		}
	}
	ev := b["events"].([]any)[0].(map[string]any)
	if ev["event_name"] != "Signup" || ev["people"] != 1.0 || ev["events"] != 1.0 || ev["completion_rate"] != 50.0 {
		t.Errorf("events %v", ev)
	}
	if hosts := fmt.Sprint(b["hostnames"]); hosts != "[shop.example]" {
		t.Errorf("hostnames %s", hosts)
	}
	devices := b["devices"].(map[string]any)
	if br := fmt.Sprint(devices["browsers"]); !strings.Contains(br, "Chrome") || !strings.Contains(br, "Safari") {
		t.Errorf("browsers %s", br)
	}
	if lim := e.get(t, "/api/v1/radar/breakdowns?limit=1&"+e.rangeQ())["data"].(map[string]any); len(lim["pages"].(map[string]any)["top"].([]any)) != 1 {
		t.Errorf("limit=1 gave %v", lim["pages"])
	}

	ce := e.get(t, "/api/v1/radar/custom-events?limit=600")
	if ce["limit"] != 500.0 || len(ce["data"].([]any)) != 1 {
		t.Errorf("custom-events %v", ce)
	}
	if ce := e.get(t, "/api/v1/radar/custom-events"); ce["limit"] != 50.0 {
		t.Errorf("custom-events default limit %v", ce["limit"])
	}

	people := e.get(t, "/api/v1/radar/people?limit=1&"+e.rangeQ())
	first := people["data"].([]any)
	if len(first) != 1 || people["next_cursor"] == "" {
		t.Fatalf("people page 1: %v", people)
	}
	rest := e.get(t, "/api/v1/radar/people?limit=1&cursor="+people["next_cursor"].(string)+"&"+e.rangeQ())
	if ids := fmt.Sprint(first[0].(map[string]any)["visitorId"], " ", rest["data"].([]any)[0].(map[string]any)["visitorId"]); ids != "bob ada" {
		t.Errorf("people, most recent first: %s", ids)
	}

	d := e.get(t, "/api/v1/radar/people/details?visitorId=ada&"+e.rangeQ())["data"].(map[string]any)
	v := d["visitor"].(map[string]any)
	if v["name"] != "Ada Lovelace" || v["email"] != "ada@example.com" || v["status"] != "identified" || v["sessions"] != 1.0 ||
		v["browser"] != "Chrome" || v["source"] != "newsletter" {
		t.Errorf("visitor %v", v)
	}
	wantKeys(t, "visitor", v, "visitorId", "name", "email", "status", "countryCode", "countryName", "source", "browser", "device", "revenue", "sessions", "firstSeen", "lastSeen")
	sessions := d["sessions"].([]any)
	if len(sessions) != 1 || sessions[0].(map[string]any)["durationSeconds"] != 90.0 {
		t.Errorf("sessions %v", sessions)
	}
	wantKeys(t, "session", sessions[0].(map[string]any), "sessionId", "startTime", "endTime", "durationSeconds", "referrer", "device", "browser", "os")
	if hm := d["heatmap"].([]any); len(hm) != 1 || hm[0].(map[string]any)["date"] != e.day || hm[0].(map[string]any)["events"] != 3.0 {
		t.Errorf("heatmap %v", hm)
	}

	// 30 minutes without activity end a visit.
	e.clock.Advance(31 * time.Minute)
	e.accepted(t, chromeUA, map[string]any{"type": "pageview", "url": "https://shop.example/", "visitorId": "ada"})
	if v := e.get(t, "/api/v1/radar/people/details?visitorId=ada&"+e.rangeQ())["data"].(map[string]any); len(v["sessions"].([]any)) != 2 {
		t.Errorf("after 31 minutes: %v", v["sessions"])
	}
}

func TestRadarErrors(t *testing.T) {
	t.Parallel()
	e := newRadar(t)
	radarErr := func(r apptest.Response, status int, text string) {
		t.Helper()
		eventErr(t, r, status, text)
	}
	q := e.rangeQ()
	radarErr(e.s.Do("GET", "/api/v1/radar/overview?"+q, "", nil), 401, "Invalid API key")
	radarErr(e.s.Do("GET", "/api/v1/radar/overview?"+q, "svc_sk_nope", nil), 401, "Invalid API key")
	radarErr(e.s.Do("GET", "/api/v1/radar/overview?"+q, e.pk, nil), 401, "Invalid API key")
	radarErr(e.s.Do("GET", "/api/v1/radar/overview?"+q, e.owner, nil), 403, "API key is not bound to a project")
	for _, path := range []string{"/api/v1/radar/overview", "/api/v1/radar/breakdowns", "/api/v1/radar/people"} {
		for _, query := range []string{"", "?start=" + e.day, "?end=" + e.day, "?start=yesterday&end=" + e.day, "?start=" + e.day + "&end=2025-13-01"} {
			if r := e.s.Do("GET", path+query, e.read, nil); r.Status != 400 || r.JSON(t)["error"] == nil {
				t.Errorf("GET %s%s: %d %s", path, query, r.Status, r.Body)
			}
		}
	}
	for _, lim := range []string{"0", "-1", "x", "1.5"} {
		if r := e.s.Do("GET", "/api/v1/radar/breakdowns?limit="+lim+"&"+q, e.read, nil); r.Status != 400 {
			t.Errorf("limit=%s: %d %s", lim, r.Status, r.Body)
		}
	}
	radarErr(e.s.Do("GET", "/api/v1/radar/people/details?visitorId=nobody&"+q, e.read, nil), 404, "Visitor not found")

	// Collection.
	pv := map[string]any{"type": "pageview", "url": "https://shop.example/", "visitorId": "v1"}
	radarErr(e.collect(t, chromeUA, map[string]any{"type": "pageview", "url": "https://shop.example/", "key": "svc_pk_nope"}), 401, "Invalid API key")
	r := e.s.Do("POST", "/api/v1/radar/collect", "", `{"type":"pageview","url":"https://shop.example/","key":"`+e.pk+`"}`,
		"Content-Type", "text/plain", "Origin", "https://evil.example", "User-Agent", chromeUA)
	radarErr(r, 401, "Hostname not in allowed list")
	r = e.s.Do("POST", "/api/v1/radar/collect", "", `{"type":"pageview","url":"https://shop.example/"}`,
		"X-Publishable-Key", e.pk, "Origin", "https://shop.example", "User-Agent", chromeUA)
	if r.Status != http.StatusAccepted || r.Header.Get("Access-Control-Allow-Origin") != "https://shop.example" {
		t.Errorf("with the key in a header: %d %s %v", r.Status, r.Body, r.Header)
	}
	for name, body := range map[string]map[string]any{
		"no type":          {"url": "https://shop.example/"},
		"bad type":         {"type": "click", "url": "https://shop.example/"},
		"no url":           {"type": "pageview"},
		"not a url":        {"type": "pageview", "url": "javascript:alert(1)"},
		"long url":         {"type": "pageview", "url": "https://shop.example/" + strings.Repeat("a", 2000)},
		"event no name":    {"type": "event", "url": "https://shop.example/"},
		"long name":        {"type": "event", "url": "https://shop.example/", "name": strings.Repeat("n", 121)},
		"nested props":     {"type": "event", "url": "https://shop.example/", "name": "x", "props": map[string]any{"a": map[string]any{"b": 1}}},
		"too many props":   {"type": "event", "url": "https://shop.example/", "name": "x", "props": manyProps(31)},
		"identify nothing": {"type": "identify", "visitorId": "v1"},
	} {
		t.Run(name, func(t *testing.T) {
			body := eventErr(t, e.collect(t, chromeUA, body), 400, "Invalid payload")
			if d, _ := body["details"].([]any); len(d) == 0 {
				t.Errorf("no details: %v", body)
			}
		})
	}
	big := map[string]any{"type": "event", "url": "https://shop.example/", "name": "x", "props": map[string]any{"a": strings.Repeat("p", 9000)}}
	radarErr(e.collect(t, chromeUA, big), 413, "Request body too large")
	e.accepted(t, chromeUA, pv)

	// The preflight of a header-keyed call, for allowed origins only.
	pre := e.s.Do("OPTIONS", "/api/v1/radar/collect", "", nil, "Origin", "https://shop.example", "Access-Control-Request-Method", "POST")
	if pre.Status != http.StatusNoContent || pre.Header.Get("Access-Control-Allow-Origin") != "https://shop.example" {
		t.Errorf("preflight: %d %v", pre.Status, pre.Header)
	}
	if pre := e.s.Do("OPTIONS", "/api/v1/radar/collect", "", nil, "Origin", "https://evil.example"); pre.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("preflight from evil: %d %v", pre.Status, pre.Header)
	}
}

func manyProps(n int) map[string]any {
	m := map[string]any{}
	for i := range n {
		m[fmt.Sprint("k", i)] = i
	}
	return m
}

// The journey: a short-link click hands out svc_tid; the landing page's
// page view carries it; a lead and a sale on that click belong to the
// visitor (identified by the lead's customer), and the source is the link.
func TestRadarJourney(t *testing.T) {
	t.Parallel()
	e := newRadar(t)
	tid := trackingID(t, e.s, e.owner)
	e.accepted(t, chromeUA, map[string]any{"type": "pageview", "url": "https://shop.example/landing?svc_tid=" + tid, "visitorId": "grace"})
	e.accepted(t, chromeUA, map[string]any{"type": "pageview", "url": "https://shop.example/other", "visitorId": "walker"})
	okEvent(t, e.s.Do("POST", "/api/events/lead", e.owner, `{"trackingId":"`+tid+`","customer":{"externalId":"cus_g","firstname":"Grace","lastname":"Hopper","email":"grace@example.com"}}`))
	okEvent(t, e.s.Do("POST", "/api/events/sale", e.owner, `{"trackingId":"`+tid+`","customer":{"externalId":"cus_g"},"amount":49.99,"currency":"usd"}`))
	okEvent(t, e.s.Do("POST", "/api/events/sale", e.owner, `{"trackingId":"`+tid+`","customer":{"externalId":"cus_g"},"amount":2000,"currency":"jpy"}`))
	okEvent(t, e.s.Do("POST", "/api/events/sale", e.owner, `{"trackingId":"`+tid+`","customer":{"externalId":"cus_g"},"amount":10,"currency":"usd"}`))

	o := e.get(t, "/api/v1/radar/overview?"+e.rangeQ())["data"].(map[string]any)
	if o["sales"] != 3.0 || o["revenue"] != 59.99 || o["revenue_currency"] != "usd" || o["conversion_rate"] != 50.0 || o["revenue_per_visitor"] != 30.0 {
		t.Errorf("overview %v", o)
	}
	if o := e.get(t, "/api/v1/radar/overview?currency=jpy&"+e.rangeQ())["data"].(map[string]any); o["revenue"] != 2000.0 || o["revenue_currency"] != "jpy" {
		t.Errorf("overview in jpy %v", o)
	}
	v := e.get(t, "/api/v1/radar/people/details?visitorId=grace&"+e.rangeQ())["data"].(map[string]any)["visitor"].(map[string]any)
	if v["name"] != "Grace Hopper" || v["email"] != "grace@example.com" || v["status"] != "identified" || v["revenue"] != 59.99 {
		t.Errorf("visitor %v", v)
	}
	if src, _ := v["source"].(string); !strings.Contains(src, "/") {
		t.Errorf("the source of a visit through a short link is the link, got %q", src)
	}
	w := e.get(t, "/api/v1/radar/people/details?visitorId=walker&"+e.rangeQ())["data"].(map[string]any)["visitor"].(map[string]any)
	if w["status"] != "anonymous" || w["revenue"] != 0.0 {
		t.Errorf("walker %v", w)
	}
}
