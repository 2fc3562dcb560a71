package clickindex

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/linkd/linkd/domain/click"
	"github.com/linkd/linkd/eventstore"
	"github.com/linkd/linkd/eventstore/embedded"
	"github.com/linkd/linkd/projections"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// clock is a settable Options.Now.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock(t time.Time) *clock { return &clock{t: t} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

// t0 is the time of the fixture's clicks; the test clock starts an hour
// later.
var t0 = time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)

// openTest opens a store with the background expiry off and, unless opts
// has one, a clock at t0 + 1h.
func openTest(t testing.TB, dir string, opts Options) *Store {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = quiet
	}
	if opts.ExpireEvery == 0 {
		opts.ExpireEvery = -1
	}
	if opts.Now == nil {
		opts.Now = newClock(t0.Add(time.Hour)).Now
	}
	s, err := Open(dir, opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// v7At makes a UUIDv7 whose time is t; n tells ids of one millisecond
// apart.
func v7At(t time.Time, n uint64) string {
	var u [16]byte
	ms := uint64(t.UnixMilli())
	for i := range 6 {
		u[i] = byte(ms >> (40 - 8*i))
	}
	u[6], u[7] = 0x70|byte(n>>60), byte(n>>52)
	for i := 8; i < 16; i++ {
		u[i] = byte(n >> (8 * (15 - i)))
	}
	u[8] = 0x80 | u[8]&0x3f
	return string(appendUUID(nil, u[:]))
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
		Time:     t0.Add(time.Duration(f.pos) * time.Second),
	}
	f.events = append(f.events, ev)
	return ev
}

const (
	lnk1 = "0190a3c2-1111-7abc-8def-000000000001"
	lnk2 = "0190a3c2-1111-7abc-8def-000000000002"
	ws1  = "0190a3c2-2222-7abc-8def-000000000001"
	ws2  = "0190a3c2-2222-7abc-8def-000000000002"
	prj1 = "0190a3c2-3333-7abc-8def-000000000001"
	dom1 = "0190a3c2-4444-7abc-8def-000000000001"
)

// tracked is a click of a link that tracks conversions, as RecordClick
// makes it: tracking id = click id, expiring after the TTL.
func tracked(id, link, ws string, ts time.Time) click.Recorded {
	exp := ts.Add(click.TrackingTTL)
	return click.Recorded{
		ClickID: id, TrackingID: id, TrackingExpiresAt: &exp,
		LinkID: link, WorkspaceID: ws, Code: "abc", Timestamp: ts, Source: click.SourceRedirect,
		Visitor: "v", Browser: "Chrome", BrowserVersion: "120", OS: "iOS", OSVersion: "17.4",
		DeviceType: "mobile", Device: "iPhone", Language: "en", Referrer: "t.co",
		ReferrerURL: "https://t.co/x", Country: "US", Continent: "NA", City: "Austin", Region: "TX",
		Destination: "https://example.com/",
	}
}

// fixture is a few clicks of every kind, in two streams, and the clicks
// the index must return for them (by tracking id).
func fixture() ([]click.Recorded, map[string]Click) {
	var clicks []click.Recorded
	want := map[string]Click{}
	versions := map[string]uint64{} // the next click's version in each link's stream (newFeed)
	add := func(c click.Recorded) {
		clicks = append(clicks, c)
		v := versions[c.LinkID]
		versions[c.LinkID]++
		if c.TrackingID == "" {
			return
		}
		w := Click{
			TrackingID: c.TrackingID, ClickID: c.ClickID, LinkID: c.LinkID, WorkspaceID: c.WorkspaceID,
			ProjectID: c.ProjectID, DomainID: c.DomainID, Timestamp: c.Timestamp.UTC(),
			ExpiresAt: c.Timestamp.UTC().Add(click.TrackingTTL), Country: c.Country,
			DeviceType: c.DeviceType, Browser: c.Browser, OS: c.OS, Referrer: c.Referrer, QR: c.QR,
			Version: v, HasVersion: true,
		}
		if c.TrackingExpiresAt != nil {
			w.ExpiresAt = c.TrackingExpiresAt.UTC()
		}
		want[c.TrackingID] = w
	}
	// A UUIDv7 made with the click: the usual case.
	c := tracked(v7At(t0, 1), lnk1, ws1, t0)
	c.ProjectID, c.DomainID, c.QR = prj1, dom1, true
	add(c)
	// Another one a second later, in the other link's stream, without
	// project, domain or any enrichment.
	c = click.Recorded{ClickID: v7At(t0.Add(time.Second), 2), LinkID: lnk2, WorkspaceID: ws2,
		Timestamp: t0.Add(time.Second), Source: click.SourceRedirect}
	c.TrackingID = c.ClickID
	add(c)
	// Tracking off: not indexed.
	c = tracked(v7At(t0, 3), lnk1, ws1, t0.Add(2*time.Second))
	c.TrackingID, c.TrackingExpiresAt = "", nil
	add(c)
	// Ids that are not UUIDv7: a plain string, a v4 UUID, an uppercase v7.
	add(tracked("tid_plain-0001", lnk1, ws1, t0.Add(3*time.Second)))
	add(tracked("5b0e7b0a-8c1f-4c3e-9a51-7f0e3c9d2a11", lnk2, ws2, t0.Add(4*time.Second)))
	add(tracked(strings.ToUpper(v7At(t0, 4)), lnk1, ws1, t0.Add(5*time.Second)))
	// A UUIDv7 whose time is days before its click (a click id made
	// elsewhere, or a test clock): stored by its text, not by its time.
	add(tracked(v7At(t0.AddDate(0, 0, -3), 5), lnk2, ws2, t0.Add(6*time.Second)))
	// A tracking id that is not the click id, with an expiry of its own and
	// escapes in its strings.
	c = tracked(v7At(t0.Add(7*time.Second), 6), lnk1, ws1, t0.Add(7*time.Second))
	c.ClickID = "click-of-" + c.TrackingID
	exp := t0.AddDate(0, 0, 30)
	c.TrackingExpiresAt = &exp
	c.Referrer, c.Browser = "a\"b<c>", "Sämsung Internet"
	add(c)
	// A click without a time counts at the event's time (feed: t0 + pos s).
	c = tracked(v7At(t0.Add(9*time.Second), 7), lnk1, ws1, time.Time{})
	c.TrackingExpiresAt = nil
	add(c)
	w := want[c.TrackingID]
	w.Timestamp = t0.Add(9 * time.Second)
	w.ExpiresAt = w.Timestamp.Add(click.TrackingTTL)
	want[c.TrackingID] = w
	return clicks, want
}

func fixtureEvents() []eventstore.RecordedEvent {
	clicks, _ := fixture()
	f := newFeed()
	for _, c := range clicks {
		f.add(c)
	}
	return f.events
}

// checkFixture checks every lookup of the fixture.
func checkFixture(t *testing.T, s *Store) {
	t.Helper()
	ctx := context.Background()
	clicks, want := fixture()
	for id, w := range want {
		got, ok, err := s.Click(ctx, id)
		if err != nil || !ok {
			t.Errorf("Click(%s) = %v, %v", id, ok, err)
			continue
		}
		if got != w {
			t.Errorf("Click(%s):\n got %+v\nwant %+v", id, got, w)
		}
	}
	misses := []string{"", "nope", clicks[2].ClickID, strings.ToUpper(clicks[0].TrackingID),
		strings.ToLower(clicks[5].TrackingID), v7At(t0, 99), clicks[7].ClickID}
	for _, id := range misses {
		if got, ok, err := s.Click(ctx, id); ok || err != nil {
			t.Errorf("Click(%q) = %+v, %v, %v; want not found", id, got, ok, err)
		}
	}
}

func TestApplyAndLookup(t *testing.T) {
	t.Parallel()
	s := openTest(t, t.TempDir(), Options{})
	events := fixtureEvents()
	if err := s.Apply(context.Background(), projections.Envelopes(events)); err != nil {
		t.Fatal(err)
	}
	checkFixture(t, s)
	if cp, _ := s.Checkpoint(context.Background()); cp != events[len(events)-1].Position {
		t.Errorf("Checkpoint = %v", cp)
	}
	// Where each id went: UUIDv7 made with their click under their time,
	// the others under their text with an expiry-index key.
	// (The one with an expiry of its own is 60 days off its UUID's time.)
	if got := countKeys(t, s, tagV7); got != 3 {
		t.Errorf("%d keys under tagV7, want 3", got)
	}
	if got := countKeys(t, s, tagID); got != 5 {
		t.Errorf("%d keys under tagID, want 5", got)
	}
	if got := countKeys(t, s, tagExpiry); got != 5 {
		t.Errorf("%d keys under tagExpiry, want 5", got)
	}
}

// countKeys counts the keys of one tag.
func countKeys(t testing.TB, s *Store, tag byte) int {
	t.Helper()
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: []byte{tag}, UpperBound: []byte{tag + 1}})
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	n := 0
	for it.First(); it.Valid(); it.Next() {
		n++
	}
	return n
}

// dump is every key and value of the store.
func dump(t testing.TB, s *Store) map[string]string {
	t.Helper()
	it, err := s.db.NewIter(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	m := map[string]string{}
	for it.First(); it.Valid(); it.Next() {
		m[string(it.Key())] = string(it.Value())
	}
	return m
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
		{"streams out of order", func() [][]eventstore.RecordedEvent {
			// Per-stream order is kept, global order is not: all of the
			// second link first, then the first, then everything again.
			var l1, l2 []eventstore.RecordedEvent
			for _, e := range events {
				if e.Stream == click.Stream(lnk1) {
					l1 = append(l1, e)
				} else {
					l2 = append(l2, e)
				}
			}
			return [][]eventstore.RecordedEvent{l2[:2], append(slices.Clone(l2[2:]), l1[:2]...), l1, events}
		}()},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := openTest(t, t.TempDir(), Options{})
			for _, b := range tc.batches {
				if err := s.Apply(ctx, projections.Envelopes(b)); err != nil {
					t.Fatal(err)
				}
			}
			checkFixture(t, s)
			if cp, _ := s.Checkpoint(ctx); cp != events[len(events)-1].Position {
				t.Errorf("Checkpoint = %v, want %v", cp, events[len(events)-1].Position)
			}
			for stream, want := range map[string]uint64{click.Stream(lnk1): 5, click.Stream(lnk2): 2} {
				if v, ok, err := s.AppliedVersion(ctx, stream); err != nil || !ok || v != want {
					t.Errorf("AppliedVersion(%s) = %d, %v, %v; want %d", stream, v, ok, err, want)
				}
			}
		})
	}
}

// A redelivered event is skipped even when the record it wrote has changed
// since (here: deleted by hand), which shows it is skipped by its version,
// not overwritten with the same bytes.
func TestSkipsByVersion(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openTest(t, t.TempDir(), Options{StreamCacheSize: 1})
	events := fixtureEvents()
	if err := s.Apply(ctx, projections.Envelopes(events)); err != nil {
		t.Fatal(err)
	}
	u, _ := parseUUIDv7(v7At(t0, 1))
	if err := s.db.Delete(v7Key(nil, &u), pebble.Sync); err != nil {
		t.Fatal(err)
	}
	if err := s.Apply(ctx, projections.Envelopes(events)); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := s.Click(ctx, v7At(t0, 1)); ok {
		t.Error("a redelivered event was applied again")
	}
}

func TestRestart(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	events := fixtureEvents()
	now := newClock(t0.Add(time.Hour)).Now

	s, err := Open(dir, Options{Logger: quiet, Now: now, ExpireEvery: -1})
	if err != nil {
		t.Fatal(err)
	}
	if cp, _ := s.Checkpoint(ctx); cp != eventstore.Start {
		t.Fatalf("fresh Checkpoint = %v", cp)
	}
	if err := s.Apply(ctx, projections.Envelopes(events[:5])); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, _, err := s.Click(ctx, "x"); err != ErrClosed {
		t.Errorf("Click after Close: %v, want ErrClosed", err)
	}
	if err := s.Apply(ctx, projections.Envelopes(events)); err != ErrClosed {
		t.Errorf("Apply after Close: %v, want ErrClosed", err)
	}
	if _, err := s.Checkpoint(ctx); err != ErrClosed {
		t.Errorf("Checkpoint after Close: %v, want ErrClosed", err)
	}
	if _, err := s.Expire(ctx); err != ErrClosed {
		t.Errorf("Expire after Close: %v, want ErrClosed", err)
	}

	// Reopened with the background expiry on: it must not touch live ids.
	s = openTest(t, dir, Options{Now: now, ExpireEvery: time.Hour})
	cp, err := s.Checkpoint(ctx)
	if err != nil || cp != events[4].Position {
		t.Fatalf("Checkpoint after reopen = %v, %v; want %v", cp, err, events[4].Position)
	}
	if v, ok, err := s.AppliedVersion(ctx, click.Stream(lnk1)); err != nil || !ok || v != 2 {
		t.Errorf("AppliedVersion(lnk1) = %v, %v, %v; want 2", v, ok, err)
	}
	// The feeder resumes after the checkpoint, Kafka may redeliver more:
	// both give the same result.
	if err := s.Apply(ctx, projections.Envelopes(events)); err != nil {
		t.Fatal(err)
	}
	checkFixture(t, s)
	before := dump(t, s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openTest(t, dir, Options{Now: now})
	checkFixture(t, s)
	if err := s.Apply(ctx, projections.Envelopes(events)); err != nil {
		t.Fatal(err)
	}
	if after := dump(t, s); !maps.Equal(before, after) {
		t.Error("redelivery after a restart changed the store")
	}
	if cp, _ := s.Checkpoint(ctx); cp != events[len(events)-1].Position {
		t.Errorf("Checkpoint = %v", cp)
	}
}

func TestReset(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openTest(t, t.TempDir(), Options{})
	events := fixtureEvents()
	if err := s.Apply(ctx, projections.Envelopes(events)); err != nil {
		t.Fatal(err)
	}
	if err := s.Reset(ctx); err != nil {
		t.Fatal(err)
	}
	if cp, _ := s.Checkpoint(ctx); cp != eventstore.Start {
		t.Errorf("Checkpoint after Reset = %v", cp)
	}
	_, want := fixture()
	for id := range want {
		if _, ok, _ := s.Click(ctx, id); ok {
			t.Errorf("Click(%s) after Reset", id)
		}
	}
	if _, ok, _ := s.AppliedVersion(ctx, click.Stream(lnk1)); ok {
		t.Error("AppliedVersion after Reset")
	}
	if m := dump(t, s); len(m) != 1 || m[string(keyFormat)] == "" {
		t.Errorf("after Reset the store holds %d keys, want the format only", len(m))
	}
	// Everything is applied again, not skipped as already seen.
	if err := s.Apply(ctx, projections.Envelopes(events)); err != nil {
		t.Fatal(err)
	}
	checkFixture(t, s)
}

func TestSkipsOtherEvents(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openTest(t, t.TempDir(), Options{})
	clicks, _ := fixture()
	f := newFeed()
	f.add(clicks[0])
	f.addRaw(click.Stream(lnk1), "ClickRecordedV9", []byte(`{"tracking_id":"x"}`)) // unknown type in the stream
	bad := f.addRaw(click.Stream(lnk1), click.EventRecorded, []byte(`{not json`))
	f.addRaw("link-"+lnk1, "LinkCreated", []byte(`{"tracking_id":"y"}`)) // another category
	if err := s.Apply(ctx, projections.Envelopes(f.events)); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := s.Click(ctx, clicks[0].TrackingID); !ok {
		t.Error("the good click is missing")
	}
	for _, id := range []string{"x", "y"} {
		if _, ok, _ := s.Click(ctx, id); ok {
			t.Errorf("Click(%s) found", id)
		}
	}
	if s.Undecodable() != 1 {
		t.Errorf("Undecodable = %d", s.Undecodable())
	}
	if v, _, _ := s.AppliedVersion(ctx, click.Stream(lnk1)); v != bad.Version {
		t.Errorf("AppliedVersion = %d, want %d", v, bad.Version)
	}
	if _, ok, _ := s.AppliedVersion(ctx, "link-"+lnk1); ok {
		t.Error("a stream of another category was tracked")
	}
	if cp, _ := s.Checkpoint(ctx); cp != f.events[3].Position {
		t.Errorf("Checkpoint = %v", cp)
	}
	// A batch of duplicates only changes nothing, not even the checkpoint.
	before := dump(t, s)
	if err := s.Apply(ctx, projections.Envelopes(f.events[:2])); err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(before, dump(t, s)) {
		t.Error("a batch of duplicates changed the store")
	}
}

func TestOptionsValidate(t *testing.T) {
	t.Parallel()
	err := Options{CacheSize: -1, StreamCacheSize: -2, MemTableSize: 10, ExpireEvery: time.Millisecond}.Validate()
	if err == nil {
		t.Fatal("no error")
	}
	for _, s := range []string{"CacheSize", "StreamCacheSize", "MemTableSize", "ExpireEvery"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not name %s", err, s)
		}
	}
	if _, err := Open("", Options{}); err == nil {
		t.Error("Open without dir")
	}
	if _, err := Open(t.TempDir(), Options{CacheSize: -1}); err == nil {
		t.Error("Open with invalid options")
	}
}

func TestName(t *testing.T) {
	t.Parallel()
	s := openTest(t, t.TempDir(), Options{})
	if s.Name() != "clickindex" || !slices.Equal(s.Categories(), []string{"clicks"}) {
		t.Errorf("Name %q, Categories %v", s.Name(), s.Categories())
	}
}

// genClicks makes n clicks over links (workspace = link % 7), spread over
// span from start: most tracked with a UUIDv7 made with the click, some
// with other ids, some untracked.
func genClicks(rng *rand.Rand, n, links int, start time.Time, span time.Duration) []click.Recorded {
	countries := []string{"US", "DE", "FR", "GB", "BR", "IN", "JP", ""}
	devices := []string{"mobile", "desktop", "tablet", ""}
	browsers := []string{"Chrome", "Safari", "Firefox", "Edge", ""}
	oses := []string{"iOS", "Android", "Windows", "macOS", ""}
	refs := []string{"", "", "twitter.com", "google.com", "news.ycombinator.com"}
	out := make([]click.Recorded, n)
	for i := range out {
		l := rng.IntN(links)
		ts := start.Add(time.Duration(rng.Int64N(int64(span))))
		id := v7At(ts, uint64(i))
		switch rng.IntN(20) {
		case 0:
			id = fmt.Sprintf("tid-%d", i)
		case 1:
			id = v7At(ts.Add(-time.Duration(rng.Int64N(int64(48*time.Hour)))), uint64(i))
		}
		c := tracked(id, fmt.Sprintf("link-%03d", l), fmt.Sprintf("ws-%d", l%7), ts)
		c.Country = countries[rng.IntN(len(countries))]
		c.DeviceType = devices[rng.IntN(len(devices))]
		c.Browser = browsers[rng.IntN(len(browsers))]
		c.OS = oses[rng.IntN(len(oses))]
		c.Referrer = refs[rng.IntN(len(refs))]
		c.QR = rng.IntN(10) == 0
		if l%3 == 0 {
			c.ProjectID = fmt.Sprintf("prj-%d", l%5)
		}
		if rng.IntN(10) == 0 {
			c.TrackingID, c.TrackingExpiresAt = "", nil
		}
		out[i] = c
	}
	return out
}

// TestReplayEquality: the events of an event store applied in one batch,
// in batches of every size with redeliveries and streams reordered, and by
// projections.Replay over a store holding something stale, give the same
// store, byte for byte, and the same lookups.
func TestReplayEquality(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(7, 7))
	clicks := genClicks(rng, 20000, 40, t0, 72*time.Hour)
	clk := newClock(t0.Add(100 * time.Hour))

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

	// One batch.
	one := openTest(t, t.TempDir(), Options{Now: clk.Now})
	if err := one.Apply(ctx, projections.Envelopes(all)); err != nil {
		t.Fatal(err)
	}

	// Small batches of relevant events, streams reordered inside a window,
	// with redeliveries.
	live := openTest(t, t.TempDir(), Options{Now: clk.Now, StreamCacheSize: 8}) // tiny cache: dedup reads the database
	for i := 0; i < len(all); {
		n := 1 + rng.IntN(64)
		var batch []eventstore.RecordedEvent
		for _, e := range all[i:min(len(all), i+n)] {
			if projections.Relevant(live, e.Stream) {
				batch = append(batch, e)
			}
		}
		// Reorder streams, keeping each stream's order: a stable sort by
		// a random rank per stream.
		rank := map[string]int{}
		for _, e := range batch {
			if _, ok := rank[e.Stream]; !ok {
				rank[e.Stream] = rng.IntN(1000)
			}
		}
		slices.SortStableFunc(batch, func(a, b eventstore.RecordedEvent) int { return rank[a.Stream] - rank[b.Stream] })
		if rng.IntN(10) == 0 && i > 100 { // redeliver a few earlier ones
			for _, e := range all[i-100 : i-100+rng.IntN(100)] {
				if projections.Relevant(live, e.Stream) {
					batch = append(batch, e)
				}
			}
		}
		if len(batch) > 0 {
			if err := live.Apply(ctx, projections.Envelopes(batch)); err != nil {
				t.Fatal(err)
			}
		}
		i += n
	}

	replayed := openTest(t, t.TempDir(), Options{Now: clk.Now})
	if err := replayed.Apply(ctx, projections.Envelopes(fixtureEvents())); err != nil { // stale, to be reset away
		t.Fatal(err)
	}
	n, err := projections.Replay(ctx, es, replayed, projections.ReplayOptions{PageSize: 5000, ApplyBatch: 3000})
	if err != nil {
		t.Fatal(err)
	}
	if n != uint64(len(clicks)) {
		t.Errorf("replay applied %d events, want %d", n, len(clicks))
	}

	head, _ := es.Head(ctx)
	want := dump(t, one)
	for name, s := range map[string]*Store{"live": live, "replayed": replayed} {
		if cp, _ := s.Checkpoint(ctx); cp != head {
			t.Errorf("%s: checkpoint %v, head %v", name, cp, head)
		}
		got := dump(t, s)
		if !maps.Equal(got, want) {
			t.Errorf("%s: %d keys differ from one batch's %d", name, len(got), len(want))
		}
	}
	// And each lookup answers the click it was given.
	found := 0
	for _, c := range clicks {
		for name, s := range map[string]*Store{"one": one, "live": live, "replayed": replayed} {
			got, ok, err := s.Click(ctx, c.TrackingID)
			if err != nil || ok != (c.TrackingID != "") {
				t.Fatalf("%s: Click(%q) = %v, %v", name, c.TrackingID, ok, err)
			}
			if ok && (got.LinkID != c.LinkID || !got.Timestamp.Equal(c.Timestamp) || got.Referrer != c.Referrer) {
				t.Fatalf("%s: Click(%q) = %+v for %+v", name, c.TrackingID, got, c)
			}
			if ok {
				found++
			}
		}
	}
	if found == 0 {
		t.Error("nothing found")
	}
}

// Lookups during Apply and Expire see whole batches: a click of a batch is
// found only together with every other click of its batch.
func TestConcurrentReads(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := newClock(t0.Add(time.Hour))
	s := openTest(t, t.TempDir(), Options{Now: clk.Now})
	rng := rand.New(rand.NewPCG(1, 2))
	clicks := genClicks(rng, 6000, 5, t0, time.Hour)
	for i := range clicks {
		if clicks[i].TrackingID == "" {
			clicks[i].TrackingID = fmt.Sprintf("tid-untracked-%d", i)
		}
	}
	f := newFeed()
	for _, c := range clicks {
		f.add(c)
	}
	const batch = 100
	done := make(chan struct{})
	var wg sync.WaitGroup
	for r := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(r), 9))
			for {
				select {
				case <-done:
					return
				default:
				}
				b := rng.IntN(len(clicks) / batch)
				_, first, err := s.Click(ctx, clicks[b*batch].TrackingID)
				if err != nil {
					t.Error(err)
					return
				}
				if !first {
					continue
				}
				for _, c := range clicks[b*batch : (b+1)*batch] {
					if _, ok, err := s.Click(ctx, c.TrackingID); err != nil || !ok {
						t.Errorf("batch %d in part: %q missing (%v)", b, c.TrackingID, err)
						return
					}
				}
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-done:
				return
			default:
			}
			if _, err := s.Expire(ctx); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	for i := 0; i < len(f.events); i += batch {
		if err := s.Apply(ctx, projections.Envelopes(f.events[i:i+batch])); err != nil {
			t.Fatal(err)
		}
	}
	close(done)
	wg.Wait()
}

// TestRestartNoSync: without a write-ahead log (NoSync), Close flushes
// what was applied, so a restart loses nothing.
func TestRestartNoSync(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	events := fixtureEvents()
	opts := Options{Logger: quiet, Now: newClock(t0.Add(time.Hour)).Now, ExpireEvery: -1, NoSync: true}
	s := openTest(t, dir, opts)
	if err := s.Apply(ctx, projections.Envelopes(events)); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openTest(t, dir, opts)
	if cp, _ := s.Checkpoint(ctx); cp != events[len(events)-1].Position {
		t.Fatalf("Checkpoint after reopen = %v, want %v", cp, events[len(events)-1].Position)
	}
	checkFixture(t, s)
}
