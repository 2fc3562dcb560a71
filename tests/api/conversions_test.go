package api_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/linkd/linkd/cmd/linkd/app/apptest"
	"github.com/linkd/linkd/eventstore"
)

// The conversion event interface (spec 4.8, 5.6, 7; DECISIONS.md
// "Conversion events"), through real HTTP.

const (
	msgInvalidPayload  = "Invalid payload"
	msgMissingExternal = "Missing customer.externalId"
	msgHostNotAllowed  = "Hostname not in allowed list"
	msgClickNotYours   = "This click does not belong to your workspace"
	msgClickNotFound   = "Click not found for this trackingId"
)

// trackingID follows a new tracked link once, as a browser does, and
// returns the svc_tid its redirect handed out.
func trackingID(t *testing.T, s *apptest.Server, key string) string {
	t.Helper()
	l := createLink(s, key, map[string]any{"original_url": "https://shop.example/landing", "enable_conversion_tracking": true})
	r := s.Do("GET", "/"+str(l, "code"), "", nil, "User-Agent", "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36")
	if r.Status != http.StatusFound {
		t.Fatalf("redirect: %d %s", r.Status, r.Body)
	}
	u, err := url.Parse(r.Header.Get("Location"))
	if err != nil || u.Query().Get("svc_tid") == "" {
		t.Fatalf("no svc_tid in %q", r.Header.Get("Location"))
	}
	return u.Query().Get("svc_tid")
}

// eventErr checks a conversion error: status and {"error": text}, and
// returns the body.
func eventErr(t *testing.T, r apptest.Response, status int, text string) map[string]any {
	t.Helper()
	if r.Status != status {
		t.Fatalf("status %d, want %d: %s", r.Status, status, r.Body)
	}
	var body map[string]any
	if err := json.Unmarshal(r.Body, &body); err != nil {
		t.Fatalf("not JSON: %s", r.Body)
	}
	if body["error"] != text {
		t.Fatalf("error %v, want %q (body %s)", body["error"], text, r.Body)
	}
	if _, ok := body["detail"]; ok {
		t.Errorf("conversion errors have no detail: %s", r.Body)
	}
	return body
}

func okEvent(t *testing.T, r apptest.Response) {
	t.Helper()
	if r.Status != http.StatusOK || strings.TrimSpace(string(r.Body)) != `{"ok":true}` {
		t.Fatalf("status %d %s, want 200 {\"ok\":true}", r.Status, r.Body)
	}
}

func TestConversionErrors(t *testing.T) {
	t.Parallel()
	s := start(t)
	alice, mallory := s.NewKey("alice", "full", nil), s.NewKey("mallory", "full", nil)
	tid := trackingID(t, s, alice)
	lead := func(body string, key string) apptest.Response { return s.Do("POST", "/api/events/lead", key, body) }
	sale := func(body string, key string) apptest.Response { return s.Do("POST", "/api/events/sale", key, body) }

	okEvent(t, lead(`{"trackingId":"`+tid+`","customer":{"externalId":"cus_1"}}`, alice))
	okEvent(t, sale(`{"trackingId":"`+tid+`","customer":{"externalId":"cus_1"},"amount":29.99,"currency":"usd"}`, alice))
	okEvent(t, sale(`{"trackingId":"`+tid+`","customer":{"externalId":"cus_1"},"amount":2999,"currency":"jpy"}`, alice))

	eventErr(t, lead(`{"trackingId":"`+tid+`","customer":{"externalId":"x"}}`, ""), 401, "Invalid API key")
	eventErr(t, lead(`{"trackingId":"`+tid+`","customer":{"externalId":"x"}}`, "svc_sk_nope"), 401, "Invalid API key")
	eventErr(t, lead(`{"trackingId":"`+tid+`","customer":{"externalId":"x"}}`, mallory), 403, msgClickNotYours)
	eventErr(t, lead(`{"trackingId":"svc-unknown","customer":{"externalId":"x"}}`, alice), 404, msgClickNotFound)
	eventErr(t, lead(`{"trackingId":"`+tid+`","customer":{"email":"a@b.example"}}`, alice), 400, msgMissingExternal)
	eventErr(t, lead(`{"trackingId":"`+tid+`","customer":{"externalId":""}}`, alice), 400, msgMissingExternal)

	// Every bad field at once.
	body := eventErr(t, sale(`{"customer":{"externalId":"x","email":5},"amount":29.999,"currency":"usd","metadata":[1]}`, alice), 400, msgInvalidPayload)
	details, _ := body["details"].([]any)
	var paths []string
	for _, d := range details {
		m := d.(map[string]any)
		p, _ := json.Marshal(m["path"])
		if m["message"] == "" {
			t.Errorf("detail without message: %v", m)
		}
		paths = append(paths, string(p))
	}
	for _, want := range []string{`["trackingId"]`, `["customer","email"]`, `["amount"]`, `["metadata"]`} {
		if !strings.Contains(strings.Join(paths, " "), want) {
			t.Errorf("details %v lack %s", paths, want)
		}
	}
	for name, b := range map[string]string{
		"not JSON":            `{"trackingId":`,
		"an array":            `[]`,
		"amount zero":         `{"trackingId":"` + tid + `","customer":{"externalId":"x"},"amount":0,"currency":"usd"}`,
		"amount negative":     `{"trackingId":"` + tid + `","customer":{"externalId":"x"},"amount":-5,"currency":"usd"}`,
		"amount as a string":  `{"trackingId":"` + tid + `","customer":{"externalId":"x"},"amount":"29.99","currency":"usd"}`,
		"yen with decimals":   `{"trackingId":"` + tid + `","customer":{"externalId":"x"},"amount":10.5,"currency":"jpy"}`,
		"upper-case currency": `{"trackingId":"` + tid + `","customer":{"externalId":"x"},"amount":1,"currency":"USD"}`,
		"no such currency":    `{"trackingId":"` + tid + `","customer":{"externalId":"x"},"amount":1,"currency":"abc"}`,
		"metadata too large":  `{"trackingId":"` + tid + `","customer":{"externalId":"x"},"amount":1,"currency":"usd","metadata":{"x":"` + strings.Repeat("m", 10001) + `"}}`,
		"externalId too long": `{"trackingId":"` + tid + `","customer":{"externalId":"` + strings.Repeat("e", 101) + `"},"amount":1,"currency":"usd"}`,
		"no customer":         `{"trackingId":"` + tid + `","amount":1,"currency":"usd"}`,
	} {
		t.Run(name, func(t *testing.T) { eventErr(t, sale(b, alice), 400, msgInvalidPayload) })
	}
	// A lead needs no amount: none of the sale's fields are asked of it.
	okEvent(t, lead(`{"trackingId":"`+tid+`","customer":{"externalId":"cus_2","email":"b@example.com"},"metadata":{"plan":{"tier":"pro"}}}`, alice))
	if r := s.Do("POST", "/api/events/lead", alice, `{"trackingId":"`+tid+`","customer":{"externalId":"x"},"metadata":"`+strings.Repeat("x", 70<<10)+`"}`); r.Status != http.StatusRequestEntityTooLarge {
		t.Errorf("70 KB body: %d", r.Status)
	}
}

// Publishable keys work from their allowed hostnames only; look-alikes,
// other hosts and requests without Origin or Referer are refused.
func TestConversionPublishableKeyHostnames(t *testing.T) {
	t.Parallel()
	s := start(t)
	alice := s.NewKey("alice", "full", nil)
	pk := str(s.MustCreate("/v1/api-keys", alice, map[string]any{"name": "web", "kind": "publishable",
		"allowed_hostnames": []string{"shop.example.com", "*.brand.example", "localhost"}}), "key")
	sk := s.NewKey("alice", "full", nil)
	tid := trackingID(t, s, alice)
	body := `{"trackingId":"` + tid + `","customer":{"externalId":"web-1"}}`
	cases := []struct {
		name, origin, referer string
		ok                    bool
	}{
		{"exact host", "https://shop.example.com", "", true},
		{"port and scheme ignored", "http://shop.example.com:8443", "", true},
		{"upper case", "https://SHOP.Example.COM", "", true},
		{"referer when no origin", "", "https://shop.example.com/checkout?x=1", true},
		{"wildcard subdomain", "https://eu.brand.example", "", true},
		{"wildcard deep subdomain", "https://a.b.brand.example", "", true},
		{"localhost with a port", "http://localhost:3000", "", true},
		{"wildcard does not cover its apex", "https://brand.example", "", false},
		{"look-alike suffix", "https://shop.example.com.evil.net", "", false},
		{"look-alike prefix", "https://evil-shop.example.com", "", false},
		{"look-alike wildcard", "https://evilbrand.example", "", false},
		{"other host", "https://evil.example", "", false},
		{"origin decides over referer", "https://evil.example", "https://shop.example.com/", false},
		{"null origin", "null", "https://shop.example.com/", false},
		{"neither header", "", "", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := []string{"X-Publishable-Key", pk}
			if c.origin != "" {
				h = append(h, "Origin", c.origin)
			}
			if c.referer != "" {
				h = append(h, "Referer", c.referer)
			}
			r := s.Do("POST", "/api/events/lead", "", body, h...)
			if !c.ok {
				eventErr(t, r, 401, msgHostNotAllowed)
				return
			}
			okEvent(t, r)
			if c.origin != "" && r.Header.Get("Access-Control-Allow-Origin") != c.origin {
				t.Errorf("Access-Control-Allow-Origin %q, want %q", r.Header.Get("Access-Control-Allow-Origin"), c.origin)
			}
		})
	}
	// Keys of the wrong kind in the wrong place are invalid keys.
	eventErr(t, s.Do("POST", "/api/events/lead", pk, body, "Origin", "https://shop.example.com"), 401, "Invalid API key")
	eventErr(t, s.Do("POST", "/api/events/lead", "", body, "X-Publishable-Key", sk, "Origin", "https://shop.example.com"), 401, "Invalid API key")

	// CORS preflights: allowed origins are echoed, others get no CORS headers.
	for origin, want := range map[string]int{
		"https://shop.example.com": 204, "https://x.brand.example": 204, "http://localhost:5173": 204,
		"https://shop.example.com.evil.net": 403, "https://evil.example": 403, "null": 403, "": 403,
	} {
		h := []string{"Access-Control-Request-Method", "POST", "Access-Control-Request-Headers", "content-type,x-publishable-key"}
		if origin != "" {
			h = append(h, "Origin", origin)
		}
		r := s.Do("OPTIONS", "/api/events/sale", "", nil, h...)
		if r.Status != want {
			t.Errorf("preflight from %q: %d, want %d", origin, r.Status, want)
		}
		acao := r.Header.Get("Access-Control-Allow-Origin")
		if want == 204 && (acao != origin || !strings.Contains(r.Header.Get("Access-Control-Allow-Headers"), "X-Publishable-Key")) {
			t.Errorf("preflight from %q: headers %v", origin, r.Header)
		}
		if want != 204 && acao != "" {
			t.Errorf("refused preflight from %q allows %q", origin, acao)
		}
	}
	// A revoked key is an invalid key.
	keys := list(t, s.Do("GET", "/v1/api-keys", alice, nil), http.StatusOK)
	for _, k := range keys {
		if m := k.(map[string]any); m["name"] == "web" {
			obj(t, s.Do("DELETE", "/v1/api-keys/"+str(m, "id"), alice, nil), http.StatusOK)
		}
	}
	eventErr(t, s.Do("POST", "/api/events/lead", "", body, "X-Publishable-Key", pk, "Origin", "https://shop.example.com"), 401, "Invalid API key")
}

// Twenty concurrent identical sales with one eventId record one sale, and
// every one of them answers ok; a lead sent right after its redirect finds
// the click.
func TestConversionIdempotencyUnderConcurrency(t *testing.T) {
	t.Parallel()
	s := start(t)
	alice := s.NewKey("alice", "full", nil)
	tid := trackingID(t, s, alice) // the lead below follows the redirect at once
	okEvent(t, s.Do("POST", "/api/events/lead", alice, `{"trackingId":"`+tid+`","customer":{"externalId":"c1"}}`))
	body := `{"trackingId":"` + tid + `","customer":{"externalId":"c1"},"amount":49.5,"currency":"eur","eventId":"order-1001"}`
	var wg sync.WaitGroup
	statuses := make([]int, 20)
	for i := range statuses {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			statuses[i] = s.Do("POST", "/api/events/sale", alice, body).Status
		}(i)
	}
	wg.Wait()
	for i, st := range statuses {
		if st != http.StatusOK {
			t.Errorf("request %d: %d", i, st)
		}
	}
	n := 0
	var after eventstore.Position
	for {
		evs, err := s.App.Store().ReadAll(t.Context(), after, 1000)
		if err != nil {
			t.Fatalf("reading the log: %v", err)
		}
		for _, e := range evs {
			if e.Type == "SaleTracked" && strings.Contains(string(e.Data), "order-1001") {
				n++
			}
		}
		if len(evs) < 1000 {
			break
		}
		after = evs[len(evs)-1].Position
	}
	if n != 1 {
		t.Errorf("%d SaleTracked events for one eventId, want 1", n)
	}
}

// A customer is upserted per workspace by externalId, remembers the click
// of its first lead, adds up its sales per currency, and shows its journey.
func TestCustomers(t *testing.T) {
	t.Parallel()
	s := start(t)
	alice, bob := s.NewKey("alice", "full", nil), s.NewKey("bob", "full", nil)
	first, second := trackingID(t, s, alice), trackingID(t, s, alice)
	send := func(path, body string) { okEvent(t, s.Do("POST", path, alice, body)) }
	send("/api/events/lead", `{"trackingId":"`+first+`","customer":{"externalId":"cus_9","email":"ann@example.com","firstname":"Ann"}}`)
	send("/api/events/lead", `{"trackingId":"`+second+`","customer":{"externalId":"cus_9","lastname":"Lee","email":""},"eventName":"Trial"}`)
	send("/api/events/sale", `{"trackingId":"`+second+`","customer":{"externalId":"cus_9"},"amount":29.99,"currency":"usd","metadata":{"order":"A-1"}}`)
	send("/api/events/sale", `{"trackingId":"`+second+`","customer":{"externalId":"cus_9"},"amount":0.01,"currency":"usd"}`)
	send("/api/events/sale", `{"trackingId":"`+second+`","customer":{"externalId":"cus_9"},"amount":2999,"currency":"jpy"}`)
	send("/api/events/lead", `{"trackingId":"`+first+`","customer":{"externalId":"other","email":"zed@example.com"}}`)

	page := envelope(t, s.Do("GET", "/v1/customers?search=CUS_", alice, nil))
	if len(page.Items) != 1 {
		t.Fatalf("search: %v", page.Items)
	}
	c := page.Items[0].(map[string]any)
	id := str(c, "id")
	got := obj(t, s.Do("GET", "/v1/customers/"+id, alice, nil), http.StatusOK)
	want := map[string]any{"externalId": "cus_9", "email": "ann@example.com", "firstname": "Ann", "lastname": "Lee",
		"phoneNumber": nil, "avatarUrl": nil, "leads": 2.0, "sales": 3.0}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v, want %v", k, got[k], v)
		}
	}
	if rev, _ := json.Marshal(got["revenue"]); string(rev) != `{"jpy":2999,"usd":30}` {
		t.Errorf("revenue %s", rev)
	}
	// The first lead's click, not the later one.
	firstClick := got["click_id"]
	if firstClick != first {
		t.Errorf("click_id %v, want the first lead's %s", firstClick, first)
	}
	evs, _ := got["events"].([]any)
	var kinds []string
	for _, e := range evs {
		m := e.(map[string]any)
		kinds = append(kinds, str(m, "type"))
		if m["link"] == nil {
			t.Errorf("event without its link: %v", m)
		}
	}
	if strings.Join(kinds, ",") != "click,click,lead,lead,sale,sale,sale" {
		t.Errorf("journey %v", kinds)
	}
	if len(evs) == 7 {
		sale := evs[4].(map[string]any)
		if sale["amount"] != 29.99 || sale["currency"] != "usd" || sale["first"] != true || sale["event_name"] != "Purchase" {
			t.Errorf("first sale %v", sale)
		}
		if md, _ := json.Marshal(sale["metadata"]); string(md) != `{"order":"A-1"}` {
			t.Errorf("metadata %s", md)
		}
		if evs[5].(map[string]any)["first"] != false {
			t.Errorf("second sale is first")
		}
	}
	// Another workspace sees none of it.
	wantError(t, s.Do("GET", "/v1/customers/"+id, bob, nil), http.StatusForbidden, msgInsufficient)
	if n := len(envelope(t, s.Do("GET", "/v1/customers", bob, nil)).Items); n != 0 {
		t.Errorf("bob sees %d customers", n)
	}
	wantError(t, s.Do("GET", "/v1/customers/nope", alice, nil), http.StatusNotFound, "Customer not found")
	if n := len(envelope(t, s.Do("GET", "/v1/customers", alice, nil)).Items); n != 2 {
		t.Errorf("alice sees %d customers, want 2", n)
	}
}

// Leads, sales and revenue show on the link's and the workspace's daily
// records and summaries, per currency, unconverted.
func TestConversionStatistics(t *testing.T) {
	t.Parallel()
	s := start(t)
	alice := s.NewKey("alice", "full", nil)
	tid := trackingID(t, s, alice)
	for _, b := range []string{
		`{"trackingId":"` + tid + `","customer":{"externalId":"c1"}}`,
		`{"trackingId":"` + tid + `","customer":{"externalId":"c2"}}`,
	} {
		okEvent(t, s.Do("POST", "/api/events/lead", alice, b))
	}
	for _, b := range []string{
		`{"trackingId":"` + tid + `","customer":{"externalId":"c1"},"amount":29.99,"currency":"usd"}`,
		`{"trackingId":"` + tid + `","customer":{"externalId":"c1"},"amount":0.02,"currency":"usd"}`,
		`{"trackingId":"` + tid + `","customer":{"externalId":"c2"},"amount":2999,"currency":"jpy"}`,
		`{"trackingId":"` + tid + `","customer":{"externalId":"c2"},"amount":1.234,"currency":"kwd"}`,
	} {
		okEvent(t, s.Do("POST", "/api/events/sale", alice, b))
	}
	links := envelope(t, s.Do("GET", "/v1/links", alice, nil)).Items
	id := str(links[0].(map[string]any), "id")
	days := list(t, s.Do("GET", "/v1/stats/links/"+id, alice, nil), http.StatusOK)
	if len(days) != 1 {
		t.Fatalf("daily records: %v", days)
	}
	want := `{"jpy":2999,"kwd":1.234,"usd":30.01}`
	check := func(what string, m map[string]any) {
		t.Helper()
		rev, _ := json.Marshal(m["revenue"])
		if m["leads"] != 2.0 || m["sales"] != 4.0 || string(rev) != want {
			t.Errorf("%s: leads %v sales %v revenue %s; want 2, 4, %s", what, m["leads"], m["sales"], rev, want)
		}
	}
	check("link daily record", days[0].(map[string]any))
	check("link summary", obj(t, s.Do("GET", "/v1/stats/links/"+id+"/summary", alice, nil), http.StatusOK))
	check("workspace summary", obj(t, s.Do("GET", "/v1/stats/workspaces/summary", alice, nil), http.StatusOK))
	ws := list(t, s.Do("GET", "/v1/stats/workspaces", alice, nil), http.StatusOK)
	check("workspace daily record", ws[len(ws)-1].(map[string]any))
	// Without conversions: zeros and an empty object.
	plain := createLink(s, alice, map[string]any{"original_url": "https://plain.example"})
	s.Do("GET", "/"+str(plain, "code"), "", nil, "User-Agent", "curl/8.5.0")
	pd := list(t, s.Do("GET", "/v1/stats/links/"+str(plain, "id"), alice, nil), http.StatusOK)
	if m := pd[0].(map[string]any); m["leads"] != 0.0 || m["sales"] != 0.0 || fmt.Sprint(m["revenue"]) != "map[]" {
		t.Errorf("a link without conversions: %v %v %v", m["leads"], m["sales"], m["revenue"])
	}
}
