package queries

import (
	"reflect"
	"testing"
	"time"
)

func TestSummarize(t *testing.T) {
	days := Days{From: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), To: time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)}
	records := []DailyStats{
		{TotalClicks: 5, QRScans: 1, Country: map[string]int64{"DE": 3, "FR": 2}, DeviceType: map[string]int64{"mobile": 5}, Browser: map[string]int64{"Chrome": 4, "": 1}},
		{TotalClicks: 4, QRScans: 2, Country: map[string]int64{"FR": 1, "US": 3}, DeviceType: map[string]int64{"desktop": 4, "tablet": 0}, Browser: map[string]int64{"Safari": 4}},
	}
	got := summarize(records, days)
	want := Summary{
		TotalClicks: 9, QRScans: 3, Days: days, Revenue: map[string]int64{},
		TopCountries: []NameCount{{"DE", 3}, {"FR", 3}, {"US", 3}}, // ties by name
		TopDevices:   []NameCount{{"mobile", 5}, {"desktop", 4}},   // zero counts left out
		TopBrowsers:  []NameCount{{"Chrome", 4}, {"Safari", 4}},    // empty names left out
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("summarize =\n%+v\nwant\n%+v", got, want)
	}
}

func TestTopKeepsTen(t *testing.T) {
	m := map[string]int64{}
	for i := 0; i < 15; i++ {
		m[string(rune('a'+i))] = int64(i + 1)
	}
	got := top(m, TopN)
	if len(got) != TopN || got[0] != (NameCount{"o", 15}) || got[9] != (NameCount{"f", 6}) {
		t.Fatalf("top = %v", got)
	}
	if got := summarize(nil, Days{}); got.TopCountries == nil || len(got.TopCountries) != 0 {
		t.Fatalf("no records: top lists %v, want empty and not nil (JSON [])", got.TopCountries)
	}
}
