package queries

import (
	"context"
	"time"
)

// DailyStats is one day of clicks of a link, or of a whole workspace
// (LinkID empty): the daily record of the interface (spec 2.7).
type DailyStats struct {
	Date           string    // YYYY-MM-DD, UTC
	LinkID         string    // empty for workspace records
	WorkspaceID    string    //
	LastUpdated    time.Time // time of the last click counted in it
	FirstClick     time.Time // time of the first click counted in it
	TotalClicks    int64
	UniqueVisitors int64
	QRScans        int64 // scans_only
	DirectClicks   int64 // clicks_only
	ChromeClicks   int64
	IOSClicks      int64
	AndroidClicks  int64
	// Breakdowns: name -> clicks.
	OS          map[string]int64 // os_stats
	OSVersion   map[string]int64 // os_version_stats ("iOS 17.4")
	City        map[string]int64 // city_stats
	Language    map[string]int64 // lang_stats
	Browser     map[string]int64 // browser_stats
	Country     map[string]int64 // country_stats (ISO alpha-2)
	Continent   map[string]int64 // continent_stats
	DeviceAndOS map[string]int64 // device_and_os_stats ("mobile iOS")
	App         map[string]int64 // app_stats
	DeviceType  map[string]int64 // device_type_stats and device_stats: mobile, desktop, tablet
	FromApp     map[string]int64 // from_app_stats: "true", "false"
	Referrer    map[string]int64 // referrer hosts (an extension)
}

// StatsReadModel is what the statistics queries read. Two projections
// implement it: the embedded analytics store and ClickHouse.
type StatsReadModel interface {
	// LinkDaily returns the days of [from, to] (UTC dates, inclusive) on
	// which the link was clicked, in date order.
	LinkDaily(ctx context.Context, linkID string, from, to time.Time) ([]DailyStats, error)
	// WorkspaceDaily is the same over every link of a workspace.
	WorkspaceDaily(ctx context.Context, workspaceID string, from, to time.Time) ([]DailyStats, error)
	// LinkClicked reports whether the link was ever clicked.
	LinkClicked(ctx context.Context, linkID string) (bool, error)
}
