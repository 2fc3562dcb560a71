package e2e

import (
	"context"
	"database/sql"
	"encoding/json"
	"testing"
	"time"

	_ "github.com/ClickHouse/clickhouse-go/v2" // database/sql driver "clickhouse"

	"github.com/linkd/linkd/internal/testsupport/chtest"
)

// TestClickHouseStatsAndAnalystTables runs linkd with its statistics in
// ClickHouse, clicks through the real redirect, and reads the numbers both
// through the API and the way an analyst would, from linkd's tables.
func TestClickHouseStatsAndAnalystTables(t *testing.T) {
	dsn := chtest.DSN(t)
	p := start(t, t.TempDir(), freeAddr(t), "LINKD_CLICKHOUSE_DSN="+dsn)
	defer p.stop()
	id, code, err := createLink(p.url, "https://example.com/ch")
	if err != nil {
		t.Fatal(err)
	}
	const n = 25
	for i := 0; i < n; i++ {
		path := "/" + code
		if i%5 == 0 {
			path += "?qr=1"
		}
		st, _, _, err := do("GET", p.url+path, "", nil, "User-Agent", userAgents[i%len(userAgents)])
		if err != nil || st != 302 {
			t.Fatalf("redirect %d: %d %v", i, st, err)
		}
	}
	st, b, _, err := do("GET", p.url+"/v1/stats/links/"+id, operatorKey, nil)
	if err != nil || st != 200 {
		t.Fatalf("stats: %d %v %s", st, err, b)
	}
	var days []map[string]any
	if err := json.Unmarshal(b, &days); err != nil || len(days) != 1 {
		t.Fatalf("want one day of stats, got %s", b)
	}
	if days[0]["total_clicks"].(float64) != n || days[0]["scans_only"].(float64) != 5 || days[0]["clicks_only"].(float64) != n-5 {
		t.Errorf("daily record: total %v scans %v direct %v", days[0]["total_clicks"], days[0]["scans_only"], days[0]["clicks_only"])
	}

	db, err := sql.Open("clickhouse", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var raw, qr uint64
	if err := db.QueryRowContext(ctx, "SELECT count(), countIf(qr = 1) FROM clicks WHERE link_id = ?", id).Scan(&raw, &qr); err != nil {
		t.Fatal(err)
	}
	var daily, dailyQR uint64
	if err := db.QueryRowContext(ctx, "SELECT sum(clicks), sum(qr_scans) FROM link_clicks_daily WHERE link_id = ?", id).Scan(&daily, &dailyQR); err != nil {
		t.Fatal(err)
	}
	var linkCode string
	if err := db.QueryRowContext(ctx, "SELECT argMax(code, version) FROM links WHERE link_id = ?", id).Scan(&linkCode); err != nil {
		t.Errorf("links dimension lookup: %v", err)
	}
	if raw != n || qr != 5 || daily != n || dailyQR != 5 {
		t.Errorf("ClickHouse: clicks %d (qr %d), link_clicks_daily %d (qr %d); want %d (5)", raw, qr, daily, dailyQR, n)
	}
	t.Logf("analyst view: %d clicks, %d QR scans, link code %q", raw, qr, linkCode)
	if linkCode != code {
		t.Errorf("links dimension: code %q, want %q", linkCode, code)
	}
}

func TestClickHouseReplayGivesSameStatistics(t *testing.T) {
	dsn := chtest.DSN(t)
	replayScenario(t, "LINKD_CLICKHOUSE_DSN="+dsn)
}

func TestClickHouseCrashKeepsClicks(t *testing.T) {
	dsn := chtest.DSN(t)
	crashScenario(t, "LINKD_CLICKHOUSE_DSN="+dsn)
}
