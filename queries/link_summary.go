package queries

import (
	"context"
	"sort"
	"time"
)

// LinkSummary asks for the summary of a link (spec 2.8) over a range of
// days. Access and errors are those of DailyLinkStats.
type LinkSummary struct {
	LinkID string
	UserID string
	Range  DateRange
}

// Summary is the summary of a link or a workspace over some days.
type Summary struct {
	TotalClicks  int64
	QRScans      int64
	Leads        int64
	Sales        int64
	Revenue      map[string]int64 // currency -> minor units
	TopCountries []NameCount
	TopDevices   []NameCount
	TopBrowsers  []NameCount
	Days         Days
}

// NameCount is one entry of a top-N list.
type NameCount struct {
	Name  string
	Count int64
}

// TopN is how many entries the summary's top lists hold.
const TopN = 10

// LinkSummaryHandler answers LinkSummary.
type LinkSummaryHandler struct {
	ReadModel LinkStatsReadModel
	Clock     interface{ Now() time.Time }
}

// Handle answers the query.
func (h LinkSummaryHandler) Handle(ctx context.Context, q LinkSummary) (Summary, error) {
	d, err := linkStats(ctx, h.ReadModel, q.LinkID, q.UserID, q.Range, h.Clock.Now())
	if err != nil {
		return Summary{}, err
	}
	return summarize(d.Records, d.Days), nil
}

// summarize adds up daily records.
func summarize(records []DailyStats, days Days) Summary {
	s := Summary{Days: days, Revenue: map[string]int64{}}
	countries, devices, browsers := map[string]int64{}, map[string]int64{}, map[string]int64{}
	for _, d := range records {
		s.TotalClicks += d.TotalClicks
		s.QRScans += d.QRScans
		s.Leads += d.Leads
		s.Sales += d.Sales
		for cur, n := range d.Revenue {
			s.Revenue[cur] += n
		}
		for k, v := range d.Country {
			countries[k] += v
		}
		for k, v := range d.DeviceType {
			devices[k] += v
		}
		for k, v := range d.Browser {
			browsers[k] += v
		}
	}
	s.TopCountries = top(countries, TopN)
	s.TopDevices = top(devices, TopN)
	s.TopBrowsers = top(browsers, TopN)
	return s
}

// top is the n largest counts, largest first, ties by name; empty names
// and zero counts left out.
func top(m map[string]int64, n int) []NameCount {
	out := make([]NameCount, 0, len(m))
	for k, v := range m {
		if k != "" && v > 0 {
			out = append(out, NameCount{k, v})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Count != out[j].Count {
			return out[i].Count > out[j].Count
		}
		return out[i].Name < out[j].Name
	})
	if len(out) > n {
		out = out[:n]
	}
	return out
}
