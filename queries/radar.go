package queries

import (
	"context"
	"time"
)

// Radar: the web analytics of one project (spec 2.9, 2.10, 4.7), read from
// the Radar projection. Every query names its project (the key's) and a
// range of instants, both ends included.

// RadarRange is a project and a range.
type RadarRange struct {
	ProjectID string
	Start     time.Time
	End       time.Time
	// Currency is the currency revenue is reported in; "" for the one with
	// the most sales in the range.
	Currency string
}

// RadarOverview is spec 2.9's metrics.
type RadarOverview struct {
	People            int64   `json:"people"`
	Visits            int64   `json:"visits"`
	Pageviews         int64   `json:"pageviews"`
	Events            int64   `json:"events"`
	Revenue           float64 `json:"revenue"`
	RevenueCurrency   string  `json:"revenue_currency"`
	Sales             int64   `json:"sales"`
	ConversionRate    float64 `json:"conversion_rate"`
	RevenuePerVisitor float64 `json:"revenue_per_visitor"`
	BounceRate        float64 `json:"bounce_rate"`
	AvgDurationS      int64   `json:"avg_duration_s"`
	AvgDurationMMSS   string  `json:"avg_duration_mmss"`
}

// RadarCount is a breakdown row: a name and its unique visitors.
type RadarCount struct {
	Name   string `json:"name"`
	People int64  `json:"people"`
}

// RadarPage is a page of the pages breakdown.
type RadarPage struct {
	Pathname string `json:"pathname"`
	People   int64  `json:"people"`
}

// RadarCountry is a country of the locations breakdown.
type RadarCountry struct {
	Name        string  `json:"name"`
	People      int64   `json:"people"`
	CountryCode string  `json:"countryCode"`
	Revenue     float64 `json:"revenue"`
}

// RadarEventStat is a custom event's totals.
type RadarEventStat struct {
	EventName      string  `json:"event_name"`
	People         int64   `json:"people"`
	Events         int64   `json:"events"`
	CompletionRate float64 `json:"completion_rate"`
}

// RadarBreakdowns are the breakdowns of 4.7, each list at most Limit long.
type RadarBreakdowns struct {
	Pages     []RadarPage
	Sources   []RadarCount
	Countries []RadarCountry
	Browsers  []RadarCount
	OS        []RadarCount
	Events    []RadarEventStat
	Hostnames []string
}

// RadarVisitor is spec 2.10's visitor.
type RadarVisitor struct {
	VisitorID   string    `json:"visitorId"`
	Name        string    `json:"name"`
	Email       string    `json:"email"`
	Status      string    `json:"status"`
	CountryCode string    `json:"countryCode"`
	CountryName string    `json:"countryName"`
	Source      string    `json:"source"`
	Browser     string    `json:"browser"`
	Device      string    `json:"device"`
	Revenue     float64   `json:"revenue"`
	Sessions    int64     `json:"sessions"`
	FirstSeen   time.Time `json:"firstSeen"`
	LastSeen    time.Time `json:"lastSeen"`
}

// RadarSession is spec 2.10's session.
type RadarSession struct {
	SessionID       string    `json:"sessionId"`
	StartTime       time.Time `json:"startTime"`
	EndTime         time.Time `json:"endTime"`
	DurationSeconds float64   `json:"durationSeconds"`
	Referrer        string    `json:"referrer"`
	Device          string    `json:"device"`
	Browser         string    `json:"browser"`
	OS              string    `json:"os"`
}

// RadarHeatmapEntry is a day's activity of a visitor.
type RadarHeatmapEntry struct {
	Date   string `json:"date"`
	Events int64  `json:"events"`
}

// RadarVisitorDetails is people/details.
type RadarVisitorDetails struct {
	Visitor  RadarVisitor        `json:"visitor"`
	Sessions []RadarSession      `json:"sessions"`
	Heatmap  []RadarHeatmapEntry `json:"heatmap"`
}

// RadarPeoplePage is a page of the people list.
type RadarPeoplePage struct {
	Data       []RadarVisitor `json:"data"`
	NextCursor string         `json:"next_cursor"`
}

// RadarReadModel is what the Radar queries read.
type RadarReadModel interface {
	RadarOverview(ctx context.Context, r RadarRange) (RadarOverview, error)
	RadarBreakdowns(ctx context.Context, r RadarRange, limit int) (RadarBreakdowns, error)
	// RadarEvents ranks custom events by volume; a zero Start or End is
	// open.
	RadarEvents(ctx context.Context, r RadarRange, limit int) ([]RadarEventStat, error)
	RadarPeople(ctx context.Context, r RadarRange, limit int, cursor string) (RadarPeoplePage, error)
	// RadarVisitor answers false when the project has no such visitor.
	RadarVisitor(ctx context.Context, r RadarRange, visitorID string) (RadarVisitorDetails, bool, error)
}

// RadarHandler answers the Radar queries.
type RadarHandler struct {
	ReadModel RadarReadModel
}

func (h RadarHandler) Overview(ctx context.Context, r RadarRange) (RadarOverview, error) {
	return h.ReadModel.RadarOverview(ctx, r)
}

func (h RadarHandler) Breakdowns(ctx context.Context, r RadarRange, limit int) (RadarBreakdowns, error) {
	return h.ReadModel.RadarBreakdowns(ctx, r, limit)
}

func (h RadarHandler) CustomEvents(ctx context.Context, r RadarRange, limit int) ([]RadarEventStat, error) {
	return h.ReadModel.RadarEvents(ctx, r, limit)
}

func (h RadarHandler) People(ctx context.Context, r RadarRange, limit int, cursor string) (RadarPeoplePage, error) {
	return h.ReadModel.RadarPeople(ctx, r, limit, cursor)
}

func (h RadarHandler) Visitor(ctx context.Context, r RadarRange, visitorID string) (RadarVisitorDetails, bool, error) {
	return h.ReadModel.RadarVisitor(ctx, r, visitorID)
}
