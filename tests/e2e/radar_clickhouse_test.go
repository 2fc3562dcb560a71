package e2e

import (
	"context"
	"database/sql"
	"encoding/json"
	"os/exec"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/linkd/linkd/internal/testsupport/chtest"
	"github.com/linkd/linkd/kafka/kafkatest"
)

const chromeUA = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36"

// radarScenario collects visits, events and identifications into a new
// project, one visit arriving through a tracked short link whose click
// then has a lead and two sales; it returns the project's read key and the
// source the link's visit shows (host/code). Given several instances'
// URLs, each request goes to the next of them (the keys made on one, the
// click on another, the visits spread), and the details are read on the
// last.
func radarScenario(t *testing.T, urls ...string) (string, string) {
	t.Helper()
	n := 0
	next := func() string { n++; return urls[n%len(urls)] }
	must := func(st int, b []byte, err error, what string) []byte {
		t.Helper()
		if err != nil || st >= 300 {
			t.Fatalf("%s: %d %v %s", what, st, err, b)
		}
		return b
	}
	field := func(b []byte, k string) string {
		var m map[string]any
		_ = json.Unmarshal(b, &m)
		s, _ := m[k].(string)
		return s
	}
	st, b, _, err := do("POST", next()+"/v1/projects", operatorKey, map[string]any{"name": "Site"})
	project := field(must(st, b, err, "project"), "id")
	st, b, _, err = do("POST", next()+"/v1/api-keys", operatorKey, map[string]any{"name": "tracker", "kind": "publishable", "project_id": project,
		"allowed_hostnames": []string{"shop.example"}})
	pk := field(must(st, b, err, "publishable key"), "key")
	st, b, _, err = do("POST", next()+"/v1/api-keys", operatorKey, map[string]any{"name": "reports", "access": "read_only", "project_id": project})
	read := field(must(st, b, err, "read key"), "key")
	collect := func(ua string, body map[string]any) {
		t.Helper()
		body["key"] = pk
		raw, _ := json.Marshal(body)
		st, b, _, err := do("POST", next()+"/api/v1/radar/collect", "", json.RawMessage(raw), "Content-Type", "text/plain;charset=UTF-8",
			"Origin", "https://shop.example", "User-Agent", ua)
		must(st, b, err, "collect")
	}
	tid := trackedClick(t, next())
	collect(chromeUA, map[string]any{"type": "pageview", "url": "https://shop.example/landing?svc_tid=" + tid, "visitorId": "grace"})
	collect(chromeUA, map[string]any{"type": "pageview", "url": "https://shop.example/pricing", "visitorId": "grace"})
	collect(chromeUA, map[string]any{"type": "event", "url": "https://shop.example/pricing", "visitorId": "grace", "name": "Signup", "props": map[string]any{"plan": "pro"}})
	collect(userAgents[1], map[string]any{"type": "pageview", "url": "https://shop.example/?utm_source=newsletter", "visitorId": "ada"})
	collect(userAgents[1], map[string]any{"type": "identify", "visitorId": "ada", "email": "ada@example.com"})
	collect(userAgents[1], map[string]any{"type": "event", "url": "https://shop.example/", "visitorId": "ada", "name": "Download"})
	collect(userAgents[2], map[string]any{"type": "pageview", "url": "https://www.shop.example/pricing", "referrer": "https://news.example/item", "visitorId": "bob"})
	collect(userAgents[3], map[string]any{"type": "pageview", "url": "https://shop.example/docs", "visitorId": "cy"})
	collect(userAgents[3], map[string]any{"type": "event", "url": "https://shop.example/docs", "visitorId": "cy", "name": "Signup"})
	cust := map[string]any{"externalId": "cus_g", "firstname": "Grace", "email": "grace@example.com"}
	st, b, _, err = do("POST", next()+"/api/events/lead", operatorKey, map[string]any{"trackingId": tid, "customer": cust})
	must(st, b, err, "lead")
	for _, sale := range []map[string]any{{"amount": 49.99, "currency": "usd"}, {"amount": 2000, "currency": "jpy"}, {"amount": 10, "currency": "usd"}} {
		sale["trackingId"], sale["customer"] = tid, map[string]any{"externalId": "cus_g"}
		st, b, _, err = do("POST", next()+"/api/events/sale", operatorKey, sale)
		must(st, b, err, "sale")
	}
	st, b, _, err = do("GET", urls[len(urls)-1]+"/api/v1/radar/people/details?visitorId=grace&start=2000-01-01&end=2100-01-01", read, nil)
	var d struct {
		Data struct{ Visitor struct{ Source string } }
	}
	_ = json.Unmarshal(must(st, b, err, "details"), &d)
	if !strings.Contains(d.Data.Visitor.Source, "/") {
		t.Fatalf("grace's source is not the link: %s", b)
	}
	return read, d.Data.Visitor.Source
}

// radarReports reads overview (in the default currency and in jpy),
// breakdowns and custom events, with the link's source written LINK.
func radarReports(t *testing.T, url, key, link string) map[string]any {
	t.Helper()
	day := time.Now().UTC().Format(time.DateOnly)
	out := map[string]any{}
	for _, path := range []string{"overview?", "overview?currency=jpy&", "breakdowns?", "breakdowns?limit=2&", "custom-events?"} {
		st, b, _, err := do("GET", url+"/api/v1/radar/"+path+"start="+day+"&end="+day, key, nil)
		if err != nil || st != 200 {
			t.Fatalf("GET %s: %d %v %s", path, st, err, b)
		}
		var v any
		if err := json.Unmarshal([]byte(strings.ReplaceAll(string(b), link, "LINK")), &v); err != nil {
			t.Fatal(err)
		}
		out[path] = v
	}
	return out
}

// TestRadarOnClickHouseAgreesWithEmbedded runs the same Radar journey on a
// linkd with embedded statistics and on one with LINKD_CLICKHOUSE_DSN, and
// compares every report; then rebuilds ClickHouse's Radar with linkd
// replay (its projection alone, then everything) and compares again; and
// reads radar_events and radar_sessions as an analyst would.
func TestRadarOnClickHouseAgreesWithEmbedded(t *testing.T) {
	radarClickHouseScenario(t)
}

// The same with events relayed over Kafka (kfake).
func TestKafkaRadarOnClickHouseAgreesWithEmbedded(t *testing.T) {
	cfg := kafkatest.Start(t, 6)
	radarClickHouseScenario(t, "LINKD_KAFKA_BROKERS="+strings.Join(cfg.Brokers, ","), "LINKD_KAFKA_PARTITIONS=6")
}

func radarClickHouseScenario(t *testing.T, extra ...string) {
	dsn := chtest.DSN(t)
	emb := start(t, t.TempDir(), freeAddr(t))
	ekey, elink := radarScenario(t, emb.url)
	want := radarReports(t, emb.url, ekey, elink)
	emb.stop()

	dir, addr := t.TempDir(), freeAddr(t)
	extra = append(extra, "LINKD_CLICKHOUSE_DSN="+dsn)
	ch := start(t, dir, addr, extra...)
	key, link := radarScenario(t, ch.url)
	got := radarReports(t, ch.url, key, link)
	if !reflect.DeepEqual(got, want) {
		gb, _ := json.Marshal(got)
		wb, _ := json.Marshal(want)
		t.Fatalf("ClickHouse reports differ from the embedded ones:\nclickhouse %s\nembedded   %s", gb, wb)
	}
	o := got["overview?"].(map[string]any)["data"].(map[string]any)
	if o["people"] != 4.0 || o["sales"] != 3.0 || o["revenue"] != 59.99 || o["revenue_currency"] != "usd" || o["events"] != 3.0 {
		t.Errorf("overview %v", o)
	}
	ch.stop()

	for _, args := range [][]string{{"replay", "--projection", "clickhouse_radar"}, {"replay"}} {
		cmd := exec.Command(binary, args...)
		cmd.Env = env(dir, addr, extra...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("linkd %v: %v\n%s", args, err, out)
		}
		ch = start(t, dir, addr, extra...)
		if again := radarReports(t, ch.url, key, link); !reflect.DeepEqual(again, got) {
			gb, _ := json.Marshal(again)
			wb, _ := json.Marshal(got)
			t.Errorf("after linkd %v:\n got %s\nwant %s", args, gb, wb)
		}
		ch.stop()
	}

	db, err := sql.Open("clickhouse", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var pageviews, visits, bounces int64
	if err := db.QueryRowContext(ctx, "SELECT countIf(kind = 'pageview') FROM radar_events").Scan(&pageviews); err != nil {
		t.Fatal(err)
	}
	if err := db.QueryRowContext(ctx, "SELECT sum(sign), sum(sign * is_bounce) FROM radar_sessions").Scan(&visits, &bounces); err != nil {
		t.Fatal(err)
	}
	if pageviews != 5 || visits != 4 || bounces != 1 {
		t.Errorf("analyst view: %d page views, %d visits, %d bounces; want 5, 4, 1", pageviews, visits, bounces)
	}
}
