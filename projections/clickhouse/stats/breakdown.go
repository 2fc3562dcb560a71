package stats

import (
	"strings"
	"time"

	"github.com/go-faster/city"

	"github.com/linkd/linkd/domain/click"
	ch "github.com/linkd/linkd/projections/clickhouse"
	"github.com/linkd/linkd/queries"
)

// A dimension of the breakdowns: its name (in breakdown_values.dimension),
// the value a click gives it, and the map of queries.DailyStats it fills.
//
// value returns the value in up to two parts: a alone, or "a b" when both
// are set (os_version, device_and_os); ok is false when the click does not
// count in the dimension (an empty value). Two parts let the projector look
// up a value's key without building the string.
type dimension struct {
	name  string
	value func(c *click.Recorded) (a, b string, ok bool)
	field func(s *queries.DailyStats) *map[string]int64
}

func one(v string) (string, string, bool) { return v, "", v != "" }

// dimensions are the breakdowns of the daily records (spec 2.7), with the
// same keys as the embedded analytics projection. Empty values (an unknown
// OS, no city database, no referrer) are not counted; from_app always is.
//   - os_version: "<os> <version>" ("iOS 17.4"), the bare version when the
//     OS is unknown, nothing without a version;
//   - device_and_os: "<device_type> <os>" ("mobile iOS") when both are known;
//   - app: only clicks from an app (from_app) whose app is known.
//
// The order is the Enum8 of breakdown_values.dimension: append only.
var dimensions = []dimension{
	{"os", func(c *click.Recorded) (string, string, bool) { return one(c.OS) },
		func(s *queries.DailyStats) *map[string]int64 { return &s.OS }},
	{"os_version", func(c *click.Recorded) (string, string, bool) {
		if c.OS == "" || c.OSVersion == "" {
			return one(c.OSVersion)
		}
		return c.OS, c.OSVersion, true
	},
		func(s *queries.DailyStats) *map[string]int64 { return &s.OSVersion }},
	{"city", func(c *click.Recorded) (string, string, bool) { return one(c.City) },
		func(s *queries.DailyStats) *map[string]int64 { return &s.City }},
	{"language", func(c *click.Recorded) (string, string, bool) { return one(c.Language) },
		func(s *queries.DailyStats) *map[string]int64 { return &s.Language }},
	{"browser", func(c *click.Recorded) (string, string, bool) { return one(c.Browser) },
		func(s *queries.DailyStats) *map[string]int64 { return &s.Browser }},
	{"country", func(c *click.Recorded) (string, string, bool) { return one(c.Country) },
		func(s *queries.DailyStats) *map[string]int64 { return &s.Country }},
	{"continent", func(c *click.Recorded) (string, string, bool) { return one(c.Continent) },
		func(s *queries.DailyStats) *map[string]int64 { return &s.Continent }},
	{"device_and_os", func(c *click.Recorded) (string, string, bool) {
		if c.DeviceType == "" || c.OS == "" {
			return "", "", false
		}
		return c.DeviceType, c.OS, true
	},
		func(s *queries.DailyStats) *map[string]int64 { return &s.DeviceAndOS }},
	{"app", func(c *click.Recorded) (string, string, bool) {
		if !c.FromApp {
			return "", "", false
		}
		return one(c.App)
	},
		func(s *queries.DailyStats) *map[string]int64 { return &s.App }},
	{"device_type", func(c *click.Recorded) (string, string, bool) { return one(c.DeviceType) },
		func(s *queries.DailyStats) *map[string]int64 { return &s.DeviceType }},
	{"from_app", func(c *click.Recorded) (string, string, bool) {
		if c.FromApp {
			return "true", "", true
		}
		return "false", "", true
	}, func(s *queries.DailyStats) *map[string]int64 { return &s.FromApp }},
	{"referrer", func(c *click.Recorded) (string, string, bool) { return one(c.Referrer) },
		func(s *queries.DailyStats) *map[string]int64 { return &s.Referrer }},
}

// joinValue is the value of parts a and b.
func joinValue(a, b string) string {
	if b == "" {
		return a
	}
	return a + " " + b
}

// valueKey is the key of a dimension's value in the breakdown maps and in
// breakdown_values: cityHash64('<dimension>:<value>'), which an analyst can
// compute in SQL as well. city.CH64 is ClickHouse's cityHash64.
func valueKey(dim int, value string) uint64 {
	buf := make([]byte, 0, len(dimensions[dim].name)+1+len(value))
	buf = append(append(append(buf, dimensions[dim].name...), ':'), value...)
	return city.CH64(buf)
}

// dictEntry is a row of breakdown_values.
type dictEntry struct {
	key   uint64
	dim   int8 // index in dimensions
	value string
}

// keyer gives the values of the dimensions a dense id (the index of their
// key in keys), and remembers which entries of breakdown_values it has
// made, so that each is written once per process (writing one again is
// harmless: breakdown_values is a ReplacingMergeTree). One map per
// dimension, by the value's parts: no string is built for a value seen
// before. Ids stay valid until forget or trim, which only run when nothing
// pending refers to them.
type keyer struct {
	one   []map[string]uint32    // dimensions of one part, by value
	two   []map[[2]string]uint32 // dimensions of two parts
	keys  []uint64               // id -> key
	fresh []dictEntry            // made since the last take
	// byKey detects a collision of two values on one 64-bit key (about one
	// chance in 10^8 for a million distinct values): it is logged.
	byKey     map[uint64]dictEntry
	collision func(a, b dictEntry)
}

const keyerMax = 1 << 20

func newKeyer(collision func(a, b dictEntry)) *keyer {
	k := &keyer{collision: collision}
	k.forget()
	return k
}

func (k *keyer) id(dim int, a, b string) uint32 {
	if b == "" {
		if v, ok := k.one[dim][a]; ok {
			return v
		}
	} else if v, ok := k.two[dim][[2]string{a, b}]; ok {
		return v
	}
	// The maps keep copies: a and b may be substrings of whole event bodies.
	a, b = strings.Clone(a), strings.Clone(b)
	e := dictEntry{dim: int8(dim), value: joinValue(a, b)}
	e.key = valueKey(dim, e.value)
	id := uint32(len(k.keys))
	k.keys = append(k.keys, e.key)
	if b == "" {
		k.one[dim][a] = id
	} else {
		k.two[dim][[2]string{a, b}] = id
	}
	if prev, ok := k.byKey[e.key]; ok && (prev.dim != e.dim || prev.value != e.value) && k.collision != nil {
		k.collision(prev, e)
	}
	k.byKey[e.key] = e
	k.fresh = append(k.fresh, e)
	return id
}

// take returns the entries made since the last take.
func (k *keyer) take() []dictEntry {
	out := k.fresh
	k.fresh = nil
	return out
}

// trim bounds the memory of the keyer; it runs when no pending cell refers
// to its ids.
func (k *keyer) trim() {
	if len(k.keys) >= keyerMax && len(k.fresh) == 0 {
		k.forget()
	}
}

// forget makes the keyer write every entry again (after a failure, when it
// is not known which entries reached ClickHouse).
func (k *keyer) forget() {
	k.one = make([]map[string]uint32, len(dimensions))
	k.two = make([]map[[2]string]uint32, len(dimensions))
	for i := range dimensions {
		k.one[i] = map[string]uint32{}
		k.two[i] = map[[2]string]uint32{}
	}
	k.keys = nil
	k.byKey = map[uint64]dictEntry{}
	k.fresh = nil
}

// counts are the clicks per value id of one cell: a short list searched
// linearly (most cells hold a few clicks); once long, indexed by a map, or
// by an array over the ids (dense, index+1 in kv) when the keyer has few
// ids for the values of the cell (at most denseRatio times as many), which
// bounds its memory by that of kv's.
type counts struct {
	kv    []idCount
	idx   map[uint32]int32
	dense []int32
}

type idCount struct{ id, n uint32 }

const (
	countsIndexAt = 32
	denseRatio    = 8
)

// add counts a click for id; nkeys is the number of ids of the keyer.
func (c *counts) add(id uint32, nkeys int) {
	switch {
	case c.dense != nil && int(id) >= len(c.dense) && nkeys > denseRatio*len(c.kv):
		// The keyer grew: back to a map.
		c.dense = nil
		c.idx = make(map[uint32]int32, 2*len(c.kv))
		for i := range c.kv {
			c.idx[c.kv[i].id] = int32(i)
		}
		c.idx[id] = int32(len(c.kv))
	case c.dense != nil:
		if int(id) >= len(c.dense) {
			c.dense = append(c.dense, make([]int32, max(nkeys, int(id)+1)-len(c.dense))...)
		}
		if i := c.dense[id]; i > 0 {
			c.kv[i-1].n++
			return
		}
		c.dense[id] = int32(len(c.kv)) + 1
	case c.idx != nil:
		if i, ok := c.idx[id]; ok {
			c.kv[i].n++
			return
		}
		if nkeys <= denseRatio*len(c.kv) {
			c.toDense(nkeys)
			c.dense[id] = int32(len(c.kv)) + 1
		} else {
			c.idx[id] = int32(len(c.kv))
		}
	default:
		for i := range c.kv {
			if c.kv[i].id == id {
				c.kv[i].n++
				return
			}
		}
		if len(c.kv) == countsIndexAt {
			if nkeys <= denseRatio*len(c.kv) {
				c.toDense(nkeys)
				c.dense[id] = int32(len(c.kv)) + 1
				break
			}
			c.idx = make(map[uint32]int32, 4*countsIndexAt)
			for i := range c.kv {
				c.idx[c.kv[i].id] = int32(i)
			}
			c.idx[id] = int32(len(c.kv))
		}
	}
	if c.kv == nil {
		c.kv = make([]idCount, 0, 16)
	}
	c.kv = append(c.kv, idCount{id, 1})
}

func (c *counts) toDense(nkeys int) {
	c.idx = nil
	c.dense = make([]int32, nkeys)
	for i := range c.kv {
		c.dense[c.kv[i].id] = int32(i) + 1
	}
}

// cellKey is a row of a breakdown table: a link or workspace, and a day
// (days since 1970-01-01).
type cellKey struct {
	key string
	day int32
}

// breakdowns count clicks per cell and value key, for links and for
// workspaces: one row per cell in link_clicks_daily_breakdown_v2 and
// workspace_clicks_daily_breakdown_v2.
type breakdowns struct {
	link, workspace map[cellKey]*counts
	linkOrder       []cellKey
	wsOrder         []cellKey
}

func newBreakdowns() *breakdowns {
	return &breakdowns{link: map[cellKey]*counts{}, workspace: map[cellKey]*counts{}}
}

func (b *breakdowns) empty() bool { return len(b.linkOrder) == 0 && len(b.wsOrder) == 0 }

func cell(m map[cellKey]*counts, order *[]cellKey, k cellKey) *counts {
	c, ok := m[k]
	if !ok {
		c = &counts{}
		m[k] = c
		*order = append(*order, k)
	}
	return c
}

// addClick counts one click (its link, workspace and day) in every
// dimension it has a value for.
func (b *breakdowns) addClick(k *keyer, linkID, workspaceID string, day int32, c *click.Recorded) {
	lc := cell(b.link, &b.linkOrder, cellKey{linkID, day})
	wc := cell(b.workspace, &b.wsOrder, cellKey{workspaceID, day})
	for di := range dimensions {
		a, v, ok := dimensions[di].value(c)
		if !ok {
			continue
		}
		id := k.id(di, a, v)
		lc.add(id, len(k.keys))
		wc.add(id, len(k.keys))
	}
}

// breakdownRows are the rows of one breakdown table as columns (the input
// table's): key (link_id or workspace_id), date, keys, counts, insert_id.
type breakdownRows struct {
	key      []string
	day      []time.Time
	keys     [][]uint64
	counts   [][]uint64
	insertID []uint64
}

const breakdownInsertColumns = "date, keys, counts, insert_id" // after the key

// columns are the values of the columns; the arrays go row by row
// (ch.RowByRow).
func (r *breakdownRows) columns() []any {
	return []any{r.key, r.day, ch.RowByRow(r.keys), ch.RowByRow(r.counts), r.insertID}
}

func rowsOf(ky *keyer, m map[cellKey]*counts, order []cellKey, insertID uint64) *breakdownRows {
	n := len(order)
	r := &breakdownRows{
		key: make([]string, n), day: make([]time.Time, n), keys: make([][]uint64, n),
		counts: make([][]uint64, n), insertID: make([]uint64, n),
	}
	total := 0
	for _, k := range order {
		total += len(m[k].kv)
	}
	keys, counts := make([]uint64, 0, total), make([]uint64, 0, total)
	for i, k := range order {
		c := m[k]
		r.key[i] = k.key
		r.day[i] = dayTime(k.day)
		from := len(keys)
		for _, e := range c.kv {
			keys = append(keys, ky.keys[e.id])
			counts = append(counts, uint64(e.n))
		}
		r.keys[i], r.counts[i] = keys[from:len(keys):len(keys)], counts[from:len(counts):len(counts)]
		r.insertID[i] = insertID
	}
	return r
}

func dayTime(d int32) time.Time { return time.Unix(int64(d)*86400, 0).UTC() }

func dayNumber(t time.Time) int32 { return int32(t.Unix() / 86400) }
