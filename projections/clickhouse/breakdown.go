package clickhouse

import (
	"time"

	"github.com/linkd/linkd/domain/click"
	"github.com/linkd/linkd/queries"
)

// A dimension of the breakdown tables: its name in the dimension column, the
// value a click gives it ("" means the click does not count in it), and the
// map of queries.DailyStats it fills.
type dimension struct {
	name  string
	value func(c *click.Recorded) string
	field func(s *queries.DailyStats) *map[string]int64
}

// dimensions are the breakdowns of the daily records (spec 2.7), with the
// same keys as the embedded analytics projection. Empty values (an unknown
// OS, no city database, no referrer) are not counted; from_app always is.
//   - os_version: "<os> <version>" ("iOS 17.4"), the bare version when the
//     OS is unknown, nothing without a version;
//   - device_and_os: "<device_type> <os>" ("mobile iOS") when both are known;
//   - app: only clicks from an app (from_app) whose app is known.
var dimensions = []dimension{
	{"os", func(c *click.Recorded) string { return c.OS },
		func(s *queries.DailyStats) *map[string]int64 { return &s.OS }},
	{"os_version", func(c *click.Recorded) string {
		if c.OS == "" || c.OSVersion == "" {
			return c.OSVersion
		}
		return c.OS + " " + c.OSVersion
	},
		func(s *queries.DailyStats) *map[string]int64 { return &s.OSVersion }},
	{"city", func(c *click.Recorded) string { return c.City },
		func(s *queries.DailyStats) *map[string]int64 { return &s.City }},
	{"language", func(c *click.Recorded) string { return c.Language },
		func(s *queries.DailyStats) *map[string]int64 { return &s.Language }},
	{"browser", func(c *click.Recorded) string { return c.Browser },
		func(s *queries.DailyStats) *map[string]int64 { return &s.Browser }},
	{"country", func(c *click.Recorded) string { return c.Country },
		func(s *queries.DailyStats) *map[string]int64 { return &s.Country }},
	{"continent", func(c *click.Recorded) string { return c.Continent },
		func(s *queries.DailyStats) *map[string]int64 { return &s.Continent }},
	{"device_and_os", func(c *click.Recorded) string {
		if c.DeviceType == "" || c.OS == "" {
			return ""
		}
		return c.DeviceType + " " + c.OS
	},
		func(s *queries.DailyStats) *map[string]int64 { return &s.DeviceAndOS }},
	{"app", func(c *click.Recorded) string {
		if !c.FromApp {
			return ""
		}
		return c.App
	},
		func(s *queries.DailyStats) *map[string]int64 { return &s.App }},
	{"device_type", func(c *click.Recorded) string { return c.DeviceType },
		func(s *queries.DailyStats) *map[string]int64 { return &s.DeviceType }},
	{"from_app", func(c *click.Recorded) string {
		if c.FromApp {
			return "true"
		}
		return "false"
	}, func(s *queries.DailyStats) *map[string]int64 { return &s.FromApp }},
	{"referrer", func(c *click.Recorded) string { return c.Referrer },
		func(s *queries.DailyStats) *map[string]int64 { return &s.Referrer }},
}

var dimensionIndex = func() map[string]int {
	m := make(map[string]int, len(dimensions))
	for i, d := range dimensions {
		m[d.name] = i
	}
	return m
}()

// breakdownRows are pre-aggregated rows of a breakdown table, as columns.
type breakdownRows struct {
	key       []string // link_id or workspace_id
	day       []time.Time
	dimension []int8 // index in dimensions + 1: the Enum8 value
	value     []string
	clicks    []uint64
	insertID  []uint64
}

const breakdownInsertColumns = "date, dimension, value, clicks, insert_id" // after the key

func (b *breakdownRows) columns() []any {
	return []any{b.key, b.day, b.dimension, b.value, b.clicks, b.insertID}
}

// interner numbers strings, so that the counting map has small keys
// without pointers (the hot loop of a batch: about 11 cells per click).
type interner struct {
	idx   map[string]int32
	names []string
}

func (in *interner) id(s string) int32 {
	if i, ok := in.idx[s]; ok {
		return i
	}
	i := int32(len(in.names))
	in.idx[s] = i
	in.names = append(in.names, s)
	return i
}

// aggregateBreakdown counts the clicks of a unit per link, day, dimension
// and value, and per workspace, day, dimension and value.
func aggregateBreakdown(rows []clickRow, insertID uint64) (link, workspace *breakdownRows) {
	type cell struct {
		key, value int32
		day        int32 // days since 1970-01-01
		dim        int8
	}
	var (
		ids, vals      = interner{idx: map[string]int32{}}, interner{idx: map[string]int32{}}
		linkN, wsN     = make(map[cell]uint64, len(rows)*4), make(map[cell]uint64, len(rows))
		linkOrd, wsOrd []cell
	)
	add := func(m map[cell]uint64, order *[]cell, k cell) {
		n, ok := m[k]
		if !ok {
			*order = append(*order, k)
		}
		m[k] = n + 1
	}
	for i := range rows {
		r := &rows[i]
		li, wi := ids.id(r.linkID), ids.id(r.c.WorkspaceID)
		day := int32(r.day.Unix() / 86400)
		for di, d := range dimensions {
			v := d.value(r.c)
			if v == "" {
				continue
			}
			vi := vals.id(v)
			add(linkN, &linkOrd, cell{key: li, value: vi, day: day, dim: int8(di + 1)})
			add(wsN, &wsOrd, cell{key: wi, value: vi, day: day, dim: int8(di + 1)})
		}
	}
	build := func(m map[cell]uint64, order []cell) *breakdownRows {
		n := len(order)
		out := &breakdownRows{
			key: make([]string, n), day: make([]time.Time, n), dimension: make([]int8, n),
			value: make([]string, n), clicks: make([]uint64, n), insertID: make([]uint64, n),
		}
		for i, k := range order {
			out.key[i] = ids.names[k.key]
			out.day[i] = time.Unix(int64(k.day)*86400, 0).UTC()
			out.dimension[i] = k.dim
			out.value[i] = vals.names[k.value]
			out.clicks[i] = m[k]
			out.insertID[i] = insertID
		}
		return out
	}
	return build(linkN, linkOrd), build(wsN, wsOrd)
}
