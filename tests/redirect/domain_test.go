package redirect_test

import (
	"net/http"
	"testing"
)

// A verified custom domain answers its own codes by Host; the same code on
// the default domain is a different link; an unverified domain's Host does
// not serve the custom domain's links.
func TestCustomDomainByHost(t *testing.T) {
	t.Parallel()
	s := start(t)
	const custom, other = "go.customer.test", "links.other.test"
	s.DNS.Set(custom, defaultShortDomain) // CNAME to the default domain's host
	s.DNS.Set(other, "elsewhere.example.org")
	dom := str(s.MustCreate("/v1/domains", op, map[string]any{"domain": custom}), "id")
	otherDom := str(s.MustCreate("/v1/domains", op, map[string]any{"domain": other}), "id")

	def := s.newLink(t, map[string]any{"original_url": "https://default.example/promo", "custom_code": "promo"})
	cus := s.newLink(t, map[string]any{"original_url": "https://custom.example/promo", "custom_code": "promo", "domain_id": dom})
	only := s.newLink(t, map[string]any{"original_url": "https://custom.example/only", "custom_code": "only", "domain_id": dom,
		"android_link": "https://play.example/app", "utm_source": "cd"})
	unv := s.newLink(t, map[string]any{"original_url": "https://other.example/x", "custom_code": "otherx", "domain_id": otherDom})
	if str(cus, "short_url") != "http://"+custom+"/promo" {
		t.Errorf("short_url on the custom domain: %q", str(cus, "short_url"))
	}

	// Before verification the custom Host is served as the default domain.
	wantRedirect(t, "unverified host, shared code", s.get("/promo", browserUA, "Host", custom), "https://default.example/promo")
	wantPage(t, "unverified host, its own code", s.get("/only", browserUA, "Host", custom), http.StatusNotFound)
	s.wantClicks(t, str(cus, "id"), 0)
	s.wantClicks(t, str(def, "id"), 1)

	v := s.Do("GET", "/v1/domains/"+dom+"/verify", op, nil)
	if v.Status != http.StatusOK || v.JSON(t)["is_verified"] != true {
		t.Fatalf("verify %s: %d %s", custom, v.Status, v.Body)
	}
	v = s.Do("GET", "/v1/domains/"+otherDom+"/verify", op, nil)
	if v.Status != http.StatusOK || v.JSON(t)["is_verified"] != false {
		t.Fatalf("verify %s: %d %s", other, v.Status, v.Body)
	}

	// Verified: its Host serves its links, at once (reads follow writes).
	for _, host := range []string{custom, "GO.Customer.Test", custom + ":8080", custom + "."} {
		wantRedirect(t, "custom host "+host, s.get("/promo", browserUA, "Host", host), "https://custom.example/promo")
	}
	wantRedirect(t, "custom-only code", s.get("/only", browserUA, "Host", custom), "https://custom.example/only?utm_source=cd")
	wantRedirect(t, "custom-only code on Android", s.get("/only", uaAndroidChrome, "Host", custom), "https://play.example/app?utm_source=cd")
	// The default domain keeps its own link of the same code, and does not
	// serve the custom domain's codes.
	for _, host := range []string{defaultShortDomain, "LNK.TEST:80", s.Host} {
		wantRedirect(t, "default host "+host, s.get("/promo", browserUA, "Host", host), "https://default.example/promo")
		wantPage(t, "custom-only code on the default host "+host, s.get("/only", browserUA, "Host", host), http.StatusNotFound)
	}
	// The public read by code follows the Host the same way.
	if r := s.get("/v1/links/code/only", browserUA, "Host", custom); r.Status != http.StatusOK || str(r.JSON(t), "id") != str(only, "id") {
		t.Errorf("public read on the custom host: %d %s", r.Status, r.Body)
	}
	// An unverified domain's Host does not serve its links.
	wantPage(t, "unverified domain", s.get("/otherx", browserUA, "Host", other), http.StatusNotFound)
	wantRedirect(t, "unverified domain, default code", s.get("/promo", browserUA, "Host", other), "https://default.example/promo")

	s.wantClicks(t, str(cus, "id"), 4)
	s.wantClicks(t, str(only, "id"), 3)
	s.wantClicks(t, str(def, "id"), 5)
	s.wantClicks(t, str(unv, "id"), 0)
	for _, e := range s.events(t, str(only, "id")) {
		if e.DomainID != dom || e.Code != "only" {
			t.Errorf("click on the custom domain: domain %q code %q", e.DomainID, e.Code)
		}
	}
	for _, e := range s.events(t, str(def, "id")) {
		if e.DomainID != "" {
			t.Errorf("click on the default domain with domain %q", e.DomainID)
		}
	}

	// Once verified it stays verified, even when DNS changes.
	s.DNS.Set(custom, "elsewhere.example.org")
	if v := s.Do("GET", "/v1/domains/"+dom+"/verify", op, nil); v.JSON(t)["is_verified"] != true {
		t.Errorf("verified domain lost its verification: %s", v.Body)
	}
	wantRedirect(t, "still verified", s.get("/promo", browserUA, "Host", custom), "https://custom.example/promo")

	// A deleted domain's Host no longer serves its links.
	if r := s.Do("DELETE", "/v1/domains/"+dom, op, nil); r.Status != http.StatusOK {
		t.Fatalf("delete domain: %d %s", r.Status, r.Body)
	}
	if r := s.get("/only", browserUA, "Host", custom); r.Status == http.StatusFound && r.Header.Get("Location") == "https://custom.example/only?utm_source=cd" {
		t.Errorf("a deleted domain still serves its links")
	}
}
