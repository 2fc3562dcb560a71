// Package radartest is the contract of the Radar reports (overview,
// breakdowns, custom events): the same cases run against the embedded
// Radar projection (projections/radar) and ClickHouse
// (projections/clickhouse/radar), so that both answer alike. People and visitor
// details are always read from the embedded projection and are tested
// there.
package radartest

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/linkd/linkd/domain"
	"github.com/linkd/linkd/domain/conversion"
	"github.com/linkd/linkd/domain/radar"
	"github.com/linkd/linkd/eventstore"
	"github.com/linkd/linkd/projections"
	"github.com/linkd/linkd/projections/projectiontest"
	"github.com/linkd/linkd/queries"
)

// Store is a Radar projector and its reports.
type Store interface {
	projections.Projector
	RadarOverview(ctx context.Context, r queries.RadarRange) (queries.RadarOverview, error)
	RadarBreakdowns(ctx context.Context, r queries.RadarRange, limit int) (queries.RadarBreakdowns, error)
	RadarEvents(ctx context.Context, r queries.RadarRange, limit int) ([]queries.RadarEventStat, error)
}

// T0 is the fixture's reference instant (whole seconds: ClickHouse keeps
// seconds).
var T0 = time.Date(2026, 3, 14, 9, 0, 0, 0, time.UTC)

// Project is the fixture's project.
const Project = "p1"

// Range is the fixture's report range: every visit but visitor d's.
var Range = queries.RadarRange{ProjectID: Project, Start: T0.Add(-time.Hour), End: T0.Add(48 * time.Hour)}

// Days is a range of whole UTC days (as the API makes of start and end
// dates) holding the same events as Range: ClickHouse answers it from its
// daily aggregates.
var Days = queries.RadarRange{ProjectID: Project, Start: time.Date(2026, 3, 14, 0, 0, 0, 0, time.UTC),
	End: time.Date(2026, 3, 15, 23, 59, 59, int(999*time.Millisecond), time.UTC)}

type hitSpec struct {
	visitor, host, path, source, country, browser, os, device, click string
	at                                                               time.Duration
	event                                                            string
}

// Fixture is the log of the contract: five visitors of p1 (d's visit two
// days before the range), one of another project, the sales of their
// clicks in two currencies, and a sale on a click no visitor came through.
func Fixture(t testing.TB) []eventstore.RecordedEvent {
	var l projectiontest.Log
	l.Start = T0
	add := func(stream string, e domain.Event) { l.Add(t, stream, e) }
	hit := func(h hitSpec, project string) {
		x := radar.Hit{ProjectID: project, WorkspaceID: "w1", VisitorID: h.visitor, URL: "https://" + h.host + h.path, Hostname: h.host, Pathname: h.path,
			Source: h.source, Country: h.country, Browser: h.browser, OS: h.os, Device: h.device, ClickID: h.click, At: T0.Add(h.at)}
		if h.click != "" {
			x.LinkID = "link-" + h.click
		}
		if h.event != "" {
			add(radar.Stream(project, h.visitor), &radar.EventRecorded{Hit: x, Name: h.event, Props: map[string]string{"plan": "pro", "n": "1"}})
			return
		}
		add(radar.Stream(project, h.visitor), &radar.PageviewRecorded{Hit: x})
	}
	a := hitSpec{visitor: "a", host: "shop.example", source: "short.example/abc", country: "FR", browser: "Firefox", os: "Linux", device: "Desktop"}
	b := hitSpec{visitor: "b", host: "shop.example", source: "news.example", country: "DE", browser: "Chrome", os: "Windows", device: "Mobile"}
	c := hitSpec{visitor: "c", host: "docs.example", country: "FR", browser: "Chrome", os: "macOS", device: "Desktop", click: "clk-2"}
	d := hitSpec{visitor: "d", host: "shop.example", country: "US", browser: "Firefox", os: "Linux", device: "Desktop", click: "clk-3"}
	e := hitSpec{visitor: "e", host: "shop.example", source: "news.example", country: "DE", browser: "Safari", os: "iOS", device: "Mobile", click: "clk-4"}
	with := func(h hitSpec, path string, at time.Duration, event string) hitSpec {
		h.path, h.at, h.event = path, at, event
		return h
	}
	d.path, d.at = "/", -48*time.Hour
	hit(d, Project)
	a1 := with(a, "/", 0, "")
	a1.click = "clk-1"
	hit(a1, Project)
	hit(with(a, "/pricing", time.Minute, ""), Project)
	hit(with(b, "/", 3*time.Minute, ""), Project)
	hit(with(a, "/pricing", 2*time.Minute+30*time.Second, "Signup"), Project)
	hit(with(c, "/docs", 5*time.Minute, ""), Project)
	add(radar.Stream(Project, "c"), &radar.VisitorIdentified{Hit: radar.Hit{ProjectID: Project, VisitorID: "c", At: T0.Add(5*time.Minute + time.Second)}, Email: "c@example.com"})
	hit(with(c, "/docs", 6*time.Minute, "Signup"), Project)
	hit(with(c, "/docs", 7*time.Minute, "Download"), Project)
	cp := with(c, "/pricing", 8*time.Minute, "")
	cp.host = "shop.example"
	hit(cp, Project)
	hit(with(e, "/", 40*time.Minute, ""), Project)
	a2 := with(a, "/", time.Hour+5*time.Minute, "") // a second visit, direct
	a2.source = ""
	hit(a2, Project)
	hit(with(hitSpec{visitor: "a", host: "other.example", country: "JP", browser: "Edge", os: "Windows"}, "/x", time.Minute, "Other"), "p2")

	cust := conversion.CustomerStream("w1", "cus_1")
	add(cust, &conversion.CustomerCreated{CustomerID: "cu1", WorkspaceID: "w1", ExternalID: "cus_1", Profile: conversion.Profile{Firstname: "Ann", Email: "ann@example.com"}, At: T0})
	sale := func(id, click string, amount int64, currency string, at time.Duration) {
		add(cust, &conversion.SaleTracked{ConversionID: id, EventName: "Purchase", Click: conversion.Click{ClickID: click, LinkID: "link-" + click, WorkspaceID: "w1", ProjectID: Project},
			CustomerID: "cu1", CustomerExternalID: "cus_1", AmountMinor: amount, Currency: currency, Timestamp: T0.Add(at)})
	}
	add(cust, &conversion.LeadTracked{ConversionID: "cv-lead", EventName: "Signup", Click: conversion.Click{ClickID: "clk-1", LinkID: "link-clk-1", WorkspaceID: "w1", ProjectID: Project},
		CustomerID: "cu1", CustomerExternalID: "cus_1", Timestamp: T0.Add(9 * time.Minute)})
	sale("cv-a", "clk-1", 4999, "usd", 10*time.Minute)
	sale("cv-c1", "clk-2", 1000, "eur", 20*time.Minute)
	sale("cv-c2", "clk-2", 2550, "eur", 30*time.Minute)
	sale("cv-d", "clk-3", 10000, "usd", -47*time.Hour) // before the range
	sale("cv-x", "clk-9", 777, "usd", 12*time.Minute)  // no visitor came through clk-9
	return l.Events
}

func apply(t *testing.T, s Store, events []eventstore.RecordedEvent) {
	t.Helper()
	if err := s.Apply(context.Background(), projections.Envelopes(events)); err != nil {
		t.Fatalf("Apply: %v", err)
	}
}

// Reports are what the contract compares.
type Reports struct {
	Overview, OverviewUSD queries.RadarOverview
	Breakdowns, Limited   queries.RadarBreakdowns
	Events, AllTime       []queries.RadarEventStat
	// The same over Days.
	DaysOverview   queries.RadarOverview
	DaysBreakdowns queries.RadarBreakdowns
	DaysEvents     []queries.RadarEventStat
}

// Read runs every report of the contract on s.
func Read(t *testing.T, s Store) Reports {
	t.Helper()
	ctx := context.Background()
	var out Reports
	var err error
	if out.Overview, err = s.RadarOverview(ctx, Range); err != nil {
		t.Fatalf("overview: %v", err)
	}
	usd := Range
	usd.Currency = "usd"
	if out.OverviewUSD, err = s.RadarOverview(ctx, usd); err != nil {
		t.Fatalf("overview: %v", err)
	}
	if out.Breakdowns, err = s.RadarBreakdowns(ctx, Range, 50); err != nil {
		t.Fatalf("breakdowns: %v", err)
	}
	if out.Limited, err = s.RadarBreakdowns(ctx, Range, 1); err != nil {
		t.Fatalf("breakdowns: %v", err)
	}
	if out.Events, err = s.RadarEvents(ctx, Range, 50); err != nil {
		t.Fatalf("custom events: %v", err)
	}
	if out.AllTime, err = s.RadarEvents(ctx, queries.RadarRange{ProjectID: Project}, 1); err != nil {
		t.Fatalf("custom events: %v", err)
	}
	if out.DaysOverview, err = s.RadarOverview(ctx, Days); err != nil {
		t.Fatalf("overview of whole days: %v", err)
	}
	if out.DaysBreakdowns, err = s.RadarBreakdowns(ctx, Days, 50); err != nil {
		t.Fatalf("breakdowns of whole days: %v", err)
	}
	if out.DaysEvents, err = s.RadarEvents(ctx, Days, 50); err != nil {
		t.Fatalf("custom events of whole days: %v", err)
	}
	return out
}

// Expected is what the fixture's reports are, worked out by hand.
func Expected() Reports {
	r := Reports{
		// people a, b, c, e; visits a (2), b, c, e; bounces: a's second, b,
		// e; durations 150 s (a) + 180 s (c) over 5 visits; sales of a
		// (usd) and c (2 x eur): eur has the most.
		Overview: queries.RadarOverview{People: 4, Visits: 5, Pageviews: 7, Events: 3, Revenue: 35.5, RevenueCurrency: "eur", Sales: 3,
			ConversionRate: 50, RevenuePerVisitor: 8.88, BounceRate: 60, AvgDurationS: 66, AvgDurationMMSS: "01:06"},
		OverviewUSD: queries.RadarOverview{People: 4, Visits: 5, Pageviews: 7, Events: 3, Revenue: 49.99, RevenueCurrency: "usd", Sales: 3,
			ConversionRate: 50, RevenuePerVisitor: 12.5, BounceRate: 60, AvgDurationS: 66, AvgDurationMMSS: "01:06"},
		Breakdowns: queries.RadarBreakdowns{
			Pages:     []queries.RadarPage{{Pathname: "/", People: 3}, {Pathname: "/pricing", People: 2}, {Pathname: "/docs", People: 1}},
			Sources:   []queries.RadarCount{{Name: "Direct / None", People: 2}, {Name: "news.example", People: 2}, {Name: "short.example/abc", People: 1}},
			Countries: []queries.RadarCountry{{Name: "Germany", People: 2, CountryCode: "DE"}, {Name: "France", People: 2, CountryCode: "FR", Revenue: 35.5}},
			Browsers:  []queries.RadarCount{{Name: "Chrome", People: 2}, {Name: "Firefox", People: 1}, {Name: "Safari", People: 1}},
			OS:        []queries.RadarCount{{Name: "Linux", People: 1}, {Name: "Windows", People: 1}, {Name: "iOS", People: 1}, {Name: "macOS", People: 1}},
			Events:    []queries.RadarEventStat{{EventName: "Signup", People: 2, Events: 2, CompletionRate: 50}, {EventName: "Download", People: 1, Events: 1, CompletionRate: 25}},
			Hostnames: []string{"shop.example", "docs.example"},
		},
		Limited: queries.RadarBreakdowns{
			Pages:     []queries.RadarPage{{Pathname: "/", People: 3}},
			Sources:   []queries.RadarCount{{Name: "Direct / None", People: 2}},
			Countries: []queries.RadarCountry{{Name: "Germany", People: 2, CountryCode: "DE"}},
			Browsers:  []queries.RadarCount{{Name: "Chrome", People: 2}},
			OS:        []queries.RadarCount{{Name: "Linux", People: 1}},
			Events:    []queries.RadarEventStat{{EventName: "Signup", People: 2, Events: 2, CompletionRate: 50}},
			Hostnames: []string{"shop.example"},
		},
		Events: []queries.RadarEventStat{{EventName: "Signup", People: 2, Events: 2, CompletionRate: 50}, {EventName: "Download", People: 1, Events: 1, CompletionRate: 25}},
		// All time: d is a fifth person.
		AllTime: []queries.RadarEventStat{{EventName: "Signup", People: 2, Events: 2, CompletionRate: 40}},
	}
	r.DaysOverview, r.DaysBreakdowns, r.DaysEvents = r.Overview, r.Breakdowns, r.Events
	return r
}

// Run runs the contract; open returns an empty store that the test owns.
func Run(t *testing.T, open func(t *testing.T) Store) {
	t.Run("Reports", func(t *testing.T) {
		s := open(t)
		apply(t, s, Fixture(t))
		got, want := Read(t, s), Expected()
		check(t, "overview", got.Overview, want.Overview)
		check(t, "overview in usd", got.OverviewUSD, want.OverviewUSD)
		check(t, "breakdowns", got.Breakdowns, want.Breakdowns)
		check(t, "breakdowns, limit 1", got.Limited, want.Limited)
		check(t, "custom events", got.Events, want.Events)
		check(t, "custom events of all time, limit 1", got.AllTime, want.AllTime)
		check(t, "overview of whole days", got.DaysOverview, want.DaysOverview)
		check(t, "breakdowns of whole days", got.DaysBreakdowns, want.DaysBreakdowns)
		check(t, "custom events of whole days", got.DaysEvents, want.DaysEvents)
	})
	t.Run("Empty", func(t *testing.T) {
		s := open(t)
		o, err := s.RadarOverview(context.Background(), Range)
		if err != nil {
			t.Fatal(err)
		}
		check(t, "overview", o, queries.RadarOverview{RevenueCurrency: "usd", AvgDurationMMSS: "00:00"})
		b, err := s.RadarBreakdowns(context.Background(), Range, 50)
		if err != nil {
			t.Fatal(err)
		}
		check(t, "breakdowns", b, queries.RadarBreakdowns{})
	})
	// The API takes years 1 to 9999.
	t.Run("WidestRange", func(t *testing.T) {
		s := open(t)
		apply(t, s, Fixture(t))
		wide := queries.RadarRange{ProjectID: Project, Start: time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC),
			End: time.Date(9999, 12, 31, 23, 59, 59, int(999*time.Millisecond), time.UTC)}
		e, err := s.RadarEvents(context.Background(), wide, 1)
		if err != nil {
			t.Fatal(err)
		}
		check(t, "custom events", e, Expected().AllTime)
		o, err := s.RadarOverview(context.Background(), wide)
		if err != nil {
			t.Fatal(err)
		}
		if o.People != 5 || o.Pageviews != 8 || o.Sales != 4 {
			t.Errorf("overview of all time: %+v, want 5 people, 8 page views, 4 sales", o)
		}
		if _, err := s.RadarBreakdowns(context.Background(), wide, 50); err != nil {
			t.Fatal(err)
		}
	})
	// Delivery is at least once and batches differ between live
	// processing and replay: event by event, one batch, and every prefix
	// again give the same reports.
	t.Run("RepeatsAndBatches", func(t *testing.T) {
		events := Fixture(t)
		live := open(t)
		for _, e := range events {
			apply(t, live, []eventstore.RecordedEvent{e})
		}
		replay := open(t)
		apply(t, replay, events)
		apply(t, replay, events)
		for i := 0; i < len(events); i += 3 {
			apply(t, replay, events[:i+1])
		}
		want := Expected()
		check(t, "live", Read(t, live), want)
		check(t, "replay with repeats", Read(t, replay), want)
	})
	// A visit that goes on across batches is one visit.
	t.Run("VisitAcrossBatches", func(t *testing.T) {
		events := Fixture(t)
		s := open(t)
		half := len(events) / 2
		apply(t, s, events[:half])
		apply(t, s, events[half-2:])
		check(t, "reports", Read(t, s), Expected())
	})
}

func check(t *testing.T, what string, got, want any) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s:\n got %+v\nwant %+v", what, got, want)
	}
}
