package queries

import (
	"reflect"
	"testing"
)

func TestRadarOverviewFromTotalsAndSales(t *testing.T) {
	var s RadarSales
	for _, x := range []RadarSale{
		{ConversionID: "a", VisitorID: "v1", Country: "FR", AmountMinor: 1999, Currency: "eur"},
		{ConversionID: "a", VisitorID: "v2", Country: "DE", AmountMinor: 1999, Currency: "eur"}, // the same sale, a shared click
		{ConversionID: "b", VisitorID: "v1", Country: "FR", AmountMinor: 500, Currency: "eur"},
		{ConversionID: "c", VisitorID: "v3", Country: "US", AmountMinor: 3000, Currency: "jpy"},
		{ConversionID: "d", VisitorID: "v4", Country: "US", AmountMinor: 3000, Currency: "jpy"},
	} {
		s.Add(x)
	}
	if len(s.List) != 4 {
		t.Fatalf("%d sales, want 4 (a counted once)", len(s.List))
	}
	if c := s.Currency(""); c != "eur" { // 2 and 2: the first alphabetically
		t.Errorf("currency %q, want eur", c)
	}
	if c := s.Currency("usd"); c != "usd" {
		t.Errorf("asked currency %q", c)
	}
	o := NewRadarOverview(RadarTotals{People: 8, Visits: 10, Pageviews: 20, Events: 3, Bounces: 4, DurationMS: 612_000}, s.List, "eur")
	want := RadarOverview{People: 8, Visits: 10, Pageviews: 20, Events: 3, Revenue: 24.99, RevenueCurrency: "eur", Sales: 4,
		ConversionRate: 37.5, RevenuePerVisitor: 3.12, BounceRate: 40, AvgDurationS: 61, AvgDurationMMSS: "01:01"}
	if !reflect.DeepEqual(o, want) {
		t.Errorf("overview\n%+v\nwant\n%+v", o, want)
	}
	if got := NewRadarOverview(RadarTotals{}, nil, ""); got.RevenueCurrency != "usd" || got.ConversionRate != 0 || got.AvgDurationMMSS != "00:00" {
		t.Errorf("empty overview %+v", got)
	}
	if r := RevenueByCountry(s.List, "jpy"); !reflect.DeepEqual(r, map[string]int64{"US": 6000}) {
		t.Errorf("revenue by country %v", r)
	}
}
