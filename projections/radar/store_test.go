package radar_test

import (
	"context"
	"fmt"
	"github.com/linkd/linkd/projections"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/linkd/linkd/domain"
	"github.com/linkd/linkd/domain/conversion"
	"github.com/linkd/linkd/domain/radar"
	"github.com/linkd/linkd/eventstore"
	"github.com/linkd/linkd/projections/projectiontest"
	radarstore "github.com/linkd/linkd/projections/radar"
	"github.com/linkd/linkd/queries"
)

var t0 = time.Date(2026, 3, 14, 9, 0, 0, 0, time.UTC)

type log struct{ projectiontest.Log }

func (l *log) add(t *testing.T, stream string, e domain.Event) {
	t.Helper()
	l.Add(t, stream, e)
}

func (l *log) hit(t *testing.T, visitor, path string, at time.Time, event string, click string) {
	h := radar.Hit{ProjectID: "p1", VisitorID: visitor, URL: "https://shop.example" + path, Hostname: "shop.example", Pathname: path,
		Country: "FR", Browser: "Firefox", OS: "Linux", Device: "Desktop", ClickID: click, At: at}
	if event != "" {
		l.add(t, radar.Stream("p1", visitor), &radar.EventRecorded{Hit: h, Name: event, Props: map[string]string{"k": "v"}})
		return
	}
	l.add(t, radar.Stream("p1", visitor), &radar.PageviewRecorded{Hit: h})
}

// openAt opens the store at path; the test closes it.
func openAt(t *testing.T, path string) *radarstore.Store {
	t.Helper()
	s, err := radarstore.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// apply applies events in one batch.
func apply(t *testing.T, s *radarstore.Store, events []eventstore.RecordedEvent) {
	t.Helper()
	if err := s.Apply(context.Background(), projections.Envelopes(events)); err != nil {
		t.Fatal(err)
	}
}

func open(t *testing.T) *radarstore.Store {
	t.Helper()
	s, err := radarstore.Open(filepath.Join(t.TempDir(), "radar.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

type reports struct {
	Overview   queries.RadarOverview
	Breakdowns queries.RadarBreakdowns
	Events     []queries.RadarEventStat
	People     queries.RadarPeoplePage
	Visitors   []queries.RadarVisitorDetails
}

func read(t *testing.T, s *radarstore.Store) reports {
	t.Helper()
	ctx := context.Background()
	r := queries.RadarRange{ProjectID: "p1", Start: t0.Add(-time.Hour), End: t0.Add(48 * time.Hour)}
	var out reports
	var err error
	if out.Overview, err = s.RadarOverview(ctx, r); err != nil {
		t.Fatal(err)
	}
	if out.Breakdowns, err = s.RadarBreakdowns(ctx, r, 50); err != nil {
		t.Fatal(err)
	}
	if out.Events, err = s.RadarEvents(ctx, queries.RadarRange{ProjectID: "p1"}, 50); err != nil {
		t.Fatal(err)
	}
	if out.People, err = s.RadarPeople(ctx, r, 50, ""); err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"a", "b", "c"} {
		d, ok, err := s.RadarVisitor(ctx, r, v)
		if err != nil || !ok {
			t.Fatalf("visitor %s: %v %v", v, ok, err)
		}
		out.Visitors = append(out.Visitors, d)
	}
	return out
}

// Delivery is at least once and batches differ between live processing
// and replay: applying the log in one batch, event by event, and again
// with repeats gives the same reports.
func TestReplayEqualsLive(t *testing.T) {
	var l log
	cust := conversion.CustomerStream("w1", "cus_1")
	l.hit(t, "a", "/", t0, "", "clk-1")
	l.hit(t, "a", "/pricing", t0.Add(time.Minute), "", "")
	l.hit(t, "a", "/pricing", t0.Add(2*time.Minute), "Signup", "")
	l.hit(t, "b", "/", t0.Add(3*time.Minute), "", "")
	l.add(t, radar.Stream("p1", "c"), &radar.VisitorIdentified{Hit: radar.Hit{ProjectID: "p1", VisitorID: "c", At: t0.Add(4 * time.Minute)}, Email: "c@example.com"})
	l.hit(t, "c", "/docs", t0.Add(5*time.Minute), "", "")
	l.hit(t, "a", "/", t0.Add(time.Hour), "", "") // a second visit
	l.add(t, cust, &conversion.CustomerCreated{CustomerID: "c1", WorkspaceID: "w1", ExternalID: "cus_1", Profile: conversion.Profile{Firstname: "Ann", Email: "ann@example.com"}, At: t0})
	l.add(t, cust, &conversion.LeadTracked{ConversionID: "cv1", Click: conversion.Click{ClickID: "clk-1", WorkspaceID: "w1"}, Timestamp: t0.Add(10 * time.Minute)})
	l.add(t, cust, &conversion.SaleTracked{ConversionID: "cv2", Click: conversion.Click{ClickID: "clk-1", WorkspaceID: "w1"}, AmountMinor: 4999, Currency: "usd", Timestamp: t0.Add(11 * time.Minute)})

	live := open(t)
	for _, e := range l.Events {
		if err := live.Apply(context.Background(), projections.Envelopes([]eventstore.RecordedEvent{e})); err != nil {
			t.Fatal(err)
		}
	}
	replay := open(t)
	for range 2 {
		if err := replay.Apply(context.Background(), projections.Envelopes(l.Events)); err != nil {
			t.Fatal(err)
		}
	}
	for i := range l.Events { // prefixes again: every event repeated
		if err := replay.Apply(context.Background(), projections.Envelopes(l.Events[:i+1])); err != nil {
			t.Fatal(err)
		}
	}
	a, b := read(t, live), read(t, replay)
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("replay differs from live:\n%+v\n%+v", a, b)
	}
	o := a.Overview
	if o.People != 3 || o.Visits != 4 || o.Pageviews != 5 || o.Events != 1 || o.Sales != 1 || o.Revenue != 49.99 || o.RevenueCurrency != "usd" {
		t.Errorf("overview %+v", o)
	}
	va := a.Visitors[0].Visitor
	if va.Name != "Ann" || va.Email != "ann@example.com" || va.Status != "identified" || va.Revenue != 49.99 || va.Sessions != 2 || va.CountryName != "France" {
		t.Errorf("visitor a %+v", va)
	}
	if vc := a.Visitors[2].Visitor; vc.Email != "c@example.com" || vc.Status != "identified" || vc.Sessions != 1 {
		t.Errorf("visitor c (identified before its first page view) %+v", vc)
	}
	if got := fmt.Sprint(len(a.Visitors[0].Sessions), a.Visitors[0].Heatmap); got != "2 [{2026-03-14 4}]" {
		t.Errorf("visitor a sessions and heatmap: %s", got)
	}
}

// A Radar read model written by the first version (conversions keyed by
// conversion id) is migrated in place when opened: same reports, same
// checkpoint, and the versions of the visitors' streams in their rows: the
// events delivered again change nothing.
func TestMigrateFromV1KeepsRows(t *testing.T) {
	var l log
	cust := conversion.CustomerStream("w1", "cus_1")
	l.hit(t, "a", "/", t0, "", "clk-1")
	l.hit(t, "b", "/", t0, "", "")
	l.hit(t, "c", "/", t0, "", "")
	l.add(t, cust, &conversion.CustomerCreated{CustomerID: "c1", WorkspaceID: "w1", ExternalID: "cus_1", Profile: conversion.Profile{Firstname: "Ann"}, At: t0})
	l.add(t, cust, &conversion.LeadTracked{ConversionID: "cv1", Click: conversion.Click{ClickID: "clk-1", WorkspaceID: "w1"}, Timestamp: t0.Add(time.Minute)})
	l.add(t, cust, &conversion.SaleTracked{ConversionID: "cv2", Click: conversion.Click{ClickID: "clk-1", WorkspaceID: "w1"}, AmountMinor: 1250, Currency: "eur", Timestamp: t0.Add(2 * time.Minute)})
	path := filepath.Join(t.TempDir(), "radar.db")
	s := openAt(t, path)
	ctx := context.Background()
	apply(t, s, l.Events)
	want := read(t, s)
	cp, _ := s.Checkpoint(ctx)
	if err := radarstore.DowngradeToV1(s); err != nil {
		t.Fatal(err)
	}
	if n, _ := radarstore.AppliedStreams(s); n != 4 {
		t.Fatalf("v1 applied streams = %d, want 4", n)
	}
	s.Close()
	s = openAt(t, path)
	defer s.Close()
	if got := read(t, s); !reflect.DeepEqual(got, want) {
		t.Fatalf("after migration:\n%+v\nwant\n%+v", got, want)
	}
	if got, _ := s.Checkpoint(ctx); got != cp {
		t.Errorf("checkpoint %v, want %v", got, cp)
	}
	if n, _ := radarstore.AppliedStreams(s); n != -1 {
		t.Errorf("applied has %d streams after migration, want no table (versions are in the visitors' rows)", n)
	}
	apply(t, s, l.Events) // delivered again: nothing changes
	if got := read(t, s); !reflect.DeepEqual(got, want) {
		t.Fatalf("after redelivery:\n%+v\nwant\n%+v", got, want)
	}
	if want.Overview.Sales != 1 || want.Overview.Revenue != 12.5 {
		t.Errorf("overview %+v", want.Overview)
	}
}

// A visit's next pages write the visit's row alone: the visitor's last
// activity and its stream's version come from the visit too, in the
// details and for the projector after a restart (the version keeps a
// redelivered page from counting twice, the end keeps the visit going).
func TestVisitCarriesLastActivityAndVersion(t *testing.T) {
	var l log
	l.hit(t, "a", "/", t0, "", "")
	l.hit(t, "a", "/pricing", t0.Add(10*time.Minute), "", "")
	l.hit(t, "a", "/pricing", t0.Add(20*time.Minute), "Signup", "")
	l.hit(t, "a", "/docs", t0.Add(45*time.Minute), "", "") // 45 minutes after the visitor's row was written
	path := filepath.Join(t.TempDir(), "radar.db")
	s := openAt(t, path)
	ctx := context.Background()
	apply(t, s, l.Events[:3])
	s.Close()
	s = openAt(t, path)
	defer s.Close()
	// Redelivered from the start, then the rest: the last page continues
	// the visit (its end, 20 minutes in, was only in the visit's row).
	apply(t, s, l.Events)
	r := queries.RadarRange{ProjectID: "p1", Start: t0.Add(-time.Hour), End: t0.Add(time.Hour)}
	d, ok, err := s.RadarVisitor(ctx, r, "a")
	if err != nil || !ok {
		t.Fatalf("visitor a: %v %v", ok, err)
	}
	if v := d.Visitor; !v.LastSeen.Equal(t0.Add(45*time.Minute)) || v.Sessions != 1 {
		t.Errorf("visitor a: last seen %v, %d visits; want %v and 1", v.LastSeen, v.Sessions, t0.Add(45*time.Minute))
	}
	o, err := s.RadarOverview(ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	if o.Pageviews != 3 || o.Events != 1 || o.Visits != 1 || o.BounceRate != 0 || o.AvgDurationS != 45*60 {
		t.Errorf("overview %+v; want 3 page views, 1 event, 1 visit of 45 minutes", o)
	}
}

// A file of schema version 3 gains the version column of sessions when
// opened: same reports, and events delivered again change nothing.
func TestMigrateFromV3(t *testing.T) {
	var l log
	l.hit(t, "a", "/", t0, "", "clk-1")
	l.hit(t, "a", "/pricing", t0.Add(time.Minute), "", "")
	l.hit(t, "b", "/", t0, "", "")
	l.hit(t, "c", "/", t0, "", "")
	path := filepath.Join(t.TempDir(), "radar.db")
	s := openAt(t, path)
	apply(t, s, l.Events)
	want := read(t, s)
	if err := radarstore.DowngradeToV3(s); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s = openAt(t, path)
	defer s.Close()
	apply(t, s, l.Events)
	if got := read(t, s); !reflect.DeepEqual(got, want) {
		t.Errorf("after migrating from version 3:\n%+v\nwant\n%+v", got, want)
	}
}

// Reset (linkd replay) empties the conversions' Pebble database with the
// tables: applying the log again gives the same reports, each sale once.
func TestResetEmptiesConversions(t *testing.T) {
	var l log
	cust := conversion.CustomerStream("w1", "cus_1")
	l.hit(t, "a", "/", t0, "", "clk-1")
	l.hit(t, "b", "/", t0, "", "")
	l.hit(t, "c", "/", t0, "", "")
	l.add(t, cust, &conversion.CustomerCreated{CustomerID: "c1", WorkspaceID: "w1", ExternalID: "cus_1", At: t0})
	l.add(t, cust, &conversion.SaleTracked{ConversionID: "cv1", Click: conversion.Click{ClickID: "clk-1", WorkspaceID: "w1"}, AmountMinor: 1250, Currency: "eur", Timestamp: t0.Add(time.Minute)})
	s := open(t)
	ctx := context.Background()
	apply(t, s, l.Events)
	want := read(t, s)
	if want.Overview.Sales != 1 || want.Overview.Revenue != 12.5 {
		t.Fatalf("before the reset: %+v", want.Overview)
	}
	if err := s.Reset(ctx); err != nil {
		t.Fatal(err)
	}
	r := queries.RadarRange{ProjectID: "p1", Start: t0.Add(-time.Hour), End: t0.Add(48 * time.Hour)}
	if o, err := s.RadarOverview(ctx, r); err != nil || o.Sales != 0 || o.People != 0 {
		t.Fatalf("after the reset: %+v, %v", o, err)
	}
	apply(t, s, l.Events)
	if got := read(t, s); !reflect.DeepEqual(got, want) {
		t.Errorf("applied again after the reset:\n%+v\nwant\n%+v", got, want)
	}
}

// After a restart (no visitor in memory) a redelivery is checked against
// the rows: the first events of visitors' streams at or below the
// checkpoint are seen as applied, those above it as new visitors.
func TestRedeliveryAfterRestart(t *testing.T) {
	var l log
	for i, v := range []string{"a", "b", "c", "d"} {
		l.hit(t, v, "/", t0.Add(time.Duration(i)*time.Minute), "", "")
		l.hit(t, v, "/pricing", t0.Add(time.Duration(i)*time.Minute+time.Second), "", "")
	}
	live := open(t)
	apply(t, live, l.Events)
	want := read(t, live)

	path := filepath.Join(t.TempDir(), "radar.db")
	s := openAt(t, path)
	apply(t, s, l.Events[:4]) // visitors a and b
	s.Close()
	s = openAt(t, path)
	defer s.Close()
	apply(t, s, l.Events) // a and b again, then c and d
	if got := read(t, s); !reflect.DeepEqual(got, want) {
		t.Fatalf("after a restart and redelivery:\n%+v\nwant\n%+v", got, want)
	}
	if want.Overview.People != 4 || want.Overview.Pageviews != 8 {
		t.Errorf("overview %+v", want.Overview)
	}
}
