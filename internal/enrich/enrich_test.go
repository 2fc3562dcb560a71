package enrich

import (
	"bytes"
	"encoding/json"
	"flag"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite testdata/enrich.golden")

var testSecret = []byte("0123456789abcdef0123456789abcdef")

// testNow is the fixed time of the golden test (the visitor hash depends on
// its UTC day).
var testNow = time.Date(2026, 3, 14, 15, 9, 26, 0, time.UTC)

func newTestEnricher(t testing.TB, cfg Config) *Enricher {
	t.Helper()
	if cfg.Secret == nil {
		cfg.Secret = testSecret
	}
	e, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close() })
	return e
}

type uaCase struct {
	name     string
	ua       string
	lang     string
	referer  string
	ip       string
	bot      bool
	script   bool   // a bot whose accesses are counted (HTTP clients and tools)
	app      string // "" when not in an app
	fromApp  bool
	device   string // device type
	platform string
}

// goldenCases are real user agents. The expectations here are the points that
// matter most (bot or not, in-app, device type, platform); the golden file
// pins every field.
var goldenCases = []uaCase{
	{name: "iOS Safari iPhone", ua: "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1",
		lang: "en-US,en;q=0.9", referer: "https://www.google.com/", ip: "8.8.8.8", device: DeviceMobile, platform: PlatformIOS},
	{name: "iOS Chrome iPhone", ua: "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) CriOS/126.0.6478.54 Mobile/15E148 Safari/604.1",
		lang: "fr-FR,fr;q=0.9", ip: "193.0.6.139", device: DeviceMobile, platform: PlatformIOS},
	{name: "iPad Safari", ua: "Mozilla/5.0 (iPad; CPU OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1",
		lang: "de-DE,de;q=0.9,en;q=0.8", referer: "https://t.co/abc123", ip: "81.2.69.142", device: DeviceTablet, platform: PlatformIOS},
	{name: "Android Chrome phone", ua: "Mozilla/5.0 (Linux; Android 10; K) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Mobile Safari/537.36",
		lang: "pt-BR,pt;q=0.9,en-US;q=0.8,en;q=0.7", referer: "android-app://com.google.android.gm/", ip: "200.160.2.3", device: DeviceMobile, platform: PlatformAndroid},
	{name: "Android Samsung Internet phone", ua: "Mozilla/5.0 (Linux; Android 14; SM-S918B) AppleWebKit/537.36 (KHTML, like Gecko) SamsungBrowser/25.0 Chrome/121.0.0.0 Mobile Safari/537.36",
		lang: "ko-KR,ko;q=0.9", ip: "202.12.27.33", device: DeviceMobile, platform: PlatformAndroid},
	{name: "Android tablet SM-X700", ua: "Mozilla/5.0 (Linux; Android 13; SM-X700) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/125.0.0.0 Safari/537.36",
		lang: "es-ES,es;q=0.9", ip: "81.2.69.142", device: DeviceTablet, platform: PlatformAndroid},
	{name: "Android tablet SM-T870", ua: "Mozilla/5.0 (Linux; Android 13; SM-T870) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/125.0.0.0 Safari/537.36",
		ip: "8.8.8.8", device: DeviceTablet, platform: PlatformAndroid},
	{name: "Android Firefox phone", ua: "Mozilla/5.0 (Android 14; Mobile; rv:127.0) Gecko/127.0 Firefox/127.0",
		ip: "8.8.8.8", device: DeviceMobile, platform: PlatformAndroid},
	{name: "Android Firefox tablet", ua: "Mozilla/5.0 (Android 14; Tablet; rv:127.0) Gecko/127.0 Firefox/127.0",
		ip: "8.8.8.8", device: DeviceTablet, platform: PlatformAndroid},
	{name: "Windows Edge", ua: "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36 Edg/126.0.2592.68",
		lang: "en-GB,en;q=0.9", referer: "https://www.bing.com/search?q=linkd", ip: "81.2.69.142", device: DeviceDesktop, platform: PlatformWindows},
	{name: "Windows Chrome", ua: "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36",
		lang: "en-US,en;q=0.9", referer: "https://News.YCombinator.com/item?id=1", ip: "2001:4860:4860::8888", device: DeviceDesktop, platform: PlatformWindows},
	{name: "macOS Safari", ua: "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Safari/605.1.15",
		lang: "ja-JP,ja;q=0.9", ip: "202.12.27.33", device: DeviceDesktop, platform: PlatformMacOS},
	{name: "macOS Chrome", ua: "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36",
		lang: "en", referer: "https://mail.google.com/", ip: "8.8.8.8", device: DeviceDesktop, platform: PlatformMacOS},
	{name: "Linux Firefox", ua: "Mozilla/5.0 (X11; Linux x86_64; rv:127.0) Gecko/20100101 Firefox/127.0",
		lang: "nl-NL,nl;q=0.8,en-US;q=0.5,en;q=0.3", referer: "https://duckduckgo.com/", ip: "193.0.6.139", device: DeviceDesktop, platform: PlatformOther},
	{name: "Instagram in-app iOS", ua: "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148 Instagram 335.0.3.15.111 (iPhone15,3; iOS 17_5; en_US; en; scale=3.00; 1290x2796; 612165720)",
		lang: "en-US", referer: "https://l.instagram.com/", ip: "8.8.8.8", app: "Instagram", fromApp: true, device: DeviceMobile, platform: PlatformIOS},
	{name: "Instagram in-app Android", ua: "Mozilla/5.0 (Linux; Android 14; SM-S918B Build/UP1A.231005.007; wv) AppleWebKit/537.36 (KHTML, like Gecko) Version/4.0 Chrome/125.0.6422.165 Mobile Safari/537.36 Instagram 334.0.0.42.95 Android (34/14; 480dpi; 1080x2340; samsung; SM-S918B; dm3q; qcom; en_US; 612165720)",
		lang: "en-US", ip: "200.160.2.3", app: "Instagram", fromApp: true, device: DeviceMobile, platform: PlatformAndroid},
	{name: "Facebook in-app iOS", ua: "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148 [FBAN/FBIOS;FBAV/470.0.0.44.109;FBBV/603352374;FBDV/iPhone15,2;FBMD/iPhone;FBSN/iOS;FBSV/17.5;FBSS/3;FBID/phone;FBLC/en_US;FBOP/5;FBRV/605127880]",
		lang: "en-US,en;q=0.9", referer: "https://m.facebook.com/", ip: "8.8.8.8", app: "Facebook", fromApp: true, device: DeviceMobile, platform: PlatformIOS},
	{name: "Facebook in-app Android", ua: "Mozilla/5.0 (Linux; Android 14; SM-S918B Build/UP1A.231005.007; wv) AppleWebKit/537.36 (KHTML, like Gecko) Version/4.0 Chrome/125.0.6422.165 Mobile Safari/537.36 [FB_IAB/FB4A;FBAV/470.0.0.41.109;]",
		lang: "es-MX,es;q=0.9", referer: "http://m.facebook.com", ip: "8.8.8.8", app: "Facebook", fromApp: true, device: DeviceMobile, platform: PlatformAndroid},
	{name: "Messenger in-app iOS", ua: "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148 [FBAN/MessengerForiOS;FBAV/462.0.0.39.109;FBBV/598454380;FBDV/iPhone14,5;FBMD/iPhone;FBSN/iOS;FBSV/17.5;FBSS/3;FBCR/;FBID/phone;FBLC/en_US;FBOP/5]",
		ip: "8.8.8.8", app: "Messenger", fromApp: true, device: DeviceMobile, platform: PlatformIOS},
	{name: "TikTok in-app iOS", ua: "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148 musical_ly_35.1.0 JsSdk/2.0 NetType/WIFI Channel/App Store ByteLocale/en Region/US ByteFullLocale/en-US isDarkMode/0 WKWebView/1 RevealType/Dialog BytedanceWebview/d8a21c6",
		lang: "en-US,en;q=0.9", ip: "8.8.8.8", app: "TikTok", fromApp: true, device: DeviceMobile, platform: PlatformIOS},
	{name: "TikTok in-app Android", ua: "Mozilla/5.0 (Linux; Android 13; SM-A536B Build/TP1A.220624.014; wv) AppleWebKit/537.36 (KHTML, like Gecko) Version/4.0 Chrome/120.0.6099.230 Mobile Safari/537.36 trill_330404 JsSdk/1.0 NetType/WIFI Channel/googleplay AppName/trill app_version/33.4.4 ByteLocale/en ByteFullLocale/en Region/US AppId/1180 Spark/1.4.8.3-bugfix AppVersion/33.4.4 BytedanceWebview/d8a21c6",
		lang: "en", ip: "8.8.8.8", app: "TikTok", fromApp: true, device: DeviceMobile, platform: PlatformAndroid},
	{name: "TikTok in-app Android read as Chrome by useragent", ua: "Mozilla/5.0 (Linux; Android 12; SM-G991B Build/SP1A.210812.016; wv) AppleWebKit/537.36 (KHTML, like Gecko) Version/4.0 Chrome/119.0.6045.163 Mobile Safari/537.36 musical_ly_2023203030 JsSdk/1.0 NetType/WIFI Channel/googleplay AppName/musical_ly app_version/32.3.3",
		ip: "8.8.8.8", app: "TikTok", fromApp: true, device: DeviceMobile, platform: PlatformAndroid},
	{name: "LinkedIn in-app iOS", ua: "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148 [LinkedInApp]/9.29.8960",
		lang: "en-US", referer: "https://www.linkedin.com/", ip: "8.8.8.8", app: "LinkedIn", fromApp: true, device: DeviceMobile, platform: PlatformIOS},
	{name: "LinkedIn in-app Android", ua: "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.6478.71 Mobile Safari/537.36 [LinkedInApp]/4.1.950",
		ip: "8.8.8.8", app: "LinkedIn", fromApp: true, device: DeviceMobile, platform: PlatformAndroid},
	{name: "Snapchat in-app iOS", ua: "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148 Snapchat/13.0.0.36 (like Safari/8617.2.4.10.8, panda)",
		ip: "8.8.8.8", app: "Snapchat", fromApp: true, device: DeviceMobile, platform: PlatformIOS},
	{name: "Pinterest in-app iOS", ua: "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148 [Pinterest/iOS]",
		ip: "8.8.8.8", app: "Pinterest", fromApp: true, device: DeviceMobile, platform: PlatformIOS},
	{name: "Twitter in-app iOS", ua: "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148 Twitter for iPhone/10.48",
		ip: "8.8.8.8", app: "Twitter", fromApp: true, device: DeviceMobile, platform: PlatformIOS},
	{name: "Line in-app iOS", ua: "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148 Safari Line/14.9.0",
		lang: "ja-JP", ip: "202.12.27.33", app: "Line", fromApp: true, device: DeviceMobile, platform: PlatformIOS},
	{name: "WeChat in-app iOS", ua: "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148 MicroMessenger/8.0.49(0x18003129) NetType/WIFI Language/zh_CN",
		lang: "zh-CN,zh-Hans;q=0.9", ip: "8.8.8.8", app: "WeChat", fromApp: true, device: DeviceMobile, platform: PlatformIOS},
	{name: "Telegram in-app Android", ua: "Mozilla/5.0 (Linux; Android 14; Pixel 8 Build/AP2A.240605.024; wv) AppleWebKit/537.36 (KHTML, like Gecko) Version/4.0 Chrome/126.0.6478.71 Mobile Safari/537.36 Telegram-Android/11.2.3 (Google Pixel 8; Android 14; SDK 34; HIGH)",
		ip: "8.8.8.8", app: "Telegram", fromApp: true, device: DeviceMobile, platform: PlatformAndroid},
	{name: "unknown iOS app web view", ua: "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148",
		ip: "8.8.8.8", fromApp: true, device: DeviceMobile, platform: PlatformIOS},
	{name: "unknown Android app web view", ua: "Mozilla/5.0 (Linux; Android 14; Pixel 8 Build/AP2A.240605.024; wv) AppleWebKit/537.36 (KHTML, like Gecko) Version/4.0 Chrome/126.0.6478.71 Mobile Safari/537.36",
		ip: "8.8.8.8", fromApp: true, device: DeviceMobile, platform: PlatformAndroid},
	{name: "Googlebot", ua: "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
		ip: "66.249.66.1", bot: true, device: DeviceDesktop, platform: PlatformOther},
	{name: "Googlebot smartphone", ua: "Mozilla/5.0 (Linux; Android 6.0.1; Nexus 5X Build/MMB29P) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.6478.126 Mobile Safari/537.36 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
		ip: "66.249.66.1", bot: true, device: DeviceMobile, platform: PlatformAndroid},
	{name: "bingbot", ua: "Mozilla/5.0 (compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm)",
		ip: "157.55.39.1", bot: true, device: DeviceDesktop, platform: PlatformOther},
	{name: "Slackbot", ua: "Slackbot-LinkExpanding 1.0 (+https://api.slack.com/robots)",
		ip: "8.8.8.8", bot: true, device: DeviceDesktop, platform: PlatformOther},
	{name: "Slack-ImgProxy", ua: "Slack-ImgProxy (+https://api.slack.com/robots)",
		ip: "8.8.8.8", bot: true, device: DeviceDesktop, platform: PlatformOther},
	{name: "facebookexternalhit", ua: "facebookexternalhit/1.1 (+http://www.facebook.com/externalhit_uatext.php)",
		ip: "8.8.8.8", bot: true, device: DeviceDesktop, platform: PlatformOther},
	{name: "Facebot", ua: "Facebot", ip: "8.8.8.8", bot: true, device: DeviceDesktop, platform: PlatformOther},
	{name: "iMessage link preview", ua: "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_11_1) AppleWebKit/601.2.4 (KHTML, like Gecko) Version/9.0.1 Safari/601.2.4 facebookexternalhit/1.1 Facebot Twitterbot/1.0",
		ip: "8.8.8.8", bot: true, device: DeviceDesktop, platform: PlatformMacOS},
	{name: "Twitterbot", ua: "Twitterbot/1.0", ip: "8.8.8.8", bot: true, device: DeviceDesktop, platform: PlatformOther},
	{name: "LinkedInBot", ua: "LinkedInBot/1.0 (compatible; Mozilla/5.0; Apache-HttpClient +http://www.linkedin.com)",
		ip: "8.8.8.8", bot: true, device: DeviceDesktop, platform: PlatformOther},
	{name: "WhatsApp preview fetcher", ua: "WhatsApp/2.23.20.0 A", ip: "8.8.8.8", bot: true, device: DeviceDesktop, platform: PlatformOther},
	{name: "WhatsApp preview fetcher iOS", ua: "WhatsApp/2.2407.3 i", ip: "8.8.8.8", bot: true, device: DeviceDesktop, platform: PlatformOther},
	{name: "TelegramBot", ua: "TelegramBot (like TwitterBot)", ip: "8.8.8.8", bot: true, device: DeviceDesktop, platform: PlatformOther},
	{name: "Discordbot", ua: "Mozilla/5.0 (compatible; Discordbot/2.0; +https://discordapp.com)",
		ip: "8.8.8.8", bot: true, device: DeviceDesktop, platform: PlatformOther},
	{name: "Applebot", ua: "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_5) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/13.1.1 Safari/605.1.15 (Applebot/0.1; +http://www.apple.com/go/applebot)",
		ip: "17.241.219.1", bot: true, device: DeviceDesktop, platform: PlatformOther},
	{name: "SkypeUriPreview", ua: "Mozilla/5.0 (Windows NT 6.1; WOW64) SkypeUriPreview Preview/0.5 skype-url-preview@microsoft.com",
		ip: "8.8.8.8", bot: true, device: DeviceDesktop, platform: PlatformWindows},
	{name: "HeadlessChrome", ua: "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/126.0.0.0 Safari/537.36",
		ip: "8.8.8.8", bot: true, device: DeviceDesktop, platform: PlatformWindows},
	{name: "curl", ua: "curl/8.5.0", ip: "8.8.8.8", bot: true, script: true, device: DeviceDesktop, platform: PlatformOther},
	{name: "Wget", ua: "Wget/1.21.4", ip: "8.8.8.8", bot: true, script: true, device: DeviceDesktop, platform: PlatformOther},
	{name: "python-requests", ua: "python-requests/2.32.3", ip: "8.8.8.8", bot: true, script: true, device: DeviceDesktop, platform: PlatformOther},
	{name: "Go-http-client", ua: "Go-http-client/1.1", ip: "8.8.8.8", bot: true, script: true, device: DeviceDesktop, platform: PlatformOther},
	{name: "load generator hey", ua: "hey/0.0.1", ip: "8.8.8.8", bot: true, script: true, device: DeviceDesktop, platform: PlatformOther},
	{name: "ApacheBench", ua: "ApacheBench/2.3", ip: "8.8.8.8", bot: true, script: true, device: DeviceDesktop, platform: PlatformOther},
	{name: "UptimeRobot", ua: "Mozilla/5.0+(compatible; UptimeRobot/2.0; http://www.uptimerobot.com/)", ip: "8.8.8.8", bot: true, device: DeviceDesktop, platform: PlatformOther},
	{name: "SeznamBot (useragent: URL in the UA)", ua: "Mozilla/5.0 (compatible; SeznamBot/4.0; +https://o-seznam.cz/napoveda/vyhledavani/en/seznambot-crawler/)",
		ip: "8.8.8.8", bot: true, device: DeviceDesktop, platform: PlatformOther},
	{name: "Android Cubot phone (says bot, is not one)", ua: "Mozilla/5.0 (Linux; Android 10; CUBOT_X30) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/91.0.4472.120 Mobile Safari/537.36",
		lang: "es", ip: "8.8.8.8", device: DeviceMobile, platform: PlatformAndroid},
	{name: "PlayStation 5 browser", ua: "Mozilla/5.0 (PlayStation; PlayStation 5/2.26) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/13.0 Safari/605.1.15",
		ip: "8.8.8.8", device: DeviceDesktop, platform: PlatformOther},
	{name: "Samsung smart TV", ua: "Mozilla/5.0 (SMART-TV; Linux; Tizen 6.0) AppleWebKit/537.36 (KHTML, like Gecko) SamsungBrowser/4.0 Chrome/76.0.3809.146 TV Safari/537.36",
		ip: "8.8.8.8", device: DeviceDesktop, platform: PlatformOther},
	{name: "Opera Presto (not Mozilla, human by crawlerdetect)", ua: "Opera/9.80 (Windows NT 6.1; U; en) Presto/2.12.388 Version/12.18",
		ip: "8.8.8.8", device: DeviceDesktop, platform: PlatformWindows},
	{name: "Yeti crawler (crawlerdetect only)", ua: "Mozilla/5.0 (compatible; Yeti/1.1)",
		ip: "8.8.8.8", bot: true, device: DeviceDesktop, platform: PlatformOther},
	{name: "ia_archiver (crawlerdetect only)", ua: "ia_archiver", ip: "8.8.8.8", bot: true, device: DeviceDesktop, platform: PlatformOther},
	{name: "Android Dalvik HTTP client", ua: "Dalvik/2.1.0 (Linux; U; Android 14; SM-S918B Build/UP1A.231005.007)",
		ip: "8.8.8.8", bot: true, device: DeviceMobile, platform: PlatformAndroid},
	{name: "Snapchat link preview", ua: "Mozilla/5.0 (Linux; Android 10; K) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/125.0.0.0 Mobile Safari/537.36 (compatible; Snap URL Preview Service; bot; snapchat; https://developers.snap.com/robots)",
		ip: "8.8.8.8", bot: true, device: DeviceMobile, platform: PlatformAndroid},
	{name: "empty user agent", ua: "", lang: "*", referer: "not a url", ip: "10.1.2.3", bot: true, script: true, device: DeviceDesktop, platform: PlatformOther},
}

type goldenEntry struct {
	Name       string `json:"name"`
	UserAgent  string `json:"user_agent"`
	AcceptLang string `json:"accept_language"`
	Referer    string `json:"referer"`
	IP         string `json:"ip"`
	Result     Result `json:"result"`
}

func TestGolden(t *testing.T) {
	e := newTestEnricher(t, Config{})
	var got []goldenEntry
	for _, c := range goldenCases {
		r := httptest.NewRequest("GET", "http://lnk.example/abc", nil)
		r.RemoteAddr = netip.AddrPortFrom(netip.MustParseAddr(c.ip), 51234).String()
		if c.ua != "" {
			r.Header.Set("User-Agent", c.ua)
		} else {
			r.Header.Del("User-Agent")
		}
		if c.lang != "" {
			r.Header.Set("Accept-Language", c.lang)
		}
		if c.referer != "" {
			r.Header.Set("Referer", c.referer)
		}
		res := e.Enrich(r, testNow)
		// A second call answers from the cache, identically.
		if again := e.Enrich(r, testNow); again != res {
			t.Errorf("%s: cached result differs:\n%+v\n%+v", c.name, res, again)
		}
		checkCase(t, c, res)
		got = append(got, goldenEntry{Name: c.name, UserAgent: c.ua, AcceptLang: c.lang, Referer: c.referer, IP: c.ip, Result: res})
	}
	out, err := json.MarshalIndent(got, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	out = append(out, '\n')
	path := filepath.Join("testdata", "enrich.golden")
	if *update {
		if err := os.WriteFile(path, out, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -run TestGolden -update to create it)", err)
	}
	if !bytes.Equal(out, want) {
		var wantEntries []goldenEntry
		if err := json.Unmarshal(want, &wantEntries); err != nil {
			t.Fatalf("golden file unreadable: %v", err)
		}
		byName := map[string]Result{}
		for _, w := range wantEntries {
			byName[w.Name] = w.Result
		}
		for _, g := range got {
			if w, ok := byName[g.Name]; !ok {
				t.Errorf("%s: not in golden file", g.Name)
			} else if w != g.Result {
				t.Errorf("%s:\n got %+v\nwant %+v", g.Name, g.Result, w)
			}
		}
		t.Errorf("output differs from %s (run with -update after checking the changes)", path)
	}
}

func checkCase(t *testing.T, c uaCase, r Result) {
	t.Helper()
	if r.Bot != c.bot {
		t.Errorf("%s: Bot = %v, want %v (%+v)", c.name, r.Bot, c.bot, r)
	}
	if r.Script != c.script {
		t.Errorf("%s: Script = %v, want %v", c.name, r.Script, c.script)
	}
	if r.Script && !r.Bot {
		t.Errorf("%s: a script that is not a bot", c.name)
	}
	if r.Bot && r.BotName == "" {
		t.Errorf("%s: bot without a name", c.name)
	}
	if !r.Bot && r.BotName != "" {
		t.Errorf("%s: BotName %q on a human", c.name, r.BotName)
	}
	if r.App != c.app || r.FromApp != c.fromApp {
		t.Errorf("%s: App = %q FromApp = %v, want %q %v", c.name, r.App, r.FromApp, c.app, c.fromApp)
	}
	if r.DeviceType != c.device {
		t.Errorf("%s: DeviceType = %q, want %q", c.name, r.DeviceType, c.device)
	}
	if r.Platform != c.platform {
		t.Errorf("%s: Platform = %q, want %q", c.name, r.Platform, c.platform)
	}
	if len(r.VisitorHash) != 32 {
		t.Errorf("%s: VisitorHash %q", c.name, r.VisitorHash)
	}
	if c.ip != "" && strings.Contains(mustJSON(t, r), c.ip) {
		t.Errorf("%s: result contains the IP address", c.name)
	}
}

func mustJSON(t testing.TB, v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestNewRequiresSecret(t *testing.T) {
	if _, err := New(Config{Secret: []byte("short")}); err == nil {
		t.Fatal("want an error for a short secret")
	}
	if _, err := New(Config{Secret: testSecret, CityDB: filepath.Join(t.TempDir(), "missing.mmdb")}); err == nil {
		t.Fatal("want an error for a missing city database")
	}
}

func TestEnrichPartsFields(t *testing.T) {
	e := newTestEnricher(t, Config{})
	long := "https://Example.COM:8443/" + strings.Repeat("é", 400)
	r := e.EnrichParts(goldenCases[0].ua, "da, en-gb;q=0.8, en;q=0.7", long, netip.MustParseAddr("::ffff:81.2.69.142"), testNow)
	if r.Language != "da" || r.Referrer != "example.com" || r.Country != "GB" || r.Continent != "EU" {
		t.Errorf("got %+v", r)
	}
	if len(r.ReferrerURL) > 512 || !strings.HasPrefix(long, r.ReferrerURL) || !utf8Valid(r.ReferrerURL) {
		t.Errorf("ReferrerURL not truncated cleanly: %d bytes", len(r.ReferrerURL))
	}
	// The same address, mapped or not, is the same visitor.
	r2 := e.EnrichParts(goldenCases[0].ua, "", "", netip.MustParseAddr("81.2.69.142"), testNow)
	if r2.VisitorHash != r.VisitorHash {
		t.Error("IPv4-mapped address hashed differently")
	}
	// Private, unknown and invalid addresses have no country.
	for _, ip := range []netip.Addr{netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("::1"), {}} {
		if r := e.EnrichParts("curl/8", "", "", ip, testNow); r.Country != "" || r.Continent != "" {
			t.Errorf("%v: country %q continent %q", ip, r.Country, r.Continent)
		}
	}
	// A very long user agent is cut, not rejected.
	huge := goldenCases[0].ua + strings.Repeat(" x", 10000)
	if r := e.EnrichParts(huge, "", "", netip.Addr{}, testNow); r.Browser != "Safari" {
		t.Errorf("long UA: %+v", r)
	}
	// Zero time means now.
	if r := e.EnrichParts("curl/8", "", "", netip.Addr{}, time.Time{}); r.VisitorHash == "" {
		t.Error("no hash for zero time")
	}
}

func utf8Valid(s string) bool { return strings.ToValidUTF8(s, "\uFFFD") == s }

func TestUACacheBounded(t *testing.T) {
	e := newTestEnricher(t, Config{CacheSize: 256})
	for i := range 5000 {
		e.EnrichParts("Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0."+itoa(i)+".0 Safari/537.36", "", "", netip.Addr{}, testNow)
	}
	if n := e.uas.len(); n > 2*256+2*cacheShards*8 {
		t.Fatalf("cache holds %d entries", n)
	}
}

func itoa(i int) string {
	var b [20]byte
	n := len(b)
	for {
		n--
		b[n] = byte('0' + i%10)
		i /= 10
		if i == 0 {
			break
		}
	}
	return string(b[n:])
}

func TestConcurrentEnrich(t *testing.T) {
	e := newTestEnricher(t, Config{CacheSize: 64})
	done := make(chan struct{})
	for g := range 4 {
		go func() {
			defer func() { done <- struct{}{} }()
			for i := range 300 {
				c := goldenCases[(i+g)%len(goldenCases)]
				r := e.EnrichParts(c.ua, c.lang, c.referer, netip.MustParseAddr(c.ip), testNow.Add(time.Duration(i)*time.Hour))
				if r.Bot != c.bot {
					t.Errorf("%s: bot %v", c.name, r.Bot)
				}
			}
		}()
	}
	for range 4 {
		<-done
	}
}

func TestContinent(t *testing.T) {
	for cc, want := range map[string]string{
		"US": "NA", "CA": "NA", "MX": "NA", "BR": "SA", "AR": "SA", "GB": "EU", "DE": "EU", "XK": "EU",
		"RU": "EU", "JP": "AS", "CN": "AS", "IN": "AS", "AU": "OC", "NZ": "OC", "ZA": "AF", "NG": "AF",
		"EG": "AF", "AQ": "AN", "": "", "ZZ": "", "us": "", "USA": "",
	} {
		if got := Continent(cc); got != want {
			t.Errorf("Continent(%q) = %q, want %q", cc, got, want)
		}
	}
}

func TestLanguage(t *testing.T) {
	for in, want := range map[string]string{
		"":                              "",
		"en-US,en;q=0.9":                "en",
		"pt-BR,pt;q=0.9,en-US;q=0.8":    "pt",
		"PT-br":                         "pt",
		"de;q=0.5, fr;q=0.8":            "fr",
		"*":                             "",
		"*;q=0.5, es":                   "es",
		"en;q=0":                        "",
		"en;q=0, ja;q=0.1":              "ja",
		"zh-Hans-CN":                    "zh",
		"fil-PH":                        "fil",
		"en_US":                         "en",
		"x-klingon, 12, e":              "",
		"  it-IT ; q=1.0 ":              "it",
		"en;q=abc, nl;q=0.2":            "nl",
		"de;q=0.999,fr;q=1":             "fr",
		strings.Repeat("xx;q=0.1,", 50): "xx",
	} {
		if got := Language(in); got != want {
			t.Errorf("Language(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestReferrerHost(t *testing.T) {
	for in, want := range map[string]string{
		"":                                      "",
		"https://www.google.com/":               "google.com",
		"https://WWW.Example.COM:8443/x?y#z":    "example.com",
		"http://user:pw@www.site.org/":          "site.org",
		"https://t.co/abc":                      "t.co",
		"android-app://com.google.android.gm/":  "com.google.android.gm",
		"https://[2001:db8::1]:8080/path":       "2001:db8::1",
		"https://example.com.":                  "example.com",
		"https://www2.example.com":              "www2.example.com",
		"example.com/path":                      "",
		"://nohost":                             "",
		"https://news.ycombinator.com?x=1":      "news.ycombinator.com",
		"https://l.instagram.com/?u=https%3A%2": "l.instagram.com",
	} {
		if got := ReferrerHost(in); got != want {
			t.Errorf("ReferrerHost(%q) = %q, want %q", in, got, want)
		}
	}
}
