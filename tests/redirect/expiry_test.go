package redirect_test

import (
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/linkd/linkd/cmd/linkd/app"
	"github.com/linkd/linkd/cmd/linkd/app/apptest"
)

// Past its expiration_date a short link answers 410 with an HTML page, to
// everyone (browsers, bots, HEAD, password holders), and counts nothing.
func TestExpiryByDate(t *testing.T) {
	t.Parallel()
	s := start(t)
	past := time.Now().Add(-time.Minute).UTC().Format(time.RFC3339)
	l := s.newLink(t, map[string]any{"original_url": "https://old.example", "custom_code": "old", "expiration_date": past})
	pw := s.newLink(t, map[string]any{"original_url": "https://old.example", "custom_code": "oldpw", "expiration_date": past, "password": secretPassword})
	live := s.newLink(t, map[string]any{"original_url": "https://live.example", "custom_code": "live",
		"expiration_date": time.Now().Add(time.Hour).UTC().Format(time.RFC3339)})

	for _, ua := range []string{browserUA, uaIPhoneSafari, uaGooglebot, uaEmpty} {
		wantPage(t, "expired GET "+ua, s.get("/old", ua), http.StatusGone)
		wantPage(t, "expired scan "+ua, s.get("/old?qr=1", ua), http.StatusGone)
	}
	if r := s.visit("HEAD", "/old", "User-Agent", browserUA); r.Status != http.StatusGone {
		t.Errorf("HEAD on an expired link: %d", r.Status)
	}
	wantPage(t, "expired password link", s.get("/oldpw", browserUA), http.StatusGone)
	r := s.Do("POST", "/oldpw", "", form(secretPassword), "User-Agent", browserUA, "Content-Type", formContentType)
	wantPage(t, "expired password link, right password", r, http.StatusGone)
	if r := s.get("/v1/links/code/old", browserUA); r.Status != http.StatusGone || r.Detail(t) != "Link has expired" {
		t.Errorf("public read of an expired link: %d %s", r.Status, r.Body)
	}
	for _, id := range []string{str(l, "id"), str(pw, "id")} {
		s.wantClicks(t, id, 0)
		s.wantNoStats(t, id)
		if got := s.link(t, id); got["is_active"] != false {
			t.Errorf("expired link is_active = %v", got["is_active"])
		}
	}
	wantRedirect(t, "link before its date", s.get("/live", browserUA), "https://live.example")
	s.wantClicks(t, str(live, "id"), 1)

	// Moving the date ahead revives it at once; into the past expires it at once.
	if r := s.Do("PUT", "/v1/links/"+str(l, "id"), op, map[string]any{"expiration_date": time.Now().Add(time.Hour).UTC().Format(time.RFC3339)}); r.Status != http.StatusOK {
		t.Fatalf("revive: %d %s", r.Status, r.Body)
	}
	wantRedirect(t, "revived link", s.get("/old", browserUA), "https://old.example")
	if r := s.Do("PUT", "/v1/links/"+str(live, "id"), op, map[string]any{"expiration_date": past}); r.Status != http.StatusOK {
		t.Fatalf("expire: %d %s", r.Status, r.Body)
	}
	wantPage(t, "link expired by an update", s.get("/live", browserUA), http.StatusGone)
	s.wantClicks(t, str(live, "id"), 1)
}

// With expiration_click_count = 10, 50 concurrent clickers get exactly 10
// redirects and 40 pages 410, and the link counts exactly 10 clicks; after
// that everybody, bots and HEAD included, gets 410.
func TestExpiryByClickCountUnderConcurrency(t *testing.T) {
	t.Parallel()
	s := start(t)
	l := s.newLink(t, map[string]any{"original_url": "https://limited.example", "custom_code": "ten", "expiration_click_count": 10})
	id := str(l, "id")
	// A bot and a HEAD before the race: redirected, not counted.
	wantRedirect(t, "bot before the limit", s.get("/ten", uaGooglebot), "https://limited.example")
	if r := s.visit("HEAD", "/ten", "User-Agent", browserUA); r.Status != http.StatusFound {
		t.Errorf("HEAD before the limit: %d", r.Status)
	}
	s.wantClicks(t, id, 0)

	uas := []string{browserUA, uaIPhoneSafari, uaAndroidChrome, uaMacSafari, uaLinuxFirefox}
	got := race(50, func(i int) rawResult {
		return raw(s, "GET", "/ten", "User-Agent", uas[i%len(uas)])
	})
	st := statuses(t, got)
	if st[http.StatusFound] != 10 || st[http.StatusGone] != 40 || len(st) != 2 {
		t.Errorf("50 concurrent clicks on a 10-click link: %v, want 10 x 302 and 40 x 410", st)
	}
	for _, r := range got {
		if r.Status == http.StatusFound && r.Location != "https://limited.example" {
			t.Errorf("redirect to %q", r.Location)
		}
	}
	s.wantClicks(t, id, 10)
	if m := s.link(t, id); m["is_active"] != false {
		t.Errorf("is_active after the limit: %v", m["is_active"])
	}
	if d := s.day(t, id); num(t, d, "total_clicks") != 10 {
		t.Errorf("total_clicks after the limit: %v", d["total_clicks"])
	}
	if evs := s.events(t, id); len(evs) != 10 {
		t.Errorf("%d ClickRecorded events, want 10", len(evs))
	}

	// Expired now, for everyone.
	for _, ua := range []string{browserUA, uaGooglebot, uaSlackbot, uaEmpty} {
		wantPage(t, "after the limit, "+ua, s.get("/ten", ua), http.StatusGone)
	}
	if r := s.visit("HEAD", "/ten", "User-Agent", browserUA); r.Status != http.StatusGone {
		t.Errorf("HEAD after the limit: %d, want 410", r.Status)
	}
	if r := s.get("/v1/links/code/ten", browserUA); r.Status != http.StatusGone {
		t.Errorf("public read after the limit: %d", r.Status)
	}
	s.wantClicks(t, id, 10)
}

// The same limit holds when the short URL and the public read race: both
// count, and together they never count past the limit.
func TestExpiryByClickCountMixedAccess(t *testing.T) {
	t.Parallel()
	s := start(t)
	l := s.newLink(t, map[string]any{"original_url": "https://mixed.example", "custom_code": "mix", "expiration_click_count": 10})
	id := str(l, "id")
	got := race(50, func(i int) rawResult {
		if i%2 == 0 {
			return raw(s, "GET", "/mix", "User-Agent", browserUA)
		}
		return raw(s, "GET", "/v1/links/code/mix", "User-Agent", browserUA)
	})
	st := statuses(t, got)
	if st[http.StatusFound]+st[http.StatusOK] != 10 || st[http.StatusGone] != 40 {
		t.Errorf("50 mixed accesses on a 10-click link: %v, want 10 answered and 40 x 410", st)
	}
	for i, r := range got {
		if i%2 == 0 && r.Status == http.StatusOK || i%2 == 1 && r.Status == http.StatusFound {
			t.Errorf("access %d answered %d", i, r.Status)
		}
	}
	s.wantClicks(t, id, 10)
	if d := s.day(t, id); num(t, d, "total_clicks") != 10 {
		t.Errorf("total_clicks: %v", d["total_clicks"])
	}
	srcs := map[string]int{}
	for _, e := range s.events(t, id) {
		srcs[e.Source]++
	}
	if srcs["redirect"] != st[http.StatusFound] || srcs["api"] != st[http.StatusOK] {
		t.Errorf("click sources %v, answers %v", srcs, st)
	}

	// A password link with a click limit: once used up, the form is not
	// shown any more.
	pw := s.newLink(t, map[string]any{"original_url": "https://pwlim.example", "custom_code": "pwlim", "expiration_click_count": 1, "password": secretPassword})
	r := s.Do("POST", "/pwlim", "", form(secretPassword), "User-Agent", browserUA, "Content-Type", formContentType)
	wantRedirect(t, "the one allowed click", r, "https://pwlim.example")
	wantPage(t, "form after the limit", s.get("/pwlim", browserUA), http.StatusGone)
	r = s.Do("POST", "/pwlim", "", form(secretPassword), "User-Agent", browserUA, "Content-Type", formContentType)
	wantPage(t, "right password after the limit", r, http.StatusGone)
	if strings.Contains(string(r.Body), "<form") {
		t.Errorf("expired link still shows the form")
	}
	s.wantClicks(t, str(pw, "id"), 1)
}

// Expiry by date under concurrent clicks: a link past its date counts none
// of 50 concurrent clicks; a link whose date passes while 16 clients click
// it, through the short URL and the public read, answers each client with
// redirects and then only 410s, and counts exactly the accesses it
// answered before the date.
func TestExpiryByDateUnderConcurrency(t *testing.T) {
	t.Parallel()
	clk := apptest.NewClock()
	s := start(t, apptest.WithClock(clk))
	past := s.newLink(t, map[string]any{"original_url": "https://past.example", "custom_code": "past",
		"expiration_date": clk.Now().Add(-time.Second).Format(time.RFC3339Nano)})
	st := statuses(t, race(50, func(i int) rawResult {
		if i%2 == 0 {
			return raw(s, "GET", "/past", "User-Agent", browserUA)
		}
		return raw(s, "GET", "/v1/links/code/past", "User-Agent", browserUA)
	}))
	if st[http.StatusGone] != 50 {
		t.Errorf("50 concurrent clicks on an expired link: %v", st)
	}
	s.wantClicks(t, str(past, "id"), 0)

	// The clock reaches the date once every client has been answered three
	// times; the clients go on until they see 410.
	deadline := clk.Now().Add(time.Hour)
	soon := s.newLink(t, map[string]any{"original_url": "https://soon.example", "custom_code": "soon",
		"expiration_date": deadline.Format(time.RFC3339Nano)})
	const clients = 16
	var warmed sync.WaitGroup
	warmed.Add(clients)
	go func() {
		warmed.Wait()
		clk.Set(deadline)
	}()
	seqs := make([][]int, clients)
	race(clients, func(i int) rawResult {
		for n := 0; n < 5000; n++ {
			var r rawResult
			if i%2 == 0 {
				r = raw(s, "GET", "/soon", "User-Agent", browserUA)
			} else {
				r = raw(s, "GET", "/v1/links/code/soon", "User-Agent", browserUA)
			}
			if r.Err != nil {
				if len(seqs[i]) < 3 {
					warmed.Done()
				}
				return r
			}
			seqs[i] = append(seqs[i], r.Status)
			if len(seqs[i]) == 3 {
				warmed.Done()
			}
			if r.Status == http.StatusGone {
				if len(seqs[i]) < 3 {
					warmed.Done()
				}
				break
			}
		}
		return rawResult{}
	})
	answered := 0
	for i, seq := range seqs {
		if len(seq) == 0 || seq[len(seq)-1] != http.StatusGone {
			t.Errorf("client %d never saw the link expire: %v", i, seq)
			continue
		}
		for _, code := range seq[:len(seq)-1] {
			if code != http.StatusFound && code != http.StatusOK {
				t.Errorf("client %d: %d before the 410: %v", i, code, seq)
			}
			answered++
		}
	}
	if answered == 0 {
		t.Errorf("no access answered before the date")
	}
	s.wantClicks(t, str(soon, "id"), answered)
	for _, e := range s.events(t, str(soon, "id")) {
		if !e.Timestamp.Before(deadline.Add(time.Millisecond)) {
			t.Errorf("click counted at %v, after the date %v", e.Timestamp, deadline)
		}
	}
	// Each client went on until it saw 410: after the date nobody is let
	// through, bots and HEAD included.
	wantPage(t, "after the date", s.get("/soon", uaGooglebot), http.StatusGone)
	s.wantClicks(t, str(soon, "id"), answered)
}

// Click inflation: one visitor's accesses to one link beyond
// LINKD_CLICK_LIMIT in an hour are still redirected, and not counted (no
// event, no click, no tracking id); other visitors and links are not
// affected; /metrics counts the accesses left uncounted. A visitor is a
// client network with its user agent: the addresses of one IPv6 /64 share
// a limit, another browser on them has its own.
func TestClickLimitPerVisitor(t *testing.T) {
	t.Parallel()
	clk := apptest.NewClock()
	s := start(t, trustLocal, apptest.WithClock(clk), func(c *app.Config) { c.ClickLimit = 5 })
	a := s.newLink(t, map[string]any{"original_url": "https://a.example", "custom_code": "lim-a", "enable_conversion_tracking": true})
	b := s.newLink(t, map[string]any{"original_url": "https://b.example", "custom_code": "lim-b"})
	get := func(code, ip string) apptest.Response {
		return s.Do("GET", "/"+code, "", nil, "User-Agent", browserUA, "X-Forwarded-For", ip)
	}
	for i := 0; i < 9; i++ {
		r := get("lim-a", "2001:db8:5:5::"+strconv.Itoa(i+1)) // one /64
		if r.Status != http.StatusFound {
			t.Fatalf("access %d: %d", i, r.Status)
		}
		tracked := strings.Contains(r.Header.Get("Location"), "svc_tid=")
		if tracked != (i < 5) {
			t.Errorf("access %d: tracking id handed out = %v", i, tracked)
		}
	}
	if r := s.Do("GET", "/v1/links/code/lim-a", "", nil, "User-Agent", browserUA, "X-Forwarded-For", "2001:db8:5:5::99"); r.Status != http.StatusOK {
		t.Errorf("public read over the limit: %d", r.Status)
	}
	get("lim-a", ipGB)
	get("lim-b", "2001:db8:5:5::1")
	// Another browser on the same network is another visitor.
	if r := s.Do("GET", "/lim-a", "", nil, "User-Agent", "Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Mobile/15E148 Safari/604.1",
		"X-Forwarded-For", "2001:db8:5:5::7"); r.Status != http.StatusFound {
		t.Fatalf("another browser: %d", r.Status)
	}
	s.wantClicks(t, str(a, "id"), 7) // five from the /64's browser, one from elsewhere, one from another browser
	s.wantClicks(t, str(b, "id"), 1)
	m := s.Do("GET", "/metrics", "", nil)
	if !strings.Contains(string(m.Body), "linkd_clicks_uncounted_total 5") {
		t.Errorf("metrics do not count 5 uncounted accesses:\n%s", grepLines(string(m.Body), "uncounted"))
	}
	// The next hour counts again.
	clk.Advance(time.Hour)
	get("lim-a", "2001:db8:5:5::1")
	s.wantClicks(t, str(a, "id"), 8)
}

// Rotating user agents does not lift the limit: one client network's
// counted clicks on one link stop at LINKD_CLICK_LIMIT_NETWORK in an hour
// whatever its user agents; beyond it accesses are redirected and not
// counted. Other networks and other links keep counting.
func TestClickLimitPerNetworkWithRotatingUserAgents(t *testing.T) {
	t.Parallel()
	clk := apptest.NewClock()
	s := start(t, trustLocal, apptest.WithClock(clk), func(c *app.Config) { c.ClickLimit = 1000; c.ClickLimitNet = 20 })
	a := s.newLink(t, map[string]any{"original_url": "https://a.example", "custom_code": "net-a"})
	b := s.newLink(t, map[string]any{"original_url": "https://b.example", "custom_code": "net-b"})
	for i := 0; i < 60; i++ {
		ua := browserUA + " rotating/" + strconv.Itoa(i)
		if r := s.Do("GET", "/net-a", "", nil, "User-Agent", ua, "X-Forwarded-For", "203.0.113.50"); r.Status != http.StatusFound {
			t.Fatalf("access %d: %d, want 302 (redirected even when not counted)", i, r.Status)
		}
	}
	s.Do("GET", "/net-a", "", nil, "User-Agent", browserUA, "X-Forwarded-For", ipGB)
	s.Do("GET", "/net-b", "", nil, "User-Agent", browserUA+" rotating/0", "X-Forwarded-For", "203.0.113.50")
	s.wantClicks(t, str(a, "id"), 21) // the network's 20, one from another network
	s.wantClicks(t, str(b, "id"), 1)
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
