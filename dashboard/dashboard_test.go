package dashboard_test

import (
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/linkd/linkd/cmd/linkd/app"
	"github.com/linkd/linkd/cmd/linkd/app/apptest"
)

// dashClient is a person's browser without a browser: cookies kept,
// redirects not followed.
type dashClient struct {
	t   *testing.T
	s   *apptest.Server
	c   *http.Client
	tok string // the session's CSRF token, from the last page
}

var csrfRe = regexp.MustCompile(`name="csrf_token" value="([^"]+)"`)

func newDashClient(t *testing.T, s *apptest.Server) *dashClient {
	jar, _ := cookiejar.New(nil)
	return &dashClient{t: t, s: s, c: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

func (d *dashClient) get(path string) (int, string, http.Header) {
	d.t.Helper()
	resp, err := d.c.Get(d.s.URL + path)
	if err != nil {
		d.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if m := csrfRe.FindSubmatch(b); m != nil {
		d.tok = string(m[1])
	}
	return resp.StatusCode, string(b), resp.Header
}

func (d *dashClient) post(path string, form url.Values, origin string) (int, string, http.Header) {
	d.t.Helper()
	req, _ := http.NewRequest("POST", d.s.URL+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	resp, err := d.c.Do(req)
	if err != nil {
		d.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header
}

func (d *dashClient) signIn(email, password string) {
	d.t.Helper()
	d.get("/dashboard/login")
	st, body, h := d.post("/dashboard/login", url.Values{"email": {email}, "password": {password}, "csrf_token": {d.tok}}, d.s.URL)
	if st != http.StatusSeeOther || h.Get("Location") != "/dashboard/links" {
		d.t.Fatalf("sign-in: %d %s %s", st, h.Get("Location"), body)
	}
	d.get("/dashboard/links")
}

func TestDashboardPages(t *testing.T) {
	s := apptest.Start(t)
	d := newDashClient(t, s)

	// Without a session every page goes to the sign-in page.
	if st, _, h := d.get("/dashboard/links"); st != http.StatusSeeOther || !strings.HasPrefix(h.Get("Location"), "/dashboard/login") {
		t.Fatalf("no session: %d %s", st, h.Get("Location"))
	}
	st, body, h := d.get("/dashboard/login")
	if st != 200 || !strings.Contains(h.Get("Content-Security-Policy"), "script-src 'self'") || strings.Contains(body, "<script>") {
		t.Fatalf("login page: %d %q", st, h.Get("Content-Security-Policy"))
	}
	if st, _, _ := d.post("/dashboard/login", url.Values{"email": {apptest.AdminEmail}, "password": {"wrong password"}, "csrf_token": {d.tok}}, s.URL); st != http.StatusUnauthorized {
		t.Fatalf("wrong password: %d", st)
	}
	// Sign-in is throttled like link passwords: five wrong tries a minute.
	for i := 1; i <= 6; i++ {
		want := http.StatusUnauthorized
		if i == 6 {
			want = http.StatusTooManyRequests
		}
		if st, _, _ := d.post("/dashboard/login", url.Values{"email": {"guess@example.com"}, "password": {"guess number " + strconv.Itoa(i)}, "csrf_token": {d.tok}}, s.URL); st != want {
			t.Fatalf("guess %d: %d, want %d", i, st, want)
		}
	}
	// A sign-in form without its token changes nothing.
	if st, _, _ := d.post("/dashboard/login", url.Values{"email": {apptest.AdminEmail}, "password": {apptest.AdminPassword}}, s.URL); st != http.StatusForbidden {
		t.Fatalf("sign-in without a token: %d", st)
	}
	d.signIn(apptest.AdminEmail, apptest.AdminPassword)

	// A link made in the builder, with markup in its name.
	st, body, h = d.post("/dashboard/links/new", url.Values{"csrf_token": {d.tok}, "original_url": {"https://example.com/a"},
		"name": {`<script>alert(1)</script>`}, "custom_code": {"spring"}, "utm_source": {"news"}, "excluded_countries": {"DE, FR"},
		"metadata.title": {"Spring"}, "qr_code_options.color": {"#112233"}}, s.URL)
	if st != http.StatusSeeOther || !strings.HasPrefix(h.Get("Location"), "/dashboard/links/") {
		t.Fatalf("create link: %d %s", st, body)
	}
	linkPage := h.Get("Location")
	st, body, _ = d.get(linkPage)
	if st != 200 || !strings.Contains(body, "&lt;script&gt;alert(1)&lt;/script&gt;") || strings.Contains(body, "<script>alert") {
		t.Fatalf("link page: %d, name not escaped:\n%s", st, body)
	}
	// A click shows on the link's chart.
	resp, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Get(s.URL + "/spring")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if _, body, _ = d.get(linkPage); !strings.Contains(body, `data-figure="clicks">1<`) {
		t.Errorf("the click is not on the link's page")
	}

	linkPath := strings.SplitN(linkPage, "?", 2)[0]
	if st, body, h := d.get(linkPath + "/qr?download=1"); st != 200 || h.Get("Content-Type") != "image/png" ||
		!strings.HasPrefix(h.Get("Content-Disposition"), "attachment") || !strings.HasPrefix(body, "\x89PNG") {
		t.Errorf("QR download: %d %q %q", st, h.Get("Content-Type"), h.Get("Content-Disposition"))
	}
	for _, p := range []string{"/dashboard/links", "/dashboard/links?search=spring", "/dashboard/links/new", "/dashboard/keys", "/dashboard/projects",
		"/dashboard/domains", "/dashboard/customers", "/dashboard/workspaces", "/dashboard/radar", "/dashboard/utm-templates",
		"/dashboard/pixels", "/dashboard/webhooks", "/dashboard/qr-preview?text=http%3A%2F%2Fx%2Fy"} {
		if st, body, _ := d.get(p); st != 200 {
			t.Errorf("%s: %d %s", p, st, body)
		}
	}
	if _, body, _ = d.get("/dashboard/links?search=spring"); !strings.Contains(body, "/spring") {
		t.Errorf("search does not find the link")
	}

	// CSRF: without the token, or from another site, 403 and nothing made.
	if st, _, _ := d.post("/dashboard/keys", url.Values{"name": {"no token"}}, s.URL); st != http.StatusForbidden {
		t.Errorf("no token: %d", st)
	}
	if st, _, _ := d.post("/dashboard/keys", url.Values{"name": {"other site"}, "csrf_token": {d.tok}}, "https://evil.example"); st != http.StatusForbidden {
		t.Errorf("other origin: %d", st)
	}
	if _, body, _ = d.get("/dashboard/keys"); strings.Contains(body, "no token") || strings.Contains(body, "other site") {
		t.Errorf("a refused form made a key")
	}
	// A key is shown once.
	st, body, _ = d.post("/dashboard/keys", url.Values{"name": {"ci"}, "csrf_token": {d.tok}}, s.URL)
	full := regexp.MustCompile(`id="new-key">(svc_sk_[^<]+)<`).FindStringSubmatch(body)
	if st != http.StatusCreated || full == nil {
		t.Fatalf("create key: %d", st)
	}
	if _, body, _ = d.get("/dashboard/keys"); strings.Contains(body, full[1]) {
		t.Errorf("the key is shown again")
	}
	if r := s.Do("GET", "/v1/api-keys/validate", full[1], nil); r.Status != 200 {
		t.Errorf("the key made in the dashboard does not work: %d", r.Status)
	}

	// An admin invites a person with a one-time link.
	wsID, _ := s.Do("GET", "/v1/workspaces", apptest.OperatorKey, nil).List(t)[0].(map[string]any)["id"].(string)
	d.get("/dashboard/workspaces/" + wsID + "/members")
	st, body, _ = d.post("/dashboard/workspaces/"+wsID+"/invitations", url.Values{"csrf_token": {d.tok}, "email": {"carol@example.com"}, "role": {"member"}}, s.URL)
	invite := regexp.MustCompile(`id="invite-url">([^<]+)<`).FindStringSubmatch(body)
	if st != http.StatusCreated || invite == nil {
		t.Fatalf("invite: %d %s", st, body)
	}
	carol := newDashClient(t, s)
	invPath := strings.TrimPrefix(invite[1], s.URL)
	if st, body, _ := carol.get(invPath); st != 200 || !strings.Contains(body, "carol@example.com") {
		t.Fatalf("invitation page: %d %s", st, body)
	}
	st, body, h = carol.post(invPath, url.Values{"csrf_token": {carol.tok}, "user_id": {"carol"}, "password": {"carol's password"}}, s.URL)
	if st != http.StatusSeeOther {
		t.Fatalf("accept: %d %s", st, body)
	}
	if st, body, _ := carol.get("/dashboard/workspaces"); st != 200 || !strings.Contains(body, "/dashboard/workspaces/"+wsID) {
		t.Errorf("carol does not see the workspace she joined: %d", st)
	}
	if st, _, _ := newDashClient(t, s).get(invPath); st != http.StatusGone {
		t.Errorf("invitation used twice: %d", st)
	}

	// Sign-out ends the session on the server.
	if st, _, _ := d.post("/dashboard/logout", url.Values{"csrf_token": {d.tok}}, s.URL); st != http.StatusSeeOther {
		t.Fatalf("logout: %d", st)
	}
	if st, _, _ := d.get("/dashboard/keys"); st != http.StatusSeeOther {
		t.Errorf("after sign-out: %d", st)
	}
}

// A session is events: a restart keeps it, and sign-out ends it for good.
func TestDashboardSessionSurvivesRestart(t *testing.T) {
	s := apptest.Start(t)
	d := newDashClient(t, s)
	d.signIn(apptest.AdminEmail, apptest.AdminPassword)
	cfg := s.Config
	s.Stop()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Addr = ln.Addr().String()
	s2 := apptest.StartWith(t, cfg, ln)
	d.s = s2 // cookies are per host, not per port: the jar sends the session again
	if st, _, h := d.get("/dashboard/keys"); st != 200 {
		t.Fatalf("after a restart: %d %s", st, h.Get("Location"))
	}
	u, _ := url.Parse(s2.URL + "/dashboard/")
	kept := d.c.Jar.Cookies(u)
	if st, _, _ := d.post("/dashboard/logout", url.Values{"csrf_token": {d.tok}}, s2.URL); st != http.StatusSeeOther {
		t.Fatalf("logout: %d", st)
	}
	// The old cookie, sent again, signs nobody in.
	req, _ := http.NewRequest("GET", s2.URL+"/dashboard/keys", nil)
	for _, c := range kept {
		req.AddCookie(c)
	}
	resp, err := d.c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if len(kept) == 0 || resp.StatusCode != http.StatusSeeOther {
		t.Errorf("the ended session's cookie (%d cookies): %d", len(kept), resp.StatusCode)
	}
}

// The webhooks page makes a webhook (its secret shown once, on the answer
// to the form), lists it, and shows its deliveries.
func TestDashboardWebhooks(t *testing.T) {
	s := apptest.Start(t, func(c *app.Config) { c.WebhookAllowedNetworks = "127.0.0.0/8" })
	got := make(chan string, 16)
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Get("webhook-id")
		w.WriteHeader(http.StatusNoContent)
	}))
	defer recv.Close()
	d := newDashClient(t, s)
	d.signIn(apptest.AdminEmail, apptest.AdminPassword)
	st, body, _ := d.post("/dashboard/webhooks", url.Values{"csrf_token": {d.tok}, "url": {recv.URL + "/hook"},
		"events": {"link.created", "link.clicked"}, "description": {"<b>crm</b>"}}, s.URL)
	secret := regexp.MustCompile(`id="webhook-secret">(whsec_[^<]+)<`).FindStringSubmatch(body)
	if st != http.StatusCreated || secret == nil {
		t.Fatalf("create: %d %s", st, body)
	}
	st, body, _ = d.get("/dashboard/webhooks")
	if st != 200 || !strings.Contains(body, recv.URL+"/hook") || strings.Contains(body, secret[1]) {
		t.Fatalf("list: %d (the secret must not show again)", st)
	}
	id := regexp.MustCompile(`href="/dashboard/webhooks/([0-9a-f-]+)"`).FindStringSubmatch(body)
	if id == nil {
		t.Fatalf("no link to the webhook's page: %s", body)
	}
	s.MustCreate("/v1/links", apptest.OperatorKey, map[string]any{"original_url": "https://example.com/hooked"})
	select {
	case <-got:
	case <-time.After(10 * time.Second):
		t.Fatal("no delivery of link.created")
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		st, body, _ = d.get("/dashboard/webhooks/" + id[1])
		if st == 200 && strings.Contains(body, "link.created") && strings.Contains(body, "succeeded") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("webhook page without its delivery: %d %s", st, body)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if !strings.Contains(body, "&lt;b&gt;crm&lt;/b&gt;") {
		t.Errorf("the description is not escaped")
	}
	// Without the CSRF token nothing is made.
	if st, _, _ := d.post("/dashboard/webhooks", url.Values{"url": {recv.URL + "/other"}, "events": {"link.created"}}, s.URL); st != http.StatusForbidden {
		t.Errorf("form without its token: %d", st)
	}
}

// An admin changes a member's role and removes a member on the members
// page; a refused change (the last admin) answers on the page and changes
// nothing.
func TestDashboardMemberRoles(t *testing.T) {
	s := apptest.Start(t)
	d := newDashClient(t, s)
	d.signIn(apptest.AdminEmail, apptest.AdminPassword)
	ws := s.MustCreate("/v1/workspaces", apptest.OperatorKey, map[string]any{"name": "Team"})["id"].(string)
	s.Do("POST", "/v1/workspaces/"+ws+"/members?user_id=bob&role=member", apptest.OperatorKey, nil)
	s.Do("POST", "/v1/workspaces/"+ws+"/members?user_id=carol&role=member", apptest.OperatorKey, nil)
	role := func(user string) string {
		for _, m := range s.Do("GET", "/v1/workspaces/"+ws+"/members", apptest.OperatorKey, nil).List(t) {
			if m := m.(map[string]any); m["user_id"] == user {
				return m["role"].(string)
			}
		}
		return ""
	}
	base := "/dashboard/workspaces/" + ws + "/members/"
	if st, _, _ := d.post(base+"bob/role", url.Values{"csrf_token": {d.tok}, "role": {"admin"}}, s.URL); st != http.StatusSeeOther || role("bob") != "admin" {
		t.Fatalf("make bob admin: %d, role %q", st, role("bob"))
	}
	if st, _, _ := d.post(base+"carol/remove", url.Values{"csrf_token": {d.tok}}, s.URL); st != http.StatusSeeOther || role("carol") != "" {
		t.Fatalf("remove carol: %d, role %q", st, role("carol"))
	}
	if st, _, _ := d.post(base+"bob/remove", url.Values{}, s.URL); st != http.StatusForbidden || role("bob") != "admin" {
		t.Errorf("remove without the CSRF token: %d, bob %q", st, role("bob"))
	}
	st, body, _ := d.get("/dashboard/workspaces/" + ws + "/members")
	if st != 200 || !strings.Contains(body, `aria-label="Remove bob"`) || strings.Contains(body, "Remove carol") {
		t.Errorf("members page: %d", st)
	}
}
