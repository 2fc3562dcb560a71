package redirect_test

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/linkd/linkd/cmd/linkd/app/apptest"
)

const (
	secretPassword = "open sesame 7f3a"
	xssDescription = `<script>alert(1)</script> & "quotes"`
)

// A password link shows an HTML form first; the form posts password back
// to the same URL: a wrong one shows the form again with 401, the right
// one answers the 302 and counts the click, once.
func TestPasswordFlow(t *testing.T) {
	t.Parallel()
	s := start(t)
	l := s.newLink(t, map[string]any{"original_url": "https://secret.example/doc", "custom_code": "pw",
		"password": secretPassword, "password_description": xssDescription, "utm_source": "pw"})
	id := str(l, "id")

	// GET: the form, 200, with the description escaped.
	for _, ua := range []string{browserUA, uaIPhoneSafari} {
		r := s.get("/pw", ua)
		wantForm(t, "GET", r, http.StatusOK)
	}
	// Also on a QR scan: the form keeps the query so the post is a scan too.
	r := s.get("/pw?qr=1", browserUA)
	wantForm(t, "GET ?qr=1", r, http.StatusOK)
	if !strings.Contains(string(r.Body), `action="/pw?qr=1"`) {
		t.Errorf("form of /pw?qr=1 does not post back to it: %s", r.Body)
	}
	// A hostile query string cannot break out of the form's action.
	r = s.get(`/pw?x="><script>alert(2)</script>`, browserUA)
	wantForm(t, "GET with a hostile query", r, http.StatusOK)
	// HEAD and bots see the form's status and are not let through.
	if r := s.visit("HEAD", "/pw", "User-Agent", browserUA); r.Status != http.StatusOK || r.Header.Get("Location") != "" {
		t.Errorf("HEAD on a password link: %d Location %q", r.Status, r.Header.Get("Location"))
	}
	wantForm(t, "Googlebot", s.get("/pw", uaGooglebot), http.StatusOK)

	// POST wrong: the form again, 401.
	for _, wrong := range []string{"", "open sesame", strings.ToUpper(secretPassword), secretPassword + " "} {
		r := s.Do("POST", "/pw", "", form(wrong), "User-Agent", browserUA, "Content-Type", formContentType)
		wantForm(t, "wrong password "+strconv.Quote(wrong), r, http.StatusUnauthorized)
	}
	s.wantClicks(t, id, 0)
	s.wantNoStats(t, id)

	// POST right: 302 to the target (utm values included), counted once.
	r = s.Do("POST", "/pw", "", form(secretPassword), "User-Agent", browserUA, "Content-Type", formContentType)
	wantRedirect(t, "right password", r, "https://secret.example/doc?utm_source=pw")
	s.wantClicks(t, id, 1)
	if d := s.day(t, id); num(t, d, "total_clicks") != 1 {
		t.Errorf("total_clicks after one right password: %v", d["total_clicks"])
	}
	// The form page of a QR scan posts back with ?qr=1: counted as a scan.
	r = s.Do("POST", "/pw?qr=1", "", form(secretPassword), "User-Agent", browserUA, "Content-Type", formContentType)
	wantRedirect(t, "right password on a scan", r, "https://secret.example/doc?utm_source=pw")
	s.wantClicks(t, id, 2)
	if d := s.day(t, id); num(t, d, "scans_only") != 1 || num(t, d, "clicks_only") != 1 {
		t.Errorf("scans/clicks after a scan and a click: %v / %v", d["scans_only"], d["clicks_only"])
	}
	evs := s.events(t, id)
	if len(evs) != 2 || evs[0].QR || !evs[1].QR {
		t.Errorf("click events after the password: %+v", evs)
	}

	// Nothing the visitor sees ever carries the password, nor does the
	// public read of the link.
	for _, path := range []string{"/pw", "/v1/links/code/pw"} {
		r := s.get(path, browserUA)
		if strings.Contains(string(r.Body), secretPassword) {
			t.Errorf("%s leaks the password: %s", path, r.Body)
		}
	}
	pub := s.get("/v1/links/code/pw", browserUA, "X-Link-Password", secretPassword)
	if pub.Status != http.StatusOK || strings.Contains(string(pub.Body), secretPassword) {
		t.Errorf("public read with the password: %d %s", pub.Status, pub.Body)
	}
	s.wantClicks(t, id, 3)
}

// wantForm checks the password form: status, HTML, a form posting
// "password", the description shown escaped, and no password in it.
func wantForm(t *testing.T, what string, r apptest.Response, status int) {
	t.Helper()
	wantPage(t, what, r, status, `<form`, `method="post"`, `name="password"`, `type="password"`,
		`&lt;script&gt;alert(1)&lt;/script&gt; &amp; &#34;quotes&#34;`)
	body := string(r.Body)
	if strings.Contains(body, "<script>") {
		t.Errorf("%s: the description is not escaped: %s", what, body)
	}
	if strings.Contains(body, secretPassword) {
		t.Errorf("%s: the form leaks the password", what)
	}
	if cc := r.Header.Get("Cache-Control"); !strings.Contains(cc, "no-store") {
		t.Errorf("%s: form cacheable: %q", what, cc)
	}
}

// Wrong passwords are throttled per client address and link: after five
// wrong attempts within a minute the form answers 429 with Retry-After,
// even with the right password and whatever the user agent; other clients
// and other links are not affected.
func TestPasswordThrottle(t *testing.T) {
	t.Parallel()
	s := start(t, trustLocal)
	a := s.newLink(t, map[string]any{"original_url": "https://a.example", "custom_code": "pwa",
		"password": secretPassword, "password_description": xssDescription})
	b := s.newLink(t, map[string]any{"original_url": "https://b.example", "custom_code": "pwb", "password": secretPassword})
	post := func(code, password, ip, ua string) apptest.Response {
		return s.Do("POST", "/"+code, "", form(password), "User-Agent", ua, "Content-Type", formContentType, "X-Forwarded-For", ip)
	}
	for i := 0; i < 5; i++ {
		wantForm(t, "wrong attempt "+strconv.Itoa(i+1), post("pwa", "guess"+strconv.Itoa(i), ipGB, browserUA), http.StatusUnauthorized)
	}
	r := post("pwa", "guess5", ipGB, browserUA)
	wantForm(t, "sixth wrong attempt", r, http.StatusTooManyRequests)
	if ra, err := strconv.Atoi(r.Header.Get("Retry-After")); err != nil || ra <= 0 {
		t.Errorf("429 without a positive Retry-After: %q", r.Header.Get("Retry-After"))
	}
	// Throttled: even the right password, from any user agent of that client.
	for _, ua := range []string{browserUA, uaIPhoneSafari, uaMacSafari, "Mozilla/5.0 (X11; Linux x86_64; rv:1.0) Gecko/20100101 Firefox/1.0"} {
		r := post("pwa", secretPassword, ipGB, ua)
		if r.Status != http.StatusTooManyRequests {
			t.Errorf("right password while throttled (UA %q): %d, want 429", ua, r.Status)
		}
	}
	s.wantClicks(t, str(a, "id"), 0)
	// Another client is not throttled.
	wantRedirect(t, "another client", post("pwa", secretPassword, ipUS, browserUA), "https://a.example")
	s.wantClicks(t, str(a, "id"), 1)
	// Another link is not throttled for the same client.
	wantForm2 := post("pwb", "wrong", ipGB, browserUA)
	if wantForm2.Status != http.StatusUnauthorized {
		t.Errorf("wrong password on another link: %d, want 401", wantForm2.Status)
	}
	wantRedirect(t, "right password on another link", post("pwb", secretPassword, ipGB, browserUA), "https://b.example")
	s.wantClicks(t, str(b, "id"), 1)
	// Showing the form is not throttled.
	wantForm(t, "GET while throttled", s.get("/pwa", browserUA, "X-Forwarded-For", ipGB), http.StatusOK)
}

// The public read's X-Link-Password is another way to try passwords: its
// wrong attempts count against the same limit as the form's, and a
// throttled client gets 429 {"detail":"Rate limit exceeded"} there.
func TestPasswordThrottleCoversPublicRead(t *testing.T) {
	t.Parallel()
	s := start(t, trustLocal)
	l := s.newLink(t, map[string]any{"original_url": "https://api.example", "custom_code": "pwapi", "password": secretPassword})
	api := func(password, ip string) apptest.Response {
		h := []string{"User-Agent", browserUA, "X-Forwarded-For", ip}
		if password != "" {
			h = append(h, "X-Link-Password", password)
		}
		return s.visit("GET", "/v1/links/code/pwapi", h...)
	}
	for i := 0; i < 3; i++ {
		if r := api("guess"+strconv.Itoa(i), ipGB); r.Status != http.StatusUnauthorized || r.Detail(t) != "Invalid password" {
			t.Errorf("wrong X-Link-Password %d: %d %s", i, r.Status, r.Body)
		}
	}
	for i := 0; i < 2; i++ {
		r := s.Do("POST", "/pwapi", "", form("form guess"), "User-Agent", browserUA, "Content-Type", formContentType, "X-Forwarded-For", ipGB)
		if r.Status != http.StatusUnauthorized {
			t.Errorf("wrong form password %d: %d", i, r.Status)
		}
	}
	r := api(secretPassword, ipGB)
	if r.Status != http.StatusTooManyRequests || r.Detail(t) != "Rate limit exceeded" || r.Header.Get("Retry-After") == "" {
		t.Errorf("right X-Link-Password while throttled: %d %s Retry-After %q", r.Status, r.Body, r.Header.Get("Retry-After"))
	}
	if r := s.Do("POST", "/pwapi", "", form(secretPassword), "User-Agent", browserUA, "Content-Type", formContentType, "X-Forwarded-For", ipGB); r.Status != http.StatusTooManyRequests {
		t.Errorf("right form password while throttled: %d", r.Status)
	}
	// Asking without a password is not an attempt.
	if r := api("", ipGB); r.Status != http.StatusUnauthorized || r.Detail(t) != "Password required" {
		t.Errorf("no X-Link-Password: %d %s", r.Status, r.Body)
	}
	s.wantClicks(t, str(l, "id"), 0)
	if r := api(secretPassword, ipUS); r.Status != http.StatusOK {
		t.Errorf("another client with the right password: %d %s", r.Status, r.Body)
	}
	s.wantClicks(t, str(l, "id"), 1)
}

// A guesser cannot spread over addresses: the 20 addresses of one IPv6 /64
// are one client (five wrong attempts), and a link takes 30 wrong attempts
// a minute from all addresses together; after the minute the owner gets in.
func TestPasswordThrottleAcrossAddresses(t *testing.T) {
	t.Parallel()
	clk := apptest.NewClock()
	s := start(t, trustLocal, apptest.WithClock(clk))
	s.newLink(t, map[string]any{"original_url": "https://a.example", "custom_code": "pw64", "password": secretPassword})
	s.newLink(t, map[string]any{"original_url": "https://b.example", "custom_code": "pwmany", "password": secretPassword})
	post := func(code, password, ip string) apptest.Response {
		return s.Do("POST", "/"+code, "", form(password), "User-Agent", browserUA, "Content-Type", formContentType, "X-Forwarded-For", ip)
	}
	wrong, throttled := 0, 0
	for i := 0; i < 20; i++ {
		switch r := post("pw64", "guess", "2001:db8:64:1::"+strconv.FormatInt(int64(i+1), 16)); r.Status {
		case http.StatusUnauthorized:
			wrong++
		case http.StatusTooManyRequests:
			throttled++
		default:
			t.Fatalf("attempt %d: %d", i, r.Status)
		}
	}
	if wrong != 5 || throttled != 15 {
		t.Errorf("one /64: %d wrong and %d throttled of 20, want 5 and 15", wrong, throttled)
	}
	wrong, throttled = 0, 0
	for i := 0; i < 40; i++ {
		switch r := post("pwmany", "guess", "198.51.100."+strconv.Itoa(i+1)); r.Status {
		case http.StatusUnauthorized:
			wrong++
		case http.StatusTooManyRequests:
			throttled++
		}
	}
	if wrong != 30 || throttled != 10 {
		t.Errorf("40 addresses: %d wrong and %d throttled, want 30 and 10", wrong, throttled)
	}
	if r := post("pwmany", secretPassword, ipGB); r.Status != http.StatusTooManyRequests {
		t.Errorf("the owner within the minute: %d, want 429", r.Status)
	}
	clk.Advance(61 * time.Second)
	if r := post("pwmany", secretPassword, ipGB); r.Status != http.StatusFound {
		t.Errorf("the owner after the minute: %d, want 302", r.Status)
	}
}
