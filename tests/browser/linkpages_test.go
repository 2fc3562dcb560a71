package browser_test

import (
	"bytes"
	"context"
	"encoding/json"
	"image"
	"image/color"
	"image/png"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/linkd/linkd/cmd/linkd/app/apptest"
	"github.com/linkd/linkd/internal/testsupport/browser"
)

// User agents the link pages are for (issue 14).
const (
	slackbotUA  = "Slackbot-LinkExpanding 1.0 (+https://api.slack.com/robots)"
	instagramUA = "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148 Instagram 335.0.3.15.111 (iPhone15,3; iOS 17_5; en_US; en; scale=3.00; 1290x2796; 612165720)"
	iPhoneUA    = "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1"
)

// cdn is the link owner's own server of images: it counts what the
// browser fetches from it.
type cdn struct {
	*httptest.Server
	mu   sync.Mutex
	hits []string
}

func newCDN(t *testing.T) *cdn {
	img := image.NewRGBA(image.Rect(0, 0, 64, 64))
	for x := 0; x < 64; x++ {
		for y := 0; y < 64; y++ {
			img.Set(x, y, color.RGBA{R: 220, G: 60, B: 120, A: 255})
		}
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	c := &cdn{}
	c.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.mu.Lock()
		c.hits = append(c.hits, r.URL.Path)
		c.mu.Unlock()
		w.Header().Set("Content-Type", "image/png")
		_, _ = w.Write(buf.Bytes())
	}))
	t.Cleanup(c.Close)
	return c
}

func (c *cdn) fetched() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.hits...)
}

// TestLinkPagesInBrowser shows the pages a short link answers instead of
// its redirect to a person in Chromium: the preview page (as a preview
// fetcher gets it), the "Open in {app}" page in Instagram's in-app browser
// on an iPhone, and the public statistics page. Each is checked as
// rendered (escaped text, links, nothing loaded from elsewhere but the
// app's logo), and kept as a screenshot in the test's artifact directory
// (go test -artifacts keeps it).
func TestLinkPagesInBrowser(t *testing.T) {
	budget := time.Now().Add(45 * time.Second)
	ctx := browser.Start(t)
	s := apptest.Start(t)
	alice := s.NewKey("alice", "full", nil)
	images := newCDN(t)

	const title = `Spring <script>document.title="pwned"</script> & "sale"`
	preview := s.MustCreate("/v1/links", alice, map[string]any{
		"original_url": "https://shop.example/spring", "custom_code": "spring",
		"metadata": map[string]any{"title": title, "description": "50% off <b>everything</b>",
			"social_image": images.URL + "/card.png", "favicon": images.URL + "/fav.png"},
	})
	appLink := s.MustCreate("/v1/links", alice, map[string]any{
		"original_url": "https://shop.example/item/7", "custom_code": "item", "app": `Shop <App>`,
		"app_logo": images.URL + "/logo.png", "ios_link": "shopapp://item/7", "enable_conversion_tracking": false,
	})
	stats := s.MustCreate("/v1/links", alice, map[string]any{
		"original_url": "https://shop.example/launch", "custom_code": "launch", "name": "Launch <day>", "has_public_stat": true,
	})
	for _, ua := range []string{iPhoneUA, iPhoneUA, desktopUA} {
		if r := s.Do("GET", "/launch", "", nil, "User-Agent", ua); r.Status != http.StatusFound {
			t.Fatalf("click: %d", r.Status)
		}
	}

	// show opens path in a new tab as ua on a screen of width x height,
	// saves a screenshot as name.png, and returns the tab.
	show := func(name, ua, path string, width, height int64) context.Context {
		t.Helper()
		tctx, cancel := chromedp.NewContext(ctx)
		t.Cleanup(cancel)
		tctx, cancel = context.WithDeadline(tctx, budget)
		t.Cleanup(cancel)
		setUA := chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			_, err := cdp.Call(ctx, tg, emulation.SetUserAgentOverride, emulation.SetUserAgentOverrideParams{UserAgent: ua})
			return err
		})
		if err := chromedp.Do(tctx, setUA, chromedp.EmulateViewport(width, height), chromedp.Navigate(s.URL+path)); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		shot, err := chromedp.Run(tctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatalf("%s: screenshot: %v", path, err)
		}
		file := filepath.Join(t.ArtifactDir(), name+".png")
		if err := os.WriteFile(file, shot, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: screenshot %s", path, file)
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
	// resources lists what the page loaded besides itself.
	resources := func(tctx context.Context) []string {
		t.Helper()
		var out []string
		if err := json.Unmarshal([]byte(eval(tctx, `JSON.stringify(performance.getEntriesByType("resource").map(e => e.name))`)), &out); err != nil {
			t.Fatal(err)
		}
		return out
	}

	// The preview page, as Slack's fetcher gets it.
	tab := show("preview", slackbotUA, "/spring", 1000, 600)
	if got := eval(tab, `document.title`); got != title {
		t.Errorf("preview: title %q, want %q", got, title)
	}
	if got := eval(tab, `document.querySelector("h1").textContent`); got != title {
		t.Errorf("preview: heading %q", got)
	}
	if got := eval(tab, `document.querySelector("p").textContent`); got != "50% off <b>everything</b>" {
		t.Errorf("preview: description %q", got)
	}
	if got := eval(tab, `String(document.querySelectorAll("script, b").length)`); got != "0" {
		t.Errorf("preview: %s script or b elements: the metadata became markup", got)
	}
	if got := eval(tab, `document.querySelector('meta[property="og:image"]').content`); got != images.URL+"/card.png" {
		t.Errorf("preview: og:image %q", got)
	}
	if got := eval(tab, `document.querySelector('link[rel="canonical"]').href`); got != "https://shop.example/spring" {
		t.Errorf("preview: canonical %q", got)
	}
	// The favicon is for the fetcher: the page's Content-Security-Policy
	// keeps a browser from loading it (Chromium lists the blocked attempt
	// among its resource entries, but nothing reaches the server).
	for _, r := range resources(tab) {
		if r != images.URL+"/fav.png" {
			t.Errorf("preview: the page loaded %s", r)
		}
	}
	if got := images.fetched(); len(got) != 0 {
		t.Errorf("preview: the page fetched %v from the owner's server", got)
	}

	// The app page, in Instagram on an iPhone.
	tab = show("app", instagramUA, "/item", 390, 844)
	if got := eval(tab, `document.querySelector("h1").textContent`); got != "Open in Shop <App>" {
		t.Errorf("app page: heading %q", got)
	}
	if got := eval(tab, `document.getElementById("open").getAttribute("href")`); got != "shopapp://item/7" {
		t.Errorf("app page: button to %q", got)
	}
	if got := eval(tab, `document.getElementById("web").href`); got != "https://shop.example/item/7" {
		t.Errorf("app page: fallback to %q", got)
	}
	if got := eval(tab, `String(document.querySelector("img.logo").naturalWidth)`); got != "64" {
		t.Errorf("app page: the logo did not load (width %s)", got)
	}
	if got := eval(tab, `String(document.getElementById("open").getBoundingClientRect().width > 200)`); got != "true" {
		t.Errorf("app page: the button is not a full-width button")
	}
	if got := resources(tab); len(got) != 1 || got[0] != images.URL+"/logo.png" {
		t.Errorf("app page: loaded %v, want only the logo", got)
	}
	if got := images.fetched(); len(got) != 1 || got[0] != "/logo.png" {
		t.Errorf("the owner's server served %v, want only the logo", got)
	}

	// The public statistics page, on a desktop.
	tab = show("stats", desktopUA, "/launch+", 1100, 800)
	if got := eval(tab, `document.getElementById("total").textContent`); got != "3" {
		t.Errorf("stats page: total %q", got)
	}
	if got := eval(tab, `document.querySelector("h1").textContent`); got != "Launch <day>" {
		t.Errorf("stats page: heading %q", got)
	}
	if got := eval(tab, `document.body.innerText`); !strings.Contains(got, "mobile") || !strings.Contains(got, time.Now().UTC().Format(time.DateOnly)) {
		t.Errorf("stats page shows: %s", got)
	}
	if got := resources(tab); len(got) != 0 {
		t.Errorf("stats page: loaded %v", got)
	}

	// Counted: the three clicks and the app page view; neither the preview
	// nor the statistics page.
	for _, c := range []struct {
		l    map[string]any
		want float64
	}{{preview, 0}, {appLink, 1}, {stats, 3}} {
		got := s.Do("GET", "/v1/links/"+c.l["id"].(string), alice, nil).JSON(t)["clicks"]
		if got != c.want {
			t.Errorf("%s: clicks %v, want %v", c.l["code"], got, c.want)
		}
	}
	_ = apptest.OperatorKey
}
