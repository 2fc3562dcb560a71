package enrich

import (
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/maxmind/mmdbwriter/mmdbtype"
)

// benchUAs are common user agents (browsers and in-app browsers).
var benchUAs = []string{
	goldenCases[0].ua, // iOS Safari
	goldenCases[3].ua, // Android Chrome
	goldenCases[9].ua, // Windows Edge
	goldenCases[10].ua,
	goldenCases[11].ua,
	goldenCases[14].ua, // Instagram iOS
	goldenCases[16].ua, // Facebook iOS
}

func benchRequest(ua string) *http.Request {
	r := httptest.NewRequest("GET", "http://lnk.example/abc", nil)
	r.RemoteAddr = "81.2.69.142:51234"
	r.Header.Set("User-Agent", ua)
	r.Header.Set("Accept-Language", "en-US,en;q=0.9")
	r.Header.Set("Referer", "https://www.google.com/")
	return r
}

// BenchmarkEnrichCached: the whole Enrich of an HTTP request whose user agent
// is already in the cache (the common case on a redirect server).
func BenchmarkEnrichCached(b *testing.B) {
	e := newTestEnricher(b, Config{})
	reqs := make([]*http.Request, len(benchUAs))
	for i, ua := range benchUAs {
		reqs[i] = benchRequest(ua)
		e.Enrich(reqs[i], testNow)
	}
	b.ReportAllocs()
	b.ResetTimer()
	defer reportCPU(b)()
	for i := 0; b.Loop(); i++ {
		r := e.Enrich(reqs[i%len(reqs)], testNow)
		if r.Browser == "" {
			b.Fatal("no browser")
		}
	}
}

// BenchmarkEnrichCachedParallel: as above, from all cores at once.
func BenchmarkEnrichCachedParallel(b *testing.B) {
	e := newTestEnricher(b, Config{})
	reqs := make([]*http.Request, len(benchUAs))
	for i, ua := range benchUAs {
		reqs[i] = benchRequest(ua)
		e.Enrich(reqs[i], testNow)
	}
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			e.Enrich(reqs[i%len(reqs)], testNow)
			i++
		}
	})
}

// BenchmarkEnrichColdUA: every call has a user agent never seen before (a
// browser, so crawlerdetect is not needed): useragent parsing, our token
// tables and a cache insertion.
func BenchmarkEnrichColdUA(b *testing.B) {
	e := newTestEnricher(b, Config{})
	ip := netip.MustParseAddr("81.2.69.142")
	var n atomic.Int64
	b.ReportAllocs()
	defer reportCPU(b)()
	for b.Loop() {
		ua := "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0." + strconv.FormatInt(n.Add(1), 10) + ".0 Safari/537.36"
		e.EnrichParts(ua, "en-US,en;q=0.9", "https://www.google.com/", ip, testNow)
	}
}

// BenchmarkEnrichColdUnknownUA: a never-seen user agent that is not a
// browser, so crawlerdetect runs (the expensive, rare path), with no limit
// on crawlerdetect calls.
func BenchmarkEnrichColdUnknownUA(b *testing.B) {
	e := newTestEnricher(b, Config{})
	e.budget = nil
	benchUnknownUAs(b, e)
}

// BenchmarkEnrichColdUnknownUAFlood: as above with the default rationing of
// crawlerdetect, i.e. a flood of random non-browser user agents.
func BenchmarkEnrichColdUnknownUAFlood(b *testing.B) {
	benchUnknownUAs(b, newTestEnricher(b, Config{}))
}

func benchUnknownUAs(b *testing.B, e *Enricher) {
	ip := netip.MustParseAddr("81.2.69.142")
	var n atomic.Int64
	b.ReportAllocs()
	defer reportCPU(b)()
	for b.Loop() {
		ua := "SomeTool/" + strconv.FormatInt(n.Add(1), 10) + " (X11; Linux x86_64)"
		e.EnrichParts(ua, "", "", ip, testNow)
	}
}

// BenchmarkEnrichCachedCity: cached user agent plus a lookup in a (tiny)
// city database; the decoded record comes from the record cache.
func BenchmarkEnrichCachedCity(b *testing.B) {
	path := writeMMDB(b, "GeoLite2-City", map[string]mmdbtype.Map{
		"81.2.69.0/24": maxMindRecord("London", "England", "GB"),
	})
	e := newTestEnricher(b, Config{CityDB: path})
	r := benchRequest(benchUAs[0])
	if res := e.Enrich(r, testNow); res.City != "London" {
		b.Fatalf("city %q", res.City)
	}
	b.ReportAllocs()
	defer reportCPU(b)()
	for b.Loop() {
		e.Enrich(r, testNow)
	}
}
