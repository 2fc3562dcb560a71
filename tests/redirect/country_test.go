package redirect_test

import (
	"net/http"
	"testing"

	"github.com/linkd/linkd/cmd/linkd/app"
)

// A visitor from an excluded country gets 451 with an HTML page and is not
// counted; the country comes from the client address, which is taken from
// X-Forwarded-For only when the peer is a trusted proxy
// (LINKD_TRUSTED_PROXIES).
func TestExcludedCountry(t *testing.T) {
	t.Parallel()
	s := start(t, trustLocal)
	l := s.newLink(t, map[string]any{"original_url": "https://geo.example", "custom_code": "geo",
		"excluded_countries": []map[string]any{{"code": "US", "label": "United States", "phone": "1"}, {"code": "jp"}}})
	id := str(l, "id")

	for _, ip := range []string{ipUS, ipJP, "2001:4860:4860::8888"} {
		for _, ua := range []string{browserUA, uaIPhoneSafari, uaGooglebot} {
			wantPage(t, "excluded "+ip+" "+ua, s.get("/geo", ua, "X-Forwarded-For", ip), http.StatusUnavailableForLegalReasons)
		}
		if r := s.visit("HEAD", "/geo", "User-Agent", browserUA, "X-Forwarded-For", ip); r.Status != http.StatusUnavailableForLegalReasons {
			t.Errorf("HEAD from excluded %s: %d", ip, r.Status)
		}
		wantPage(t, "excluded scan "+ip, s.get("/geo?qr=1", browserUA, "X-Forwarded-For", ip), http.StatusUnavailableForLegalReasons)
	}
	s.wantClicks(t, id, 0)
	s.wantNoStats(t, id)

	// Other countries pass and are counted with their country.
	wantRedirect(t, "from GB", s.get("/geo", browserUA, "X-Forwarded-For", ipGB), "https://geo.example")
	wantRedirect(t, "from BR", s.get("/geo", browserUA, "X-Forwarded-For", ipBR), "https://geo.example")
	// Only the entry the trusted proxy appended counts: a forged entry to
	// its left does not change the country (US, excluded, is forged here).
	wantRedirect(t, "forged left entry", s.get("/geo", browserUA, "X-Forwarded-For", ipUS+", "+ipGB), "https://geo.example")
	wantPage(t, "real client excluded behind a forged entry", s.get("/geo", browserUA, "X-Forwarded-For", ipGB+", "+ipUS), http.StatusUnavailableForLegalReasons)
	// Without X-Forwarded-For the client is 127.0.0.1: no country, passes.
	wantRedirect(t, "local client", s.get("/geo", browserUA), "https://geo.example")
	s.wantClicks(t, id, 4)
	d := s.day(t, id)
	wantCounts(t, d, "country_stats", map[string]int{"GB": 2, "BR": 1})
	wantCounts(t, d, "continent_stats", map[string]int{"EU": 2, "SA": 1})
	if sum := s.summary(t, id); len(sum["top_countries"].([]any)) != 2 {
		t.Errorf("top_countries: %v", sum["top_countries"])
	}

	// The public read of the link is not a short URL: no country rule there.
	if r := s.get("/v1/links/code/geo", browserUA, "X-Forwarded-For", ipGB); r.Status != http.StatusOK {
		t.Errorf("public read from GB: %d", r.Status)
	}
}

// Without LINKD_TRUSTED_PROXIES, X-Forwarded-For is ignored: the visitor
// is the peer address, whatever the header says.
func TestForwardedForIgnoredFromUntrustedPeer(t *testing.T) {
	t.Parallel()
	for _, trusted := range []string{"", "10.0.0.0/8, 192.168.1.10"} {
		s := start(t, func(c *app.Config) { c.TrustedProxies = trusted })
		l := s.newLink(t, map[string]any{"original_url": "https://geo.example", "custom_code": "geo",
			"excluded_countries": []map[string]any{{"code": "US"}}})
		for _, xff := range []string{ipUS, ipGB, ipUS + ", 10.0.0.1"} {
			wantRedirect(t, "untrusted X-Forwarded-For "+xff, s.get("/geo", browserUA, "X-Forwarded-For", xff), "https://geo.example")
		}
		wantRedirect(t, "X-Real-IP is not believed either", s.get("/geo", browserUA, "X-Real-IP", ipUS), "https://geo.example")
		id := str(l, "id")
		s.wantClicks(t, id, 4)
		d := s.day(t, id)
		wantCounts(t, d, "country_stats", nil)
		// One visitor: the same peer address and user agent each time.
		if num(t, d, "unique_visitors") != 1 {
			t.Errorf("trusted %q: unique_visitors %v, want 1 (the header must not make visitors)", trusted, d["unique_visitors"])
		}
	}
}
