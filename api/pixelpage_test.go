package api

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/linkd/linkd/domain/pixel"
	"github.com/linkd/linkd/internal/enrich"
	"github.com/linkd/linkd/queries"
)

// Every platform's page loads that platform's tag, from a host its
// Content-Security-Policy allows, and nothing else.
func TestPixelPageOfEveryPlatform(t *testing.T) {
	for _, typ := range pixel.Types {
		t.Run(typ, func(t *testing.T) {
			w := httptest.NewRecorder()
			servePixelPage(w, &queries.Pixel{Type: typ, PixelID: "ID-42_x.y"}, "https://shop.example/a?b=1&c=%22")
			body, h := w.Body.String(), w.Header()
			if w.Code != http.StatusOK || h.Get("Content-Type") != "text/html; charset=utf-8" || h.Get("Cache-Control") != "no-store" {
				t.Fatalf("%d %v", w.Code, h)
			}
			script := pixelVendors[typ].script("ID-42_x.y")
			if !strings.Contains(body, `e.src="`+strings.ReplaceAll(script, "&", `\u0026`)+`"`) {
				t.Errorf("the page does not load %s:\n%s", script, body)
			}
			csp := h.Get("Content-Security-Policy")
			u, _ := url.Parse(script)
			nonce := csp[strings.Index(csp, "'nonce-")+7:]
			nonce = nonce[:strings.IndexByte(nonce, '\'')]
			if !strings.Contains(csp, "script-src 'nonce-"+nonce+"' https://"+u.Host) || !strings.Contains(body, `<script nonce="`+nonce+`">`) {
				t.Errorf("CSP %q does not allow the inline script and %s", csp, u.Host)
			}
			if strings.Contains(csp, "*;") || strings.Contains(csp, "'unsafe-eval'") || strings.Contains(csp, "script-src 'unsafe-inline'") {
				t.Errorf("CSP too wide: %q", csp)
			}
			if !strings.Contains(body, `id="ID-42_x.y"`) {
				t.Errorf("the page does not name the pixel:\n%s", body)
			}
			if b := pixelVendors[typ].beacon; b != nil {
				want := strings.ReplaceAll(b("ID-42_x.y"), "&", "&amp;")
				if !strings.Contains(body, `<noscript><img src="`+want+`"`) || !strings.Contains(body, `content="1;url=`) {
					t.Errorf("no noscript beacon %s:\n%s", want, body)
				}
			} else if strings.Contains(body, "<img") || !strings.Contains(body, `content="0;url=`) {
				t.Errorf("a beacon where the platform has none:\n%s", body)
			}
			// Two pages never share a nonce.
			w2 := httptest.NewRecorder()
			servePixelPage(w2, &queries.Pixel{Type: typ, PixelID: "1"}, "https://shop.example/")
			if w2.Header().Get("Content-Security-Policy") == csp {
				t.Error("the nonce repeats")
			}
		})
	}
}

func TestWantsPixelPage(t *testing.T) {
	px := &queries.Link{Pixel: &queries.Pixel{Type: "meta", PixelID: "1"}}
	const chrome = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36"
	for _, c := range []struct {
		name, method, ua, accept, target string
		link                             *queries.Link
		bot                              bool
		want                             bool
		botName                          string
	}{
		{"browser", "GET", chrome, "text/html,*/*", "https://x.example/", px, false, true, ""},
		{"password form", "POST", chrome, "text/html", "https://x.example/", px, false, true, ""},
		{"app deep link", "GET", chrome, "text/html", "shop://item/1", px, false, true, ""},
		{"no pixel", "GET", chrome, "text/html", "https://x.example/", &queries.Link{}, false, false, ""},
		{"bot", "GET", chrome, "text/html", "https://x.example/", px, true, false, "Googlebot"},
		{"headless browser", "GET", chrome, "text/html", "https://x.example/", px, true, true, "HeadlessChrome"},
		{"headless without HTML", "GET", chrome, "*/*", "https://x.example/", px, true, false, "HeadlessChrome"},
		{"no HTML", "GET", chrome, "*/*", "https://x.example/", px, false, false, ""},
		{"HEAD", "HEAD", chrome, "text/html", "https://x.example/", px, false, false, ""},
		{"no user agent", "GET", "", "text/html", "https://x.example/", px, false, false, ""},
		{"script target", "GET", chrome, "text/html", "javascript:alert(1)", px, false, false, ""},
		{"data target", "GET", chrome, "text/html", "data:text/html,x", px, false, false, ""},
		{"unknown type", "GET", chrome, "text/html", "https://x.example/", &queries.Link{Pixel: &queries.Pixel{Type: "myspace"}}, false, false, ""},
	} {
		r := httptest.NewRequest(c.method, "/code", nil)
		r.Header.Set("User-Agent", c.ua)
		r.Header.Set("Accept", c.accept)
		if got := wantsPixelPage(r, c.link, &enrich.Result{Bot: c.bot, BotName: c.botName}, c.target); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}
