package statstest

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/linkd/linkd/domain/click"
	"github.com/linkd/linkd/domain/conversion"
	"github.com/linkd/linkd/domain/link"
	"github.com/linkd/linkd/domain/workspace"
	"github.com/linkd/linkd/eventstore"
	"github.com/linkd/linkd/queries"
)

// testDailyRecords: the fixture in one batch gives the records counted by
// hand, and the checkpoint of its last event.
func testDailyRecords(t *testing.T, e *env) {
	e.checkpoint(eventstore.Start)
	l := fixture()
	e.apply(l.events)
	e.checkRecords(fixtureRecords())
	e.checkpoint(l.last())
}

// testDateRanges: ranges are of whole UTC days, both ends included, in
// whatever zone they are given; days without clicks have no record.
func testDateRanges(t *testing.T, e *env) {
	e.apply(fixture().events)
	want := fixtureRecords()
	plus2 := time.FixedZone("UTC+2", 2*3600)
	minus5 := time.FixedZone("UTC-5", -5*3600)
	last := func(d time.Time) time.Time { return d.AddDate(0, 0, 1).Add(-time.Nanosecond) }
	tests := []struct {
		name     string
		from, to time.Time
		days     []string
	}{
		{"one day", day1, day1, []string{"2026-03-30"}},
		{"a day given by its last instant", last(day1), last(day1), []string{"2026-03-30"}},
		{"times inside the days count whole days", at(day1, 23, 59, 59, 999), at(day2, 0, 0, 0, 1), []string{"2026-03-30", "2026-03-31"}},
		{"both ends included", day2, day4, []string{"2026-03-31", "2026-04-02"}},
		{"the end's whole day", day1, last(day2), []string{"2026-03-30", "2026-03-31"}},
		{"a day without clicks", gap, last(gap), nil},
		{"across the month end, around the day without clicks", at(day2, 23, 59, 59, 999), at(day4, 0, 0, 0, 0), []string{"2026-03-31", "2026-04-02"}},
		{"after the last click", day4.AddDate(0, 0, 1), day4.AddDate(0, 0, 30), nil},
		{"before the first click", day1.AddDate(0, 0, -30), day1.Add(-time.Nanosecond), nil},
		{"start after end", day4, day1, nil},
		{"30 days", day4.AddDate(0, 0, -29), day4, []string{"2026-03-30", "2026-03-31", "2026-04-02"}},
		{"east of UTC: 00:30 on the 31st is the 30th in UTC",
			time.Date(2026, 3, 31, 0, 30, 0, 0, plus2), time.Date(2026, 3, 31, 0, 30, 0, 0, plus2), []string{"2026-03-30"}},
		{"west of UTC: 20:00 on the 30th is the 31st in UTC",
			time.Date(2026, 3, 30, 20, 0, 0, 0, minus5), time.Date(2026, 3, 30, 20, 0, 0, 0, minus5), []string{"2026-03-31"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := e.sub(t)
			if d := Diff(e.linkDaily(link1, tc.from, tc.to), pick(want.links[link1], tc.days)); d != "" {
				t.Errorf("LinkDaily: %s", d)
			}
			if d := Diff(e.workspaceDaily(ws1, tc.from, tc.to), pick(want.workspaces[ws1], tc.days)); d != "" {
				t.Errorf("WorkspaceDaily: %s", d)
			}
		})
	}
}

// pick returns the records of the given dates.
func pick(all []queries.DailyStats, dates []string) []queries.DailyStats {
	var out []queries.DailyStats
	for _, d := range all {
		if slices.Contains(dates, d.Date) {
			out = append(out, d)
		}
	}
	if len(out) != len(dates) {
		panic(fmt.Sprintf("statstest: the fixture has no record of some of %v", dates))
	}
	return out
}

// testUnknownIDs: ids that are not a link (workspace) with clicks, even
// prefixes of one or the id of a workspace (link), have no records.
func testUnknownIDs(t *testing.T, e *env) {
	e.apply(fixture().events)
	for _, id := range []string{"", "link", "link-", "link-10", "link-9", ws1, "LINK-1", "link-1 "} {
		if got := e.linkDaily(id, allFrom, allTo); len(got) != 0 {
			t.Errorf("LinkDaily(%q) = %+v, want no records", id, got)
		}
	}
	for _, id := range []string{"", "ws", "ws-", "ws-10", "ws-9", link1, "WS-1"} {
		if got := e.workspaceDaily(id, allFrom, allTo); len(got) != 0 {
			t.Errorf("WorkspaceDaily(%q) = %+v, want no records", id, got)
		}
	}
}

// testLinkClicked: true for a link with a click on any day, from its first
// click on; false for other ids (prefixes of one, a workspace's).
func testLinkClicked(t *testing.T, e *env) {
	for _, id := range []string{link1, link2, ""} {
		if e.linkClicked(id) {
			t.Errorf("LinkClicked(%q) on an empty store", id)
		}
	}
	l := fixture()
	e.apply(l.events[:1]) // one click of link-2
	if !e.linkClicked(link2) || e.linkClicked(link1) {
		t.Errorf("after link-2's first click: LinkClicked(link-2) = %v, LinkClicked(link-1) = %v; want true, false",
			e.linkClicked(link2), e.linkClicked(link1))
	}
	e.apply(l.events)
	for id, want := range map[string]bool{
		link1: true, link2: true, link3: true, link4: false,
		"": false, "link": false, "link-": false, "link-10": false, ws1: false, "LINK-1": false,
	} {
		if got := e.linkClicked(id); got != want {
			t.Errorf("LinkClicked(%q) = %v, want %v", id, got, want)
		}
	}
}

// testCaseOfBrowserAndOS: chrome_clicks, ios_clicks and android_clicks
// compare names without regard to ASCII case, and nothing more: other
// names, and letters that only Unicode folds onto ASCII ones ("ſ" is not
// "s"), do not count. The breakdowns keep every name as it came.
func testCaseOfBrowserAndOS(t *testing.T, e *env) {
	l := newLog()
	for i, c := range []struct{ browser, os string }{
		{"Chrome", "iOS"}, {"chrome", "IOS"}, {"CHROME", "ios"}, {"cHrOmE", "ANDROID"}, {"Chrome", "android"},
		{"Chromium", "iPadOS"}, {"Chrome Mobile", "Android TV"}, {"Google Chrome", "ioſ"}, {"", "Linux"},
	} {
		l.click(click.Recorded{LinkID: "link-case", WorkspaceID: "ws-case", Timestamp: at(day1, 10, i, 0, 0),
			Source: click.SourceRedirect, Visitor: visitor(100 + i), Browser: c.browser, OS: c.os})
	}
	e.apply(l.events)
	want := queries.DailyStats{
		Date: "2026-03-30", LinkID: "link-case", WorkspaceID: "ws-case",
		FirstClick: at(day1, 10, 0, 0, 0), LastUpdated: at(day1, 10, 8, 0, 0),
		TotalClicks: 9, UniqueVisitors: 9, DirectClicks: 9,
		ChromeClicks: 5, IOSClicks: 3, AndroidClicks: 2,
		OS: m{"iOS": 1, "IOS": 1, "ios": 1, "ANDROID": 1, "android": 1, "iPadOS": 1, "Android TV": 1, "ioſ": 1, "Linux": 1},
		Browser: m{"Chrome": 2, "chrome": 1, "CHROME": 1, "cHrOmE": 1, "Chromium": 1, "Chrome Mobile": 1,
			"Google Chrome": 1},
		OSVersion: m{}, City: m{}, Language: m{}, Country: m{}, Continent: m{}, DeviceAndOS: m{}, App: m{},
		DeviceType: m{}, FromApp: m{"false": 9}, Referrer: m{},
	}
	e.checkRecords(records{
		links:      map[string][]queries.DailyStats{"link-case": {want}},
		workspaces: map[string][]queries.DailyStats{"ws-case": {workspaceOf(want)}},
	})
}

// testBreakdownValues: breakdown values are kept byte for byte, whatever
// they hold; an OS version counted bare and one counted with its OS under
// the same name are one entry.
func testBreakdownValues(t *testing.T, e *env) {
	long := strings.Repeat("Llanfairpwllgwyngyll", 20)
	l := newLog()
	for i, city := range []string{"Zürich", "東京", `O'Hare "Intl"`, "a,b;c", "😀", "  spaced  ", `back\slash`, "tab\there", "null", long, "zürich", "ZÜRICH"} {
		l.click(click.Recorded{LinkID: "link-v", WorkspaceID: "ws-v", Timestamp: at(day1, 10, i, 0, 0), Source: click.SourceRedirect, City: city})
	}
	l.click(click.Recorded{LinkID: "link-v", WorkspaceID: "ws-v", Timestamp: at(day1, 11, 0, 0, 0), OS: "iOS", OSVersion: "17.4"})
	l.click(click.Recorded{LinkID: "link-v", WorkspaceID: "ws-v", Timestamp: at(day1, 11, 1, 0, 0), OSVersion: "iOS 17.4"})
	e.apply(l.events)
	want := queries.DailyStats{
		Date: "2026-03-30", LinkID: "link-v", WorkspaceID: "ws-v",
		FirstClick: at(day1, 10, 0, 0, 0), LastUpdated: at(day1, 11, 1, 0, 0),
		TotalClicks: 14, DirectClicks: 14, IOSClicks: 1,
		OS: m{"iOS": 1}, OSVersion: m{"iOS 17.4": 2},
		City: m{"Zürich": 1, "東京": 1, `O'Hare "Intl"`: 1, "a,b;c": 1, "😀": 1, "  spaced  ": 1, `back\slash`: 1,
			"tab\there": 1, "null": 1, long: 1, "zürich": 1, "ZÜRICH": 1},
		Language: m{}, Browser: m{}, Country: m{}, Continent: m{}, DeviceAndOS: m{}, App: m{},
		DeviceType: m{}, FromApp: m{"false": 14}, Referrer: m{},
	}
	e.checkRecords(records{
		links:      map[string][]queries.DailyStats{"link-v": {want}},
		workspaces: map[string][]queries.DailyStats{"ws-v": {workspaceOf(want)}},
	})
}

// testClickWithoutTimestamp: a click without a time (none of linkd's, but
// the wire format allows it) counts when the event store took it.
func testClickWithoutTimestamp(t *testing.T, e *env) {
	l := newLog()
	l.click(click.Recorded{LinkID: "link-t", WorkspaceID: "ws-t", Timestamp: at(day2, 6, 0, 0, 0), Visitor: visitor(1)})
	ev := l.click(click.Recorded{LinkID: "link-t", WorkspaceID: "ws-t", Visitor: visitor(2)})
	if want := at(day2, 6, 0, 1, 3); !ev.Time.Equal(want) {
		t.Fatalf("statstest: the event was appended at %v, want %v", ev.Time, want)
	}
	e.apply(l.events)
	want := queries.DailyStats{
		Date: "2026-03-31", LinkID: "link-t", WorkspaceID: "ws-t",
		FirstClick: at(day2, 6, 0, 0, 0), LastUpdated: at(day2, 6, 0, 1, 0),
		TotalClicks: 2, UniqueVisitors: 2, DirectClicks: 2,
		OS: m{}, OSVersion: m{}, City: m{}, Language: m{}, Browser: m{}, Country: m{}, Continent: m{},
		DeviceAndOS: m{}, App: m{}, DeviceType: m{}, FromApp: m{"false": 2}, Referrer: m{},
	}
	e.checkRecords(records{
		links:      map[string][]queries.DailyStats{"link-t": {want}},
		workspaces: map[string][]queries.DailyStats{"ws-t": {workspaceOf(want)}},
	})
}

// testLinkMoved: a link moved to another workspace counts each click in
// the workspace it was in then. Its own record of a day names the
// workspace of the day's last click (to the second; of clicks in the same
// second, the greatest workspace id).
func testLinkMoved(t *testing.T, e *env) {
	l := newLog()
	on := func(ws string, ts time.Time, v int) {
		l.click(click.Recorded{LinkID: "link-moved", WorkspaceID: ws, Timestamp: ts, Source: click.SourceRedirect, Visitor: visitor(v)})
	}
	// Day 1: in ws-a until 10:30, then in ws-b; visitor 1 clicks on both
	// sides of the move.
	on("ws-a", at(day1, 9, 0, 0, 0), 1)
	on("ws-a", at(day1, 10, 0, 0, 0), 2)
	on("ws-b", at(day1, 11, 0, 0, 0), 3)
	on("ws-b", at(day1, 12, 0, 0, 500), 1)
	// Day 2: moved back to ws-a within the second of a click in ws-b.
	on("ws-b", at(day2, 8, 0, 0, 100), 4)
	on("ws-a", at(day2, 8, 0, 0, 600), 5)
	// Day 4: in ws-a all day.
	on("ws-a", at(day4, 7, 0, 0, 0), 6)
	rec := func(date, linkID, ws string, first, last time.Time, clicks, unique int64) queries.DailyStats {
		return queries.DailyStats{
			Date: date, LinkID: linkID, WorkspaceID: ws, FirstClick: first, LastUpdated: last,
			TotalClicks: clicks, UniqueVisitors: unique, DirectClicks: clicks,
			OS: m{}, OSVersion: m{}, City: m{}, Language: m{}, Browser: m{}, Country: m{}, Continent: m{},
			DeviceAndOS: m{}, App: m{}, DeviceType: m{}, FromApp: m{"false": clicks}, Referrer: m{},
		}
	}
	want := records{
		links: map[string][]queries.DailyStats{"link-moved": {
			rec("2026-03-30", "link-moved", "ws-b", at(day1, 9, 0, 0, 0), at(day1, 12, 0, 0, 0), 4, 3),
			rec("2026-03-31", "link-moved", "ws-b", at(day2, 8, 0, 0, 0), at(day2, 8, 0, 0, 0), 2, 2),
			rec("2026-04-02", "link-moved", "ws-a", at(day4, 7, 0, 0, 0), at(day4, 7, 0, 0, 0), 1, 1),
		}},
		workspaces: map[string][]queries.DailyStats{
			"ws-a": {
				rec("2026-03-30", "", "ws-a", at(day1, 9, 0, 0, 0), at(day1, 10, 0, 0, 0), 2, 2),
				rec("2026-03-31", "", "ws-a", at(day2, 8, 0, 0, 0), at(day2, 8, 0, 0, 0), 1, 1),
				rec("2026-04-02", "", "ws-a", at(day4, 7, 0, 0, 0), at(day4, 7, 0, 0, 0), 1, 1),
			},
			"ws-b": {
				rec("2026-03-30", "", "ws-b", at(day1, 11, 0, 0, 0), at(day1, 12, 0, 0, 0), 2, 2),
				rec("2026-03-31", "", "ws-b", at(day2, 8, 0, 0, 0), at(day2, 8, 0, 0, 0), 1, 1),
			},
		},
	}
	// Whatever the batches: the answer may not depend on which click a
	// store saw first.
	ev := l.events
	for _, tc := range []struct {
		name    string
		batches [][]eventstore.RecordedEvent
	}{
		{"one batch", [][]eventstore.RecordedEvent{ev}},
		{"one by one", [][]eventstore.RecordedEvent{ev[0:1], ev[1:2], ev[2:3], ev[3:4], ev[4:5], ev[5:6], ev[6:]}},
		{"in two batches", [][]eventstore.RecordedEvent{ev[:3], ev[3:]}},
		{"in two other batches", [][]eventstore.RecordedEvent{ev[:5], ev[5:]}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := e.sub(t)
			e.open()
			e.apply(tc.batches...)
			e.checkRecords(want)
		})
	}
}

// testDeliveries: delivery is at least once, in batches of any size, and
// streams interleave in any order (each stream's own events stay in
// order): every way of delivering the fixture gives its records, and the
// checkpoint of its last event.
func testDeliveries(t *testing.T, e *env) {
	l := fixture()
	ev := l.events
	byStream := func(order ...string) [][]eventstore.RecordedEvent {
		var out [][]eventstore.RecordedEvent
		for _, id := range order {
			var b []eventstore.RecordedEvent
			for _, x := range ev {
				if x.Stream == click.Stream(id) {
					b = append(b, x)
				}
			}
			out = append(out, b)
		}
		return out
	}
	oneByOne := func(evs []eventstore.RecordedEvent) [][]eventstore.RecordedEvent {
		var out [][]eventstore.RecordedEvent
		for i := range evs {
			out = append(out, evs[i:i+1])
		}
		return out
	}
	cat := func(parts ...[]eventstore.RecordedEvent) []eventstore.RecordedEvent { return slices.Concat(parts...) }
	tests := []struct {
		name    string
		batches [][]eventstore.RecordedEvent
	}{
		{"one by one", oneByOne(ev)},
		{"in batches of three", [][]eventstore.RecordedEvent{ev[:3], ev[3:6], ev[6:9], ev[9:]}},
		{"everything twice", [][]eventstore.RecordedEvent{ev, ev}},
		{"duplicates in one batch", [][]eventstore.RecordedEvent{cat(ev[:4], ev[:4], ev)}},
		{"each event twice in a row", [][]eventstore.RecordedEvent{func() []eventstore.RecordedEvent {
			var b []eventstore.RecordedEvent
			for _, x := range ev {
				b = append(b, x, x)
			}
			return b
		}()}},
		{"overlapping batches", [][]eventstore.RecordedEvent{ev[:3], ev[:5], ev[2:8], ev, ev[8:]}},
		{"one by one, then everything again", append(oneByOne(ev), ev)},
		{"stream after stream", byStream(link1, link2, link3)},
		{"stream after stream, the other way round", byStream(link3, link2, link1)},
		{"streams interleaved otherwise, with redeliveries", func() [][]eventstore.RecordedEvent {
			s := byStream(link1, link2, link3)
			l1, l2, l3 := s[0], s[1], s[2]
			return [][]eventstore.RecordedEvent{
				cat(l1[:2], l3), cat(l2[:1], l1[:3]), cat(l1[2:], l2), cat(l3, l1[4:]),
			}
		}()},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := e.sub(t)
			e.open()
			e.apply(tc.batches...)
			e.checkRecords(fixtureRecords())
			e.checkpoint(l.last())
		})
	}
}

// testOtherEventsIgnored: events of other categories (links, workspaces,
// conversions, which carry link and workspace ids too), events of other
// types in click streams and a click that cannot be read count nowhere;
// mixed with the fixture they leave its records as they are. The
// checkpoint is still the last event's.
func testOtherEventsIgnored(t *testing.T, e *env) {
	fx := fixture()
	l := newLog()
	created := at(day1, 7, 0, 0, 0)
	for _, id := range []string{link1, link2, link3, link4} {
		ws := ws1
		if id == link3 {
			ws = ws2
		}
		l.add(link.Stream(id), &link.Created{LinkID: id, Code: "code-" + id, CreatedBy: "user-1", At: created,
			Attributes: link.Attributes{WorkspaceID: ws, Name: "Link " + id, OriginalURL: "https://example.com/" + id}}, created)
	}
	l.add(workspace.Stream(ws1), &workspace.Created{WorkspaceID: ws1, Name: "One", OwnerID: "user-1", Plan: "pro", At: created}, created)
	// link-4 has a click stream, with nothing countable in it.
	l.raw(click.Stream(link4), "ClickRecordedV9", []byte(`{"link_id":"link-4","workspace_id":"ws-1","timestamp":"2026-03-30T10:00:00Z"}`), created)
	l.raw(click.Stream(link4), click.EventRecorded, []byte(`{"link_id":"link-4","workspace_id":`), created)
	for i, x := range fx.events {
		l.raw(x.Stream, x.Type, x.Data, x.Time)
		switch i {
		case 2:
			l.add(conversion.CustomerStream(ws1, "cust-1"), &conversion.CustomerCreated{CustomerID: "cus-1", WorkspaceID: ws1, ExternalID: "cust-1", At: x.Time}, x.Time)
		case 4:
			// Another type in link-1's click stream, between its clicks.
			l.raw(click.Stream(link1), "ClickRecordedV9", []byte(`{"link_id":"link-1","workspace_id":"ws-1","timestamp":"2026-03-30T11:00:00Z"}`), x.Time)
		case 6:
			l.add(link.Stream(link1), &link.Archived{LinkID: link1, At: x.Time}, x.Time)
		}
	}
	l.add(conversion.CustomerStream(ws1, "cust-1"), &conversion.CustomerUpdated{CustomerID: "cus-1", WorkspaceID: ws1, ExternalID: "cust-1",
		Profile: conversion.Profile{Email: "c@example.com"}, At: at(day4, 20, 0, 0, 0)}, at(day4, 20, 0, 0, 0))
	e.apply(l.events[:len(l.events)/2], l.events[len(l.events)/2:])
	e.checkRecords(fixtureRecords())
	e.checkpoint(l.last())
}

// testReset: Reset empties the store, its checkpoint and what it remembers
// of the events it applied: the same events applied again count again, as
// they did the first time.
func testReset(t *testing.T, e *env) {
	l := fixture()
	e.apply(l.events[:6], l.events[6:])
	e.checkRecords(fixtureRecords())
	if err := e.s.Reset(e.ctx); err != nil {
		t.Fatalf("Reset: %v", err)
	}
	e.flush()
	e.checkpoint(eventstore.Start)
	empty := fixtureRecords()
	for id := range empty.links {
		empty.links[id] = nil
	}
	for id := range empty.workspaces {
		empty.workspaces[id] = nil
	}
	e.checkRecords(empty)
	e.apply(l.events)
	e.checkRecords(fixtureRecords())
	e.checkpoint(l.last())
	// And again, without Reset: nothing changes.
	e.apply(l.events)
	e.checkRecords(fixtureRecords())
}

// testUniqueVisitorsExact: unique visitors are exact up to 2,000 visitors
// a day (both stores count exactly up to at least that many), and a
// workspace counts a visitor of several of its links once.
func testUniqueVisitorsExact(t *testing.T, e *env) {
	l := newLog()
	// link-u1: visitors 0..1499, each twice (once more in the afternoon);
	// link-u2: 0..999 again and 1500..1999, once. A click without a
	// visitor key on each.
	for _, hour := range []int{1, 12} {
		for i := range 1500 {
			l.click(click.Recorded{LinkID: "link-u1", WorkspaceID: "ws-u", Timestamp: at(day4, hour, 0, i, 0), Visitor: visitor(i)})
		}
	}
	for i := range 1500 {
		v := i
		if i >= 1000 {
			v = i + 500
		}
		l.click(click.Recorded{LinkID: "link-u2", WorkspaceID: "ws-u", Timestamp: at(day4, 2, 0, i, 0), Visitor: visitor(v)})
	}
	l.click(click.Recorded{LinkID: "link-u1", WorkspaceID: "ws-u", Timestamp: at(day4, 23, 0, 0, 0)})
	l.click(click.Recorded{LinkID: "link-u2", WorkspaceID: "ws-u", Timestamp: at(day4, 23, 0, 0, 0)})
	e.apply(l.events[:1000], l.events[1000:])
	rec := func(linkID, ws string, first time.Time, clicks, unique int64) queries.DailyStats {
		return queries.DailyStats{
			Date: "2026-04-02", LinkID: linkID, WorkspaceID: ws, FirstClick: first, LastUpdated: at(day4, 23, 0, 0, 0),
			TotalClicks: clicks, UniqueVisitors: unique, DirectClicks: clicks,
			OS: m{}, OSVersion: m{}, City: m{}, Language: m{}, Browser: m{}, Country: m{}, Continent: m{},
			DeviceAndOS: m{}, App: m{}, DeviceType: m{}, FromApp: m{"false": clicks}, Referrer: m{},
		}
	}
	e.checkRecords(records{
		links: map[string][]queries.DailyStats{
			"link-u1": {rec("link-u1", "ws-u", at(day4, 1, 0, 0, 0), 3001, 1500)},
			"link-u2": {rec("link-u2", "ws-u", at(day4, 2, 0, 0, 0), 1501, 1500)},
		},
		workspaces: map[string][]queries.DailyStats{"ws-u": {rec("", "ws-u", at(day4, 1, 0, 0, 0), 4502, 2000)}},
	})
}

// testUniqueVisitorsMany: beyond exact counting unique visitors are an
// estimate, within 3% for 6,000 visitors (both stores claim about 1%).
func testUniqueVisitorsMany(t *testing.T, e *env) {
	const visitors = 6000
	l := newLog()
	for i := range visitors {
		l.click(click.Recorded{LinkID: "link-m", WorkspaceID: "ws-m", Timestamp: at(day1, 0, 0, i, 0), Visitor: visitor(10_000 + i)})
	}
	e.apply(l.events[:2500], l.events[2500:])
	for _, c := range []struct {
		name string
		got  []queries.DailyStats
	}{
		{"link-m", e.linkDaily("link-m", day1, day1)},
		{"ws-m", e.workspaceDaily("ws-m", day1, day1)},
	} {
		if len(c.got) != 1 || c.got[0].TotalClicks != visitors ||
			c.got[0].UniqueVisitors < visitors*97/100 || c.got[0].UniqueVisitors > visitors*103/100 {
			t.Errorf("%s: %+v; want one record of %d clicks, %d unique visitors within 3%%", c.name, summarize(c.got), visitors, visitors)
		}
	}
}

// summarize is the dates, clicks and unique visitors of records.
func summarize(rs []queries.DailyStats) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = fmt.Sprintf("%s: %d clicks, %d unique", r.Date, r.TotalClicks, r.UniqueVisitors)
	}
	return out
}

// testConversions: leads and sales count on the day they were recorded,
// for the link of their click and its workspace; revenue adds up per
// currency in minor units, never converted; a day with conversions and no
// click has a record of them alone (a link's names no workspace: the query
// names the link's); customer events without a conversion count nowhere;
// delivering everything twice, or in other batches, changes nothing.
func testConversions(t *testing.T, e *env) {
	const (
		lA, lB, lC = "link-a", "link-b", "link-c"
		wA, wB     = "ws-a", "ws-b"
	)
	l := newLog()
	l.click(click.Recorded{LinkID: lA, WorkspaceID: wA, Code: "a", Timestamp: at(day1, 9, 0, 0, 0), Visitor: visitor(1), Country: "DE"})
	l.click(click.Recorded{LinkID: lA, WorkspaceID: wA, Code: "a", Timestamp: at(day1, 10, 0, 0, 0), Visitor: visitor(2)})
	cust := conversion.CustomerStream(wA, "cus-1")
	clickA := conversion.Click{ClickID: "click-a", LinkID: lA, WorkspaceID: wA, ClickedAt: at(day1, 9, 0, 0, 0)}
	clickB := conversion.Click{ClickID: "click-b", LinkID: lB, WorkspaceID: wA, ClickedAt: at(day1, 8, 0, 0, 0)}
	clickC := conversion.Click{ClickID: "click-c", LinkID: lC, WorkspaceID: wB, ClickedAt: at(day1, 8, 0, 0, 0)}
	l.add(cust, &conversion.CustomerCreated{CustomerID: "c1", WorkspaceID: wA, ExternalID: "cus-1", At: at(day1, 11, 0, 0, 0)}, at(day1, 11, 0, 0, 0))
	l.add(cust, &conversion.LeadTracked{ConversionID: "v1", EventName: "Sign up", Click: clickA, CustomerID: "c1", First: true, Timestamp: at(day1, 11, 0, 0, 0)}, at(day1, 11, 0, 0, 0))
	l.add(cust, &conversion.SaleTracked{ConversionID: "v2", EventName: "Purchase", Click: clickA, CustomerID: "c1", AmountMinor: 2999, Currency: "usd", First: true, Timestamp: at(day1, 12, 0, 0, 0)}, at(day1, 12, 0, 0, 0))
	l.add(cust, &conversion.SaleTracked{ConversionID: "v3", EventName: "Purchase", Click: clickA, CustomerID: "c1", AmountMinor: 1, Currency: "usd", Timestamp: at(day1, 23, 59, 59, 999)}, at(day1, 23, 59, 59, 999))
	l.add(cust, &conversion.CustomerUpdated{CustomerID: "c1", WorkspaceID: wA, ExternalID: "cus-1", Profile: conversion.Profile{Email: "a@example.com"}, At: at(day2, 1, 0, 0, 0)}, at(day2, 1, 0, 0, 0))
	// The next day: a sale in yen, and none of link-a's clicks.
	l.add(cust, &conversion.SaleTracked{ConversionID: "v4", EventName: "Purchase", Click: clickA, CustomerID: "c1", AmountMinor: 2999, Currency: "jpy", Timestamp: at(day2, 0, 0, 0, 0)}, at(day2, 0, 0, 0, 0))
	cust2 := conversion.CustomerStream(wA, "cus-2")
	l.add(cust2, &conversion.CustomerCreated{CustomerID: "c2", WorkspaceID: wA, ExternalID: "cus-2", At: at(day1, 13, 0, 0, 0)}, at(day1, 13, 0, 0, 0))
	l.add(cust2, &conversion.SaleTracked{ConversionID: "v5", EventName: "Renewal", Click: clickB, CustomerID: "c2", AmountMinor: 1000, Currency: "eur", First: true, Timestamp: at(day1, 13, 0, 0, 0)}, at(day1, 13, 0, 0, 0))
	cust3 := conversion.CustomerStream(wB, "cus-3")
	l.add(cust3, &conversion.CustomerCreated{CustomerID: "c3", WorkspaceID: wB, ExternalID: "cus-3", At: at(day4, 7, 0, 0, 0)}, at(day4, 7, 0, 0, 0))
	l.add(cust3, &conversion.LeadTracked{ConversionID: "v6", EventName: "Sign up", Click: clickC, CustomerID: "c3", First: true, Timestamp: at(day4, 7, 0, 0, 0)}, at(day4, 7, 0, 0, 0))

	half := len(l.events) / 2
	e.apply(l.events[:half], l.events[half-2:], l.events) // overlapping and repeated deliveries
	d1, d2, d4 := day1.Format(time.DateOnly), day2.Format(time.DateOnly), day4.Format(time.DateOnly)
	m := func(kv ...any) map[string]int64 {
		out := map[string]int64{}
		for i := 0; i+1 < len(kv); i += 2 {
			out[kv[i].(string)] = int64(kv[i+1].(int))
		}
		return out
	}
	aDay1 := e.linkDaily(lA, allFrom, allTo)
	if len(aDay1) != 2 {
		t.Fatalf("link-a: %d records, want 2 (%+v)", len(aDay1), aDay1)
	}
	// Day 1 of link-a: its clicks, plus one lead and two sales.
	if got := aDay1[0]; got.Date != d1 || got.TotalClicks != 2 || got.Leads != 1 || got.Sales != 2 || !sameMap(got.Revenue, m("usd", 3000)) {
		t.Errorf("link-a %s: clicks %d leads %d sales %d revenue %v; want 2, 1, 2, {usd:3000}", got.Date, got.TotalClicks, got.Leads, got.Sales, got.Revenue)
	}
	want := []queries.DailyStats{{Date: d2, LinkID: lA, Sales: 1, Revenue: m("jpy", 2999)}}
	if d := Diff(aDay1[1:], want); d != "" {
		t.Errorf("link-a, a day of conversions only: %s", d)
	}
	if d := Diff(e.linkDaily(lB, allFrom, allTo), []queries.DailyStats{{Date: d1, LinkID: lB, Sales: 1, Revenue: m("eur", 1000)}}); d != "" {
		t.Errorf("link-b (never clicked here, one sale): %s", d)
	}
	if d := Diff(e.linkDaily(lC, allFrom, allTo), []queries.DailyStats{{Date: d4, LinkID: lC, Leads: 1}}); d != "" {
		t.Errorf("link-c: %s", d)
	}
	ws := e.workspaceDaily(wA, allFrom, allTo)
	if len(ws) != 2 || ws[0].Date != d1 || ws[0].TotalClicks != 2 || ws[0].Leads != 1 || ws[0].Sales != 3 || !sameMap(ws[0].Revenue, m("usd", 3000, "eur", 1000)) {
		t.Errorf("ws-a: %+v", ws)
	} else if d := Diff(ws[1:], []queries.DailyStats{{Date: d2, WorkspaceID: wA, Sales: 1, Revenue: m("jpy", 2999)}}); d != "" {
		t.Errorf("ws-a, a day of conversions only: %s", d)
	}
	if d := Diff(e.workspaceDaily(wB, allFrom, allTo), []queries.DailyStats{{Date: d4, WorkspaceID: wB, Leads: 1}}); d != "" {
		t.Errorf("ws-b: %s", d)
	}
	// A range holds the conversions of its days only.
	if got := e.linkDaily(lA, day2, day4); len(got) != 1 || got[0].Date != d2 {
		t.Errorf("link-a from day 2: %+v", got)
	}
	// Conversions are no clicks: a link with sales and no click was never
	// clicked.
	if e.linkClicked(lB) {
		t.Errorf("LinkClicked(link-b) with sales and no click")
	}
	e.checkpoint(l.last())
}

func sameMap(a, b map[string]int64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}
