package queries

import (
	"context"
	"testing"
	"time"

	"github.com/linkd/linkd/domain"
	"github.com/linkd/linkd/domain/link"
)

type fakePublicStats struct {
	fakeLinks
	days map[string][]DailyStats // link id -> records
}

func (f fakePublicStats) LinkDaily(_ context.Context, id string, from, to time.Time) ([]DailyStats, error) {
	var out []DailyStats
	for _, d := range f.days[id] {
		day, _ := time.Parse(time.DateOnly, d.Date)
		if !day.Before(from) && !day.After(to) {
			out = append(out, d)
		}
	}
	return out, nil
}

type fixedClock time.Time

func (c fixedClock) Now() time.Time { return time.Time(c) }

func TestPublicLinkStats(t *testing.T) {
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	rm := fakePublicStats{
		fakeLinks: fakeLinks{
			domains: map[string]string{"go.brand.example": "d1"},
			links: map[string]*Link{
				"/pub":    {ID: "p", Code: "pub", Attributes: link.Attributes{HasPublicStat: true}},
				"/priv":   {ID: "q", Code: "priv"},
				"d1/pub":  {ID: "c", Code: "pub", Attributes: link.Attributes{HasPublicStat: true}},
				"/fresh":  {ID: "f", Code: "fresh", Attributes: link.Attributes{HasPublicStat: true}},
				"/nosale": {ID: "s", Code: "nosale", Attributes: link.Attributes{HasPublicStat: true}},
			},
		},
		days: map[string][]DailyStats{
			"p": {
				{Date: "2026-11-20", TotalClicks: 2, Country: map[string]int64{"DE": 2}},
				{Date: "2026-11-23", TotalClicks: 1, Country: map[string]int64{"FR": 1}},
				{Date: "2026-11-24", TotalClicks: 3, Country: map[string]int64{"DE": 3}},
			},
			"c": {{Date: "2026-11-24", TotalClicks: 7}},
			"s": {{Date: "2026-11-22", Leads: 1, Sales: 1, Revenue: map[string]int64{"eur": 100}}, {Date: "2026-11-24", TotalClicks: 1}},
		},
	}
	h := PublicLinkStatsHandler{ReadModel: rm, Clock: fixedClock(now), DefaultHost: "lnk.test"}
	ctx := context.Background()

	st, err := h.Handle(ctx, PublicLinkStats{Host: "lnk.test", Code: "pub", Range: DateRange{MaxDays: 2}})
	if err != nil {
		t.Fatal(err)
	}
	if st.Link.ID != "p" || st.Summary.TotalClicks != 6 || len(st.Summary.TopCountries) != 2 || st.Summary.TopCountries[0] != (NameCount{"DE", 5}) {
		t.Errorf("summary covers the whole range: %+v", st.Summary)
	}
	if len(st.Daily) != 2 || st.Daily[0].Date != "2026-11-23" || st.Daily[1].Date != "2026-11-24" {
		t.Errorf("max_days keeps the last two days: %+v", st.Daily)
	}
	if st, err := h.Handle(ctx, PublicLinkStats{Host: "go.brand.example:443", Code: "pub"}); err != nil || st.Link.ID != "c" || st.Summary.TotalClicks != 7 {
		t.Errorf("custom domain: %+v %v", st, err)
	}
	if st, err := h.Handle(ctx, PublicLinkStats{Host: "lnk.test", Code: "fresh"}); err != nil || st.Summary.TotalClicks != 0 || st.Daily == nil || len(st.Daily) != 0 {
		t.Errorf("never clicked: %+v %v", st, err)
	}
	if st, err := h.Handle(ctx, PublicLinkStats{Host: "lnk.test", Code: "nosale"}); err != nil || len(st.Daily) != 1 || st.Daily[0].Date != "2026-11-24" {
		t.Errorf("a day of conversions only is no public record: %+v %v", st.Daily, err)
	}
	for _, code := range []string{"priv", "nope"} {
		_, err := h.Handle(ctx, PublicLinkStats{Host: "lnk.test", Code: code})
		if domain.KindOf(err) != domain.KindNotFound || err.Error() != msgLinkNotFound {
			t.Errorf("%s: %v, want 404 %s", code, err, msgLinkNotFound)
		}
	}
	start, end := now, now.AddDate(0, 0, -3)
	if _, err := h.Handle(ctx, PublicLinkStats{Host: "lnk.test", Code: "pub", Range: DateRange{Start: &start, End: &end}}); domain.KindOf(err) != domain.KindInvalid {
		t.Errorf("start after end: %v", err)
	}
}
