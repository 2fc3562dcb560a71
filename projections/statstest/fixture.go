package statstest

import (
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/linkd/linkd/domain"
	"github.com/linkd/linkd/domain/click"
	"github.com/linkd/linkd/eventstore"
	"github.com/linkd/linkd/queries"
)

// eventLog numbers events as an event store does: versions per stream from
// 0, global positions increasing.
type eventLog struct {
	events   []eventstore.RecordedEvent
	versions map[string]uint64
}

func newLog() *eventLog { return &eventLog{versions: map[string]uint64{}} }

var idSpace = uuid.MustParse("7d0b3a52-6f1e-4c39-9a57-2e8c1f4b6d10")

// raw appends an event as it is, appended at the given time.
func (l *eventLog) raw(stream, typ string, data []byte, appended time.Time) eventstore.RecordedEvent {
	v, ok := l.versions[stream]
	if ok {
		v++
	}
	l.versions[stream] = v
	n := uint64(len(l.events) + 1)
	ev := eventstore.RecordedEvent{
		ID:       uuid.NewSHA1(idSpace, fmt.Appendf(nil, "%s@%d", stream, v)),
		Stream:   stream,
		Version:  v,
		Position: eventstore.Position{Commit: 1000 + 16*n, Prepare: 1000 + 16*n},
		Type:     typ,
		Data:     data,
		Time:     appended.UTC(),
	}
	l.events = append(l.events, ev)
	return ev
}

// add appends a domain event, encoded as the application encodes it.
func (l *eventLog) add(stream string, e domain.Event, appended time.Time) eventstore.RecordedEvent {
	typ, data, err := domain.EncodeEvent(e)
	if err != nil {
		panic(err)
	}
	return l.raw(stream, typ, data, appended)
}

// click appends a click to its link's click stream as
// commands.RecordClickHandler does: a click id, the time in UTC, the expiry
// of its tracking id; the event store takes it a few milliseconds later.
func (l *eventLog) click(c click.Recorded) eventstore.RecordedEvent {
	if c.ClickID == "" {
		c.ClickID = uuid.NewSHA1(idSpace, fmt.Appendf(nil, "click %d", len(l.events))).String()
	}
	c.Timestamp = c.Timestamp.UTC()
	if c.TrackingID != "" && c.TrackingExpiresAt == nil {
		exp := c.Timestamp.Add(click.TrackingTTL)
		c.TrackingExpiresAt = &exp
	}
	appended := c.Timestamp.Add(3 * time.Millisecond)
	if c.Timestamp.IsZero() {
		appended = l.now()
	}
	return l.add(click.Stream(c.LinkID), &c, appended)
}

// now is a time after every event of the log.
func (l *eventLog) now() time.Time {
	if len(l.events) == 0 {
		return day1
	}
	return l.events[len(l.events)-1].Time.Add(time.Second)
}

func (l *eventLog) last() eventstore.Position { return l.events[len(l.events)-1].Position }

// The days of the fixture, UTC: two at the end of March, a day without
// clicks, one in April (another month: ClickHouse partitions by month).
var (
	day1 = time.Date(2026, 3, 30, 0, 0, 0, 0, time.UTC)
	day2 = day1.AddDate(0, 0, 1)
	gap  = day1.AddDate(0, 0, 2) // 2026-04-01: no clicks
	day4 = day1.AddDate(0, 0, 3)

	allFrom = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	allTo   = time.Date(2099, 12, 31, 0, 0, 0, 0, time.UTC)
)

// at is a time of a day.
func at(day time.Time, hh, mm, ss int, ms int) time.Time {
	return day.Add(time.Duration(hh)*time.Hour + time.Duration(mm)*time.Minute +
		time.Duration(ss)*time.Second + time.Duration(ms)*time.Millisecond)
}

// visitor is a visitor key as the application makes it: 32 hex digits.
func visitor(n int) string { return fmt.Sprintf("%032x", 0x5eed_0000+n) }

// Links and workspaces of the fixture. link-3 is in another workspace.
const (
	link1, link2, link3, link4 = "link-1", "link-2", "link-3", "link-4"
	ws1, ws2                   = "ws-1", "ws-2"
)

// fixture is the log of the fixture's ten clicks, in the order the event
// store took them. Comments say what each click is there to test.
func fixture() *eventLog {
	l := newLog()
	on := func(linkID string, c click.Recorded) {
		c.LinkID = linkID
		c.WorkspaceID = map[string]string{link1: ws1, link2: ws1, link3: ws2}[linkID]
		c.Code = "code-" + linkID
		if c.Source == "" {
			c.Source = click.SourceRedirect
			c.Destination = "https://example.com/" + linkID + "?utm_source=newsletter"
		}
		l.click(c)
	}
	// link-2, day 1: nothing known about the visitor, no visitor key (an
	// API access). It counts in totals and from_app false only.
	on(link2, click.Recorded{Timestamp: at(day1, 8, 30, 0, 0), Source: click.SourceAPI})
	// link-3, day 1: another workspace, a visitor key that clicks link-1
	// and link-2 too: it must not count in ws-1 through link-3.
	on(link3, click.Recorded{Timestamp: at(day1, 9, 0, 0, 0), QR: true, Visitor: visitor(1),
		Browser: "Edge", BrowserVersion: "122.0", OS: "Windows", OSVersion: "11", DeviceType: "desktop", Device: "Windows PC",
		FromApp: true, App: "LinkedIn", Language: "en-GB", Referrer: "linkedin.com", ReferrerURL: "https://www.linkedin.com/feed/",
		Country: "GB", Continent: "EU", City: "London", Region: "ENG"})
	// link-1, day 1.
	on(link1, click.Recorded{Timestamp: at(day1, 10, 0, 0, 250), Visitor: visitor(1),
		Browser: "Chrome", BrowserVersion: "123.0.6312.52", OS: "iOS", OSVersion: "17.4", DeviceType: "mobile", Device: "iPhone",
		Language: "en", Referrer: "twitter.com", ReferrerURL: "https://twitter.com/someone/status/1",
		Country: "US", Continent: "NA", City: "New York", Region: "NY", TrackingID: "tid-1", ProjectID: "project-1"})
	// Taken before the previous click, appended after it (two requests at
	// once): the day's first click is this one, at 09:59:59 (times count
	// to the second).
	on(link1, click.Recorded{Timestamp: at(day1, 9, 59, 59, 900), QR: true, Visitor: visitor(1),
		Browser: "Safari", BrowserVersion: "17.4", OS: "iOS", OSVersion: "17.4", DeviceType: "mobile", Device: "iPhone",
		Language: "en", Country: "US", Continent: "NA", City: "New York", Region: "NY", ProjectID: "project-1"})
	// link-2, day 1.
	on(link2, click.Recorded{Timestamp: at(day1, 12, 0, 0, 0), Visitor: visitor(3),
		Browser: "Chrome", BrowserVersion: "124.0", OS: "macOS", OSVersion: "14.2", DeviceType: "desktop", Device: "Mac",
		Language: "en", Referrer: "google.com", ReferrerURL: "https://google.com/",
		Country: "US", Continent: "NA", City: "San Francisco", Region: "CA", DomainID: "domain-1"})
	// An OS version without an OS (counted bare), an app without
	// from_app (not counted in app), no language.
	on(link2, click.Recorded{Timestamp: at(day1, 13, 0, 0, 0), Visitor: visitor(1),
		OSVersion: "5.1", DeviceType: "tablet", App: "TikTok"})
	// From an app nobody knows (from_app true, no app), an OS without a
	// version (no os_version), no device type (no device_and_os), a
	// country without a city.
	on(link2, click.Recorded{Timestamp: at(day1, 14, 0, 0, 0), Visitor: visitor(5),
		Browser: "Facebook", OS: "Android", FromApp: true, Language: "de", Country: "DE", Continent: "EU"})
	// link-1, the last millisecond of day 1: counts on day 1, and as
	// 23:59:59. CHROME in capitals is a Chrome click.
	on(link1, click.Recorded{Timestamp: at(day1, 23, 59, 59, 999), Visitor: visitor(2),
		Browser: "CHROME", BrowserVersion: "123.0", OS: "Android", OSVersion: "14", DeviceType: "mobile", Device: "Android",
		FromApp: true, App: "Instagram", Language: "de", Referrer: "instagram.com", ReferrerURL: "https://l.instagram.com/",
		Country: "DE", Continent: "EU", City: "Berlin", Region: "BE"})
	// link-1, the first instant of day 2: the same visitor key counts
	// again on a new day.
	on(link1, click.Recorded{Timestamp: day2, Visitor: visitor(1), Source: click.SourceAPI,
		Browser: "Firefox", BrowserVersion: "124.0", OS: "Windows", OSVersion: "10", DeviceType: "desktop", Device: "Windows PC",
		Language: "fr", Country: "FR", Continent: "EU", City: "Paris", Region: "IDF"})
	// link-1, day 4 (day 3 has no click), a QR scan; lower-case browser and
	// OS names count as Chrome and Android clicks, and stay as they are in
	// the breakdowns.
	on(link1, click.Recorded{Timestamp: at(day4, 18, 0, 0, 500), QR: true, Visitor: visitor(4),
		Browser: "chrome", BrowserVersion: "122.0", OS: "android", OSVersion: "13", DeviceType: "tablet", Device: "Android",
		Language: "pt", Country: "BR", Continent: "SA", City: "São Paulo", Region: "SP"})
	return l
}

type m = map[string]int64

// fixtureRecords are the records of fixture(), counted by hand.
func fixtureRecords() records {
	l1d1 := queries.DailyStats{
		Date: "2026-03-30", LinkID: link1, WorkspaceID: ws1,
		FirstClick: at(day1, 9, 59, 59, 0), LastUpdated: at(day1, 23, 59, 59, 0),
		TotalClicks: 3, UniqueVisitors: 2, QRScans: 1, DirectClicks: 2,
		ChromeClicks: 2, IOSClicks: 2, AndroidClicks: 1,
		OS:          m{"iOS": 2, "Android": 1},
		OSVersion:   m{"iOS 17.4": 2, "Android 14": 1},
		City:        m{"New York": 2, "Berlin": 1},
		Language:    m{"en": 2, "de": 1},
		Browser:     m{"Chrome": 1, "Safari": 1, "CHROME": 1},
		Country:     m{"US": 2, "DE": 1},
		Continent:   m{"NA": 2, "EU": 1},
		DeviceAndOS: m{"mobile iOS": 2, "mobile Android": 1},
		App:         m{"Instagram": 1},
		DeviceType:  m{"mobile": 3},
		FromApp:     m{"true": 1, "false": 2},
		Referrer:    m{"twitter.com": 1, "instagram.com": 1},
	}
	l1d2 := queries.DailyStats{
		Date: "2026-03-31", LinkID: link1, WorkspaceID: ws1,
		FirstClick: day2, LastUpdated: day2,
		TotalClicks: 1, UniqueVisitors: 1, QRScans: 0, DirectClicks: 1,
		OS: m{"Windows": 1}, OSVersion: m{"Windows 10": 1}, City: m{"Paris": 1}, Language: m{"fr": 1},
		Browser: m{"Firefox": 1}, Country: m{"FR": 1}, Continent: m{"EU": 1},
		DeviceAndOS: m{"desktop Windows": 1}, App: m{}, DeviceType: m{"desktop": 1},
		FromApp: m{"false": 1}, Referrer: m{},
	}
	l1d4 := queries.DailyStats{
		Date: "2026-04-02", LinkID: link1, WorkspaceID: ws1,
		FirstClick: at(day4, 18, 0, 0, 0), LastUpdated: at(day4, 18, 0, 0, 0),
		TotalClicks: 1, UniqueVisitors: 1, QRScans: 1, DirectClicks: 0,
		ChromeClicks: 1, AndroidClicks: 1,
		OS: m{"android": 1}, OSVersion: m{"android 13": 1}, City: m{"São Paulo": 1}, Language: m{"pt": 1},
		Browser: m{"chrome": 1}, Country: m{"BR": 1}, Continent: m{"SA": 1},
		DeviceAndOS: m{"tablet android": 1}, App: m{}, DeviceType: m{"tablet": 1},
		FromApp: m{"false": 1}, Referrer: m{},
	}
	l2d1 := queries.DailyStats{
		Date: "2026-03-30", LinkID: link2, WorkspaceID: ws1,
		FirstClick: at(day1, 8, 30, 0, 0), LastUpdated: at(day1, 14, 0, 0, 0),
		TotalClicks: 4, UniqueVisitors: 3, QRScans: 0, DirectClicks: 4,
		ChromeClicks: 1, AndroidClicks: 1,
		OS:          m{"macOS": 1, "Android": 1},
		OSVersion:   m{"macOS 14.2": 1, "5.1": 1},
		City:        m{"San Francisco": 1},
		Language:    m{"en": 1, "de": 1},
		Browser:     m{"Chrome": 1, "Facebook": 1},
		Country:     m{"US": 1, "DE": 1},
		Continent:   m{"NA": 1, "EU": 1},
		DeviceAndOS: m{"desktop macOS": 1},
		App:         m{},
		DeviceType:  m{"desktop": 1, "tablet": 1},
		FromApp:     m{"true": 1, "false": 3},
		Referrer:    m{"google.com": 1},
	}
	l3d1 := queries.DailyStats{
		Date: "2026-03-30", LinkID: link3, WorkspaceID: ws2,
		FirstClick: at(day1, 9, 0, 0, 0), LastUpdated: at(day1, 9, 0, 0, 0),
		TotalClicks: 1, UniqueVisitors: 1, QRScans: 1, DirectClicks: 0,
		OS: m{"Windows": 1}, OSVersion: m{"Windows 11": 1}, City: m{"London": 1}, Language: m{"en-GB": 1},
		Browser: m{"Edge": 1}, Country: m{"GB": 1}, Continent: m{"EU": 1},
		DeviceAndOS: m{"desktop Windows": 1}, App: m{"LinkedIn": 1}, DeviceType: m{"desktop": 1},
		FromApp: m{"true": 1}, Referrer: m{"linkedin.com": 1},
	}
	// ws-1 on day 1: link-1 and link-2. Visitor 1 clicked both: it is one
	// unique visitor of the workspace (1, 2, 3 and 5: four).
	w1d1 := queries.DailyStats{
		Date: "2026-03-30", WorkspaceID: ws1,
		FirstClick: at(day1, 8, 30, 0, 0), LastUpdated: at(day1, 23, 59, 59, 0),
		TotalClicks: 7, UniqueVisitors: 4, QRScans: 1, DirectClicks: 6,
		ChromeClicks: 3, IOSClicks: 2, AndroidClicks: 2,
		OS:          m{"iOS": 2, "Android": 2, "macOS": 1},
		OSVersion:   m{"iOS 17.4": 2, "Android 14": 1, "macOS 14.2": 1, "5.1": 1},
		City:        m{"New York": 2, "Berlin": 1, "San Francisco": 1},
		Language:    m{"en": 3, "de": 2},
		Browser:     m{"Chrome": 2, "Safari": 1, "CHROME": 1, "Facebook": 1},
		Country:     m{"US": 3, "DE": 2},
		Continent:   m{"NA": 3, "EU": 2},
		DeviceAndOS: m{"mobile iOS": 2, "mobile Android": 1, "desktop macOS": 1},
		App:         m{"Instagram": 1},
		DeviceType:  m{"mobile": 3, "desktop": 1, "tablet": 1},
		FromApp:     m{"true": 2, "false": 5},
		Referrer:    m{"twitter.com": 1, "instagram.com": 1, "google.com": 1},
	}
	return records{
		links: map[string][]queries.DailyStats{
			link1: {l1d1, l1d2, l1d4},
			link2: {l2d1},
			link3: {l3d1},
			link4: nil, // never clicked
		},
		workspaces: map[string][]queries.DailyStats{
			// On days 2 and 4 only link-1 of ws-1 was clicked.
			ws1: {w1d1, workspaceOf(l1d2), workspaceOf(l1d4)},
			ws2: {workspaceOf(l3d1)},
		},
	}
}

// workspaceOf is the workspace record of a day on which one link of the
// workspace was clicked: the link's record without its link id.
func workspaceOf(d queries.DailyStats) queries.DailyStats {
	d.LinkID = ""
	return d
}
