package enrich

import (
	"net/netip"
	"sync/atomic"
	"testing"
	"time"
)

// countCrawlerDetect counts crawlerdetect calls during a test.
func countCrawlerDetect(t *testing.T) *atomic.Int64 {
	var n atomic.Int64
	orig := isCrawler
	isCrawler = func(s string) bool { n.Add(1); return orig(s) }
	t.Cleanup(func() { isCrawler = orig })
	return &n
}

// crawlerdetect is slow: it must not run for browsers, in-app browsers or
// bots that the cheap rules already know, and runs once per unknown UA.
func TestCrawlerDetectOnlyWhenNeeded(t *testing.T) {
	calls := countCrawlerDetect(t)
	e := newTestEnricher(t, Config{})
	needs := map[string]bool{
		"Android Cubot phone (says bot, is not one)":         true,
		"PlayStation 5 browser":                              false,
		"Opera Presto (not Mozilla, human by crawlerdetect)": true,
		"Yeti crawler (crawlerdetect only)":                  true,
		"ia_archiver (crawlerdetect only)":                   true,
	}
	for _, c := range goldenCases {
		before := calls.Load()
		for range 3 {
			e.EnrichParts(c.ua, "", "", netip.Addr{}, testNow)
		}
		got := calls.Load() - before
		want := int64(0)
		if needs[c.name] {
			want = 1
		}
		if got != want {
			t.Errorf("%s: crawlerdetect called %d times, want %d", c.name, got, want)
		}
	}
}

func TestCrawlerBudget(t *testing.T) {
	calls := countCrawlerDetect(t)
	e := newTestEnricher(t, Config{})
	now := time.Unix(1_000_000, 0)
	e.budget = newCrawlerBudget(10, 2)
	e.budget.now = func() time.Time { return now }

	human := "Opera/9.80 (Windows NT 6.1; U; en) Presto/2.12.388 Version/12.18" // crawlerdetect: not a crawler
	uas := []string{"ToolA/1", "ToolB/1", human}
	for _, ua := range uas {
		e.EnrichParts(ua, "", "", netip.Addr{}, testNow)
	}
	if calls.Load() != 2 {
		t.Fatalf("crawlerdetect called %d times with a burst of 2", calls.Load())
	}
	// Out of budget: the non-browser is taken for a bot, and not cached.
	if r := e.EnrichParts(human, "", "", netip.Addr{}, testNow); !r.Bot {
		t.Errorf("without budget: %+v", r)
	}
	if _, cached := e.uas.get(human); cached {
		t.Error("a provisional verdict was cached")
	}
	// A browser-shaped user agent with a suspicious word is taken for a
	// person while there is no budget (and not cached either).
	cubot := "Mozilla/5.0 (Linux; Android 10; CUBOT_X30) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/91.0.4472.120 Mobile Safari/537.36"
	if r := e.EnrichParts(cubot, "", "", netip.Addr{}, testNow); r.Bot {
		t.Errorf("browser-shaped without budget: %+v", r)
	}
	if _, cached := e.uas.get(cubot); cached {
		t.Error("a provisional verdict was cached")
	}
	// A plain browser never needs the budget.
	if r := e.EnrichParts(goldenCases[0].ua, "", "", netip.Addr{}, testNow); r.Bot || r.Browser != "Safari" {
		t.Errorf("browser without budget: %+v", r)
	}
	// Budget refills: crawlerdetect decides, and the verdict is cached.
	now = now.Add(time.Second)
	if r := e.EnrichParts(human, "", "", netip.Addr{}, testNow); r.Bot {
		t.Errorf("with budget: %+v", r)
	}
	if info, cached := e.uas.get(human); !cached || info.Bot {
		t.Error("verdict not cached")
	}
	if calls.Load() != 3 {
		t.Errorf("crawlerdetect called %d times", calls.Load())
	}
}

func TestBrowserAndBotNames(t *testing.T) {
	for ua, want := range map[string][2]string{ // browser, bot name
		"Mozilla/5.0 (compatible; FooBot/2.1; +http://foo.example/bot)":                                                          {"FooBot", "FooBot"},
		"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/1 Safari/537.36 YaBrowser/24.4": {"Yandex Browser", ""},
	} {
		info := parseUA(ua, nil)
		if info.Browser != want[0] || info.BotName != want[1] {
			t.Errorf("%q: browser %q bot %q, want %q", ua, info.Browser, info.BotName, want)
		}
	}
}

func TestVersionAfter(t *testing.T) {
	for _, c := range []struct{ s, marker, want string }{
		{"x FBAV/470.0.0.44.109;FBBV/1", "FBAV/", "470.0.0.44.109"},
		{"x Instagram 335.0.3.15.111 (iPhone", "Instagram ", "335.0.3.15.111"},
		{"musical_ly_35.1.0 JsSdk", "musical_ly_", "35.1.0"},
		{"Line/14.9.0.", " Line/", ""},
		{"a Line/14.9.0.", " Line/", "14.9.0"},
		{"no marker", "FBAV/", ""},
		{"FBAV/;", "FBAV/", ""},
	} {
		if got := versionAfter(c.s, c.marker); got != c.want {
			t.Errorf("versionAfter(%q, %q) = %q, want %q", c.s, c.marker, got, c.want)
		}
	}
}

func TestTruncateUTF8(t *testing.T) {
	s := "ab" + "é" + "c" // é is 2 bytes
	for n, want := range map[int]string{0: "", 2: "ab", 3: "ab", 4: "abé", 5: s, 10: s} {
		if got := truncateUTF8(s, n); got != want {
			t.Errorf("truncateUTF8(%q, %d) = %q, want %q", s, n, got, want)
		}
	}
}

// The bot table is skipped for browser-shaped user agents without a
// suspicious word, so every token that can occur inside one must contain a
// suspicious word. Prefix tokens cannot (a browser starts with Mozilla/).
func TestBotTokensAreSuspicious(t *testing.T) {
	for _, bt := range botTokens {
		if bt.prefix {
			continue
		}
		var buf [maxUALen]byte
		if !containsAny(asciiLower(buf[:0], bt.token), suspiciousWords) {
			t.Errorf("bot token %q contains no suspicious word", bt.token)
		}
		ua := "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36 " + bt.token
		if info := parseUA(ua, nil); !info.Bot || info.BotName != bt.name {
			t.Errorf("browser UA with %q: bot=%v name=%q, want %q", bt.token, info.Bot, info.BotName, bt.name)
		}
	}
}
