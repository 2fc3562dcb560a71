package analytics

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/linkd/linkd/domain/click"
	"github.com/linkd/linkd/eventstore"
	"github.com/linkd/linkd/eventstore/embedded"
	"github.com/linkd/linkd/projections"
	"github.com/linkd/linkd/queries"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func openTest(t testing.TB, dir string, opts Options) *Store {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = quiet
	}
	s, err := Open(dir, opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// feed numbers clicks as an event store would: stream "clicks-<link>" from
// version 0, global positions from 1.
type feed struct {
	pos      uint64
	versions map[string]uint64
	events   []eventstore.RecordedEvent
}

func newFeed() *feed { return &feed{versions: map[string]uint64{}} }

func (f *feed) add(c click.Recorded) eventstore.RecordedEvent {
	data, err := json.Marshal(c)
	if err != nil {
		panic(err)
	}
	return f.addRaw(click.Stream(c.LinkID), click.EventRecorded, data)
}

func (f *feed) addRaw(stream, typ string, data []byte) eventstore.RecordedEvent {
	v, ok := f.versions[stream]
	if ok {
		v++
	}
	f.versions[stream] = v
	f.pos++
	ev := eventstore.RecordedEvent{
		Stream: stream, Version: v, Type: typ, Data: data,
		Position: eventstore.Position{Commit: f.pos, Prepare: f.pos},
		Time:     time.Unix(1_700_000_000, 0).UTC(),
	}
	f.events = append(f.events, ev)
	return ev
}

func at(day, hh, mm, ss int) time.Time { return time.Date(2026, 3, day, hh, mm, ss, 0, time.UTC) }

// The hand-built clicks of TestDailyRecords.
func fixtureClicks() []click.Recorded {
	return []click.Recorded{
		// L1, 1 March.
		{LinkID: "L1", WorkspaceID: "W1", Timestamp: at(1, 10, 0, 0), Visitor: "v1", Browser: "Chrome", BrowserVersion: "120",
			OS: "iOS", OSVersion: "17.4", DeviceType: "mobile", Country: "US", Continent: "NA", City: "New York",
			Language: "en", Referrer: "twitter.com"},
		{LinkID: "L1", WorkspaceID: "W1", Timestamp: at(1, 11, 0, 0), Visitor: "v1", Browser: "Safari",
			OS: "iOS", OSVersion: "17.4", DeviceType: "mobile", Country: "US", Continent: "NA", City: "New York",
			Language: "en", QR: true},
		{LinkID: "L1", WorkspaceID: "W1", Timestamp: at(1, 23, 59, 59), Visitor: "v2", Browser: "Chrome",
			OS: "Android", OSVersion: "14", DeviceType: "mobile", FromApp: true, App: "Instagram",
			Country: "DE", Continent: "EU", City: "Berlin", Language: "de", Referrer: "instagram.com"},
		// L1, 2 March, 00:00:00: a new day, v1 counts again.
		{LinkID: "L1", WorkspaceID: "W1", Timestamp: at(2, 0, 0, 0), Visitor: "v1", Browser: "Firefox",
			OS: "Windows", OSVersion: "10", DeviceType: "desktop", Country: "FR", Continent: "EU", City: "Paris", Language: "fr"},
		// L2, 1 March: same workspace.
		{LinkID: "L2", WorkspaceID: "W1", Timestamp: at(1, 12, 0, 0), Visitor: "v3", Browser: "Chrome",
			OS: "macOS", OSVersion: "14.2", DeviceType: "desktop", Country: "US", Continent: "NA", City: "San Francisco", Language: "en"},
		{LinkID: "L2", WorkspaceID: "W1", Timestamp: at(1, 8, 30, 0)}, // nothing known, no visitor
		{LinkID: "L2", WorkspaceID: "W1", Timestamp: at(1, 13, 0, 0), Visitor: "v1", OSVersion: "5.1", DeviceType: "tablet"},
		// L3, 1 March: another workspace, same visitor value.
		{LinkID: "L3", WorkspaceID: "W2", Timestamp: at(1, 9, 0, 0), Visitor: "v1", Browser: "Edge",
			OS: "Windows", OSVersion: "11", DeviceType: "desktop", FromApp: true, Country: "GB", Continent: "EU",
			City: "London", Language: "en-GB"},
		// L1, 4 March.
		{LinkID: "L1", WorkspaceID: "W1", Timestamp: at(4, 18, 0, 0), Visitor: "v4", Browser: "Chrome",
			OS: "Android", OSVersion: "13", DeviceType: "tablet", QR: true, Country: "BR", Continent: "SA", City: "São Paulo", Language: "pt-BR"},
	}
}

type m = map[string]int64

func wantFixture() (link map[string][]queries.DailyStats, ws map[string][]queries.DailyStats) {
	link = map[string][]queries.DailyStats{
		"L1": {
			{
				Date: "2026-03-01", LinkID: "L1", WorkspaceID: "W1",
				FirstClick: at(1, 10, 0, 0), LastUpdated: at(1, 23, 59, 59),
				TotalClicks: 3, UniqueVisitors: 2, QRScans: 1, DirectClicks: 2,
				ChromeClicks: 2, IOSClicks: 2, AndroidClicks: 1,
				OS:          m{"iOS": 2, "Android": 1},
				OSVersion:   m{"iOS 17.4": 2, "Android 14": 1},
				City:        m{"New York": 2, "Berlin": 1},
				Language:    m{"en": 2, "de": 1},
				Browser:     m{"Chrome": 2, "Safari": 1},
				Country:     m{"US": 2, "DE": 1},
				Continent:   m{"NA": 2, "EU": 1},
				DeviceAndOS: m{"mobile iOS": 2, "mobile Android": 1},
				App:         m{"Instagram": 1},
				DeviceType:  m{"mobile": 3},
				FromApp:     m{"true": 1, "false": 2},
				Referrer:    m{"twitter.com": 1, "instagram.com": 1},
			},
			{
				Date: "2026-03-02", LinkID: "L1", WorkspaceID: "W1",
				FirstClick: at(2, 0, 0, 0), LastUpdated: at(2, 0, 0, 0),
				TotalClicks: 1, UniqueVisitors: 1, DirectClicks: 1,
				OS: m{"Windows": 1}, OSVersion: m{"Windows 10": 1}, City: m{"Paris": 1}, Language: m{"fr": 1},
				Browser: m{"Firefox": 1}, Country: m{"FR": 1}, Continent: m{"EU": 1},
				DeviceAndOS: m{"desktop Windows": 1}, App: m{}, DeviceType: m{"desktop": 1},
				FromApp: m{"false": 1}, Referrer: m{},
			},
			{
				Date: "2026-03-04", LinkID: "L1", WorkspaceID: "W1",
				FirstClick: at(4, 18, 0, 0), LastUpdated: at(4, 18, 0, 0),
				TotalClicks: 1, UniqueVisitors: 1, QRScans: 1, ChromeClicks: 1, AndroidClicks: 1,
				OS: m{"Android": 1}, OSVersion: m{"Android 13": 1}, City: m{"São Paulo": 1}, Language: m{"pt-BR": 1},
				Browser: m{"Chrome": 1}, Country: m{"BR": 1}, Continent: m{"SA": 1},
				DeviceAndOS: m{"tablet Android": 1}, App: m{}, DeviceType: m{"tablet": 1},
				FromApp: m{"false": 1}, Referrer: m{},
			},
		},
		"L2": {{
			Date: "2026-03-01", LinkID: "L2", WorkspaceID: "W1",
			FirstClick: at(1, 8, 30, 0), LastUpdated: at(1, 13, 0, 0),
			TotalClicks: 3, UniqueVisitors: 2, DirectClicks: 3, ChromeClicks: 1,
			OS: m{"macOS": 1}, OSVersion: m{"macOS 14.2": 1, "5.1": 1}, City: m{"San Francisco": 1}, Language: m{"en": 1},
			Browser: m{"Chrome": 1}, Country: m{"US": 1}, Continent: m{"NA": 1},
			DeviceAndOS: m{"desktop macOS": 1}, App: m{}, DeviceType: m{"desktop": 1, "tablet": 1},
			FromApp: m{"false": 3}, Referrer: m{},
		}},
		"L3": {{
			Date: "2026-03-01", LinkID: "L3", WorkspaceID: "W2",
			FirstClick: at(1, 9, 0, 0), LastUpdated: at(1, 9, 0, 0),
			TotalClicks: 1, UniqueVisitors: 1, DirectClicks: 1,
			OS: m{"Windows": 1}, OSVersion: m{"Windows 11": 1}, City: m{"London": 1}, Language: m{"en-GB": 1},
			Browser: m{"Edge": 1}, Country: m{"GB": 1}, Continent: m{"EU": 1},
			DeviceAndOS: m{"desktop Windows": 1}, App: m{}, DeviceType: m{"desktop": 1},
			FromApp: m{"true": 1}, Referrer: m{},
		}},
	}
	ws = map[string][]queries.DailyStats{
		"W1": {
			{
				Date: "2026-03-01", WorkspaceID: "W1",
				FirstClick: at(1, 8, 30, 0), LastUpdated: at(1, 23, 59, 59),
				TotalClicks: 6, UniqueVisitors: 3, QRScans: 1, DirectClicks: 5,
				ChromeClicks: 3, IOSClicks: 2, AndroidClicks: 1,
				OS:          m{"iOS": 2, "Android": 1, "macOS": 1},
				OSVersion:   m{"iOS 17.4": 2, "Android 14": 1, "macOS 14.2": 1, "5.1": 1},
				City:        m{"New York": 2, "Berlin": 1, "San Francisco": 1},
				Language:    m{"en": 3, "de": 1},
				Browser:     m{"Chrome": 3, "Safari": 1},
				Country:     m{"US": 3, "DE": 1},
				Continent:   m{"NA": 3, "EU": 1},
				DeviceAndOS: m{"mobile iOS": 2, "mobile Android": 1, "desktop macOS": 1},
				App:         m{"Instagram": 1},
				DeviceType:  m{"mobile": 3, "desktop": 1, "tablet": 1},
				FromApp:     m{"true": 1, "false": 5},
				Referrer:    m{"twitter.com": 1, "instagram.com": 1},
			},
			link["L1"][1], link["L1"][2],
		},
		"W2": {link["L3"][0]},
	}
	ws["W1"][1].LinkID, ws["W1"][2].LinkID = "", ""
	ws["W2"][0].LinkID = ""
	return link, ws
}

// diffStats describes how got differs from want, or returns "".
func diffStats(got, want []queries.DailyStats) string {
	if len(got) != len(want) {
		return fmt.Sprintf("%d records, want %d:\n got %+v\nwant %+v", len(got), len(want), got, want)
	}
	for i := range got {
		g, w := got[i], want[i]
		if !g.FirstClick.Equal(w.FirstClick) || !g.LastUpdated.Equal(w.LastUpdated) {
			return fmt.Sprintf("[%d] %s: first/last %v %v, want %v %v", i, w.Date, g.FirstClick, g.LastUpdated, w.FirstClick, w.LastUpdated)
		}
		g.FirstClick, g.LastUpdated, w.FirstClick, w.LastUpdated = time.Time{}, time.Time{}, time.Time{}, time.Time{}
		if !reflect.DeepEqual(g, w) {
			return fmt.Sprintf("[%d] %s:\n got %+v\nwant %+v", i, w.Date, g, w)
		}
	}
	return ""
}

var (
	allFrom = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	allTo   = time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC)
)

func checkFixture(t *testing.T, s *Store) {
	t.Helper()
	ctx := context.Background()
	wantLink, wantWS := wantFixture()
	for id, want := range wantLink {
		got, err := s.LinkDaily(ctx, id, allFrom, allTo)
		if err != nil {
			t.Fatal(err)
		}
		if d := diffStats(got, want); d != "" {
			t.Errorf("LinkDaily(%s): %s", id, d)
		}
	}
	for id, want := range wantWS {
		got, err := s.WorkspaceDaily(ctx, id, allFrom, allTo)
		if err != nil {
			t.Fatal(err)
		}
		if d := diffStats(got, want); d != "" {
			t.Errorf("WorkspaceDaily(%s): %s", id, d)
		}
	}
}

func fixtureEvents() []eventstore.RecordedEvent {
	f := newFeed()
	for _, c := range fixtureClicks() {
		f.add(c)
	}
	return f.events
}

func TestDailyRecords(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openTest(t, t.TempDir(), Options{})
	events := fixtureEvents()
	if err := s.Apply(ctx, events); err != nil {
		t.Fatal(err)
	}
	checkFixture(t, s)
	cp, err := s.Checkpoint(ctx)
	if err != nil || cp != events[len(events)-1].Position {
		t.Fatalf("Checkpoint = %v, %v; want %v", cp, err, events[len(events)-1].Position)
	}
}

func TestDateRanges(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openTest(t, t.TempDir(), Options{})
	if err := s.Apply(ctx, fixtureEvents()); err != nil {
		t.Fatal(err)
	}
	paris := time.FixedZone("UTC+1", 3600)
	tests := []struct {
		name     string
		from, to time.Time
		want     []string
	}{
		{"one day", at(1, 0, 0, 0), at(1, 0, 0, 0), []string{"2026-03-01"}},
		{"times inside the days count whole days", at(1, 23, 0, 0), at(2, 0, 0, 1), []string{"2026-03-01", "2026-03-02"}},
		{"inclusive end", at(2, 0, 0, 0), at(4, 0, 0, 0), []string{"2026-03-02", "2026-03-04"}},
		{"gap day", at(3, 0, 0, 0), at(3, 23, 59, 59), nil},
		{"after", at(5, 0, 0, 0), at(30, 0, 0, 0), nil},
		{"before", at(1, 0, 0, 0).AddDate(0, -1, 0), at(1, 0, 0, 0).Add(-time.Second), nil},
		{"start after end", at(4, 0, 0, 0), at(1, 0, 0, 0), nil},
		{"other zones are converted to UTC", time.Date(2026, 3, 2, 0, 30, 0, 0, paris), time.Date(2026, 3, 2, 0, 30, 0, 0, paris),
			[]string{"2026-03-01"}},
		{"30 days", at(1, 0, 0, 0), at(30, 0, 0, 0), []string{"2026-03-01", "2026-03-02", "2026-03-04"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, q := range []struct {
				name string
				fn   func(context.Context, string, time.Time, time.Time) ([]queries.DailyStats, error)
				id   string
			}{{"LinkDaily", s.LinkDaily, "L1"}, {"WorkspaceDaily", s.WorkspaceDaily, "W1"}} {
				got, err := q.fn(ctx, q.id, tc.from, tc.to)
				if err != nil {
					t.Fatal(err)
				}
				if got == nil {
					t.Fatalf("%s: nil slice, want empty", q.name)
				}
				var dates []string
				for _, d := range got {
					dates = append(dates, d.Date)
				}
				if !slices.Equal(dates, tc.want) {
					t.Errorf("%s: dates %v, want %v", q.name, dates, tc.want)
				}
			}
		})
	}
	for _, id := range []string{"nope", "", "L"} {
		got, err := s.LinkDaily(ctx, id, allFrom, allTo)
		if err != nil || got == nil || len(got) != 0 {
			t.Errorf("LinkDaily(%q) = %v, %v; want empty", id, got, err)
		}
		got, err = s.WorkspaceDaily(ctx, id, allFrom, allTo)
		if err != nil || got == nil || len(got) != 0 {
			t.Errorf("WorkspaceDaily(%q) = %v, %v; want empty", id, got, err)
		}
	}
}

func TestLinkClicked(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openTest(t, t.TempDir(), Options{})
	if err := s.Apply(ctx, fixtureEvents()); err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string]bool{"L1": true, "L2": true, "L3": true, "L": false, "L10": false, "W1": false, "": false} {
		got, err := s.LinkClicked(ctx, id)
		if err != nil || got != want {
			t.Errorf("LinkClicked(%q) = %v, %v; want %v", id, got, err, want)
		}
	}
}

func TestIdempotence(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	events := fixtureEvents()
	tests := []struct {
		name    string
		batches [][]eventstore.RecordedEvent
	}{
		{"duplicates in one batch", [][]eventstore.RecordedEvent{
			append(append(slices.Clone(events[:4]), events[:4]...), events...),
		}},
		{"each event twice in a row", func() [][]eventstore.RecordedEvent {
			var b []eventstore.RecordedEvent
			for _, e := range events {
				b = append(b, e, e)
			}
			return [][]eventstore.RecordedEvent{b}
		}()},
		{"redelivered in later batches", [][]eventstore.RecordedEvent{
			events[:3], events[:5], events, events[2:], events[8:],
		}},
		{"one by one, twice", func() [][]eventstore.RecordedEvent {
			var bs [][]eventstore.RecordedEvent
			for i := range events {
				bs = append(bs, events[i:i+1])
			}
			return append(bs, bs...)
		}()},
		{"streams interleaved differently", func() [][]eventstore.RecordedEvent {
			// Per-stream order is kept, global order is not: all of L2
			// and L3 first, then L1.
			var l1, rest []eventstore.RecordedEvent
			for _, e := range events {
				if e.Stream == click.Stream("L1") {
					l1 = append(l1, e)
				} else {
					rest = append(rest, e)
				}
			}
			return [][]eventstore.RecordedEvent{rest[:2], append(slices.Clone(rest[2:]), l1[:2]...), l1, rest}
		}()},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := openTest(t, t.TempDir(), Options{})
			for _, b := range tc.batches {
				if err := s.Apply(ctx, b); err != nil {
					t.Fatal(err)
				}
			}
			checkFixture(t, s)
			cp, _ := s.Checkpoint(ctx)
			if want := events[len(events)-1].Position; cp != want {
				t.Errorf("Checkpoint = %v, want %v", cp, want)
			}
		})
	}
}

func TestRestart(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	events := fixtureEvents()

	s, err := Open(dir, Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	if cp, _ := s.Checkpoint(ctx); cp != eventstore.Start {
		t.Fatalf("fresh Checkpoint = %v", cp)
	}
	if err := s.Apply(ctx, events[:5]); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.LinkDaily(ctx, "L1", allFrom, allTo); err != ErrClosed {
		t.Errorf("query after Close: %v, want ErrClosed", err)
	}
	if err := s.Apply(ctx, events); err != ErrClosed {
		t.Errorf("Apply after Close: %v, want ErrClosed", err)
	}

	s = openTest(t, dir, Options{})
	cp, err := s.Checkpoint(ctx)
	if err != nil || cp != events[4].Position {
		t.Fatalf("Checkpoint after reopen = %v, %v; want %v", cp, err, events[4].Position)
	}
	if v, ok, err := s.AppliedVersion(ctx, click.Stream("L1")); err != nil || !ok || v != 3 {
		t.Errorf("AppliedVersion(L1) = %v, %v, %v; want 3", v, ok, err)
	}
	// The feeder resumes after the checkpoint, Kafka may redeliver more:
	// both must give the same result.
	if err := s.Apply(ctx, events); err != nil {
		t.Fatal(err)
	}
	checkFixture(t, s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openTest(t, dir, Options{})
	checkFixture(t, s)
	if err := s.Apply(ctx, events); err != nil {
		t.Fatal(err)
	}
	checkFixture(t, s)
	if cp, _ := s.Checkpoint(ctx); cp != events[len(events)-1].Position {
		t.Errorf("Checkpoint = %v", cp)
	}
}

// TestCrash simulates a crash of the machine with Pebble's crashable
// in-memory file system: the clone keeps only what was synced.
func TestCrash(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	events := fixtureEvents()

	t.Run("sync: every applied batch survives", func(t *testing.T) {
		t.Parallel()
		fs := vfs.NewCrashableMem()
		s := openTest(t, "db", Options{fs: fs})
		for i := range events {
			if err := s.Apply(ctx, events[i:i+1]); err != nil {
				t.Fatal(err)
			}
		}
		crashed := fs.CrashClone(vfs.CrashCloneCfg{})
		s2 := openTest(t, "db", Options{fs: crashed})
		checkFixture(t, s2)
		if cp, _ := s2.Checkpoint(ctx); cp != events[len(events)-1].Position {
			t.Errorf("Checkpoint = %v", cp)
		}
	})

	t.Run("nosync: checkpoint never ahead of the data; redelivery completes", func(t *testing.T) {
		t.Parallel()
		rng := rand.New(rand.NewPCG(3, 4))
		f := newFeed()
		for _, c := range genClicks(rng, 3000, 30, 3, 3, time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)) {
			f.add(c)
		}
		events := f.events
		ref := openTest(t, t.TempDir(), Options{})
		if err := ref.Apply(ctx, events); err != nil {
			t.Fatal(err)
		}
		const batch = 50
		lost := 0
		const crashes = 10
		for seed := range uint64(crashes) {
			fs := vfs.NewCrashableMem()
			// The first third is synced, the rest is not.
			s, err := Open("db", Options{fs: fs, Logger: quiet})
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Apply(ctx, events[:1000]); err != nil {
				t.Fatal(err)
			}
			s.Close()
			s = openTest(t, "db", Options{fs: fs, NoSync: true})
			for i := 1000; i < len(events); i += batch {
				if err := s.Apply(ctx, events[i:i+batch]); err != nil {
					t.Fatal(err)
				}
			}
			crashed := fs.CrashClone(vfs.CrashCloneCfg{
				UnsyncedDataPercent: int(seed * 10), RNG: rand.New(rand.NewPCG(seed, 1)),
			})
			s2, err := Open("db", Options{fs: crashed, NoSync: true, Logger: quiet})
			if err != nil {
				t.Fatalf("seed %d: reopen: %v", seed, err)
			}
			cp, _ := s2.Checkpoint(ctx)
			if cp.Less(events[999].Position) {
				t.Errorf("seed %d: checkpoint %v lost synced batches", seed, cp)
			}
			if cp != events[len(events)-1].Position {
				lost++
			}
			// Exactly the events up to the checkpoint are counted.
			var want, got int64
			var rest []eventstore.RecordedEvent
			for _, e := range events {
				if cp.Less(e.Position) {
					rest = append(rest, e)
				} else {
					want++
				}
			}
			for l := range 30 {
				days, err := s2.LinkDaily(ctx, fmt.Sprintf("link-%05d", l), allFrom, allTo)
				if err != nil {
					t.Fatal(err)
				}
				for _, d := range days {
					got += d.TotalClicks
				}
			}
			if got != want {
				t.Errorf("seed %d: checkpoint %v covers %d clicks, the data holds %d", seed, cp, want, got)
			}
			// The in-process feeder resumes after the checkpoint.
			if err := s2.Apply(ctx, rest); err != nil {
				t.Fatal(err)
			}
			for l := range 30 {
				id := fmt.Sprintf("link-%05d", l)
				a, _ := s2.LinkDaily(ctx, id, allFrom, allTo)
				b, _ := ref.LinkDaily(ctx, id, allFrom, allTo)
				if d := diffStats(a, b); d != "" {
					t.Errorf("seed %d: %s after redelivery: %s", seed, id, d)
				}
			}
			s2.Close()
		}
		if lost == 0 {
			t.Error("no crash lost anything: the test tests nothing")
		}
		t.Logf("%d of %d crashes lost unsynced batches", lost, crashes)
	})
}

func TestReset(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openTest(t, t.TempDir(), Options{})
	events := fixtureEvents()
	if err := s.Apply(ctx, events); err != nil {
		t.Fatal(err)
	}
	if err := s.Reset(ctx); err != nil {
		t.Fatal(err)
	}
	if cp, _ := s.Checkpoint(ctx); cp != eventstore.Start {
		t.Errorf("Checkpoint after Reset = %v", cp)
	}
	if ok, _ := s.LinkClicked(ctx, "L1"); ok {
		t.Error("LinkClicked after Reset")
	}
	if got, _ := s.WorkspaceDaily(ctx, "W1", allFrom, allTo); len(got) != 0 {
		t.Errorf("WorkspaceDaily after Reset: %v", got)
	}
	if _, ok, _ := s.AppliedVersion(ctx, click.Stream("L1")); ok {
		t.Error("AppliedVersion after Reset")
	}
	// Everything is applied again, not skipped as already seen.
	if err := s.Apply(ctx, events); err != nil {
		t.Fatal(err)
	}
	checkFixture(t, s)
}

func TestSkipsOtherEvents(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openTest(t, t.TempDir(), Options{})
	f := newFeed()
	f.add(fixtureClicks()[0])
	f.addRaw(click.Stream("L1"), "ClickRecordedV9", []byte(`{}`)) // unknown type in the stream
	bad := f.addRaw(click.Stream("L1"), click.EventRecorded, []byte(`{not json`))
	f.addRaw("link-L1", "LinkCreated", []byte(`{"link_id":"L1"}`)) // another category
	if err := s.Apply(ctx, f.events); err != nil {
		t.Fatal(err)
	}
	got, _ := s.LinkDaily(ctx, "L1", allFrom, allTo)
	if len(got) != 1 || got[0].TotalClicks != 1 {
		t.Errorf("LinkDaily = %+v, want one click", got)
	}
	if s.Undecodable() != 1 {
		t.Errorf("Undecodable = %d", s.Undecodable())
	}
	if v, _, _ := s.AppliedVersion(ctx, click.Stream("L1")); v != bad.Version {
		t.Errorf("AppliedVersion = %d, want %d", v, bad.Version)
	}
	if cp, _ := s.Checkpoint(ctx); cp != f.events[3].Position {
		t.Errorf("Checkpoint = %v", cp)
	}
}

func TestOptionsValidate(t *testing.T) {
	t.Parallel()
	err := Options{CacheSize: -1, StreamCacheSize: -2, MemTableSize: 10}.Validate()
	if err == nil {
		t.Fatal("no error")
	}
	for _, s := range []string{"CacheSize", "StreamCacheSize", "MemTableSize"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not name %s", err, s)
		}
	}
	if _, err := Open("", Options{}); err == nil {
		t.Error("Open without dir")
	}
}

// genClicks makes n clicks over the given links (workspace = link % ws),
// days, and a few dozen values of each field, with visitors drawn from a
// pool so that some repeat. Link 0 of day 0 gets many distinct visitors.
func genClicks(rng *rand.Rand, n, links, workspaces, days int, start time.Time) []click.Recorded {
	browsers := []string{"Chrome", "Safari", "Firefox", "Edge", "Opera", "Samsung Internet", "Instagram", "Facebook", ""}
	oses := []string{"iOS", "Android", "Windows", "macOS", "Linux", "ChromeOS", ""}
	versions := []string{"10", "11", "14", "17.4", "13.1", ""}
	devices := []string{"mobile", "desktop", "tablet", ""}
	countries := []string{"US", "DE", "FR", "GB", "BR", "IN", "JP", "CN", "NG", "AU", "CA", "ES", "IT", "NL", "SE", "MX", ""}
	continents := []string{"NA", "EU", "EU", "EU", "SA", "AS", "AS", "AS", "AF", "OC", "NA", "EU", "EU", "EU", "EU", "NA", ""}
	cities := []string{"New York", "Berlin", "Paris", "London", "São Paulo", "Mumbai", "Tokyo", "Shanghai", "Lagos", "Sydney",
		"Toronto", "Madrid", "Rome", "Amsterdam", "Stockholm", "Mexico City", "Austin", "Munich", "Lyon", "Leeds", ""}
	langs := []string{"en", "de", "fr", "en-GB", "pt-BR", "hi", "ja", "zh", "es", "it", "nl", "sv", ""}
	refs := []string{"", "", "twitter.com", "facebook.com", "google.com", "news.ycombinator.com", "reddit.com", "linkedin.com"}
	apps := []string{"Instagram", "Facebook", "TikTok", "LinkedIn", ""}
	out := make([]click.Recorded, n)
	for i := range out {
		l := zipf(rng, links)
		day := rng.IntN(days)
		ci := rng.IntN(len(countries))
		fromApp := rng.IntN(8) == 0
		c := click.Recorded{
			ClickID:     fmt.Sprintf("c%d", i),
			LinkID:      fmt.Sprintf("link-%05d", l),
			WorkspaceID: fmt.Sprintf("ws-%03d", l%workspaces),
			Code:        fmt.Sprintf("code%d", l),
			Timestamp:   start.AddDate(0, 0, day).Add(time.Duration(rng.Int64N(int64(24 * time.Hour)))),
			Source:      click.SourceRedirect,
			QR:          rng.IntN(10) == 0,
			Visitor:     fmt.Sprintf("%016x", rng.IntN(n/3+1)),
			Browser:     browsers[rng.IntN(len(browsers))],
			OS:          oses[rng.IntN(len(oses))],
			OSVersion:   versions[rng.IntN(len(versions))],
			DeviceType:  devices[rng.IntN(len(devices))],
			FromApp:     fromApp,
			Language:    langs[rng.IntN(len(langs))],
			Referrer:    refs[rng.IntN(len(refs))],
			Country:     countries[ci],
			Continent:   continents[ci],
			City:        cities[rng.IntN(len(cities))],
			Destination: "https://example.com/landing",
		}
		if fromApp {
			c.App = apps[rng.IntN(len(apps))]
		}
		if rng.IntN(50) == 0 {
			c.Visitor = ""
		}
		out[i] = c
	}
	return out
}

// zipf draws a link index in [0, n) with a heavy head.
func zipf(rng *rand.Rand, n int) int {
	// Inverse of a power law: a few links get most clicks.
	u := rng.Float64()
	return min(n-1, int(float64(n)*u*u*u))
}

func TestReplayEquality(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(7, 7))
	start := time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)
	clicks := genClicks(rng, 20000, 40, 4, 5, start)
	// One busy link-day with enough distinct visitors to turn into a sketch,
	// arriving in pieces.
	for i := range 6000 {
		c := clicks[i%len(clicks)]
		c.LinkID, c.WorkspaceID = "link-busy", "ws-000"
		c.Timestamp = start.Add(time.Duration(i) * time.Second)
		c.Visitor = fmt.Sprintf("busy-%d", i%5000)
		clicks = append(clicks, c)
	}
	rng.Shuffle(len(clicks), func(i, j int) { clicks[i], clicks[j] = clicks[j], clicks[i] })

	es, err := embedded.Open(embedded.Options{Dir: t.TempDir(), Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { es.Close() })
	for _, c := range clicks {
		data, _ := json.Marshal(c)
		if _, err := es.Append(ctx, click.Stream(c.LinkID), eventstore.Any(), eventstore.EventData{Type: click.EventRecorded, Data: data}); err != nil {
			t.Fatal(err)
		}
		if rng.IntN(100) == 0 { // other categories in the log
			if _, err := es.Append(ctx, "link-"+c.LinkID, eventstore.Any(), eventstore.EventData{Type: "LinkUpdated", Data: []byte(`{}`)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	var all []eventstore.RecordedEvent
	for pos := eventstore.Start; ; {
		page, err := es.ReadAll(ctx, pos, 10000)
		if err != nil {
			t.Fatal(err)
		}
		if len(page) == 0 {
			break
		}
		all = append(all, page...)
		pos = page[len(page)-1].Position
	}

	// Live: small batches of relevant events, with redeliveries.
	live := openTest(t, t.TempDir(), Options{StreamCacheSize: 8}) // tiny cache: dedup reads the database
	for i := 0; i < len(all); {
		n := 1 + rng.IntN(64)
		var batch []eventstore.RecordedEvent
		for _, e := range all[i:min(len(all), i+n)] {
			if projections.Relevant(live, e.Stream) {
				batch = append(batch, e)
			}
		}
		if rng.IntN(10) == 0 && i > 100 { // redeliver a few earlier ones
			back := all[i-100 : i-100+rng.IntN(100)]
			for _, e := range back {
				if projections.Relevant(live, e.Stream) {
					batch = append(batch, e)
				}
			}
		}
		if len(batch) > 0 {
			if err := live.Apply(ctx, batch); err != nil {
				t.Fatal(err)
			}
		}
		i += n
	}

	replayed := openTest(t, t.TempDir(), Options{})
	// Something stale to be reset away.
	if err := replayed.Apply(ctx, fixtureEvents()); err != nil {
		t.Fatal(err)
	}
	n, err := projections.Replay(ctx, es, replayed, projections.ReplayOptions{PageSize: 5000})
	if err != nil {
		t.Fatal(err)
	}
	if n != uint64(len(clicks)) {
		t.Errorf("replay applied %d events, want %d", n, len(clicks))
	}

	// Both must answer every query identically, and match a direct count.
	links, wss := map[string]bool{}, map[string]bool{}
	perLink := map[string]int64{}
	for _, c := range clicks {
		links[c.LinkID], wss[c.WorkspaceID] = true, true
		perLink[c.LinkID]++
	}
	lcp, _ := live.Checkpoint(ctx)
	rcp, _ := replayed.Checkpoint(ctx)
	if head, _ := es.Head(ctx); lcp != rcp || rcp != head {
		t.Errorf("checkpoints live %v, replay %v, head %v", lcp, rcp, head)
	}
	for _, id := range slices.Sorted(maps.Keys(links)) {
		a, err := live.LinkDaily(ctx, id, allFrom, allTo)
		if err != nil {
			t.Fatal(err)
		}
		b, err := replayed.LinkDaily(ctx, id, allFrom, allTo)
		if err != nil {
			t.Fatal(err)
		}
		if d := diffStats(a, b); d != "" {
			t.Errorf("LinkDaily(%s) live vs replay: %s", id, d)
		}
		var total int64
		for _, d := range a {
			total += d.TotalClicks
		}
		if total != perLink[id] {
			t.Errorf("link %s: %d clicks, want %d", id, total, perLink[id])
		}
	}
	for _, id := range slices.Sorted(maps.Keys(wss)) {
		a, _ := live.WorkspaceDaily(ctx, id, allFrom, allTo)
		b, _ := replayed.WorkspaceDaily(ctx, id, allFrom, allTo)
		if d := diffStats(a, b); d != "" {
			t.Errorf("WorkspaceDaily(%s) live vs replay: %s", id, d)
		}
	}
	// The busy day crossed into a sketch: its estimate is close.
	busy, _ := live.LinkDaily(ctx, "link-busy", start, start)
	if len(busy) != 1 || busy[0].TotalClicks != 6000 || busy[0].UniqueVisitors < 4900 || busy[0].UniqueVisitors > 5100 {
		t.Errorf("busy day: %+v", busy)
	}
	// Uniques below the threshold are exact.
	exact := map[string]map[string]bool{}
	for _, c := range clicks {
		if c.LinkID != "link-00039" || c.Visitor == "" {
			continue
		}
		d := c.Timestamp.UTC().Format(time.DateOnly)
		if exact[d] == nil {
			exact[d] = map[string]bool{}
		}
		exact[d][c.Visitor] = true
	}
	days, _ := live.LinkDaily(ctx, "link-00039", allFrom, allTo)
	for _, d := range days {
		if int64(len(exact[d.Date])) != d.UniqueVisitors {
			t.Errorf("link-00039 %s: %d unique, want %d", d.Date, d.UniqueVisitors, len(exact[d.Date]))
		}
	}
}

// TestConcurrentQueries runs queries while batches are applied (run with
// -race): each query sees whole batches only.
func TestConcurrentQueries(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openTest(t, t.TempDir(), Options{})
	rng := rand.New(rand.NewPCG(1, 2))
	start := time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)
	clicks := genClicks(rng, 6000, 1, 1, 3, start) // one link, one workspace
	f := newFeed()
	for _, c := range clicks {
		f.add(c)
	}
	const batch = 100
	done := make(chan struct{})
	var wg sync.WaitGroup
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-done:
					return
				default:
				}
				days, err := s.WorkspaceDaily(ctx, "ws-000", allFrom, allTo)
				if err != nil {
					t.Error(err)
					return
				}
				var total int64
				for _, d := range days {
					total += d.TotalClicks
				}
				if total%batch != 0 {
					t.Errorf("saw %d clicks: a batch in part", total)
					return
				}
				if _, err := s.LinkClicked(ctx, "link-00000"); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	for i := 0; i < len(f.events); i += batch {
		if err := s.Apply(ctx, f.events[i:i+batch]); err != nil {
			t.Fatal(err)
		}
	}
	close(done)
	wg.Wait()
	days, _ := s.LinkDaily(ctx, "link-00000", allFrom, allTo)
	var total int64
	for _, d := range days {
		total += d.TotalClicks
	}
	if total != int64(len(clicks)) {
		t.Errorf("total %d, want %d", total, len(clicks))
	}
}
