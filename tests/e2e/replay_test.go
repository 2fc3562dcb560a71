package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"reflect"
	"sort"
	"sync"
	"testing"
	"time"
)

// snapshot reads every read model through the interface: links (with
// clicks), workspaces, projects, domains and statistics.
func snapshot(t *testing.T, url string) map[string]any {
	t.Helper()
	get := func(path string) any {
		st, b, _, err := do("GET", url+path, operatorKey, nil)
		if err != nil || (st != 200 && st != 404) {
			t.Fatalf("GET %s: %d %v %s", path, st, err, b)
		}
		var v any
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	snap := map[string]any{}
	for _, archived := range []string{"false", "true"} {
		var items []any
		next := "/v1/links?page_size=100&sort_order=asc&archived=" + archived
		for next != "" {
			page := get(next).(map[string]any)
			items = append(items, page["items"].([]any)...)
			next = ""
			if c, ok := page["next_cursor"].(string); ok {
				next = "/v1/links?page_size=100&sort_order=asc&archived=" + archived + "&cursor=" + c
			}
		}
		snap["links-"+archived] = items
		for _, it := range items {
			id := it.(map[string]any)["id"].(string)
			snap["stats-"+id] = get("/v1/stats/links/" + id)
			snap["summary-"+id] = get("/v1/stats/links/" + id + "/summary")
		}
	}
	snap["workspaces"] = get("/v1/workspaces")
	for _, w := range snap["workspaces"].([]any) {
		id := w.(map[string]any)["id"].(string)
		snap["members-"+id] = get("/v1/workspaces/" + id + "/members")
		snap["wsstats-"+id] = get("/v1/stats/workspaces/" + id)
	}
	snap["projects"] = get("/v1/projects?page_size=100")
	snap["utm-templates"] = get("/v1/utm-templates?page_size=100")
	snap["pixels"] = get("/v1/pixels?page_size=100")
	snap["domains"] = get("/v1/domains?page_size=100")
	snap["keys"] = get("/v1/api-keys")
	hooks := get("/v1/webhooks?page_size=100").(map[string]any)
	snap["webhooks"] = hooks
	for _, h := range hooks["items"].([]any) {
		id := h.(map[string]any)["id"].(string)
		snap["webhook-"+id] = get("/v1/webhooks/" + id)
		snap["deliveries-"+id] = get("/v1/webhooks/" + id + "/deliveries?page_size=100")
	}
	customers := get("/v1/customers?page_size=100").(map[string]any)
	snap["customers"] = customers
	for _, c := range customers["items"].([]any) {
		id := c.(map[string]any)["id"].(string)
		snap["customer-"+id] = get("/v1/customers/" + id)
	}
	return snap
}

var userAgents = []string{
	browserUA,
	"Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Mobile/15E148 Safari/604.1",
	"Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Mobile Safari/537.36",
	"Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Safari/605.1.15",
}

// TestReplayGivesSameReadModels builds read models live, stops linkd,
// rebuilds them with `linkd replay`, and compares everything the interface
// shows before and after.
func TestReplayGivesSameReadModels(t *testing.T) {
	replayScenario(t)
}

func replayScenario(t *testing.T, extra ...string) {
	dir := t.TempDir()
	addr := freeAddr(t)
	rc := newCountingReceiver(t)
	extra = append(extra, "LINKD_WEBHOOK_ALLOWED_NETWORKS=127.0.0.0/8")
	p := start(t, dir, addr, extra...)
	replayWebhooks(t, p.url, rc.url)
	mustOK := func(st int, b []byte, err error, what string) {
		t.Helper()
		if err != nil || st >= 300 {
			t.Fatalf("%s: %d %v %s", what, st, err, b)
		}
	}
	st, b, _, err := do("POST", p.url+"/v1/workspaces", operatorKey, map[string]any{"name": "Marketing", "description": "campaigns"})
	mustOK(st, b, err, "workspace")
	var ws struct{ ID string }
	_ = json.Unmarshal(b, &ws)
	st, b, _, err = do("POST", p.url+"/v1/projects", operatorKey, map[string]any{"name": "Spring", "color": "#abc", "workspace_id": ws.ID})
	mustOK(st, b, err, "project")
	var pr struct{ ID string }
	_ = json.Unmarshal(b, &pr)
	tpl, px := replayTemplateAndPixel(t, p.url, ws.ID)
	var ids, codes []string
	for i := 0; i < 30; i++ {
		body := map[string]any{"original_url": fmt.Sprintf("https://example.com/%d", i), "name": fmt.Sprintf("link %d", i)}
		if i%3 == 0 {
			body["workspace_id"], body["project_id"] = ws.ID, pr.ID
			body["utm_template_id"], body["pixel_id"] = tpl, px
		}
		st, b, _, err := do("POST", p.url+"/v1/links", operatorKey, body)
		mustOK(st, b, err, "link")
		var l struct{ ID, Code string }
		_ = json.Unmarshal(b, &l)
		ids, codes = append(ids, l.ID), append(codes, l.Code)
	}
	for i, id := range ids {
		switch i % 5 {
		case 1:
			st, b, _, err = do("PUT", p.url+"/v1/links/"+id, operatorKey, map[string]any{"name": "renamed", "utm_source": "mail"})
			mustOK(st, b, err, "update")
		case 2:
			st, b, _, err = do("PUT", p.url+"/v1/links/"+id, operatorKey, map[string]any{"is_archived": true})
			mustOK(st, b, err, "archive")
		case 4:
			if i > 20 {
				st, b, _, err = do("DELETE", p.url+"/v1/links/"+id, operatorKey, nil)
				mustOK(st, b, err, "delete")
			}
		}
	}
	for n := 0; n < 400; n++ {
		code := codes[n%len(codes)]
		path := "/" + code
		if n%7 == 0 {
			path += "?qr=1"
		}
		_, _, _, err := do("GET", p.url+path, "", nil, "User-Agent", userAgents[n%len(userAgents)], "Accept-Language", "de-DE,de;q=0.9")
		if err != nil {
			t.Fatal(err)
		}
	}
	// Leads and sales on tracked clicks (with and without eventIds, one
	// repeated), attributed through the click index; Radar visits, one
	// through the first tracked click, whose sales are its revenue.
	site := newRadarSite(t, p.url)
	for i := 0; i < 3; i++ {
		tid := trackedClick(t, p.url)
		if i == 0 {
			site.visits(t, p.url, tid)
		}
		for n := 0; n < 4; n++ {
			cust := map[string]any{"externalId": fmt.Sprintf("cust-%d", n%2), "email": fmt.Sprintf("c%d@example.com", n)}
			st, b, _, err = do("POST", p.url+"/api/events/lead", operatorKey, map[string]any{"trackingId": tid, "customer": cust})
			mustOK(st, b, err, "lead")
			sale := map[string]any{"trackingId": tid, "customer": cust, "amount": 19.99 + float64(n), "currency": []string{"usd", "eur"}[n%2],
				"eventId": fmt.Sprintf("order-%d-%d", i, n), "metadata": map[string]any{"n": n}}
			for range 2 {
				st, b, _, err = do("POST", p.url+"/api/events/sale", operatorKey, sale)
				mustOK(st, b, err, "sale")
			}
		}
	}
	st, b, _, err = do("DELETE", p.url+"/v1/projects/"+pr.ID, operatorKey, nil)
	mustOK(st, b, err, "delete project")
	sent := rc.settled(t)
	before := snapshot(t, p.url)
	for _, k := range []string{"webhooks"} {
		if n := len(before[k].(map[string]any)["items"].([]any)); n != 2 {
			t.Fatalf("%d %s before the replay, want 2", n, k)
		}
	}
	if n := len(before["customers"].(map[string]any)["items"].([]any)); n != 2 {
		t.Fatalf("%d customers before the replay, want 2", n)
	}
	site.snapshot(t, p.url, before)
	for _, k := range []string{"utm-templates", "pixels"} {
		if n := len(before[k].(map[string]any)["items"].([]any)); n != 1 {
			t.Fatalf("%d %s before the replay, want 1", n, k)
		}
	}
	if o := before["radar-overview"].(map[string]any)["data"].(map[string]any); o["people"] != 6.0 || o["sales"] != 4.0 {
		t.Fatalf("Radar overview before the replay: %v", o)
	}
	p.stop()

	for _, args := range [][]string{{"replay"}, {"replay", "--projection", "core"}} {
		cmd := exec.Command(binary, args...)
		cmd.Env = env(dir, addr, extra...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("linkd %v: %v\n%s", args, err, out)
		}
		t.Logf("linkd %v: %s", args, out)
	}
	p = start(t, dir, addr, extra...)
	defer p.stop()
	after := snapshot(t, p.url)
	site.snapshot(t, p.url, after)
	// A replay rebuilds the webhooks; it sends nothing again.
	if again := rc.settled(t); again != sent {
		t.Errorf("the receiver got %d messages after the replay, %d before", again, sent)
	}
	if !reflect.DeepEqual(before, after) {
		keys := make([]string, 0, len(before))
		for k := range before {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if !reflect.DeepEqual(before[k], after[k]) {
				bb, _ := json.Marshal(before[k])
				ab, _ := json.Marshal(after[k])
				t.Errorf("%s differs after replay:\nbefore %s\nafter  %s", k, bb, ab)
			}
		}
		if len(before) != len(after) {
			t.Errorf("snapshot sizes differ: %d before, %d after", len(before), len(after))
		}
	}
}

// replayTemplateAndPixel makes a UTM template and a pixel in a workspace,
// each changed once, and another of each deleted; it returns the ids of
// the live ones.
func replayTemplateAndPixel(t *testing.T, url, ws string) (tpl, px string) {
	t.Helper()
	create := func(path string, body map[string]any) string {
		t.Helper()
		body["workspace_id"] = ws
		st, b, _, err := do("POST", url+path, operatorKey, body)
		if err != nil || st != 201 {
			t.Fatalf("POST %s: %d %v %s", path, st, err, b)
		}
		var v struct{ ID string }
		_ = json.Unmarshal(b, &v)
		return v.ID
	}
	call := func(method, path string, body any) {
		t.Helper()
		if st, b, _, err := do(method, url+path, operatorKey, body); err != nil || st != 200 {
			t.Fatalf("%s %s: %d %v %s", method, path, st, err, b)
		}
	}
	tpl = create("/v1/utm-templates", map[string]any{"name": "Newsletter", "utm_source": "news", "utm_medium": "email"})
	call("PUT", "/v1/utm-templates/"+tpl, map[string]any{"utm_campaign": "spring", "utm_medium": nil})
	call("DELETE", "/v1/utm-templates/"+create("/v1/utm-templates", map[string]any{"name": "Old"}), nil)
	px = create("/v1/pixels", map[string]any{"name": "Ads", "type": "meta", "pixel_id": "1234567890"})
	call("PUT", "/v1/pixels/"+px, map[string]any{"type": "google", "pixel_id": "G-REPLAY1"})
	call("DELETE", "/v1/pixels/"+create("/v1/pixels", map[string]any{"name": "Old", "type": "x", "pixel_id": "o1"}), nil)
	return tpl, px
}

// countingReceiver counts the distinct messages a webhook receiver got.
type countingReceiver struct {
	url string
	mu  sync.Mutex
	ids map[string]int
}

func newCountingReceiver(t *testing.T) *countingReceiver {
	rc := &countingReceiver{ids: map[string]int{}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		rc.mu.Lock()
		rc.ids[r.Header.Get("webhook-id")]++
		rc.mu.Unlock()
	}))
	t.Cleanup(srv.Close)
	rc.url = srv.URL + "/hook"
	return rc
}

// settled waits until no message arrived for a second and returns how
// many requests arrived in all.
func (rc *countingReceiver) settled(t *testing.T) int {
	t.Helper()
	count := func() int {
		rc.mu.Lock()
		defer rc.mu.Unlock()
		n := 0
		for _, c := range rc.ids {
			n += c
		}
		return n
	}
	last, since := count(), time.Now()
	for deadline := time.Now().Add(30 * time.Second); time.Since(since) < time.Second; time.Sleep(50 * time.Millisecond) {
		if n := count(); n != last {
			last, since = n, time.Now()
		}
		if time.Now().After(deadline) {
			t.Fatal("webhook messages still arriving after 30 s")
		}
	}
	return last
}

// replayWebhooks makes the webhooks of the replay scenario: one on link
// changes and sales, one changed after it was made (and so sent link
// changes only), one deleted.
func replayWebhooks(t *testing.T, url, hook string) {
	t.Helper()
	call := func(method, path string, body any, want int) string {
		t.Helper()
		st, b, _, err := do(method, url+path, operatorKey, body)
		if err != nil || st != want {
			t.Fatalf("%s %s: %d %v %s", method, path, st, err, b)
		}
		var v struct{ ID string }
		_ = json.Unmarshal(b, &v)
		return v.ID
	}
	call("POST", "/v1/webhooks", map[string]any{"url": hook, "events": []string{"link.created", "link.updated", "sale.created", "lead.created"}}, 201)
	id := call("POST", "/v1/webhooks", map[string]any{"url": hook, "events": []string{"link.clicked"}, "description": "clicks"}, 201)
	call("PUT", "/v1/webhooks/"+id, map[string]any{"events": []string{"link.deleted", "link.updated"}, "description": "changes"}, 200)
	call("DELETE", "/v1/webhooks/"+call("POST", "/v1/webhooks", map[string]any{"url": hook, "events": []string{"link.created"}}, 201), nil, 200)
}
