// Package enrich turns a request for a short link into the facts recorded in
// its click event: browser, OS and device from the User-Agent, in-app
// browsers, bots, preferred language, referrer, country, continent and
// (optionally) city of the client address, a daily-rotating unique-visitor
// key, and the platform used to choose a per-platform deep link.
//
// It is on the redirect hot path. Everything derived from the User-Agent is
// cached by User-Agent string in a bounded concurrent cache, so a repeated
// user agent costs a map lookup; the country comes from data compiled into
// the binary (phuslu/iploc); the visitor key is one pooled HMAC.
//
// Raw IP addresses are never part of a Result.
package enrich

import (
	"errors"
	"net/http"
	"net/netip"
	"strings"
	"time"
)

// DefaultCacheSize is the number of user agents (and city records) cached
// when Config.CacheSize is 0. Each generation holds about this many entries,
// so memory use is bounded by about twice it.
const DefaultCacheSize = 10000

// Result is what a click event records about the visitor.
type Result struct {
	Browser        string `json:"browser"`         // "Chrome", "Safari", ...; the app's name in an in-app browser; the bot's name for bots
	BrowserVersion string `json:"browser_version"` // as sent, e.g. "126.0.0.0"
	OS             string `json:"os"`              // "iOS", "Android", "Windows", "macOS", "Linux", "ChromeOS", ...; "" when unknown
	OSVersion      string `json:"os_version"`      // "17.5", "14", "10" (Windows 10 and 11 both send 10), "10.15.7", ...
	DeviceType     string `json:"device_type"`     // "mobile", "desktop" or "tablet"
	Device         string `json:"device"`          // "iPhone", "iPad", "Android", "Android tablet", "Mac", "Windows PC", "Linux PC", "Chromebook", "Other", ...
	FromApp        bool   `json:"from_app"`        // an in-app browser (web view of a native app)
	App            string `json:"app"`             // the app, when known: "Instagram", "Facebook", "TikTok", ...
	Bot            bool   `json:"bot"`             // not a person's browser: a crawler, link-preview fetcher, script or HTTP library
	BotName        string `json:"bot_name"`        // e.g. "Googlebot", "Slackbot", "curl"
	Script         bool   `json:"script"`          // of the bots, an HTTP client, library or tool that does not call itself a crawler (curl, a load generator, no User-Agent): its accesses are counted
	Language       string `json:"language"`        // primary subtag of the preferred Accept-Language entry, e.g. "pt"
	Referrer       string `json:"referrer"`        // host of the Referer, lower case, without "www."
	ReferrerURL    string `json:"referrer_url"`    // the Referer value, at most 512 bytes
	Country        string `json:"country"`         // ISO 3166-1 alpha-2, "" when unknown
	Continent      string `json:"continent"`       // AF, AN, AS, EU, NA, OC or SA; "" when unknown
	City           string `json:"city"`            // only with a city database
	Region         string `json:"region"`          // subdivision, only with a city database
	VisitorHash    string `json:"visitor_hash"`    // daily-rotating keyed hash of IP and user agent, 32 hex digits
	Platform       string `json:"platform"`        // "ios", "android", "windows", "macos" or "other"
	// Network is the client's network for limits kept in memory: its IPv4
	// address, or the /64 of its IPv6 address (one subscriber's block).
	// Never stored nor encoded.
	Network netip.Addr `json:"-"`
}

// ClientNetwork is the part of a client address that identifies a client
// for limits: an IPv4 address whole (/32), an IPv6 address's /64, which
// one subscriber usually holds entirely.
func ClientNetwork(ip netip.Addr) netip.Addr {
	ip = ip.WithZone("").Unmap()
	if ip.Is6() {
		if p, err := ip.Prefix(64); err == nil {
			return p.Addr()
		}
	}
	return ip
}

// Config configures an Enricher.
type Config struct {
	// CityDB is the path of an optional .mmdb city database (MaxMind
	// GeoLite2/GeoIP2-City layout, or the DB-IP lite flat layout with
	// city/state1/country_code). Empty: no city or region, country from the
	// built-in data. When set, the database's country wins over the built-in
	// one so that city, region and country agree.
	CityDB string
	// Secret keys the visitor hash (at least 16 bytes; the server's 32-byte
	// secret). The key of a UTC day is HMAC-SHA256(Secret, "YYYY-MM-DD").
	Secret []byte
	// TrustedProxies are the proxies whose X-Forwarded-For is believed (see
	// ClientIP and ParseTrustedProxies).
	TrustedProxies []netip.Prefix
	// CacheSize bounds the user-agent cache (and the city record cache);
	// 0 means DefaultCacheSize.
	CacheSize int
}

// Enricher computes Results. It is safe for concurrent use.
type Enricher struct {
	trusted []netip.Prefix
	keys    *visitorKeys
	uas     *cache[string, *uaInfo]
	budget  *crawlerBudget
	city    *cityDB
}

// New returns an Enricher, opening the city database if one is configured.
func New(cfg Config) (*Enricher, error) {
	if len(cfg.Secret) < 16 {
		return nil, errors.New("enrich: secret must be at least 16 bytes")
	}
	size := cfg.CacheSize
	if size <= 0 {
		size = DefaultCacheSize
	}
	e := &Enricher{
		trusted: append([]netip.Prefix(nil), cfg.TrustedProxies...),
		keys:    newVisitorKeys(cfg.Secret),
		uas:     newCache[string, *uaInfo](size, hashString),
		budget:  newCrawlerBudget(crawlerDetectRate, crawlerDetectBurst),
	}
	if cfg.CityDB != "" {
		db, err := openCityDB(cfg.CityDB, size)
		if err != nil {
			return nil, err
		}
		e.city = db
	}
	return e, nil
}

// Close releases the city database. Enrich keeps working afterwards, without
// city data. Close may be called more than once.
func (e *Enricher) Close() error {
	if e.city == nil {
		return nil
	}
	return e.city.close()
}

// Enrich computes the Result of request r received at now. The client
// address is ClientIP(r, Config.TrustedProxies).
func (e *Enricher) Enrich(r *http.Request, now time.Time) Result {
	return e.EnrichParts(
		firstHeader(r.Header, "User-Agent"),
		firstHeader(r.Header, "Accept-Language"),
		firstHeader(r.Header, "Referer"),
		ClientIP(r, e.trusted),
		now,
	)
}

// EnrichParts computes a Result from the raw parts of a request: the
// User-Agent, Accept-Language and Referer header values and the client
// address. now chooses the day of the visitor key (a zero time means
// time.Now()).
func (e *Enricher) EnrichParts(ua, acceptLanguage, referer string, ip netip.Addr, now time.Time) Result {
	if now.IsZero() {
		now = time.Now()
	}
	if len(ua) > maxUALen {
		ua = ua[:maxUALen]
	}
	info := e.userAgent(ua)
	ip = ip.WithZone("").Unmap()

	country := countryOf(ip)
	var ci cityInfo
	if e.city != nil {
		ci = e.city.lookup(ip)
		if ci.Country != "" {
			country = ci.Country
		}
	}
	referer = strings.TrimSpace(referer)

	return Result{
		Browser:        info.Browser,
		BrowserVersion: info.BrowserVersion,
		OS:             info.OS,
		OSVersion:      info.OSVersion,
		DeviceType:     info.DeviceType,
		Device:         info.Device,
		FromApp:        info.FromApp,
		App:            info.App,
		Bot:            info.Bot,
		BotName:        info.BotName,
		Script:         info.Script,
		Language:       Language(acceptLanguage),
		Referrer:       ReferrerHost(referer),
		ReferrerURL:    truncateUTF8(referer, maxReferrerURL),
		Country:        country,
		Continent:      Continent(country),
		City:           ci.City,
		Region:         ci.Region,
		VisitorHash:    e.keys.hash(ip, ua, now),
		Network:        ClientNetwork(ip),
		Platform:       info.Platform,
	}
}

// AddressKey returns a key for the client network of r (ClientNetwork of
// ClientIP with the configured trusted proxies: an IPv6 /64 counts as one
// client) at now, for limits kept in memory per client,
// such as wrong password attempts: a keyed hash of the address alone with
// the day's visitor key, so that not even memory holds a raw address, and
// a client cannot escape the limit by changing its user agent.
func (e *Enricher) AddressKey(r *http.Request, now time.Time) string {
	if now.IsZero() {
		now = time.Now()
	}
	return e.keys.hash(ClientNetwork(ClientIP(r, e.trusted)), addressKeyMarker, now)
}

// addressKeyMarker stands in for the user agent in AddressKey, so that an
// address key never equals the visitor hash of a request without one.
const addressKeyMarker = "\x00address"

// userAgent returns the cached user-agent part of a Result, parsing and
// caching it on a miss.
func (e *Enricher) userAgent(ua string) *uaInfo {
	if info, ok := e.uas.get(ua); ok {
		return info
	}
	// Parse a copy: the cache keeps it as its key, and the parsed fields
	// are substrings of it, so the request's memory is not retained.
	key := strings.Clone(ua)
	info := parseUA(key, e.budget)
	if !info.provisional {
		e.uas.put(key, &info)
	}
	return &info
}

func firstHeader(h http.Header, key string) string {
	if v := h[key]; len(v) > 0 {
		return v[0]
	}
	return ""
}
