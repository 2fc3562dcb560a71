package analytics

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/linkd/linkd/queries"
)

var errCorrupt = errors.New("analytics: corrupt record")

// The breakdown maps of a daily record, in their stored order. New maps are
// appended at the end (the encoding says how many it holds), never inserted.
const (
	mapOS = iota
	mapOSVersion
	mapCity
	mapLanguage
	mapBrowser
	mapCountry
	mapContinent
	mapDeviceAndOS
	mapApp
	mapDeviceType
	mapFromApp
	mapReferrer
	numMaps
)

// record is the pre-aggregated clicks of one link, or one workspace, on one
// UTC day. It is a commutative monoid: merge adds counters and maps, keeps the
// earliest first click and the latest last click (and the workspace of the
// latter: lastClickOf), and unites the visitors, so that records can be
// written as per-batch deltas (Pebble merge operands) in any grouping and
// order and always add up to the same value.
type record struct {
	// workspaceID is the workspace of the last click (a link may move to
	// another workspace during a day): of the clicks of the last second
	// (times count to the second, as in ClickHouse), the greatest id.
	workspaceID string
	first, last int64 // click timestamps, Unix nanoseconds; 0 when empty
	total       int64
	qr          int64 // QR scans; direct clicks are total - qr
	chrome      int64
	ios         int64
	android     int64
	// entries are the breakdown counts. In a normalized record they are
	// sorted by (map, key) with each pair once; addClick appends unsorted
	// ones and normalize puts them in order.
	entries []entry
	dirty   bool
	uniq    uniques
}

// entry is the count of one key of one breakdown map.
type entry struct {
	m   uint8
	key string
	n   int64
}

func cmpEntry(a, b entry) int {
	if a.m != b.m {
		return cmp.Compare(a.m, b.m)
	}
	return strings.Compare(a.key, b.key)
}

const recordFormat = 1

// addClick counts one click whose time is ts (Unix nanoseconds). Its visitor
// is counted by the caller.
func (r *record) addClick(c *clickFields, ts int64) {
	r.addCounters(c, ts)
	breakdowns(c, func(m int, a, b string) {
		if b != "" {
			a += " " + b
		}
		r.entries = append(r.entries, entry{m: uint8(m), key: a, n: 1})
		r.dirty = true
	})
}

// addCounters counts one click in everything but the breakdowns.
func (r *record) addCounters(c *clickFields, ts int64) {
	if r.first == 0 || lastClickOf(r.last, r.workspaceID, ts, c.WorkspaceID) {
		r.workspaceID = c.WorkspaceID
	}
	if r.first == 0 || ts < r.first {
		r.first = ts
	}
	if ts > r.last {
		r.last = ts
	}
	r.total++
	if c.QR {
		r.qr++
	}
	if asciiEqualFold(c.Browser, "chrome") {
		r.chrome++
	}
	switch {
	case asciiEqualFold(c.OS, "ios"):
		r.ios++
	case asciiEqualFold(c.OS, "android"):
		r.android++
	}
}

// asciiEqualFold reports whether s is lower, a lower-case ASCII name, but
// for the case of ASCII letters: what ClickHouse's lower(s) = lower
// compares. strings.EqualFold folds more (Unicode's "ſ" is an "s" to it).
func asciiEqualFold(s, lower string) bool {
	if len(s) != len(lower) {
		return false
	}
	for i := range len(s) {
		c := s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}

// breakdowns calls f with every breakdown key the click counts under: the
// key is a, or a + " " + b when b is not empty. Empty values (unknown) are
// not counted. The maps come in their order (mapOS first): a delta of one
// click then has its ids in order, and batchAgg.finish skips its sort.
func breakdowns(c *clickFields, f func(m int, a, b string)) {
	one := func(m int, v string) {
		if v != "" {
			f(m, v, "")
		}
	}
	one(mapOS, c.OS)
	switch {
	case c.OSVersion == "":
	case c.OS == "":
		f(mapOSVersion, c.OSVersion, "")
	default:
		f(mapOSVersion, c.OS, c.OSVersion)
	}
	one(mapCity, c.City)
	one(mapLanguage, c.Language)
	one(mapBrowser, c.Browser)
	one(mapCountry, c.Country)
	one(mapContinent, c.Continent)
	if c.DeviceType != "" && c.OS != "" {
		f(mapDeviceAndOS, c.DeviceType, c.OS)
	}
	if c.FromApp {
		one(mapApp, c.App)
	}
	one(mapDeviceType, c.DeviceType)
	if c.FromApp {
		f(mapFromApp, "true", "")
	} else {
		f(mapFromApp, "false", "")
	}
	one(mapReferrer, c.Referrer)
}

// normalize sorts the entries and adds up equal ones.
func (r *record) normalize() {
	if !r.dirty {
		return
	}
	r.dirty = false
	slices.SortFunc(r.entries, cmpEntry)
	out := r.entries[:0]
	for _, e := range r.entries {
		if n := len(out); n > 0 && out[n-1].m == e.m && out[n-1].key == e.key {
			out[n-1].n += e.n
			continue
		}
		out = append(out, e)
	}
	clear(r.entries[len(out):])
	r.entries = out
}

// merge adds o to r. It defines what adding records means; Pebble's merger
// does the same on encoded bytes (mergeEncoded), and TestMergeEncoded holds
// the two together.
func (r *record) merge(o *record) {
	if o.first != 0 && (r.first == 0 || lastClickOf(r.last, r.workspaceID, o.last, o.workspaceID)) {
		r.workspaceID = o.workspaceID
	}
	if o.first != 0 && (r.first == 0 || o.first < r.first) {
		r.first = o.first
	}
	if o.last > r.last {
		r.last = o.last
	}
	r.total += o.total
	r.qr += o.qr
	r.chrome += o.chrome
	r.ios += o.ios
	r.android += o.android
	r.normalize()
	o.normalize()
	r.entries = mergeEntries(r.entries, o.entries)
	r.uniq.merge(&o.uniq)
}

// lastClickOf reports whether the last click of b (its time, Unix
// nanoseconds, and workspace) comes after that of a: in a later second, or
// in the same second with a greater workspace id. Seconds, as ClickHouse
// compares them (projections/clickhouse/stats: argMax of workspace_id by last
// click and workspace_id), so that both stores name the same workspace.
func lastClickOf(aLast int64, aWS string, bLast int64, bWS string) bool {
	as, bs := floorSecond(aLast), floorSecond(bLast)
	return bs > as || bs == as && bWS > aWS
}

// floorSecond is the second of a time in Unix nanoseconds, rounded down.
func floorSecond(ns int64) int64 {
	s := ns / 1e9
	if ns%1e9 < 0 {
		s--
	}
	return s
}

// mergeEntries adds two normalized entry lists.
func mergeEntries(a, b []entry) []entry {
	if len(b) == 0 {
		return a
	}
	if len(a) == 0 {
		return append(a, b...)
	}
	out := make([]entry, 0, max(len(a), len(b))+len(b)/4)
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		switch c := cmpEntry(a[i], b[j]); {
		case c < 0:
			out = append(out, a[i])
			i++
		case c > 0:
			out = append(out, b[j])
			j++
		default:
			e := a[i]
			e.n += b[j].n
			out = append(out, e)
			i++
			j++
		}
	}
	out = append(out, a[i:]...)
	return append(out, b[j:]...)
}

// encode appends r to b. Map keys are written in sorted order so that equal
// records encode to equal bytes.
//
//	format byte (1)
//	workspace id: uvarint length, bytes
//	first, last: varint Unix nanoseconds
//	total, qr, chrome, ios, android: uvarint
//	number of maps: uvarint; each map: uvarint entries, then (uvarint key
//	length, key, uvarint count) in key order
//	unique visitors: see uniques.appendTo
func (r *record) encode(b []byte) []byte {
	b = append(b, recordFormat)
	b = appendString(b, r.workspaceID)
	b = binary.AppendVarint(b, r.first)
	b = binary.AppendVarint(b, r.last)
	for _, v := range [...]int64{r.total, r.qr, r.chrome, r.ios, r.android} {
		b = binary.AppendUvarint(b, uint64(v))
	}
	r.normalize()
	b = binary.AppendUvarint(b, numMaps)
	es := r.entries
	for m := range uint8(numMaps) {
		n := 0
		for n < len(es) && es[n].m == m {
			n++
		}
		b = binary.AppendUvarint(b, uint64(n))
		for _, e := range es[:n] {
			b = appendString(b, e.key)
			b = binary.AppendUvarint(b, uint64(e.n))
		}
		es = es[n:]
	}
	return r.uniq.appendTo(b)
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// decoder reads an encoded record, remembering the first error.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.err = errCorrupt
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) varint() int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.err = errCorrupt
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) str() string {
	n := d.uvarint()
	if d.err != nil {
		return ""
	}
	if n > uint64(len(d.b)) {
		d.err = errCorrupt
		return ""
	}
	s := string(d.b[:n])
	d.b = d.b[n:]
	return s
}

// decodeRecord reads what encode wrote. With countOnly the unique visitors
// are only counted, not kept (queries); the count is returned.
func decodeRecord(b []byte, countOnly bool) (*record, int64, error) {
	if len(b) == 0 || b[0] != recordFormat {
		return nil, 0, fmt.Errorf("%w: unknown format", errCorrupt)
	}
	d := decoder{b: b[1:]}
	r := &record{}
	r.workspaceID = d.str()
	r.first = d.varint()
	r.last = d.varint()
	for _, p := range [...]*int64{&r.total, &r.qr, &r.chrome, &r.ios, &r.android} {
		*p = int64(d.uvarint())
	}
	nm := d.uvarint()
	for i := uint64(0); i < nm && d.err == nil; i++ {
		n := d.uvarint()
		if n > uint64(len(d.b)) {
			d.err = errCorrupt
			break
		}
		for j := uint64(0); j < n && d.err == nil; j++ {
			k := d.str()
			v := int64(d.uvarint())
			if i < numMaps { // maps of a newer format are dropped
				r.entries = append(r.entries, entry{m: uint8(i), key: k, n: v})
			}
		}
	}
	if d.err != nil {
		return nil, 0, d.err
	}
	u, cnt, _, err := decodeUniques(d.b, countOnly)
	if err != nil {
		return nil, 0, err
	}
	r.uniq = u
	if !countOnly {
		cnt = r.uniq.count()
	}
	return r, cnt, nil
}

// stats renders r as the daily record of the statistics queries.
func (r *record) stats(day int64, linkID, workspaceID string, unique int64) queries.DailyStats {
	if workspaceID == "" {
		workspaceID = r.workspaceID
	}
	s := queries.DailyStats{
		Date:           dayString(day),
		LinkID:         linkID,
		WorkspaceID:    workspaceID,
		TotalClicks:    r.total,
		UniqueVisitors: unique,
		QRScans:        r.qr,
		DirectClicks:   r.total - r.qr,
		ChromeClicks:   r.chrome,
		IOSClicks:      r.ios,
		AndroidClicks:  r.android,
	}
	// Times are given to the second, as ClickHouse stores them (its
	// DateTime), so that both stores answer alike; they are kept to the
	// nanosecond, and the floor of the earliest is the earliest floor.
	if r.first != 0 {
		s.FirstClick = time.Unix(0, r.first).UTC().Truncate(time.Second)
	}
	if r.last != 0 {
		s.LastUpdated = time.Unix(0, r.last).UTC().Truncate(time.Second)
	}
	var ms [numMaps]map[string]int64
	r.normalize()
	for i := range ms {
		ms[i] = map[string]int64{}
	}
	for _, e := range r.entries {
		ms[e.m][e.key] = e.n
	}
	m := func(i int) map[string]int64 { return ms[i] }
	s.OS = m(mapOS)
	s.OSVersion = m(mapOSVersion)
	s.City = m(mapCity)
	s.Language = m(mapLanguage)
	s.Browser = m(mapBrowser)
	s.Country = m(mapCountry)
	s.Continent = m(mapContinent)
	s.DeviceAndOS = m(mapDeviceAndOS)
	s.App = m(mapApp)
	s.DeviceType = m(mapDeviceType)
	s.FromApp = m(mapFromApp)
	s.Referrer = m(mapReferrer)
	return s
}

const secondsPerDay = 86400

// dayOf is the UTC day of t: days since 1970-01-01.
func dayOf(t time.Time) int64 {
	s := t.Unix()
	d := s / secondsPerDay
	if s%secondsPerDay < 0 {
		d--
	}
	return d
}

func dayString(day int64) string {
	return time.Unix(day*secondsPerDay, 0).UTC().Format(time.DateOnly)
}
