package enrich

import (
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"testing"

	"github.com/maxmind/mmdbwriter"
	"github.com/maxmind/mmdbwriter/mmdbtype"
)

// writeMMDB writes a tiny city database. mmdbwriter refuses reserved ranges
// (documentation prefixes, private networks), so public addresses are used.
func writeMMDB(t testing.TB, dbType string, records map[string]mmdbtype.Map) string {
	t.Helper()
	tree, err := mmdbwriter.New(mmdbwriter.Options{DatabaseType: dbType, RecordSize: 24})
	if err != nil {
		t.Fatal(err)
	}
	for cidr, rec := range records {
		_, n, err := net.ParseCIDR(cidr)
		if err != nil {
			t.Fatal(err)
		}
		if err := tree.Insert(n, rec); err != nil {
			t.Fatalf("insert %s: %v", cidr, err)
		}
	}
	path := filepath.Join(t.TempDir(), "city.mmdb")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tree.WriteTo(f); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

func names(en string) mmdbtype.Map {
	return mmdbtype.Map{"names": mmdbtype.Map{"en": mmdbtype.String(en), "de": mmdbtype.String(en + " (de)")}}
}

// maxMindRecord follows the GeoLite2-City layout.
func maxMindRecord(city, subdivision, iso string) mmdbtype.Map {
	c := names(city)
	c["geoname_id"] = mmdbtype.Uint32(2643743)
	sub := names(subdivision)
	sub["iso_code"] = mmdbtype.String("XX")
	country := names("Country " + iso)
	country["iso_code"] = mmdbtype.String(iso)
	return mmdbtype.Map{
		"city":         c,
		"continent":    mmdbtype.Map{"code": mmdbtype.String("EU"), "names": mmdbtype.Map{"en": mmdbtype.String("Europe")}},
		"country":      country,
		"location":     mmdbtype.Map{"latitude": mmdbtype.Float64(51.5), "longitude": mmdbtype.Float64(-0.1)},
		"subdivisions": mmdbtype.Slice{sub, names("Second level")},
		"registered_country": mmdbtype.Map{
			"iso_code": mmdbtype.String("ZZ"),
		},
	}
}

// flatRecord follows the DB-IP lite layout of the ip-location-db packages.
func flatRecord(city, state, cc string) mmdbtype.Map {
	return mmdbtype.Map{
		"city":         mmdbtype.String(city),
		"country_code": mmdbtype.String(cc),
		"latitude":     mmdbtype.Float32(37.4),
		"longitude":    mmdbtype.Float32(-122.1),
		"state1":       mmdbtype.String(state),
		"state2":       mmdbtype.String(""),
		"postcode":     mmdbtype.String("94043"),
		"timezone":     mmdbtype.String("America/Los_Angeles"),
	}
}

func TestCityDatabaseLayouts(t *testing.T) {
	layouts := map[string]string{
		"maxmind": writeMMDB(t, "GeoLite2-City", map[string]mmdbtype.Map{
			"81.2.69.0/24":        maxMindRecord("London", "England", "GB"),
			"8.8.8.0/24":          maxMindRecord("Mountain View", "California", "US"),
			"2001:4860:4860::/48": maxMindRecord("Mountain View", "California", "US"),
			"200.160.0.0/20":      {"country": mmdbtype.Map{"iso_code": mmdbtype.String("BR")}}, // no city
			"193.0.0.0/21":        maxMindRecord("Amsterdam", "North Holland", "DE"),            // disagrees with iploc on purpose
			"202.12.27.0/24":      {"city": mmdbtype.Map{"names": mmdbtype.Map{"ja": mmdbtype.String("東京")}}},
		}),
		"flat": writeMMDB(t, "dbip-city-lite", map[string]mmdbtype.Map{
			"81.2.69.0/24":        flatRecord("London", "England", "GB"),
			"8.8.8.0/24":          flatRecord("Mountain View", "California", "US"),
			"2001:4860:4860::/48": flatRecord("Mountain View", "California", "US"),
			"200.160.0.0/20":      {"country_code": mmdbtype.String("BR")},
			"193.0.0.0/21":        flatRecord("Amsterdam", "North Holland", "DE"),
			"202.12.27.0/24":      {"city": mmdbtype.String("")},
		}),
	}
	type want struct{ city, region, country, continent string }
	cases := map[string]want{
		"81.2.69.142":          {"London", "England", "GB", "EU"},
		"8.8.8.8":              {"Mountain View", "California", "US", "NA"},
		"::ffff:8.8.8.8":       {"Mountain View", "California", "US", "NA"},
		"2001:4860:4860::8888": {"Mountain View", "California", "US", "NA"},
		"200.160.2.3":          {"", "", "BR", "SA"},
		"193.0.6.139":          {"Amsterdam", "North Holland", "DE", "EU"}, // the city database's country wins
		"202.12.27.33":         {"", "", "JP", "AS"},                       // no English name: iploc country
		"9.9.9.9":              {"", "", "US", "NA"},                       // not in the database: iploc country
		"10.0.0.1":             {"", "", "", ""},
	}
	for layout, path := range layouts {
		t.Run(layout, func(t *testing.T) {
			e := newTestEnricher(t, Config{CityDB: path})
			for ip, w := range cases {
				for range 2 { // second time from the record cache
					r := e.EnrichParts("curl/8", "", "", netip.MustParseAddr(ip), testNow)
					if r.City != w.city || r.Region != w.region || r.Country != w.country || r.Continent != w.continent {
						t.Errorf("%s: got city=%q region=%q country=%q continent=%q, want %+v", ip, r.City, r.Region, r.Country, r.Continent, w)
					}
				}
			}
			if err := e.Close(); err != nil {
				t.Fatal(err)
			}
			if err := e.Close(); err != nil {
				t.Fatalf("second Close: %v", err)
			}
			// After Close: no city, but everything else still works.
			r := e.EnrichParts("curl/8", "", "", netip.MustParseAddr("81.2.69.142"), testNow)
			if r.City != "" || r.Country != "GB" {
				t.Errorf("after Close: %+v", r)
			}
		})
	}
}

func TestCityDatabaseOddRecords(t *testing.T) {
	path := writeMMDB(t, "GeoLite2-City", map[string]mmdbtype.Map{
		"104.16.0.0/13":       {"city": mmdbtype.Uint32(7), "country": mmdbtype.String("US"), "state1": mmdbtype.Uint16(3)},
		"151.101.0.0/16":      {"subdivisions": mmdbtype.Slice{}, "country": mmdbtype.Map{"iso_code": mmdbtype.String("ie")}},
		"185.199.108.0/22":    {"city": names("Berlin"), "subdivisions": mmdbtype.Slice{mmdbtype.String("Berlin")}},
		"2606:4700:4700::/48": {"city": mmdbtype.Map{}, "subdivisions": mmdbtype.Slice{mmdbtype.Map{}, names("Ignored")}},
	})
	e := newTestEnricher(t, Config{CityDB: path})
	for ip, w := range map[string][2]string{
		"104.16.1.1":           {"", ""},
		"151.101.1.1":          {"", ""},
		"185.199.108.153":      {"Berlin", "Berlin"},
		"2606:4700:4700::1111": {"", ""},
	} {
		r := e.EnrichParts("curl/8", "", "", netip.MustParseAddr(ip), testNow)
		if r.City != w[0] || r.Region != w[1] {
			t.Errorf("%s: city=%q region=%q, want %q", ip, r.City, r.Region, w)
		}
		if len(r.Country) != 0 && len(r.Country) != 2 {
			t.Errorf("%s: country %q", ip, r.Country)
		}
	}
}
