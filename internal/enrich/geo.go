package enrich

import (
	"fmt"
	"net/netip"
	"sync"

	"github.com/biter777/countries"
	"github.com/oschwald/maxminddb-golang/v2"
	"github.com/oschwald/maxminddb-golang/v2/mmdbdata"
	"github.com/phuslu/iploc"
)

// continents maps an ISO 3166-1 alpha-2 code (index (a-'A')*26+(b-'A')) to
// its continent code. Built once from biter777/countries, which includes
// Kosovo (XK, Europe).
var continents = buildContinents()

func buildContinents() *[26 * 26]string {
	var t [26 * 26]string
	for _, c := range countries.All() {
		a2 := c.Alpha2()
		i, ok := countryIndex(a2)
		if !ok {
			continue
		}
		t[i] = continentOf(c.Region())
	}
	if i, _ := countryIndex("XK"); t[i] == "" {
		t[i] = "EU"
	}
	return &t
}

func continentOf(r countries.RegionCode) string {
	switch r {
	case countries.RegionAF:
		return "AF"
	case countries.RegionAN, countries.RegionAntarctica:
		return "AN"
	case countries.RegionAS:
		return "AS"
	case countries.RegionEU:
		return "EU"
	case countries.RegionNA:
		return "NA"
	case countries.RegionOC:
		return "OC"
	case countries.RegionSA:
		return "SA"
	}
	return ""
}

func countryIndex(cc string) (int, bool) {
	if len(cc) != 2 {
		return 0, false
	}
	a, b := cc[0], cc[1]
	if a < 'A' || a > 'Z' || b < 'A' || b > 'Z' {
		return 0, false
	}
	return int(a-'A')*26 + int(b-'A'), true
}

// Continent returns the two-letter continent code (AF, AN, AS, EU, NA, OC,
// SA) of an upper-case ISO 3166-1 alpha-2 country code, or "".
func Continent(country string) string {
	if i, ok := countryIndex(country); ok {
		return continents[i]
	}
	return ""
}

// countryOf returns the country of ip from the data built into iploc, or ""
// for private, reserved and unknown addresses (iploc answers "ZZ").
func countryOf(ip netip.Addr) string {
	if !ip.IsValid() {
		return ""
	}
	cc := iploc.IPCountry(ip)
	if _, ok := countryIndex(cc); !ok || cc == "ZZ" {
		return ""
	}
	return cc
}

// cityInfo is what the optional city database tells about an address.
type cityInfo struct {
	City, Region, Country string
}

// cityDB reads city, subdivision and country from an .mmdb file in either
// of two layouts:
//
//   - MaxMind GeoLite2/GeoIP2-City: city.names.en, subdivisions[0].names.en,
//     country.iso_code;
//   - DB-IP lite "flat" (as in the ip-location-db packages): city, state1,
//     country_code.
//
// Decoded records are cached by their data-section offset: many networks
// share one record, and a lookup then costs only the tree walk.
type cityDB struct {
	mu    sync.RWMutex // Close must not run concurrently with lookups
	r     *maxminddb.Reader
	cache *cache[uintptr, cityInfo]
}

func openCityDB(path string, cacheSize int) (*cityDB, error) {
	r, err := maxminddb.Open(path)
	if err != nil {
		return nil, fmt.Errorf("enrich: open city database: %w", err)
	}
	return &cityDB{r: r, cache: newCache[uintptr, cityInfo](cacheSize, hashUintptr)}, nil
}

func (db *cityDB) lookup(ip netip.Addr) cityInfo {
	db.mu.RLock()
	defer db.mu.RUnlock()
	if db.r == nil || !ip.IsValid() {
		return cityInfo{}
	}
	res := db.r.Lookup(ip)
	if res.Err() != nil || !res.Found() {
		return cityInfo{}
	}
	off := res.Offset()
	if ci, ok := db.cache.get(off); ok {
		return ci
	}
	var rec cityRecord
	if err := res.Decode(&rec); err != nil {
		return cityInfo{}
	}
	ci := rec.info()
	db.cache.put(off, ci)
	return ci
}

func (db *cityDB) close() error {
	db.mu.Lock()
	defer db.mu.Unlock()
	if db.r == nil {
		return nil
	}
	err := db.r.Close()
	db.r = nil
	return err
}

// cityRecord decodes both layouts without reflection and without building
// maps: only the few fields used are read, the rest is skipped.
type cityRecord struct {
	city        string // city.names.en or city
	subdivision string // subdivisions[0].names.en
	state1      string
	isoCode     string // country.iso_code
	countryCode string // country_code
}

func (r *cityRecord) info() cityInfo {
	ci := cityInfo{City: r.city, Region: r.subdivision}
	if ci.Region == "" {
		ci.Region = r.state1
	}
	cc := r.isoCode
	if cc == "" {
		cc = r.countryCode
	}
	if _, ok := countryIndex(cc); ok && cc != "ZZ" {
		ci.Country = cc
	}
	return ci
}

// UnmarshalMaxMindDBCursor implements mmdbdata.CursorUnmarshaler.
func (r *cityRecord) UnmarshalMaxMindDBCursor(c mmdbdata.Cursor) (mmdbdata.Cursor, error) {
	m, err := c.Map()
	if err != nil {
		return mmdbdata.Cursor{}, mmdbdata.NormalizeUnmarshalError[cityRecord](err)
	}
	var next mmdbdata.Cursor
	for {
		key, v, ok := m.Next(next)
		if !ok {
			break
		}
		switch string(key) {
		case "city":
			r.city, next, err = readName(v)
		case "subdivisions":
			r.subdivision, next, err = readFirstName(v)
		case "country":
			r.isoCode, next, err = readMapString(v, "iso_code")
		case "country_code":
			r.countryCode, next, err = readOptString(v)
		case "state1":
			r.state1, next, err = readOptString(v)
		default:
			next, err = v.Skip()
		}
		if err != nil {
			return mmdbdata.Cursor{}, err
		}
	}
	return m.End()
}

// readName reads a place name that is either a plain string (flat layout)
// or a MaxMind record {"names": {"en": ...}, ...}.
func readName(c mmdbdata.Cursor) (string, mmdbdata.Cursor, error) {
	k, err := c.Kind()
	if err != nil {
		return "", mmdbdata.Cursor{}, err
	}
	switch k {
	case mmdbdata.KindString:
		return c.ReadString()
	case mmdbdata.KindMap:
		m, err := c.Map()
		if err != nil {
			return "", mmdbdata.Cursor{}, err
		}
		var name string
		var next mmdbdata.Cursor
		for {
			key, v, ok := m.Next(next)
			if !ok {
				break
			}
			if string(key) == "names" {
				name, next, err = readMapString(v, "en")
			} else {
				next, err = v.Skip()
			}
			if err != nil {
				return "", mmdbdata.Cursor{}, err
			}
		}
		next, err = m.End()
		return name, next, err
	}
	next, err := c.Skip()
	return "", next, err
}

// readFirstName reads the name of the first element of a list of places
// (MaxMind's subdivisions).
func readFirstName(c mmdbdata.Cursor) (string, mmdbdata.Cursor, error) {
	k, err := c.Kind()
	if err != nil {
		return "", mmdbdata.Cursor{}, err
	}
	if k != mmdbdata.KindSlice {
		return readName(c)
	}
	s, err := c.Slice()
	if err != nil {
		return "", mmdbdata.Cursor{}, err
	}
	var name string
	var next mmdbdata.Cursor
	for {
		i, v, ok := s.Next(next)
		if !ok {
			break
		}
		if i == 0 {
			name, next, err = readName(v)
		} else {
			next, err = v.Skip()
		}
		if err != nil {
			return "", mmdbdata.Cursor{}, err
		}
	}
	next, err = s.End()
	return name, next, err
}

// readMapString reads the string under key of a map; other kinds give "".
func readMapString(c mmdbdata.Cursor, want string) (string, mmdbdata.Cursor, error) {
	k, err := c.Kind()
	if err != nil {
		return "", mmdbdata.Cursor{}, err
	}
	if k != mmdbdata.KindMap {
		next, err := c.Skip()
		return "", next, err
	}
	m, err := c.Map()
	if err != nil {
		return "", mmdbdata.Cursor{}, err
	}
	var val string
	var next mmdbdata.Cursor
	for {
		key, v, ok := m.Next(next)
		if !ok {
			break
		}
		if string(key) == want {
			val, next, err = readOptString(v)
		} else {
			next, err = v.Skip()
		}
		if err != nil {
			return "", mmdbdata.Cursor{}, err
		}
	}
	next, err = m.End()
	return val, next, err
}

// readOptString reads a string, skipping a value of any other kind.
func readOptString(c mmdbdata.Cursor) (string, mmdbdata.Cursor, error) {
	k, err := c.Kind()
	if err != nil {
		return "", mmdbdata.Cursor{}, err
	}
	if k == mmdbdata.KindString {
		return c.ReadString()
	}
	next, err := c.Skip()
	return "", next, err
}
