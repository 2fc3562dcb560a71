package e2e

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"
)

// radarSite is a Radar project with a publishable key for its tracker and
// a key that reads its reports.
type radarSite struct {
	project, publishable, reader string
}

func newRadarSite(t *testing.T, url string) radarSite {
	t.Helper()
	create := func(path string, body map[string]any, field string) string {
		st, b, _, err := do("POST", url+path, operatorKey, body)
		if err != nil || st != 201 {
			t.Fatalf("POST %s: %d %v %s", path, st, err, b)
		}
		var v map[string]any
		_ = json.Unmarshal(b, &v)
		return v[field].(string)
	}
	var s radarSite
	s.project = create("/v1/projects", map[string]any{"name": "Radar site"}, "id")
	s.publishable = create("/v1/api-keys", map[string]any{"name": "tracker", "kind": "publishable", "project_id": s.project,
		"allowed_hostnames": []string{"shop.example"}}, "key")
	s.reader = create("/v1/api-keys", map[string]any{"name": "reports", "access": "read_only", "project_id": s.project}, "key")
	return s
}

// visits sends what radar.js sends for a few visitors: page views, custom
// events, an identify; one visitor came through the tracked click tid.
func (s radarSite) visits(t *testing.T, url, tid string) {
	t.Helper()
	send := func(visitor, ua string, body map[string]any) {
		body["visitorId"] = visitor
		st, b, _, err := do("POST", url+"/api/v1/radar/collect", "", body,
			"X-Publishable-Key", s.publishable, "Origin", "https://shop.example", "User-Agent", ua)
		if err != nil || st != 202 {
			t.Fatalf("collect %v: %d %v %s", body, st, err, b)
		}
	}
	for v := 0; v < 6; v++ {
		visitor, ua := fmt.Sprintf("visitor-%d", v), userAgents[v%len(userAgents)]
		first := map[string]any{"type": "pageview", "url": "https://shop.example/", "referrer": "https://news.example/story"}
		if v == 0 {
			first = map[string]any{"type": "pageview", "url": "https://shop.example/landing?svc_tid=" + tid, "trackingId": tid}
		}
		send(visitor, ua, first)
		for p := 0; p < v%3; p++ {
			send(visitor, ua, map[string]any{"type": "pageview", "url": fmt.Sprintf("https://shop.example/p/%d", p)})
		}
		if v%2 == 0 {
			send(visitor, ua, map[string]any{"type": "event", "name": "Signup", "url": "https://shop.example/signup", "props": map[string]any{"plan": "pro"}})
		}
		if v == 4 {
			send(visitor, ua, map[string]any{"type": "identify", "name": "Vera", "email": "vera@example.com"})
		}
	}
}

// snapshot reads every Radar report of the site for today.
func (s radarSite) snapshot(t *testing.T, url string, snap map[string]any) {
	t.Helper()
	day := time.Now().UTC()
	q := "?start=" + day.Add(-24*time.Hour).Format("2006-01-02") + "&end=" + day.Add(24*time.Hour).Format("2006-01-02")
	get := func(path string) any {
		st, b, _, err := do("GET", url+path, s.reader, nil)
		if err != nil || st != 200 {
			t.Fatalf("GET %s: %d %v %s", path, st, err, b)
		}
		var v any
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	snap["radar-overview"] = get("/api/v1/radar/overview" + q)
	snap["radar-breakdowns"] = get("/api/v1/radar/breakdowns" + q)
	snap["radar-events"] = get("/api/v1/radar/custom-events" + q)
	people := get("/api/v1/radar/people" + q + "&limit=100").(map[string]any)
	snap["radar-people"] = people
	for _, p := range people["data"].([]any) {
		id := p.(map[string]any)["visitorId"].(string)
		snap["radar-visitor-"+id] = get("/api/v1/radar/people/details" + q + "&visitorId=" + id)
	}
}
