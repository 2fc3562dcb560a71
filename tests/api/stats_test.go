package api_test

import (
	"net/http"
	"testing"
	"time"
)

// Spec 2.7, 2.8 and 4.6: access rules and date rules of the statistics.

func TestStatsDateRules(t *testing.T) {
	t.Parallel()
	s := start(t)
	alice := s.NewKey("alice", "full", nil)
	l := createLink(s, alice, map[string]any{"original_url": "https://st.example", "custom_code": "st"})
	obj(t, s.Do("GET", "/v1/links/code/st", "", nil), http.StatusOK)
	id, ws := str(l, "id"), str(l, "workspace_id")
	bases := []string{"/v1/stats/links/" + id, "/v1/stats/links/" + id + "/summary", "/v1/stats/workspaces/" + ws,
		"/v1/stats/workspaces/" + ws + "/summary", "/v1/stats/workspaces", "/v1/stats/workspaces/summary"}
	daily := map[string]bool{bases[0]: true, bases[2]: true, bases[4]: true}

	for _, base := range bases {
		for _, c := range []struct {
			query  string
			status int
			detail string
		}{
			{"", 200, ""},
			{"?start_date=2025-01-01&end_date=2025-01-31", 200, ""},
			{"?start_date=2025-01-01", 200, ""},
			{"?end_date=2025-01-31", 200, ""},
			{"?start_date=2025-01-01T00:00:00Z&end_date=2025-01-31T00:00:00Z", 200, ""},
			{"?start_date=2025-01-01T08:00:00&end_date=2025-01-31T20:00:00", 200, ""},
			{"?start_date=2025-01-01&end_date=2025-01-01", 200, ""},
			{"?start_date=2025-01-01&end_date=2025-02-01", 400, "Date range cannot exceed 30 days. Current range: 31 days"},
			{"?start_date=2025-01-01&end_date=2025-02-15", 400, "Date range cannot exceed 30 days. Current range: 45 days"},
			{"?start_date=2024-01-01&end_date=2025-01-01", 400, "Date range cannot exceed 30 days. Current range: 366 days"},
			{"?start_date=2025-02-01&end_date=2025-01-01", 400, ""},
			{"?start_date=2025-01-02T00:00:00Z&end_date=2025-01-01T23:00:00Z", 400, ""},
			{"?start_date=yesterday", 400, ""},
			{"?end_date=2025-13-45", 400, ""},
		} {
			r := s.Do("GET", base+c.query, alice, nil)
			if c.status == 200 {
				if r.Status != 200 {
					t.Errorf("%s%s: %d %s", base, c.query, r.Status, r.Body)
				}
				continue
			}
			wantError(t, r, c.status, c.detail)
		}
		// max_days: 1 to 30, daily-record endpoints only.
		for _, md := range []string{"1", "15", "30"} {
			if r := s.Do("GET", base+"?max_days="+md, alice, nil); r.Status != 200 {
				t.Errorf("%s max_days=%s: %d %s", base, md, r.Status, r.Body)
			}
		}
		for _, md := range []string{"0", "31", "-1", "x", "1.5"} {
			r := s.Do("GET", base+"?max_days="+md, alice, nil)
			if daily[base] {
				wantError(t, r, http.StatusBadRequest, "")
			} else if r.Status != 200 {
				t.Errorf("summary %s ignores max_days=%s: got %d", base, md, r.Status)
			}
		}
	}

	// Only start_date: end_date is start + 30 days (the summary shows it).
	sum := obj(t, s.Do("GET", bases[1]+"?start_date=2025-01-01", alice, nil), http.StatusOK)
	dr := sum["date_range"].(map[string]any)
	if str(dr, "start") != "2025-01-01" || str(dr, "end") != "2025-01-31" {
		t.Errorf("date_range for start only: %v", dr)
	}
	sum = obj(t, s.Do("GET", bases[1]+"?start_date=2025-03-10&end_date=2025-03-20", alice, nil), http.StatusOK)
	if dr := sum["date_range"].(map[string]any); str(dr, "start") != "2025-03-10" || str(dr, "end") != "2025-03-20" {
		t.Errorf("date_range: %v", dr)
	}
	// A positive UTC offset whose '+' was not percent-encoded arrives as a
	// space: it is still that offset, encoded or not.
	for _, q := range []string{
		"?start_date=2025-03-10T01:00:00+02:00&end_date=2025-03-20T12:00:00+02:00",
		"?start_date=2025-03-10T01:00:00%2B02:00&end_date=2025-03-20T12:00:00%2B02:00",
		"?start_date=2025-03-10T01:00:00.000000+02:00&end_date=2025-03-20%2012:00:00+02:00",
	} {
		sum = obj(t, s.Do("GET", bases[1]+q, alice, nil), http.StatusOK)
		if dr := sum["date_range"].(map[string]any); str(dr, "start") != "2025-03-09" || str(dr, "end") != "2025-03-20" {
			t.Errorf("%s: date_range %v, want 2025-03-09 to 2025-03-20 (UTC days)", q, dr)
		}
	}
	wantError(t, s.Do("GET", bases[0]+"?start_date=2025-03-10T01:00:00+02:00&end_date=2025-04-20T01:00:00+02:00", alice, nil),
		http.StatusBadRequest, "Date range cannot exceed 30 days. Current range: 41 days")
	// A range without clicks is empty, not an error.
	if days := list(t, s.Do("GET", bases[0]+"?start_date=2025-01-01", alice, nil), http.StatusOK); len(days) != 0 {
		t.Errorf("days in 2025-01: %v", days)
	}
}

func TestStatsRecordsAndSummary(t *testing.T) {
	t.Parallel()
	s := start(t)
	alice := s.NewKey("alice", "full", nil)
	l := createLink(s, alice, map[string]any{"original_url": "https://rec.example", "custom_code": "rec"})
	other := createLink(s, alice, map[string]any{"original_url": "https://rec2.example", "custom_code": "rec2"})
	for i := 0; i < 3; i++ {
		obj(t, s.Do("GET", "/v1/links/code/rec", "", nil, "User-Agent", "Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Mobile/15E148 Safari/604.1"), http.StatusOK)
	}
	if r := s.Do("GET", "/rec?qr=1", "", nil, "User-Agent", "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0 Safari/537.36"); r.Status != http.StatusFound {
		t.Fatalf("redirect: %d %s", r.Status, r.Body)
	}
	obj(t, s.Do("GET", "/v1/links/code/rec2", "", nil), http.StatusOK)
	today := time.Now().UTC().Format("2006-01-02")

	days := list(t, s.Do("GET", "/v1/stats/links/"+str(l, "id"), alice, nil), http.StatusOK)
	if len(days) != 1 {
		t.Fatalf("daily records: %v", days)
	}
	d := days[0].(map[string]any)
	for _, k := range []string{"id", "link_id", "last_updated", "click_date", "total_clicks", "unique_visitors", "scans_only", "clicks_only",
		"chrome_clicks", "ios_clicks", "android_clicks", "os_stats", "city_stats", "os_version_stats", "lang_stats", "browser_stats",
		"country_stats", "device_and_os_stats", "app_stats", "device_type_stats", "continent_stats", "device_stats", "from_app_stats"} {
		if _, ok := d[k]; !ok {
			t.Errorf("daily record lacks %q", k)
		}
	}
	if str(d, "link_id") != str(l, "id") || str(d, "click_date") != today || d["total_clicks"] != 4.0 || d["scans_only"] != 1.0 || d["clicks_only"] != 3.0 {
		t.Errorf("record: %v", d)
	}
	if d["ios_clicks"] != 3.0 || d["chrome_clicks"] != 1.0 {
		t.Errorf("ios/chrome clicks: %v %v", d["ios_clicks"], d["chrome_clicks"])
	}
	dev := d["device_stats"].(map[string]any)
	if dev["mobile"] != 3.0 || dev["desktop"] != 1.0 || dev["tablet"] != 0.0 {
		t.Errorf("device_stats: %v", dev)
	}
	fa := d["from_app_stats"].(map[string]any)
	if _, ok := fa["true"]; !ok {
		t.Errorf("from_app_stats: %v", fa)
	}
	timestamp(t, "last_updated", d["last_updated"])

	sum := obj(t, s.Do("GET", "/v1/stats/links/"+str(l, "id")+"/summary", alice, nil), http.StatusOK)
	for _, k := range []string{"link_id", "total_clicks", "top_countries", "top_devices", "top_browsers", "qr_code_usage", "date_range"} {
		if _, ok := sum[k]; !ok {
			t.Errorf("summary lacks %q", k)
		}
	}
	if sum["total_clicks"] != 4.0 || sum["qr_code_usage"] != 1.0 || str(sum, "link_id") != str(l, "id") {
		t.Errorf("summary: %v", sum)
	}
	if td := sum["top_devices"].([]any); len(td) == 0 || str(td[0].(map[string]any), "name") != "mobile" || td[0].(map[string]any)["count"] != 3.0 {
		t.Errorf("top_devices: %v", td)
	}
	if dr := sum["date_range"].(map[string]any); str(dr, "end") != today {
		t.Errorf("default date_range: %v", dr)
	}

	// Workspace statistics add up both links; /v1/stats/workspaces is the caller's default workspace.
	for _, p := range []string{"/v1/stats/workspaces/" + str(l, "workspace_id"), "/v1/stats/workspaces"} {
		wd := list(t, s.Do("GET", p, alice, nil), http.StatusOK)
		if len(wd) != 1 || wd[0].(map[string]any)["total_clicks"] != 5.0 {
			t.Errorf("%s: %v", p, wd)
		}
		ws := obj(t, s.Do("GET", p+"/summary", alice, nil), http.StatusOK)
		if ws["total_clicks"] != 5.0 {
			t.Errorf("%s/summary: %v", p, ws)
		}
		if _, has := ws["link_id"]; has {
			t.Errorf("workspace summary carries link_id")
		}
	}
	_ = other
	// max_days bounds the days returned.
	if days := list(t, s.Do("GET", "/v1/stats/links/"+str(l, "id")+"?max_days=1", alice, nil), http.StatusOK); len(days) != 1 {
		t.Errorf("max_days=1 from today: %v", days)
	}
}

func TestStatsAccess(t *testing.T) {
	t.Parallel()
	s := start(t)
	alice, bob := s.NewKey("alice", "full", nil), s.NewKey("bob", "full", nil)
	private := createLink(s, alice, map[string]any{"original_url": "https://priv.example", "custom_code": "priv"})
	public := createLink(s, alice, map[string]any{"original_url": "https://pub.example", "custom_code": "pubstat", "has_public_stat": true})
	never := createLink(s, alice, map[string]any{"original_url": "https://never.example"})
	obj(t, s.Do("GET", "/v1/links/code/priv", "", nil), http.StatusOK)
	obj(t, s.Do("GET", "/v1/links/code/pubstat", "", nil), http.StatusOK)
	bobWS := workspace(s, bob, "Bob")

	for _, suffix := range []string{"", "/summary"} {
		wantError(t, s.Do("GET", "/v1/stats/links/"+str(private, "id")+suffix, bob, nil), http.StatusForbidden, msgDeniedLink)
		list := s.Do("GET", "/v1/stats/links/"+str(public, "id")+suffix, bob, nil)
		if list.Status != http.StatusOK {
			t.Errorf("public stats%s for another user: %d %s", suffix, list.Status, list.Body)
		}
		wantError(t, s.Do("GET", "/v1/stats/links/"+str(never, "id")+suffix, alice, nil), http.StatusNotFound, msgNoStats)
		wantError(t, s.Do("GET", "/v1/stats/links/nope"+suffix, alice, nil), http.StatusNotFound, msgLinkNotFound)
		wantForbidden(t, s.Do("GET", "/v1/stats/workspaces/"+str(private, "workspace_id")+suffix, bob, nil))
		wantError(t, s.Do("GET", "/v1/stats/workspaces/nope"+suffix, alice, nil), http.StatusNotFound, msgWSNotFound)
		if r := s.Do("GET", "/v1/stats/workspaces/"+bobWS+suffix, bob, nil); r.Status != http.StatusOK {
			t.Errorf("bob's empty workspace stats%s: %d %s", suffix, r.Status, r.Body)
		}
	}
	// Bob's own default workspace has no clicks: an empty array and a zero summary.
	if days := list(t, s.Do("GET", "/v1/stats/workspaces", bob, nil), http.StatusOK); len(days) != 0 {
		t.Errorf("bob's workspace days: %v", days)
	}
	if sum := obj(t, s.Do("GET", "/v1/stats/workspaces/summary", bob, nil), http.StatusOK); sum["total_clicks"] != 0.0 {
		t.Errorf("bob's summary: %v", sum)
	}
	// Limited keys need the analytics permission.
	noStats := s.NewKey("alice", "limited", map[string]string{"links": "write"})
	wantError(t, s.Do("GET", "/v1/stats/links/"+str(private, "id"), noStats, nil), http.StatusForbidden, msgInsufficient)
	stats := s.NewKey("alice", "limited", map[string]string{"analytics": "read"})
	list(t, s.Do("GET", "/v1/stats/links/"+str(private, "id"), stats, nil), http.StatusOK)
}
