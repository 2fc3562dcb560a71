package core_test

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/linkd/linkd/projections"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/linkd/linkd/domain"
	"github.com/linkd/linkd/domain/click"
	"github.com/linkd/linkd/domain/conversion"
	"github.com/linkd/linkd/domain/link"
	"github.com/linkd/linkd/domain/project"
	"github.com/linkd/linkd/domain/workspace"
	"github.com/linkd/linkd/eventstore"
	"github.com/linkd/linkd/projections/core"
	"github.com/linkd/linkd/projections/projectiontest"
	"github.com/linkd/linkd/queries"
)

var t0 = time.Date(2025, 3, 14, 12, 0, 0, 0, time.UTC)

func open(t *testing.T) *core.Store {
	t.Helper()
	s, err := core.Open(filepath.Join(t.TempDir(), "core.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// log builds recorded events as the event store would, from t0.
type log struct{ projectiontest.Log }

func (l *log) add(t *testing.T, stream string, e domain.Event) {
	t.Helper()
	l.Start = t0
	l.Add(t, stream, e)
}

func (l *log) workspace(t *testing.T, id, owner string) {
	l.add(t, workspace.Stream(id), &workspace.Created{WorkspaceID: id, Name: id, OwnerID: owner, Plan: "pro", At: t0})
	l.add(t, workspace.Stream(id), &workspace.MemberAdded{WorkspaceID: id, UserID: owner, Role: "admin", At: t0})
}

func (l *log) link(t *testing.T, id, ws string, at time.Time) {
	l.add(t, link.Stream(id), &link.Created{LinkID: id, Code: "c-" + id, CreatedBy: "alice", At: at,
		Attributes: link.Attributes{WorkspaceID: ws, OriginalURL: "https://" + id + ".example"}})
}

func apply(t *testing.T, s *core.Store, events []eventstore.RecordedEvent) {
	t.Helper()
	if err := s.Apply(context.Background(), projections.Envelopes(events)); err != nil {
		t.Fatal(err)
	}
}

func allLinks(t *testing.T, s *core.Store, f queries.LinkFilter) []queries.Link {
	t.Helper()
	res, err := s.Links(context.Background(), f, queries.Page{Page: 1, PageSize: 1000})
	if err != nil {
		t.Fatal(err)
	}
	return res.Items
}

// Delivery is at least once: applying events again, in any batching,
// changes nothing.
func TestApplyIsIdempotent(t *testing.T) {
	var l log
	l.workspace(t, "w1", "alice")
	for i := 0; i < 5; i++ {
		l.link(t, fmt.Sprintf("l%d", i), "w1", t0.Add(time.Duration(i)*time.Second))
	}
	l.add(t, link.Stream("l1"), &link.Updated{LinkID: "l1", Changes: link.Patch{Name: domain.Some("renamed")}, At: t0.Add(time.Minute)})
	l.add(t, link.Stream("l2"), &link.Archived{LinkID: "l2", At: t0.Add(time.Minute)})
	l.add(t, link.Stream("l3"), &link.Deleted{LinkID: "l3", WorkspaceID: "w1", Code: "c-l3", At: t0.Add(time.Minute)})
	for i := 0; i < 3; i++ {
		l.add(t, click.Stream("l0"), &click.Recorded{ClickID: fmt.Sprint(i), LinkID: "l0", Timestamp: t0})
	}

	once := open(t)
	apply(t, once, l.Events)
	twice := open(t)
	apply(t, twice, l.Events)
	apply(t, twice, l.Events)
	for i := range l.Events { // and one by one, with repeats
		apply(t, twice, l.Events[:i+1])
	}
	f := queries.LinkFilter{WorkspaceIDs: []string{"w1"}}
	a, b := allLinks(t, once, f), allLinks(t, twice, f)
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("re-applying changed the read model:\n%+v\n%+v", a, b)
	}
	if len(a) != 3 { // l0, l1, l4: l2 archived, l3 deleted
		t.Fatalf("%d links, want 3", len(a))
	}
	got, ok, err := twice.Link(context.Background(), "l0")
	if err != nil || !ok || got.Clicks != 3 {
		t.Errorf("l0 clicks %d (%v %v), want 3", got.Clicks, ok, err)
	}
	if got, _, _ := twice.Link(context.Background(), "l1"); got.Name != "renamed" {
		t.Errorf("l1 name %q", got.Name)
	}
	if _, ok, _ := twice.Link(context.Background(), "l3"); ok {
		t.Errorf("a deleted link is readable")
	}
	if arch := allLinks(t, twice, queries.LinkFilter{WorkspaceIDs: []string{"w1"}, Archived: true}); len(arch) != 1 || arch[0].ID != "l2" {
		t.Errorf("archived: %+v", arch)
	}
	cp, err := twice.Checkpoint(context.Background())
	if err != nil || cp.Commit != l.Pos {
		t.Errorf("checkpoint %v %v, want %d", cp, err, l.Pos)
	}
}

// Click counts written behind: reads show them at once; the checkpoint
// stays before their clicks until they are written (a restart feeds them
// again); a batch ClicksEvery later, or Close, writes them.
func TestClicksWrittenBehind(t *testing.T) {
	ctx := context.Background()
	var l log
	l.workspace(t, "w1", "alice")
	l.link(t, "l0", "w1", t0)
	l.link(t, "l1", "w1", t0)
	setup, beforeClicks := len(l.Events), l.Pos
	click3 := func(id string) {
		for i := 0; i < 3; i++ {
			l.add(t, click.Stream(id), &click.Recorded{ClickID: fmt.Sprint(id, i), LinkID: id, Timestamp: t0})
		}
	}
	click3("l0")
	path := filepath.Join(t.TempDir(), "core.db")
	s, err := core.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	s.WriteClicksBehind()
	apply(t, s, l.Events[:setup])
	apply(t, s, l.Events[setup:])
	clicksOf := func(s *core.Store, id string, want int64) {
		t.Helper()
		got, ok, err := s.Link(ctx, id)
		if err != nil || !ok || got.Clicks != want {
			t.Fatalf("Link(%s).Clicks = %d (%v, %v), want %d", id, got.Clicks, ok, err, want)
		}
		if n, err := s.LinkClicks(ctx, id); err != nil || n != want {
			t.Fatalf("LinkClicks(%s) = %d, %v; want %d", id, n, err, want)
		}
		for _, li := range allLinks(t, s, queries.LinkFilter{WorkspaceIDs: []string{"w1"}}) {
			if li.ID == id && li.Clicks != want {
				t.Fatalf("Links: %s has %d clicks, want %d", id, li.Clicks, want)
			}
		}
	}
	clicksOf(s, "l0", 3)
	if cp, err := s.Checkpoint(ctx); err != nil || cp.Commit != beforeClicks {
		t.Fatalf("checkpoint %v (%v) with counts pending, want %d, before their clicks", cp, err, beforeClicks)
	}
	apply(t, s, l.Events) // a restart feeds them again: nothing changes
	clicksOf(s, "l0", 3)
	// ClicksEvery later the next batch writes them.
	s.AgeClicks(core.ClicksEvery)
	click3("l1")
	apply(t, s, l.Events[len(l.Events)-3:])
	if cp, err := s.Checkpoint(ctx); err != nil || cp.Commit != l.Pos {
		t.Fatalf("checkpoint %v (%v) after the counts were written, want %d", cp, err, l.Pos)
	}
	// Close writes what is pending.
	click3("l0")
	apply(t, s, l.Events[len(l.Events)-3:])
	clicksOf(s, "l0", 6)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = core.Open(path) // counts from the database only
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	clicksOf(s, "l0", 6)
	clicksOf(s, "l1", 3)
	if cp, err := s.Checkpoint(ctx); err != nil || cp.Commit != l.Pos {
		t.Fatalf("checkpoint %v (%v) after Close, want %d", cp, err, l.Pos)
	}
}

// A project's deletion hides it; links keep their project until their own
// update says otherwise (the command detaches them).
func TestProjectAndMembers(t *testing.T) {
	var l log
	l.workspace(t, "w1", "alice")
	l.add(t, workspace.Stream("w1"), &workspace.MemberAdded{WorkspaceID: "w1", UserID: "bob", Role: "member", At: t0})
	l.add(t, project.Stream("p1"), &project.Created{ProjectID: "p1", WorkspaceID: "w1", Name: "P", Color: "#000000", At: t0})
	l.add(t, project.Stream("p1"), &project.Deleted{ProjectID: "p1", WorkspaceID: "w1", At: t0})
	l.add(t, workspace.Stream("w1"), &workspace.MemberRemoved{WorkspaceID: "w1", UserID: "bob", At: t0})
	s := open(t)
	apply(t, s, l.Events)
	ctx := context.Background()
	if _, ok, _ := s.Project(ctx, "p1"); ok {
		t.Errorf("deleted project readable")
	}
	if role, _ := s.Role(ctx, "w1", "bob"); role != "" {
		t.Errorf("removed member has role %q", role)
	}
	if role, _ := s.Role(ctx, "w1", "alice"); role != "admin" {
		t.Errorf("alice role %q", role)
	}
}

// Pagination at the store: ties in created_at are broken by id, so cursor
// walks stay exact even when many links share a timestamp.
func TestPaginateWithTies(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	var l log
	l.workspace(t, "w1", "alice")
	const n = 40
	for i := 0; i < n; i++ {
		// Only 6 distinct timestamps for 40 links.
		l.link(t, fmt.Sprintf("l%d", rng.IntN(1000)*100+i), "w1", t0.Add(time.Duration(rng.IntN(6))*time.Second))
	}
	s := open(t)
	apply(t, s, l.Events)
	ctx := context.Background()
	for _, asc := range []bool{false, true} {
		f := queries.LinkFilter{WorkspaceIDs: []string{"w1"}, Ascending: asc}
		var want []string
		for _, x := range allLinks(t, s, f) {
			want = append(want, x.ID)
		}
		if len(want) != n {
			t.Fatalf("%d links", len(want))
		}
		for size := 1; size <= 11; size++ {
			var got []string
			res, err := s.Links(ctx, f, queries.Page{Page: 1, PageSize: size})
			for steps := 0; ; steps++ {
				if err != nil {
					t.Fatal(err)
				}
				for _, x := range res.Items {
					got = append(got, x.ID)
				}
				if !res.HasNext || steps > n {
					break
				}
				res, err = s.Links(ctx, f, queries.Page{PageSize: size, Cursor: res.NextCursor})
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("asc %v size %d: walk %v, want %v", asc, size, got, want)
			}
			// And back from the end.
			var back []string
			for res.HasPrev {
				var ids []string
				for _, x := range res.Items {
					ids = append(ids, x.ID)
				}
				back = append(ids, back...)
				res, err = s.Links(ctx, f, queries.Page{PageSize: size, Cursor: res.PrevCursor})
				if err != nil {
					t.Fatal(err)
				}
			}
			for i := len(res.Items) - 1; i >= 0; i-- {
				back = append([]string{res.Items[i].ID}, back...)
			}
			if !reflect.DeepEqual(back, want) {
				t.Fatalf("asc %v size %d: backward walk %v, want %v", asc, size, back, want)
			}
		}
	}
	if _, err := s.Links(ctx, queries.LinkFilter{WorkspaceIDs: []string{"w1"}}, queries.Page{PageSize: 5, Cursor: "bm90IGEgY3Vyc29y"}); err == nil {
		t.Errorf("a foreign cursor was accepted")
	}
}

// Events of a newer binary are skipped, not fatal.
func TestUnknownEventsAreSkipped(t *testing.T) {
	var l log
	l.workspace(t, "w1", "alice")
	l.Events = append(l.Events, eventstore.RecordedEvent{Stream: workspace.Stream("w1"), Version: 2,
		Position: eventstore.Position{Commit: 99, Prepare: 99}, Type: "WorkspaceRecoloured", Data: []byte(`{}`), Time: t0})
	s := open(t)
	apply(t, s, l.Events)
	if w, ok, err := s.Workspace(context.Background(), "w1"); err != nil || !ok || w.Name != "w1" {
		t.Fatalf("workspace after an unknown event: %+v %v %v", w, ok, err)
	}
	if v, ok, _ := s.AppliedVersion(context.Background(), workspace.Stream("w1")); !ok || v != 2 {
		t.Errorf("applied version %d %v, want 2", v, ok)
	}
}

// A database written before schema version 2 (rowid tables) is migrated
// in place when opened: its rows and checkpoint stay (with Kafka, nothing
// would feed a rebuilt model again), and its tables take the new shape.
func TestMigrateFromV1KeepsRows(t *testing.T) {
	path := filepath.Join(t.TempDir(), "core.db")
	var l log
	l.workspace(t, "w1", "alice")
	l.link(t, "l1", "w1", t0)
	for i := range 3 {
		l.add(t, click.Stream("l1"), &click.Recorded{ClickID: fmt.Sprint(i), LinkID: "l1", Timestamp: t0})
	}
	cs := conversion.CustomerStream("w1", "cus_1")
	clk := conversion.Click{ClickID: "1", LinkID: "l1", WorkspaceID: "w1", ClickedAt: t0}
	l.add(t, cs, &conversion.CustomerCreated{CustomerID: "c1", WorkspaceID: "w1", ExternalID: "cus_1", At: t0})
	l.add(t, cs, &conversion.LeadTracked{ConversionID: "v1", CustomerID: "c1", Click: clk, EventName: "Sign up", First: true, Timestamp: t0})
	l.add(t, cs, &conversion.SaleTracked{ConversionID: "v2", CustomerID: "c1", Click: clk, EventName: "Purchase", AmountMinor: 1999, Currency: "usd",
		First: true, Metadata: json.RawMessage(`{"plan":"pro"}`), Timestamp: t0.Add(time.Minute)})
	s, err := core.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	apply(t, s, l.Events)
	want, _, _ := s.Link(context.Background(), "l1")
	wantCustomer, wantJourney := customer(t, s, "c1")
	if err := core.DowngradeToV1(s); err != nil {
		t.Fatal(err)
	}
	old, err := core.Tables(s)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	for _, name := range []string{"link_clicks", "customer_events"} {
		if strings.Contains(old[name], "WITHOUT ROWID") || old[name] == "" {
			t.Fatalf("the downgrade left %s: %s", name, old[name])
		}
	}

	s, err = core.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if cp, _ := s.Checkpoint(context.Background()); cp.Commit != l.Pos {
		t.Errorf("checkpoint %v after the migration, want %d", cp, l.Pos)
	}
	got, ok, err := s.Link(context.Background(), "l1")
	if err != nil || !ok || !reflect.DeepEqual(got, want) {
		t.Errorf("after the migration l1 is %+v (%v %v), want %+v", got, ok, err, want)
	}
	tables, err := core.Tables(s)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"link_clicks", "customers"} {
		if !strings.Contains(tables[name], "WITHOUT ROWID") {
			t.Errorf("%s is %s", name, tables[name])
		}
	}
	if _, ok := tables["customer_events"]; ok {
		t.Error("customer_events (version 5) is still there")
	}
	if c, j := customer(t, s, "c1"); !reflect.DeepEqual(c, wantCustomer) || !reflect.DeepEqual(j, wantJourney) {
		t.Errorf("after the migration c1 is\n%+v %+v\nwant\n%+v %+v", c, j, wantCustomer, wantJourney)
	}
	if _, ok := tables["customer_revenue"]; ok {
		t.Error("customer_revenue (version 2) is still there")
	}
	if tables["customers_ws"] == "" {
		t.Error("the customers_ws index is gone")
	}
	for name := range tables {
		if strings.HasSuffix(name, "_v1") {
			t.Errorf("%s left behind", name)
		}
	}
	apply(t, s, l.Events) // and it goes on applying
}

// customer reads a customer and its journey.
func customer(t *testing.T, s *core.Store, id string) (queries.Customer, []queries.CustomerEvent) {
	t.Helper()
	c, ok, err := s.Customer(context.Background(), id)
	if err != nil || !ok {
		t.Fatalf("customer %s: %v %v", id, ok, err)
	}
	j, err := s.CustomerJourney(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return c, j
}

// A customer's counters, revenue per currency and journey are the same
// when its events are delivered once, one by one, and again with repeats.
func TestCustomersAreIdempotent(t *testing.T) {
	var l log
	l.workspace(t, "w1", "alice")
	cs := conversion.CustomerStream("w1", "cus_1")
	clk := conversion.Click{ClickID: "k1", LinkID: "l1", WorkspaceID: "w1", ClickedAt: t0}
	l.add(t, cs, &conversion.CustomerCreated{CustomerID: "c1", WorkspaceID: "w1", ExternalID: "cus_1", Profile: conversion.Profile{Email: "a@example.com"}, At: t0})
	l.add(t, cs, &conversion.LeadTracked{ConversionID: "v1", CustomerID: "c1", Click: clk, EventName: "Sign up", First: true, Timestamp: t0.Add(time.Minute)})
	l.add(t, cs, &conversion.SaleTracked{ConversionID: "v2", CustomerID: "c1", Click: clk, EventName: "Purchase", AmountMinor: 1999, Currency: "usd", First: true, Timestamp: t0.Add(2 * time.Minute)})
	l.add(t, cs, &conversion.CustomerUpdated{CustomerID: "c1", Profile: conversion.Profile{Firstname: "Ann"}, At: t0.Add(3 * time.Minute)})
	l.add(t, cs, &conversion.SaleTracked{ConversionID: "v3", CustomerID: "c1", Click: clk, EventName: "Purchase", AmountMinor: 1, Currency: "usd", Timestamp: t0.Add(4 * time.Minute)})
	l.add(t, cs, &conversion.SaleTracked{ConversionID: "v4", CustomerID: "c1", Click: clk, EventName: "Purchase", AmountMinor: 3000, Currency: "jpy", Timestamp: t0.Add(5 * time.Minute)})

	read := func(s *core.Store) (queries.Customer, []queries.CustomerEvent) { return customer(t, s, "c1") }
	live := open(t)
	for _, e := range l.Events {
		apply(t, live, []eventstore.RecordedEvent{e})
	}
	again := open(t)
	apply(t, again, l.Events)
	for i := range l.Events {
		apply(t, again, l.Events[:i+1])
	}
	c, j := read(live)
	c2, j2 := read(again)
	if !reflect.DeepEqual(c, c2) || !reflect.DeepEqual(j, j2) {
		t.Fatalf("redelivered:\n%+v %+v\nlive:\n%+v %+v", c2, j2, c, j)
	}
	if c.Leads != 1 || c.Sales != 3 || !reflect.DeepEqual(c.Revenue, map[string]int64{"usd": 2000, "jpy": 3000}) ||
		c.Firstname != "Ann" || c.Email != "a@example.com" || c.ClickID != "k1" || len(j) != 4 {
		t.Errorf("customer %+v, journey of %d", c, len(j))
	}
	if !c.CreatedAt.Equal(t0) || !c.UpdatedAt.Equal(t0.Add(5*time.Minute)) {
		t.Errorf("created %v, updated %v; want %v and the last sale's %v", c.CreatedAt, c.UpdatedAt, t0, t0.Add(5*time.Minute))
	}
}

// Customers keyed by stream (schema versions 2 to 4) are keyed by id once
// opened, with their rows, and go on taking sales.
func TestMigrateCustomersToIDKeys(t *testing.T) {
	path := filepath.Join(t.TempDir(), "core.db")
	var l log
	l.workspace(t, "w1", "alice")
	cs := conversion.CustomerStream("w1", "cus_1")
	clk := conversion.Click{ClickID: "k1", LinkID: "l1", WorkspaceID: "w1", ClickedAt: t0}
	l.add(t, cs, &conversion.CustomerCreated{CustomerID: "c1", WorkspaceID: "w1", ExternalID: "cus_1", Profile: conversion.Profile{Email: "a@example.com"}, At: t0})
	l.add(t, cs, &conversion.SaleTracked{ConversionID: "v1", CustomerID: "c1", Click: clk, AmountMinor: 100, Currency: "usd", First: true, Timestamp: t0})
	s, err := core.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	apply(t, s, l.Events)
	if err := core.DowngradeCustomersToV4(s); err != nil {
		t.Fatal(err)
	}
	if tables, _ := core.Tables(s); !strings.Contains(tables["customers"], "stream TEXT PRIMARY KEY") {
		t.Fatalf("the downgrade left %s", tables["customers"])
	}
	s.Close()
	s, err = core.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if tables, _ := core.Tables(s); !strings.Contains(tables["customers"], "id TEXT PRIMARY KEY") || tables["customers_ws"] == "" {
		t.Fatalf("after the migration: %s", tables["customers"])
	}
	l.add(t, cs, &conversion.SaleTracked{ConversionID: "v2", CustomerID: "c1", Click: clk, AmountMinor: 250, Currency: "usd", Timestamp: t0})
	apply(t, s, l.Events) // the first two again, then the new sale
	c, ok, err := s.Customer(context.Background(), "c1")
	if err != nil || !ok || c.Sales != 2 || c.Revenue["usd"] != 350 || c.Email != "a@example.com" {
		t.Fatalf("customer after the migration: %+v %v %v", c, ok, err)
	}
}

// Journeys in SQLite (schema version 5) are in Pebble once opened, the
// same when read, and the table is gone; the customer goes on taking
// sales. A move that a crash cut before the table was dropped is made
// again, to the same keys.
func TestMigrateJourneysToPebble(t *testing.T) {
	path := filepath.Join(t.TempDir(), "core.db")
	var l log
	l.workspace(t, "w1", "alice")
	cs := conversion.CustomerStream("w1", "cus_1")
	clk := conversion.Click{ClickID: "k1", LinkID: "l1", WorkspaceID: "w1", ClickedAt: t0, Country: "DE"}
	l.add(t, cs, &conversion.CustomerCreated{CustomerID: "c1", WorkspaceID: "w1", ExternalID: "cus_1", At: t0})
	l.add(t, cs, &conversion.LeadTracked{ConversionID: "v1", CustomerID: "c1", Click: clk, EventName: "Sign up", First: true, Timestamp: t0})
	l.add(t, cs, &conversion.SaleTracked{ConversionID: "v2", CustomerID: "c1", Click: clk, EventName: "Purchase", AmountMinor: 2999, Currency: "jpy",
		First: true, Metadata: json.RawMessage(`{"items":[1,2]}`), Timestamp: t0.Add(time.Hour)})
	s, err := core.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	apply(t, s, l.Events)
	wantCustomer, wantJourney := customer(t, s, "c1")
	reopen := func(what string) {
		t.Helper()
		s.Close()
		if s, err = core.Open(path); err != nil {
			t.Fatal(err)
		}
		if c, j := customer(t, s, "c1"); !reflect.DeepEqual(c, wantCustomer) || !reflect.DeepEqual(j, wantJourney) {
			t.Fatalf("%s: c1 is\n%+v %+v\nwant\n%+v %+v", what, c, j, wantCustomer, wantJourney)
		}
		if tables, _ := core.Tables(s); tables["customer_events"] != "" {
			t.Fatalf("%s: customer_events is still there", what)
		}
	}

	if err := core.CopyJourneysToV5(s); err != nil {
		t.Fatal(err)
	}
	reopen("moved again")

	if err := core.DowngradeJourneysToV5(s); err != nil {
		t.Fatal(err)
	}
	if _, j := customer(t, s, "c1"); len(j) != 0 {
		t.Fatalf("the downgrade left %d journey events in Pebble", len(j))
	}
	reopen("after the migration")
	defer s.Close()

	l.add(t, cs, &conversion.SaleTracked{ConversionID: "v3", CustomerID: "c1", Click: clk, EventName: "Purchase", AmountMinor: 1, Currency: "jpy", Timestamp: t0.Add(2 * time.Hour)})
	apply(t, s, l.Events)
	if c, j := customer(t, s, "c1"); c.Sales != 2 || c.Revenue["jpy"] != 3000 || len(j) != 3 || j[2].ConversionID != "v3" {
		t.Fatalf("after a new sale: %+v, journey %+v", c, j)
	}
}

// Reset empties the journeys with the tables: a replay does not find the
// old journey under a customer it creates again.
func TestResetEmptiesJourneys(t *testing.T) {
	var l log
	l.workspace(t, "w1", "alice")
	cs := conversion.CustomerStream("w1", "cus_1")
	clk := conversion.Click{ClickID: "k1", LinkID: "l1", WorkspaceID: "w1", ClickedAt: t0}
	l.add(t, cs, &conversion.CustomerCreated{CustomerID: "c1", WorkspaceID: "w1", ExternalID: "cus_1", At: t0})
	l.add(t, cs, &conversion.SaleTracked{ConversionID: "v1", CustomerID: "c1", Click: clk, AmountMinor: 100, Currency: "usd", First: true, Timestamp: t0})
	s := open(t)
	apply(t, s, l.Events)
	if err := s.Reset(context.Background()); err != nil {
		t.Fatal(err)
	}
	if j, err := s.CustomerJourney(context.Background(), "c1"); err != nil || len(j) != 0 {
		t.Fatalf("journey after Reset: %+v %v", j, err)
	}
	apply(t, s, l.Events[:len(l.Events)-1]) // the workspace and the customer, not the sale
	if c, _ := customer(t, s, "c1"); c.Sales != 0 || len(c.Revenue) != 0 {
		t.Fatalf("customer after Reset and its creation again: %+v", c)
	}
}

// LinksToFollow reads what LinkByCode reads, for many links at once: the
// newest first, or those of the ids asked; never a deleted link.
func TestLinksToFollow(t *testing.T) {
	ctx := context.Background()
	var l log
	l.workspace(t, "w1", "alice")
	for i := 0; i < 5; i++ {
		l.link(t, fmt.Sprintf("l%d", i), "w1", t0.Add(time.Duration(i)*time.Second))
	}
	l.add(t, link.Stream("l4"), &link.Deleted{LinkID: "l4", WorkspaceID: "w1", Code: "c-l4", At: t0.Add(time.Minute)})
	l.add(t, click.Stream("l1"), &click.Recorded{ClickID: "k1", LinkID: "l1", Timestamp: t0})
	s := open(t)
	apply(t, s, l.Events)

	ids := func(links []queries.Link) (out []string) {
		for _, x := range links {
			out = append(out, x.ID)
		}
		return out
	}
	newest, err := s.LinksToFollow(ctx, nil, 3)
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(newest); !reflect.DeepEqual(got, []string{"l3", "l2", "l1"}) {
		t.Errorf("newest 3: %v, want [l3 l2 l1] (l4 deleted)", got)
	}
	for _, x := range newest {
		byCode, ok, err := s.LinkByCode(ctx, "", x.Code)
		if err != nil || !ok || !reflect.DeepEqual(byCode, x) {
			t.Errorf("%s: LinksToFollow %+v, LinkByCode %+v (%v %v)", x.ID, x, byCode, ok, err)
		}
	}
	some, err := s.LinksToFollow(ctx, []string{"l0", "l4", "nope"}, 10)
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(some); !reflect.DeepEqual(got, []string{"l0"}) {
		t.Errorf("by id: %v, want [l0]", got)
	}
	if none, err := s.LinksToFollow(ctx, []string{}, 10); err != nil || len(none) != 0 {
		t.Errorf("no ids: %v %v", none, err)
	}
}
