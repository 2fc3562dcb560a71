package browser_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/linkd/linkd/cmd/linkd/app/apptest"
	"github.com/linkd/linkd/internal/testsupport/browser"
)

// dashTab is one browser tab on the dashboard, with what it saw: console
// errors (CSP violations among them), requests to other hosts, dialogs.
type dashTab struct {
	t     *testing.T
	ctx   context.Context
	s     *apptest.Server
	shots string // screenshots go here
	axe   string // axe-core's source, or "" to skip the accessibility check

	mu         sync.Mutex
	errors     []string
	thirdParty []string
	dialogs    []string
}

func (d *dashTab) listen() {
	own := map[string]bool{d.s.Host: true}
	err := chromedp.Listen(d.ctx, func(ev any) {
		d.mu.Lock()
		defer d.mu.Unlock()
		switch ev := ev.(type) {
		case *runtime.EventExceptionThrown:
			d.errors = append(d.errors, "exception: "+ev.ExceptionDetails.Text)
		case *runtime.EventConsoleAPICalled:
			if ev.Type == runtime.ConsoleAPICalledTypeError {
				d.errors = append(d.errors, "console.error")
			}
		case *cdplog.EventEntryAdded:
			if ev.Entry.Level == cdplog.EntryLevelError {
				d.errors = append(d.errors, ev.Entry.Text+" "+ev.Entry.URL)
			}
		case *network.EventRequestWillBeSent:
			u, err := url.Parse(ev.Request.URL)
			if err == nil && (u.Scheme == "http" || u.Scheme == "https") && !own[u.Host] {
				d.thirdParty = append(d.thirdParty, ev.Request.URL)
			}
		case *page.EventJavascriptDialogOpening:
			d.dialogs = append(d.dialogs, ev.Message)
			go func() {
				_ = chromedp.Do(d.ctx, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
					_, err := cdp.Call(ctx, tg, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: false})
					return err
				}))
			}()
		}
	})
	if err != nil {
		d.t.Fatal(err)
	}
}

func (d *dashTab) run(actions ...chromedp.Action[chromedp.Void]) {
	d.t.Helper()
	ctx, cancel := context.WithTimeout(d.ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		d.t.Fatalf("browser: %v", err)
	}
}

// eval evaluates js in the page.
func eval[T any](d *dashTab, js string, opts ...chromedp.EvaluateOption) T {
	d.t.Helper()
	ctx, cancel := context.WithTimeout(d.ctx, 30*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](js, opts...))
	if err != nil {
		d.t.Fatalf("browser: %s: %v", js, err)
	}
	return v
}

func cdpDo[P, R any](cmd cdp.Command[P, R], params P) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, cmd, params)
		return err
	})
}

// clean fails on what the tab saw since the last call, and forgets it.
func (d *dashTab) clean(where string) {
	d.t.Helper()
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.errors) > 0 {
		d.t.Errorf("%s: console errors: %q", where, d.errors)
	}
	if len(d.thirdParty) > 0 {
		d.t.Errorf("%s: requests to other hosts: %q", where, d.thirdParty)
	}
	if len(d.dialogs) > 0 {
		d.t.Errorf("%s: dialogs opened (script ran): %q", where, d.dialogs)
	}
	d.errors, d.thirdParty, d.dialogs = nil, nil, nil
}

// forget drops what the tab saw (after an expected 403 or 404, which
// Chromium logs as a failed load).
func (d *dashTab) forget() {
	d.mu.Lock()
	d.errors = nil
	d.mu.Unlock()
}

func (d *dashTab) open(path string) {
	d.t.Helper()
	d.run(chromedp.Navigate(d.s.URL+path), chromedp.WaitReady("body"))
}

func (d *dashTab) text(sel string) string {
	d.t.Helper()
	return eval[string](d, fmt.Sprintf(`(document.querySelector(%q) || {textContent: "(none)"}).textContent.trim()`, sel))
}

func (d *dashTab) html(sel string) string {
	d.t.Helper()
	return eval[string](d, fmt.Sprintf(`document.querySelector(%q).outerHTML`, sel))
}

// check looks at the page as a person and a checker would: a screenshot,
// its script weight, axe-core, and nothing wrong in the console.
func (d *dashTab) check(name string) {
	d.t.Helper()
	png, err := chromedp.Run(d.ctx, chromedp.FullScreenshot(100))
	if err != nil {
		d.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(d.shots, name+".png"), png, 0o644); err != nil {
		d.t.Fatal(err)
	}
	scriptBytes := eval[float64](d, `performance.getEntriesByType("resource").filter(e => e.initiatorType === "script").reduce((a, e) => a + e.encodedBodySize, 0)`)
	if scriptBytes > 150*1024 {
		d.t.Errorf("%s: %.0f bytes of script", name, scriptBytes)
	}
	if d.axe != "" {
		eval[any](d, d.axe+";0")
		bad := eval[[]string](d, `axe.run(document, {resultTypes: ["violations"]}).then(r => r.violations
				.filter(v => v.impact === "critical" || v.impact === "serious")
				.map(v => v.impact + " " + v.id + ": " + v.help + " at " + v.nodes.slice(0, 3).map(n => n.target.join(" ")).join(", ")))`,
			chromedp.EvalAwaitPromise)
		for _, v := range bad {
			d.t.Errorf("%s: axe: %s", name, v)
		}
	}
	d.clean(name)
}

func axeSource(t *testing.T) string {
	path := os.Getenv("LINKD_AXE")
	if path == "" {
		home, _ := os.UserHomeDir()
		path = filepath.Join(home, ".cache", "linkd", "axe", "axe-core-4.11.1", "axe.min.js")
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Logf("no axe-core (%v): the accessibility check is skipped; scripts/fetch-axe.sh fetches it", err)
		return ""
	}
	return string(b)
}

func TestDashboard(t *testing.T) {
	s := apptest.Start(t)
	ctx := browser.Start(t)
	shots := os.Getenv("LINKD_DASHBOARD_SHOTS")
	if shots == "" {
		shots = t.TempDir()
	} else if err := os.MkdirAll(shots, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshots in %s", shots)
	d := &dashTab{t: t, ctx: ctx, s: s, shots: shots, axe: axeSource(t)}
	d.listen()
	d.run(cdpDo(network.Enable, network.EnableParams{}), cdpDo(cdplog.Enable, cdp.Empty{}), chromedp.EmulateViewport(1280, 900))

	// Sign-in: a page needs a session.
	d.open("/dashboard/links")
	loc := eval[string](d, "location.href")
	if !strings.Contains(loc, "/dashboard/login") {
		t.Fatalf("without a session: at %s", loc)
	}
	d.check("login")
	d.run(chromedp.SendKeys("#email", apptest.AdminEmail),
		chromedp.SendKeys("#password", apptest.AdminPassword),
		chromedp.Submit("#password"),
		chromedp.WaitVisible(`a.button[href="/dashboard/links/new"]`))
	var cookies []*network.Cookie
	d.run(chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		res, err := cdp.Call(ctx, tg, network.GetCookies, network.GetCookiesParams{URLs: []string{s.URL + "/dashboard/links"}})
		cookies = res.Cookies
		return err
	}))
	var sess *network.Cookie
	for _, c := range cookies {
		if c.Name == "linkd_session" {
			sess = c
		}
	}
	if sess == nil || !sess.HTTPOnly || sess.SameSite != network.CookieSameSiteLax || sess.Path != "/dashboard" {
		t.Fatalf("session cookie: %+v", sess)
	}
	d.check("links-empty")

	// The builder makes a link; a name with markup shows as text.
	hostile := `<img src=x onerror=alert(1)>`
	d.open("/dashboard/links/new")
	d.check("builder")
	dest := s.URL + "/healthz"
	d.run(chromedp.SendKeys("#original_url", dest),
		chromedp.SendKeys("#custom_code", "spring"),
		chromedp.SendKeys("#name", hostile), chromedp.Sleep(400*time.Millisecond))
	qrSrc := eval[string](d, `document.getElementById("qr-preview").getAttribute("src")`)
	if !strings.Contains(qrSrc, "spring") {
		t.Errorf("the QR preview does not follow the custom code: %s", qrSrc)
	}
	if got := d.text("#preview-url"); !strings.HasSuffix(got, "/spring") {
		t.Errorf("preview URL %q", got)
	}
	d.run(chromedp.Submit("#builder"), chromedp.WaitVisible("#short-url"))
	if got := d.text("h1"); got != hostile {
		t.Errorf("link name shown as %q", got)
	}
	linkURL := eval[string](d, "location.href")
	linkID := linkURL[strings.LastIndex(linkURL, "/")+1:]
	linkID = strings.SplitN(linkID, "?", 2)[0]

	// A click on the short link shows on its chart.
	req, _ := http.NewRequest("GET", s.URL+"/spring", nil)
	req.Header.Set("User-Agent", desktopUA)
	resp, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 3 {
		t.Fatalf("short link: %d", resp.StatusCode)
	}
	d.open("/dashboard/links/" + linkID)
	if got := d.text(`dd[data-figure="clicks"]`); got != "1" {
		t.Errorf("clicks on the link's page: %q, want 1", got)
	}
	dots := eval[int](d, `document.querySelectorAll("svg.chart circle.s0").length`)
	if dots != 1 {
		t.Errorf("points of clicks on the chart: %d, want 1", dots)
	}
	d.check("link")
	d.open("/dashboard/links")
	d.check("links")

	// A key is shown once.
	d.open("/dashboard/keys")
	d.run(chromedp.SendKeys("#name", "ci"), chromedp.Submit("#name"), chromedp.WaitVisible("#new-key"))
	key := d.text("#new-key")
	if !strings.HasPrefix(key, "svc_sk_") {
		t.Fatalf("new key %q", key)
	}
	d.forget() // the form's answer is 201
	d.check("keys-created")
	d.open("/dashboard/keys")
	html := d.html("html")
	if strings.Contains(html, key) {
		t.Errorf("the key is shown a second time")
	}
	if r := s.Do("GET", "/v1/api-keys/validate", key, nil); r.Status != 200 {
		t.Errorf("the dashboard's key: %d", r.Status)
	}
	d.check("keys")

	// CSRF: a form without its token is refused and changes nothing.
	eval[any](d, `document.querySelector("form.inline input[name=csrf_token]").remove(); 0`)
	d.run(chromedp.SendKeys("#name", "forged"), chromedp.Submit("#name"), chromedp.Sleep(500*time.Millisecond), chromedp.WaitReady("main"))
	if got := d.text("h1"); got != "Forbidden" {
		t.Errorf("form without its token: page %q", got)
	}
	d.forget()
	d.open("/dashboard/keys")
	if html = d.html("main"); strings.Contains(html, "forged") {
		t.Errorf("the refused form made a key")
	}
	d.clean("csrf")

	// Radar: a project's site with radar.js, visited by a person.
	project, _ := s.MustCreate("/v1/projects", apptest.OperatorKey, map[string]any{"name": "Shop site"})["id"].(string)
	pk, _ := s.MustCreate("/v1/api-keys", apptest.OperatorKey, map[string]any{"name": "tracker", "kind": "publishable", "project_id": project,
		"allowed_hostnames": []string{"127.0.0.1"}})["key"].(string)
	site := newSite(t, s.URL, pk)
	visitor, cancel := chromedp.NewContext(ctx)
	defer cancel()
	vctx, vcancel := context.WithTimeout(visitor, 30*time.Second)
	defer vcancel()
	if err := chromedp.Do(vctx,
		cdpDo(emulation.SetUserAgentOverride, emulation.SetUserAgentOverrideParams{UserAgent: desktopUA}),
		chromedp.Navigate(site.URL+"/landing"), chromedp.WaitVisible("#title"), chromedp.Sleep(700*time.Millisecond),
		chromedp.Navigate(site.URL+"/next"), chromedp.WaitVisible("#title"), chromedp.Sleep(700*time.Millisecond),
	); err != nil {
		t.Fatal(err)
	}
	// Both page views are projected some time after they were sent.
	var people, pv string
	for deadline := time.Now().Add(10 * time.Second); ; {
		d.open("/dashboard/radar/" + project)
		people, pv = d.text(`dd[data-figure="people"]`), d.text(`dd[data-figure="pageviews"]`)
		if people == "1" && pv == "2" || time.Now().After(deadline) {
			break
		}
		time.Sleep(300 * time.Millisecond)
	}
	if people != "1" {
		t.Errorf("Radar people %q, want 1", people)
	}
	if pv != "2" {
		t.Errorf("Radar pageviews %q, want 2", pv)
	}
	d.check("radar")
	// The person's sessions.
	d.run(chromedp.Click(`a[href*="/people/"]`), chromedp.WaitVisible(`caption`))
	if rows := eval[int](d, `document.querySelectorAll("main tbody tr").length`); rows != 1 || strings.Contains(d.text("main tbody"), "No sessions") {
		t.Errorf("visitor page: %d session rows: %s", rows, d.text("main tbody"))
	}
	d.check("radar-visitor")

	// A customer's journey: a click on a tracked link, a lead, a sale.
	tracked := s.MustCreate("/v1/links", apptest.OperatorKey, map[string]any{"original_url": "https://shop.example/landing", "enable_conversion_tracking": true})
	req, _ = http.NewRequest("GET", s.URL+"/"+tracked["code"].(string), nil)
	req.Header.Set("User-Agent", desktopUA)
	resp, err = (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	redir, err := url.Parse(resp.Header.Get("Location"))
	if err != nil || redir.Query().Get("svc_tid") == "" {
		t.Fatalf("no svc_tid in %q", resp.Header.Get("Location"))
	}
	tid := redir.Query().Get("svc_tid")
	buyer := map[string]any{"externalId": "cus_" + hostile, "email": "ana@shop.example", "firstname": "Ana"}
	for _, ev := range []struct {
		path string
		body map[string]any
	}{
		{"/api/events/lead", map[string]any{"trackingId": tid, "customer": buyer}},
		{"/api/events/sale", map[string]any{"trackingId": tid, "customer": buyer, "amount": 49.9, "currency": "usd"}},
	} {
		if r := s.Do("POST", ev.path, apptest.OperatorKey, ev.body); r.Status != 200 {
			t.Fatalf("%s: %d %s", ev.path, r.Status, r.Body)
		}
	}
	d.open("/dashboard/customers")
	d.run(chromedp.Click(`main tbody a[href*="/dashboard/customers/"]`), chromedp.WaitVisible(`ol.journey`))
	if got := d.text("h1"); got != "cus_"+hostile {
		t.Errorf("customer shown as %q", got)
	}
	steps := eval[[]string](d, `Array.from(document.querySelectorAll("ol.journey li")).map(li => li.dataset.step)`)
	if strings.Join(steps, ",") != "click,lead,sale" {
		t.Errorf("journey %v, want click, lead, sale", steps)
	}
	if got := d.text(`li[data-step="sale"] .what`); !strings.Contains(got, "49.90 USD") {
		t.Errorf("the sale in the journey: %q", got)
	}
	d.check("customer")

	// A custom domain shows the record to add and a verify button.
	s.MustCreate("/v1/domains", apptest.OperatorKey, map[string]any{"domain": "go.shop.example", "description": "campaigns"})
	d.open("/dashboard/domains")
	if got := d.text("main tbody code"); !strings.HasPrefix(got, "go.shop.example CNAME ") {
		t.Errorf("the record to add: %q", got)
	}
	if got := d.text("main tbody td.status"); got != "Not verified yet: no CNAME found, DNS not configured" {
		t.Errorf("the domain's status: %q", got)
	}
	if n := eval[int](d, `document.querySelectorAll("main tbody form[action$='/verify'] button").length`); n != 1 {
		t.Errorf("verify buttons: %d", n)
	}

	for _, p := range []struct{ path, name string }{
		{"/dashboard/projects", "projects"}, {"/dashboard/domains", "domains"}, {"/dashboard/customers", "customers"},
		{"/dashboard/workspaces", "workspaces"}, {"/dashboard/radar", "radar-index"}, {"/dashboard/utm-templates", "utm"},
		{"/dashboard/pixels", "pixels"}, {"/dashboard/webhooks", "webhooks"},
	} {
		d.open(p.path)
		d.check(p.name)
	}
	wsRes := s.Do("GET", "/v1/workspaces", apptest.OperatorKey, nil).List(t)
	adminWS, _ := wsRes[0].(map[string]any)["id"].(string)
	d.open("/dashboard/workspaces/" + adminWS)
	d.check("workspace")
	d.open("/dashboard/workspaces/" + adminWS + "/members")
	d.check("members")
	d.run(chromedp.SendKeys("#invite_email", "carol@example.com"), chromedp.Submit("#invite_email"), chromedp.WaitVisible("#invite-url"))
	inviteURL := d.text("#invite-url")
	d.forget() // the form's answer is 201
	d.check("members-invited")
	d.open(strings.TrimPrefix(inviteURL, s.URL))
	d.check("invite")

	// At 375 px wide.
	d.run(chromedp.EmulateViewport(375, 812))
	for _, p := range []struct{ path, name string }{
		{"/dashboard/links", "mobile-links"}, {"/dashboard/links/new", "mobile-builder"}, {"/dashboard/links/" + linkID, "mobile-link"},
		{"/dashboard/radar/" + project, "mobile-radar"},
	} {
		d.open(p.path)
		overflow := eval[bool](d, `document.documentElement.scrollWidth > window.innerWidth + 1`)
		if overflow {
			t.Errorf("%s: wider than 375 px", p.name)
		}
		d.check(p.name)
	}
	d.run(chromedp.EmulateViewport(1280, 900))

	// Tenancy: bob sees nothing of admin's workspace.
	if r := s.Do("POST", "/v1/users", apptest.OperatorKey, map[string]any{"user_id": "bob", "email": "bob@example.com", "password": "bob's password"}); r.Status != 201 {
		t.Fatalf("create bob: %d", r.Status)
	}
	eval[any](d, `document.querySelector("form.who").submit(); 0`)
	d.run(chromedp.Sleep(300*time.Millisecond), chromedp.WaitVisible("#email"),
		chromedp.SendKeys("#email", "bob@example.com"), chromedp.SendKeys("#password", "bob's password"),
		chromedp.Submit("#password"), chromedp.WaitVisible(`a.button[href="/dashboard/links/new"]`))
	html = d.html("main")
	if strings.Contains(html, "spring") {
		t.Errorf("bob's links list shows admin's link")
	}
	d.clean("bob links")
	for _, p := range []string{"/dashboard/links/" + linkID, "/dashboard/workspaces/" + adminWS + "/members", "/dashboard/radar/" + project} {
		d.open(p)
		if h := d.text("h1"); h != "Forbidden" && h != "Not Found" {
			html = d.html("main")
			t.Errorf("bob at %s: %q\n%s", p, h, html)
		}
	}
	d.forget()
	d.check("bob-forbidden")
	for _, p := range []string{"/dashboard/radar", "/dashboard/projects", "/dashboard/workspaces"} {
		d.open(p)
		if html = d.html("main"); strings.Contains(html, "Shop site") || strings.Contains(html, adminWS) {
			t.Errorf("bob sees admin's project or workspace at %s", p)
		}
	}
	d.clean("bob lists")
}
