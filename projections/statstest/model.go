package statstest

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/linkd/linkd/domain/click"
	"github.com/linkd/linkd/domain/conversion"
	"github.com/linkd/linkd/eventstore"
	"github.com/linkd/linkd/projections"
	"github.com/linkd/linkd/queries"
)

// Model is the statistics read model in memory, counted the plainest way:
// it keeps every click it applied and counts the records of a query from
// them, exactly (unique visitors too). It decodes clicks with
// encoding/json, not with the stores' fast decoders. The contract suite
// runs on it (model_test.go), so it gives the records written by hand in
// fixture.go; store-specific tests compare a store with a Model fed the
// same events (Check).
//
// It implements Store. The zero value is not ready: use NewModel.
type Model struct {
	mu         sync.Mutex
	checkpoint eventstore.Position
	versions   map[string]uint64 // stream -> last version applied
	clicks     []modelClick
	convs      []modelConversion
}

// modelConversion is a lead (currency "") or a sale.
type modelConversion struct {
	linkID, workspaceID string
	day                 string
	sale                bool
	minor               int64
	currency            string
}

type modelClick struct {
	linkID string
	ts     time.Time // UTC, whole seconds
	c      click.Recorded
}

// NewModel returns an empty Model.
func NewModel() *Model { return &Model{versions: map[string]uint64{}} }

var _ Store = (*Model)(nil)

// Apply applies the events of click streams not applied yet (by stream
// version); it skips events of other types and clicks it cannot decode.
func (m *Model) Apply(ctx context.Context, events []projections.Event) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, ev := range events {
		if m.checkpoint.Less(ev.Position) {
			m.checkpoint = ev.Position
		}
		conv := strings.HasPrefix(ev.Stream, conversion.CustomerStreamPrefix)
		if !strings.HasPrefix(ev.Stream, click.StreamPrefix) && !conv {
			continue
		}
		if last, ok := m.versions[ev.Stream]; ok && ev.Version <= last {
			continue
		}
		m.versions[ev.Stream] = ev.Version
		if conv {
			switch ev.Type {
			case conversion.EventLeadTracked:
				var e conversion.LeadTracked
				if json.Unmarshal(ev.Data, &e) == nil {
					m.convs = append(m.convs, modelConversion{linkID: e.LinkID, workspaceID: e.WorkspaceID, day: e.Timestamp.UTC().Format(time.DateOnly)})
				}
			case conversion.EventSaleTracked:
				var e conversion.SaleTracked
				if json.Unmarshal(ev.Data, &e) == nil {
					m.convs = append(m.convs, modelConversion{linkID: e.LinkID, workspaceID: e.WorkspaceID, day: e.Timestamp.UTC().Format(time.DateOnly),
						sale: true, minor: e.AmountMinor, currency: e.Currency})
				}
			}
			continue
		}
		if ev.Type != click.EventRecorded {
			continue
		}
		var c click.Recorded
		if err := json.Unmarshal(ev.Data, &c); err != nil {
			continue
		}
		ts := c.Timestamp
		if ts.IsZero() {
			ts = ev.Time
		}
		m.clicks = append(m.clicks, modelClick{
			linkID: strings.TrimPrefix(ev.Stream, click.StreamPrefix),
			ts:     ts.UTC().Truncate(time.Second),
			c:      c,
		})
	}
	return nil
}

// Checkpoint is the highest position applied.
func (m *Model) Checkpoint(context.Context) (eventstore.Position, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.checkpoint, nil
}

// Reset forgets everything.
func (m *Model) Reset(context.Context) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.checkpoint, m.versions, m.clicks, m.convs = eventstore.Start, map[string]uint64{}, nil, nil
	return nil
}

// LinkDaily counts the link's records.
func (m *Model) LinkDaily(_ context.Context, linkID string, from, to time.Time) ([]queries.DailyStats, error) {
	return m.daily(from, to, linkID, func(c *modelClick) bool { return linkID != "" && c.linkID == linkID },
		func(c *modelConversion) bool { return linkID != "" && c.linkID == linkID }), nil
}

// WorkspaceDaily counts the workspace's records.
func (m *Model) WorkspaceDaily(_ context.Context, workspaceID string, from, to time.Time) ([]queries.DailyStats, error) {
	return m.daily(from, to, "", func(c *modelClick) bool { return workspaceID != "" && c.c.WorkspaceID == workspaceID },
		func(c *modelConversion) bool { return workspaceID != "" && c.workspaceID == workspaceID }), nil
}

// LinkClicked reports whether the link has a click.
func (m *Model) LinkClicked(_ context.Context, linkID string) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.ContainsFunc(m.clicks, func(c modelClick) bool { return linkID != "" && c.linkID == linkID }), nil
}

// Links are the links with clicks, sorted.
func (m *Model) Links() []string {
	return m.ids(func(c *modelClick) string { return c.linkID })
}

// Workspaces are the workspaces with clicks, sorted.
func (m *Model) Workspaces() []string {
	return m.ids(func(c *modelClick) string { return c.c.WorkspaceID })
}

func (m *Model) ids(id func(c *modelClick) string) []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	set := map[string]bool{}
	for i := range m.clicks {
		if v := id(&m.clicks[i]); v != "" {
			set[v] = true
		}
	}
	return slices.Sorted(maps.Keys(set))
}

// Check fails t unless s answers as m does over [from, to] for every link
// and workspace with clicks in m: the same records (Diff) and LinkClicked.
func (m *Model) Check(t testing.TB, ctx context.Context, s Reader, from, to time.Time) {
	t.Helper()
	for _, id := range m.Links() {
		got, err := s.LinkDaily(ctx, id, from, to)
		if err != nil {
			t.Fatalf("LinkDaily(%q): %v", id, err)
		}
		want, _ := m.LinkDaily(ctx, id, from, to)
		if d := Diff(got, want); d != "" {
			t.Errorf("LinkDaily(%q): %s", id, d)
		}
		if ok, err := s.LinkClicked(ctx, id); err != nil || !ok {
			t.Errorf("LinkClicked(%q) = %v, %v; want true", id, ok, err)
		}
	}
	for _, id := range m.Workspaces() {
		got, err := s.WorkspaceDaily(ctx, id, from, to)
		if err != nil {
			t.Fatalf("WorkspaceDaily(%q): %v", id, err)
		}
		want, _ := m.WorkspaceDaily(ctx, id, from, to)
		if d := Diff(got, want); d != "" {
			t.Errorf("WorkspaceDaily(%q): %s", id, d)
		}
	}
}

// daily counts the records of [from, to] of the clicks keep selects.
// linkID is the LinkID of the records ("" for workspace records).
//
// Conversions keepConv selects count on the day they were recorded; a day
// with conversions and no click has a record with only them (and, for a
// link, no workspace: the query names the link's).
func (m *Model) daily(from, to time.Time, linkID string, keep func(c *modelClick) bool, keepConv func(c *modelConversion) bool) []queries.DailyStats {
	m.mu.Lock()
	defer m.mu.Unlock()
	first, last := from.UTC().Format(time.DateOnly), to.UTC().Format(time.DateOnly)
	byDay := map[string]*queries.DailyStats{}
	visitors := map[string]map[string]bool{}
	for i := range m.clicks {
		mc := &m.clicks[i]
		day := mc.ts.Format(time.DateOnly)
		if !keep(mc) || day < first || day > last {
			continue
		}
		c := &mc.c
		d := byDay[day]
		if d == nil {
			d = &queries.DailyStats{
				Date: day, LinkID: linkID, WorkspaceID: c.WorkspaceID, FirstClick: mc.ts, LastUpdated: mc.ts,
				OS: m0(), OSVersion: m0(), City: m0(), Language: m0(), Browser: m0(), Country: m0(),
				Continent: m0(), DeviceAndOS: m0(), App: m0(), DeviceType: m0(), FromApp: m0(), Referrer: m0(),
			}
			byDay[day] = d
			visitors[day] = map[string]bool{}
		}
		// A link record names the workspace of the day's last click (of
		// clicks in the same second, the greatest workspace id): a link
		// may move to another workspace during a day.
		if mc.ts.After(d.LastUpdated) || mc.ts.Equal(d.LastUpdated) && c.WorkspaceID > d.WorkspaceID {
			d.WorkspaceID = c.WorkspaceID
		}
		d.TotalClicks++
		if c.Visitor != "" {
			visitors[day][c.Visitor] = true
		}
		if c.QR {
			d.QRScans++
		} else {
			d.DirectClicks++
		}
		if asciiEqualFold(c.Browser, "chrome") {
			d.ChromeClicks++
		}
		if asciiEqualFold(c.OS, "ios") {
			d.IOSClicks++
		}
		if asciiEqualFold(c.OS, "android") {
			d.AndroidClicks++
		}
		if mc.ts.Before(d.FirstClick) {
			d.FirstClick = mc.ts
		}
		if mc.ts.After(d.LastUpdated) {
			d.LastUpdated = mc.ts
		}
		count := func(mp map[string]int64, k string) {
			if k != "" {
				mp[k]++
			}
		}
		count(d.OS, c.OS)
		if c.OS != "" && c.OSVersion != "" {
			count(d.OSVersion, c.OS+" "+c.OSVersion)
		} else {
			count(d.OSVersion, c.OSVersion)
		}
		count(d.City, c.City)
		count(d.Language, c.Language)
		count(d.Browser, c.Browser)
		count(d.Country, c.Country)
		count(d.Continent, c.Continent)
		if c.DeviceType != "" && c.OS != "" {
			count(d.DeviceAndOS, c.DeviceType+" "+c.OS)
		}
		if c.FromApp {
			count(d.App, c.App)
		}
		count(d.DeviceType, c.DeviceType)
		count(d.FromApp, strconv.FormatBool(c.FromApp))
		count(d.Referrer, c.Referrer)
	}
	for i := range m.convs {
		cv := &m.convs[i]
		if !keepConv(cv) || cv.day < first || cv.day > last {
			continue
		}
		d := byDay[cv.day]
		if d == nil {
			d = &queries.DailyStats{Date: cv.day, LinkID: linkID}
			if linkID == "" {
				d.WorkspaceID = cv.workspaceID
			}
			byDay[cv.day] = d
		}
		if d.Revenue == nil {
			d.Revenue = map[string]int64{}
		}
		if cv.sale {
			d.Sales++
			d.Revenue[cv.currency] += cv.minor
		} else {
			d.Leads++
		}
	}
	out := []queries.DailyStats{}
	for _, day := range slices.Sorted(maps.Keys(byDay)) {
		d := byDay[day]
		d.UniqueVisitors = int64(len(visitors[day]))
		out = append(out, *d)
	}
	return out
}

func m0() map[string]int64 { return map[string]int64{} }

// asciiEqualFold reports whether a and b are equal but for the case of
// ASCII letters.
func asciiEqualFold(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range len(a) {
		x, y := a[i], b[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}
