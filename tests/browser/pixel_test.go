package browser_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/linkd/linkd/cmd/linkd/app/apptest"
	"github.com/linkd/linkd/internal/testsupport/browser"
)

// pixelTagID is the Meta pixel of the test.
const pixelTagID = "1234567890123456"

// fakeFbevents stands in for Meta's fbevents.js: it takes over the queue
// of the page's stub, as the real one does, and sends each PageView as an
// image request to www.facebook.com/tr.
const fakeFbevents = `(function(){var f=window.fbq,id="";
function send(a){if(a[0]==="init"){id=a[1]}else if(a[0]==="track"){var i=new Image();i.src="https://www.facebook.com/tr?id="+encodeURIComponent(id)+"&ev="+encodeURIComponent(a[1])}}
f.callMethod=function(){send(arguments)};var q=f.queue;f.queue=[];for(var k=0;k<q.length;k++)send(q[k]);})();`

// gif1x1 is a transparent pixel.
var gif1x1 = []byte("GIF89a\x01\x00\x01\x00\x80\x00\x00\x00\x00\x00\xff\xff\xff!\xf9\x04\x01\x00\x00\x00\x00,\x00\x00\x00\x00\x01\x00\x01\x00\x00\x02\x02D\x01\x00;")

// pixelPlatform is what the test stands in for of an ad platform: the
// script its page loads (a fake that reads what the page's stub queued and
// sends one beacon, as the real tag does), and where the beacon goes.
type pixelPlatform struct {
	typ, tagID string
	script     string // the URL the page loads
	fake       string // the script the test answers
	beaconHost string
	beaconPath string
	idParam    string // the beacon's parameter naming the pixel
}

var pixelPlatforms = []pixelPlatform{
	{typ: "meta", tagID: pixelTagID, script: "https://connect.facebook.net/en_US/fbevents.js", fake: fakeFbevents,
		beaconHost: "www.facebook.com", beaconPath: "/tr", idParam: "id"},
	{typ: "google", tagID: "G-TEST42", script: "https://www.googletagmanager.com/gtag/js?id=G-TEST42",
		fake: `(function(){var id="";for(var i=0;i<dataLayer.length;i++){if(dataLayer[i][0]==="config")id=dataLayer[i][1]}
new Image().src="https://region1.google-analytics.com/g/collect?v=2&en=page_view&tid="+encodeURIComponent(id)})();`,
		beaconHost: "region1.google-analytics.com", beaconPath: "/g/collect", idParam: "tid"},
	{typ: "linkedin", tagID: "5551234", script: "https://snap.licdn.com/li.lms-analytics/insight.min.js",
		fake:       `new Image().src="https://px.ads.linkedin.com/collect/?fmt=gif&pid="+encodeURIComponent(window._linkedin_partner_id);`,
		beaconHost: "px.ads.linkedin.com", beaconPath: "/collect/", idParam: "pid"},
	{typ: "tiktok", tagID: "CTEST123", script: "https://analytics.tiktok.com/i18n/pixel/events.js?sdkid=CTEST123&lib=ttq",
		fake: `(function(){var id=Object.keys(ttq._i)[0],pv=false;for(var i=0;i<ttq.length;i++){if(ttq[i][0]==="page")pv=true}
if(pv)new Image().src="https://analytics.tiktok.com/api/v2/pixel?event=Pageview&sdkid="+encodeURIComponent(id)})();`,
		beaconHost: "analytics.tiktok.com", beaconPath: "/api/v2/pixel", idParam: "sdkid"},
	{typ: "x", tagID: "o1xyz", script: "https://static.ads-twitter.com/uwt.js",
		fake: `(function(){var id="";for(var i=0;i<twq.queue.length;i++){if(twq.queue[i][0]==="config")id=twq.queue[i][1]}
new Image().src="https://t.co/1/i/adsct?p_id=Twitter&txn_id="+encodeURIComponent(id)})();`,
		beaconHost: "t.co", beaconPath: "/1/i/adsct", idParam: "txn_id"},
}

// pixelTab is a tab whose every request is paused: those to linkd and the
// target's site go on, the platform's are answered by the test (its script
// handed to the test on script, to answer), anything else fails and is
// kept in foreign.
type pixelTab struct {
	ctx      context.Context
	platform pixelPlatform
	mu       sync.Mutex
	seen     []string
	foreign  []string
	script   chan fetch.RequestID // the request of the platform's script
	beacons  chan string          // the URLs of its beacon requests
}

func (p *pixelTab) call(f func(ctx context.Context, tg *chromedp.Target) error) error {
	return chromedp.Do(p.ctx, chromedp.Func(f))
}

func (p *pixelTab) fulfil(id fetch.RequestID, ctype string, body []byte) {
	_ = p.call(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, fetch.FulfillRequest, fetch.FulfillRequestParams{RequestID: id, ResponseCode: 200,
			ResponseHeaders: []*fetch.HeaderEntry{{Name: "Content-Type", Value: ctype}}, Body: body})
		return err
	})
}

func (p *pixelTab) requests() (seen, foreign []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.seen...), append([]string(nil), p.foreign...)
}

// openPixelTab opens a tab as a desktop Chrome, with JavaScript on or off.
func openPixelTab(t *testing.T, parent context.Context, deadline time.Time, local []string, platform pixelPlatform, js bool) *pixelTab {
	t.Helper()
	tctx, cancel := chromedp.NewContext(parent)
	t.Cleanup(cancel)
	tctx, cancel = context.WithDeadline(tctx, deadline)
	t.Cleanup(cancel)
	p := &pixelTab{ctx: tctx, platform: platform, script: make(chan fetch.RequestID, 1), beacons: make(chan string, 8)}
	paused := make(chan *fetch.EventRequestPaused, 64)
	if err := chromedp.Listen(tctx, func(ev any) {
		if e, ok := ev.(*fetch.EventRequestPaused); ok {
			paused <- e
		}
	}); err != nil {
		t.Fatal(err)
	}
	isLocal := func(host string) bool {
		for _, h := range local {
			if host == h {
				return true
			}
		}
		return false
	}
	go func() {
		for e := range paused {
			u, _ := url.Parse(e.Request.URL)
			p.mu.Lock()
			p.seen = append(p.seen, e.Request.URL)
			p.mu.Unlock()
			switch {
			case isLocal(u.Host):
				_ = p.call(func(ctx context.Context, tg *chromedp.Target) error {
					_, err := cdp.Call(ctx, tg, fetch.ContinueRequest, fetch.ContinueRequestParams{RequestID: e.RequestID})
					return err
				})
			case e.Request.URL == platform.script:
				p.script <- e.RequestID
			case u.Host == platform.beaconHost && u.Path == platform.beaconPath:
				p.beacons <- e.Request.URL
				p.fulfil(e.RequestID, "image/gif", gif1x1)
			default:
				p.mu.Lock()
				p.foreign = append(p.foreign, e.Request.URL)
				p.mu.Unlock()
				_ = p.call(func(ctx context.Context, tg *chromedp.Target) error {
					_, err := cdp.Call(ctx, tg, fetch.FailRequest, fetch.FailRequestParams{RequestID: e.RequestID, ErrorReason: network.ErrorReasonBlockedByClient})
					return err
				})
			}
		}
	}()
	setup := func(ctx context.Context, tg *chromedp.Target) error {
		if _, err := cdp.Call(ctx, tg, emulation.SetUserAgentOverride, emulation.SetUserAgentOverrideParams{UserAgent: desktopUA}); err != nil {
			return err
		}
		if !js {
			if _, err := cdp.Call(ctx, tg, emulation.SetScriptExecutionDisabled, emulation.SetScriptExecutionDisabledParams{Value: true}); err != nil {
				return err
			}
		}
		_, err := cdp.Call(ctx, tg, fetch.Enable, fetch.EnableParams{Patterns: []*fetch.RequestPattern{{URLPattern: "*"}}})
		return err
	}
	if err := chromedp.Do(tctx, chromedp.Func(setup), chromedp.EmulateViewport(800, 500)); err != nil {
		t.Fatalf("set up the tab: %v", err)
	}
	return p
}

// open navigates without waiting for the load event (the held script
// delays it).
func (p *pixelTab) open(t *testing.T, u string) {
	t.Helper()
	err := p.call(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, page.Navigate, page.NavigateParams{URL: u})
		return err
	})
	if err != nil {
		t.Fatalf("open %s: %v", u, err)
	}
}

// landing waits until the tab, which navigates by itself, is on a URL
// starting with prefix (an evaluation during a navigation fails: it asks
// again).
func (p *pixelTab) landing(t *testing.T, prefix string) string {
	t.Helper()
	for until := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		href, err := chromedp.Run(p.ctx, chromedp.Evaluate[string](`location.href`))
		if err == nil && strings.HasPrefix(href, prefix) {
			return href
		}
		if time.Now().After(until) {
			seen, _ := p.requests()
			t.Fatalf("the browser did not land on %s: at %q (%v); requests %v", prefix, href, err, seen)
		}
	}
}

func (p *pixelTab) beacon(t *testing.T) url.Values {
	t.Helper()
	select {
	case b := <-p.beacons:
		return pixelQuery(t, b)
	case <-time.After(10 * time.Second):
		seen, _ := p.requests()
		t.Fatalf("no PageView beacon; requests: %v", seen)
		return nil
	}
}

// TestPixelPageInBrowser follows a short link with a Meta pixel in
// Chromium as a person would. With JavaScript, the page loads the
// platform's script (answered by the test through the DevTools Fetch
// domain instead of Meta), the script fires the PageView beacon, and the
// browser goes on to the target with the link's UTM template values and
// click id; without JavaScript the noscript image beacon fires and the
// meta refresh goes on. Nothing else is requested from anywhere, and each
// visit counts one click. The page, as shown while the script loads, is
// kept as a screenshot in the test's artifact directory (go test
// -artifacts keeps it).
func TestPixelPageInBrowser(t *testing.T) {
	budget := time.Now().Add(60 * time.Second)
	ctx := browser.Start(t)
	s := apptest.Start(t)
	alice := s.NewKey("alice", "full", nil)

	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(`<!doctype html><title>Landing</title><h1>Landing</h1>`))
	}))
	t.Cleanup(site.Close)
	siteURL, _ := url.Parse(site.URL)
	local := []string{s.Host, siteURL.Host}

	tpl, _ := s.MustCreate("/v1/utm-templates", alice, map[string]any{"name": "Ads", "utm_source": "meta", "utm_medium": "paid"})["id"].(string)
	px, _ := s.MustCreate("/v1/pixels", alice, map[string]any{"name": "Retargeting", "type": "meta", "pixel_id": pixelTagID})["id"].(string)
	l := s.MustCreate("/v1/links", alice, map[string]any{"original_url": site.URL + "/landing?x=<b>&y='1'", "pixel_id": px, "utm_template_id": tpl})
	code, _ := l["code"].(string)
	linkID, _ := l["id"].(string)
	clicks := func() any { return s.Do("GET", "/v1/links/"+linkID, alice, nil).JSON(t)["clicks"] }
	checkTarget := func(landed string) {
		t.Helper()
		q := pixelQuery(t, landed)
		if q.Get("x") != "<b>" || q.Get("y") != "'1'" || q.Get("utm_source") != "meta" || q.Get("utm_medium") != "paid" || q.Get("svc_tid") == "" {
			t.Errorf("landed on %s", landed)
		}
	}

	t.Run("JavaScript", func(t *testing.T) {
		tab := openPixelTab(t, ctx, budget, local, pixelPlatforms[0], true)
		tab.open(t, s.URL+"/"+code)
		var held fetch.RequestID
		select {
		case held = <-tab.script:
		case <-time.After(10 * time.Second):
			seen, _ := tab.requests()
			t.Fatalf("the page did not load Meta's script; requests: %v", seen)
		}
		// The page as a person sees it while the script loads. The page asks
		// for the script from its head, so the request can come before the
		// body is parsed: wait for the body's link (the script is held, so
		// the page stays, up to its maximum wait of 1.5 s).
		// The body may still be arriving: wait until its link's text is in.
		want := "Redirecting to " + siteURL.Host
		text, err := chromedp.Run(tab.ctx, chromedp.Poll[string](`document.getElementById("target") && document.body.innerText.includes(`+strconv.Quote(siteURL.Host)+`) && document.body.innerText`,
			chromedp.WithPollingTimeout(time.Second)))
		if err != nil {
			now, _ := chromedp.Run(tab.ctx, chromedp.Evaluate[string](`document.body ? document.body.innerText : ""`))
			t.Fatalf("the page never showed %q: %v; it shows %q", want, err, now)
		}
		if !strings.HasPrefix(strings.TrimSpace(text), want) {
			t.Errorf("page text %q, want %q…", text, want)
		}
		shot, err := chromedp.Run(tab.ctx, chromedp.CaptureScreenshot())
		if err != nil {
			t.Fatalf("screenshot: %v", err)
		}
		file := filepath.Join(t.ArtifactDir(), "pixel.png")
		if err := os.WriteFile(file, shot, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("screenshot %s", file)

		tab.fulfil(held, "application/javascript", []byte(fakeFbevents))
		loaded := time.Now()
		if b := tab.beacon(t); b.Get("id") != pixelTagID || b.Get("ev") != "PageView" {
			t.Errorf("beacon %v", b)
		}
		checkTarget(tab.landing(t, site.URL+"/landing"))
		t.Logf("on the target %v after the script loaded", time.Since(loaded).Round(time.Millisecond))
		if _, foreign := tab.requests(); len(foreign) > 0 {
			t.Errorf("the page requested other hosts: %v", foreign)
		}
		if n := clicks(); n != 1.0 {
			t.Errorf("clicks %v, want 1", n)
		}
	})

	t.Run("no JavaScript", func(t *testing.T) {
		tab := openPixelTab(t, ctx, budget, local, pixelPlatforms[0], false)
		tab.open(t, s.URL+"/"+code)
		if b := tab.beacon(t); b.Get("id") != pixelTagID || b.Get("ev") != "PageView" || b.Get("noscript") != "1" {
			t.Errorf("beacon %v", b)
		}
		checkTarget(tab.landing(t, site.URL+"/landing"))
		seen, foreign := tab.requests()
		if len(foreign) > 0 {
			t.Errorf("the page requested other hosts: %v", foreign)
		}
		for _, u := range seen {
			if strings.Contains(u, "fbevents.js") {
				t.Errorf("without JavaScript the page loaded %s", u)
			}
		}
		if n := clicks(); n != 2.0 {
			t.Errorf("clicks %v, want 2", n)
		}
	})

	// Every platform: the page's stub and the platform's script meet (the
	// fake reads what the stub queued), the Content-Security-Policy lets
	// the script and its beacon through, and the browser goes on.
	for _, pf := range pixelPlatforms {
		t.Run("platform "+pf.typ, func(t *testing.T) {
			id, _ := s.MustCreate("/v1/pixels", alice, map[string]any{"name": pf.typ, "type": pf.typ, "pixel_id": pf.tagID})["id"].(string)
			l := s.MustCreate("/v1/links", alice, map[string]any{"original_url": site.URL + "/landing?p=" + pf.typ, "pixel_id": id})
			tab := openPixelTab(t, ctx, budget, local, pf, true)
			tab.open(t, s.URL+"/"+str(l["code"]))
			select {
			case held := <-tab.script:
				tab.fulfil(held, "application/javascript", []byte(pf.fake))
			case <-time.After(10 * time.Second):
				seen, _ := tab.requests()
				t.Fatalf("the page did not load %s; requests: %v", pf.script, seen)
			}
			if b := tab.beacon(t); b.Get(pf.idParam) != pf.tagID {
				t.Errorf("beacon %v, want %s=%s", b, pf.idParam, pf.tagID)
			}
			if landed := tab.landing(t, site.URL+"/landing"); pixelQuery(t, landed).Get("p") != pf.typ {
				t.Errorf("landed on %s", landed)
			}
			if _, foreign := tab.requests(); len(foreign) > 0 {
				t.Errorf("the page requested other hosts: %v", foreign)
			}
		})
	}
}

func str(v any) string { s, _ := v.(string); return s }

func pixelQuery(t *testing.T, raw string) url.Values {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u.Query()
}
