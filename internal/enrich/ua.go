package enrich

import (
	"bytes"
	"strings"

	"github.com/mileusna/useragent"
	"github.com/x-way/crawlerdetect"

	"github.com/linkd/linkd/domain/link"
)

// Platforms, used to choose a per-platform deep link (link.Attributes.Target).
const (
	PlatformIOS     = link.PlatformIOS
	PlatformAndroid = link.PlatformAndroid
	PlatformWindows = link.PlatformWindows
	PlatformMacOS   = link.PlatformMacOS
	PlatformOther   = link.PlatformOther
)

// Device types.
const (
	DeviceMobile  = "mobile"
	DeviceDesktop = "desktop"
	DeviceTablet  = "tablet"
)

const (
	// maxUALen bounds the part of a User-Agent header that is parsed, used as
	// a cache key and hashed into the visitor key. Real user agents, in-app
	// ones included, stay well below it.
	maxUALen = 1024
	// maxCrawlerDetectLen bounds the input of crawlerdetect, whose cost grows
	// with the length of its input (one large regular expression).
	maxCrawlerDetectLen = 512
	// maxNameLen bounds browser and bot names taken from a user agent.
	maxNameLen = 48
)

// uaInfo is the part of a Result that depends only on the user agent. Values
// in the cache are shared and must not be modified.
type uaInfo struct {
	Browser        string
	BrowserVersion string
	OS             string
	OSVersion      string
	DeviceType     string
	Device         string
	FromApp        bool
	App            string
	Bot            bool
	BotName        string
	Script         bool
	Platform       string

	provisional bool // decided without crawlerdetect: do not cache
}

// botToken names a bot by a case-sensitive substring of its user agent (or
// a prefix, when prefix is set). The table is consulted before any other
// rule, so that it can both name bots and override the general parser. Link
// preview fetchers are bots: they fetch a link to draw a card in a chat or
// social app, not because a person opened it.
type botToken struct {
	token  string
	name   string
	prefix bool
	script bool // an HTTP client or library: counted (see Info.Script)
}

var botTokens = []botToken{
	// Link preview fetchers of chat and social apps.
	{token: "facebookexternalhit", name: "facebookexternalhit"},
	{token: "facebookcatalog", name: "facebookcatalog"},
	{token: "Facebot", name: "Facebot"},
	{token: "meta-externalagent", name: "meta-externalagent"},
	{token: "Twitterbot", name: "Twitterbot"},
	{token: "LinkedInBot", name: "LinkedInBot"},
	{token: "Slackbot", name: "Slackbot"},
	{token: "Slack-ImgProxy", name: "Slack-ImgProxy"},
	// The WhatsApp preview fetcher sends "WhatsApp/2.23.20.0 A" with no
	// browser token; WhatsApp inside a full Mozilla/... user agent is a
	// person in the app's web view (see appTokens).
	{token: "WhatsApp/", name: "WhatsApp", prefix: true},
	{token: "TelegramBot", name: "TelegramBot"},
	{token: "Discordbot", name: "Discordbot"},
	{token: "SkypeUriPreview", name: "SkypeUriPreview"},
	{token: "redditbot", name: "redditbot"},
	{token: "Pinterestbot", name: "Pinterestbot"},
	{token: "Pinterest/0.", name: "Pinterestbot", prefix: true},
	{token: "Snap URL Preview", name: "Snapchat preview"},
	{token: "vkShare", name: "vkShare"},
	{token: "Mastodon/", name: "Mastodon"},
	{token: "Bluesky Cardyb", name: "Bluesky"},
	{token: "Embedly", name: "Embedly"},
	{token: "Iframely", name: "Iframely"},
	{token: "BingPreview", name: "BingPreview"},
	{token: "Google-PageRenderer", name: "Google-PageRenderer"},
	// Search engines and other crawlers.
	{token: "Googlebot", name: "Googlebot"},
	{token: "Google-InspectionTool", name: "Google-InspectionTool"},
	{token: "GoogleOther", name: "GoogleOther"},
	{token: "AdsBot-Google", name: "AdsBot-Google"},
	{token: "Mediapartners-Google", name: "Mediapartners-Google"},
	{token: "bingbot", name: "Bingbot"},
	{token: "Applebot", name: "Applebot"},
	{token: "DuckDuckBot", name: "DuckDuckBot"},
	{token: "YandexBot", name: "YandexBot"},
	{token: "Baiduspider", name: "Baiduspider"},
	{token: "Yahoo! Slurp", name: "Yahoo! Slurp"},
	{token: "PetalBot", name: "PetalBot"},
	{token: "AhrefsBot", name: "AhrefsBot"},
	{token: "SemrushBot", name: "SemrushBot"},
	{token: "MJ12bot", name: "MJ12bot"},
	{token: "Bytespider", name: "Bytespider"},
	{token: "Amazonbot", name: "Amazonbot"},
	{token: "GPTBot", name: "GPTBot"},
	{token: "ChatGPT-User", name: "ChatGPT-User"},
	{token: "OAI-SearchBot", name: "OAI-SearchBot"},
	{token: "ClaudeBot", name: "ClaudeBot"},
	{token: "Claude-User", name: "Claude-User"},
	{token: "PerplexityBot", name: "PerplexityBot"},
	{token: "CCBot", name: "CCBot"},
	// Automated browsers.
	{token: "HeadlessChrome", name: "HeadlessChrome"},
	{token: "Chrome-Lighthouse", name: "Lighthouse"},
	{token: "PhantomJS", name: "PhantomJS"},
	// HTTP clients and libraries: not browsers, so Bot, but their accesses
	// are counted (Script): a request that follows a short link with curl, a
	// load generator or an app's HTTP library is somebody's click; only
	// known crawlers and preview fetchers are left out (docs/decisions.md).
	{token: "curl/", name: "curl", prefix: true, script: true},
	{token: "Wget/", name: "Wget", prefix: true, script: true},
	{token: "python-requests/", name: "python-requests", prefix: true, script: true},
	{token: "Python-urllib/", name: "Python-urllib", prefix: true, script: true},
	{token: "python-httpx/", name: "python-httpx", prefix: true, script: true},
	{token: "aiohttp/", name: "aiohttp", script: true},
	{token: "Go-http-client/", name: "Go-http-client", prefix: true, script: true},
	{token: "okhttp/", name: "okhttp", prefix: true, script: true},
	{token: "Apache-HttpClient/", name: "Apache-HttpClient", script: true},
	{token: "Java/", name: "Java", prefix: true, script: true},
	{token: "axios/", name: "axios", prefix: true, script: true},
	{token: "node-fetch", name: "node-fetch", prefix: true, script: true},
	{token: "undici", name: "undici", prefix: true, script: true},
	{token: "PostmanRuntime/", name: "PostmanRuntime", prefix: true, script: true},
	{token: "insomnia/", name: "insomnia", prefix: true, script: true},
	{token: "HTTPie/", name: "HTTPie", prefix: true, script: true},
	{token: "libwww-perl/", name: "libwww-perl", prefix: true, script: true},
	{token: "Scrapy/", name: "Scrapy", prefix: true, script: true},
	{token: "Dart/", name: "Dart", prefix: true, script: true},
	// Load generators and API testers.
	{token: "ApacheBench/", name: "ApacheBench", prefix: true, script: true},
	{token: "hey/", name: "hey", prefix: true, script: true},
	{token: "oha/", name: "oha", prefix: true, script: true},
	{token: "k6/", name: "k6", prefix: true, script: true},
	{token: "wrk", name: "wrk", prefix: true, script: true},
	{token: "Bombardier", name: "bombardier", prefix: true, script: true},
	{token: "bombardier", name: "bombardier", prefix: true, script: true},
	{token: "autocannon", name: "autocannon", prefix: true, script: true},
	{token: "Artillery", name: "Artillery", prefix: true, script: true},
	{token: "Gatling", name: "Gatling", prefix: true, script: true},
	{token: "Vegeta", name: "Vegeta", prefix: true, script: true},
	{token: "locust", name: "locust", prefix: true, script: true},
	{token: "reqwest/", name: "reqwest", prefix: true, script: true},
	{token: "got (", name: "got", prefix: true, script: true},
	{token: "Ruby", name: "Ruby", prefix: true, script: true},
	{token: "Faraday", name: "Faraday", prefix: true, script: true},
	{token: "GuzzleHttp/", name: "Guzzle", prefix: true, script: true},
	{token: "RestSharp/", name: "RestSharp", prefix: true, script: true},
	// Native HTTP stacks of Android and Apple apps: an app fetching the link
	// itself (a preview, a prefetch), not a person in a browser or web view.
	{token: "Dalvik/", name: "Dalvik", prefix: true},
	{token: "CFNetwork/", name: "CFNetwork"},
}

// suspiciousWords (lower case) send a user agent that otherwise looks like a
// browser through the bot checks: a plain browser never contains them. They
// only decide that the bot table and crawlerdetect are consulted, not the
// answer (crawlerdetect knows exceptions such as the "Cubot" phone brand).
// Every non-prefix token of botTokens must contain one of them.
var suspiciousWords = [][]byte{
	[]byte("bot"), []byte("crawl"), []byte("spider"), []byte("slurp"),
	[]byte("preview"), []byte("headless"), []byte("external"),
	[]byte("http://"), []byte("https://"), []byte("lighthouse"),
	[]byte("fetch"), []byte("scrape"), []byte("monitor"), []byte("check"),
	[]byte("python"), []byte("curl"), []byte("wget"), []byte("java"),
	[]byte("google-"), []byte("-google"), []byte("googleother"), []byte("catalog"), []byte("slack"), []byte("http"), []byte("share"),
	[]byte("mastodon"), []byte("bluesky"), []byte("embed"), []byte("iframe"),
	[]byte("chatgpt"), []byte("claude"), []byte("phantom"), []byte("cfnetwork"),
}

// appToken recognises an in-app browser (web view of a native app) by a
// case-sensitive substring of its user agent. The first match wins, so more
// specific entries come first. version, when set, is the token after which
// the app's version number follows.
type appToken struct {
	token   string
	app     string
	version string
}

var appTokens = []appToken{
	{token: "FBAN/Messenger", app: "Messenger", version: "FBAV/"},
	{token: "FB_IAB/Orca-Android", app: "Messenger", version: "FBAV/"},
	{token: "FBAN/", app: "Facebook", version: "FBAV/"},
	{token: "FB_IAB/", app: "Facebook", version: "FBAV/"},
	{token: "FBAV/", app: "Facebook", version: "FBAV/"},
	{token: "Instagram ", app: "Instagram", version: "Instagram "},
	{token: "Barcelona ", app: "Threads", version: "Barcelona "},
	// TikTok: the international app identifies as musical_ly or trill and
	// uses ByteDance's web view. useragent reads some of these as Chrome.
	{token: "musical_ly", app: "TikTok", version: "app_version/"},
	{token: "trill_", app: "TikTok", version: "app_version/"},
	{token: "TikTok", app: "TikTok", version: "app_version/"},
	{token: "BytedanceWebview", app: "TikTok", version: "app_version/"},
	{token: "LinkedInApp", app: "LinkedIn", version: "LinkedInApp]/"},
	{token: "Snapchat", app: "Snapchat", version: "Snapchat/"},
	{token: "Pinterest", app: "Pinterest", version: "Pinterest/"},
	{token: "Twitter for iPhone", app: "Twitter", version: "Twitter for iPhone/"},
	{token: "Twitter for iPad", app: "Twitter", version: "Twitter for iPad/"},
	{token: "TwitterAndroid", app: "Twitter", version: "TwitterAndroid/"},
	{token: " Line/", app: "Line", version: " Line/"},
	{token: "MicroMessenger/", app: "WeChat", version: "MicroMessenger/"},
	{token: "Telegram", app: "Telegram", version: "Telegram-Android/"},
	{token: "WhatsApp", app: "WhatsApp", version: "WhatsApp/"},
	{token: "KAKAOTALK", app: "KakaoTalk", version: "KAKAOTALK "},
	{token: "NAVER(inapp", app: "Naver", version: "NAVER(inapp; search; "},
	{token: "Reddit/", app: "Reddit", version: "Reddit/Version "},
	{token: " GSA/", app: "Google", version: " GSA/"},
}

// browserNames are the names from useragent that are real browsers; any
// other name it finds (an unknown product token) is kept only when short.
var browserNames = map[string]string{
	useragent.Chrome:           "Chrome",
	useragent.Safari:           "Safari",
	useragent.Firefox:          "Firefox",
	useragent.Edge:             "Edge",
	useragent.Opera:            "Opera",
	useragent.OperaMini:        "Opera Mini",
	useragent.OperaTouch:       "Opera Touch",
	useragent.SamsungBrowser:   "Samsung Browser",
	useragent.InternetExplorer: "Internet Explorer",
	useragent.Vivaldi:          "Vivaldi",
	"Miui Browser":             "Miui Browser",
	"Huawei Browser":           "Huawei Browser",
	"Android browser":          "Android Browser",
	"YaBrowser":                "Yandex Browser",
	"UCBrowser":                "UC Browser",
	"DuckDuckGo":               "DuckDuckGo",
	"Silk":                     "Silk",
	"Brave":                    "Brave",
}

// isCrawler is crawlerdetect's verdict; a variable so that tests can count
// the calls.
var isCrawler = crawlerdetect.IsCrawler

// parseUA derives the user-agent part of a Result. It costs a few
// microseconds, and a few hundred when crawlerdetect has to be asked, so its
// results are cached by the caller. budget (nil: unlimited) rations the
// crawlerdetect calls; when it refuses, the verdict goes by the shape of the
// user agent and the result is marked provisional, not to be cached.
func parseUA(s string, budget *crawlerBudget) uaInfo {
	if strings.TrimSpace(s) == "" {
		// No browser sends an empty User-Agent; scripts do.
		return uaInfo{
			Browser: "", OS: "", DeviceType: DeviceDesktop, Device: "Other",
			Bot: true, BotName: "empty user agent", Script: true, Platform: PlatformOther,
		}
	}
	p := useragent.Parse(s)
	info := uaInfo{}
	setOSAndDevice(&info, s, &p)

	browserLike := looksLikeBrowser(s)
	var lower [maxUALen]byte
	lowered := asciiLower(lower[:0], s)
	suspicious := containsAny(lowered, suspiciousWords)

	// 1. Named bots from our table (link previews, crawlers, HTTP clients).
	// A browser-shaped user agent can only contain one of these tokens if it
	// also contains a suspicious word (TestBotTokensAreSuspicious), which
	// saves the table scan for ordinary browsers.
	if !browserLike || suspicious {
		if t, ok := matchBot(s); ok {
			info.Bot, info.BotName, info.Script = true, t.name, t.script
			info.Browser, info.BrowserVersion = t.name, ""
			return info
		}
	}
	// 2. useragent's own bot flag (bots it names, or a "+http://" URL).
	if p.Bot {
		info.Bot = true
		info.BotName = botName(s, &p)
		info.Browser, info.BrowserVersion = info.BotName, ""
		return info
	}

	// 3. In-app browsers: people inside Instagram, TikTok, ... web views.
	if browserLike {
		if app, ver, ok := matchApp(s); ok {
			info.FromApp, info.App = true, app
			info.Browser, info.BrowserVersion = app, ver
		} else {
			info.Browser, info.BrowserVersion = browserName(&p), browserVersion(s, &p)
			if isWebView(s, &p) {
				info.FromApp = true
				if info.Platform == PlatformIOS {
					info.Browser, info.BrowserVersion = "iOS WebView", ""
				} else {
					info.Browser = "Android WebView"
				}
			}
		}
		if !suspicious {
			return info
		}
	} else {
		info.Browser, info.BrowserVersion = browserName(&p), browserVersion(s, &p)
	}

	// 4. Anything that is not plainly a browser, or mentions bot-like words:
	// ask crawlerdetect (slow, hence only here; the result is cached with
	// the rest of uaInfo by the caller). Without budget left (a flood of
	// never-seen user agents) the verdict goes by shape: a non-browser is a
	// bot (people browse with browsers), a browser-shaped one is a person.
	crawler := !browserLike
	if budget.take() {
		cd := s
		if len(cd) > maxCrawlerDetectLen {
			cd = cd[:maxCrawlerDetectLen]
		}
		crawler = isCrawler(cd)
	} else {
		info.provisional = true
	}
	if crawler {
		info.Bot = true
		// crawlerdetect knows the crawler. Without its verdict, a tool that
		// does not call itself a crawler is taken for a script: counted.
		info.Script = info.provisional && !containsAny(lowered, crawlerWords)
		info.BotName = botName(s, &p)
		info.FromApp, info.App = false, ""
		info.Browser, info.BrowserVersion = info.BotName, ""
	}
	return info
}

// setOSAndDevice fills OS, OSVersion, DeviceType, Device and Platform.
func setOSAndDevice(info *uaInfo, s string, p *useragent.UserAgent) {
	info.OS = p.OS
	info.OSVersion = p.OSVersion
	info.Platform = PlatformOther
	switch p.OS {
	case useragent.IOS:
		info.Platform = PlatformIOS
		switch {
		case p.Device == "iPad" || strings.Contains(s, "iPad"):
			info.DeviceType, info.Device = DeviceTablet, "iPad"
		case strings.Contains(s, "iPod"):
			info.DeviceType, info.Device = DeviceMobile, "iPod"
		default:
			info.DeviceType, info.Device = DeviceMobile, "iPhone"
		}
	case useragent.Android:
		info.Platform = PlatformAndroid
		if isAndroidTablet(s, p) {
			info.DeviceType, info.Device = DeviceTablet, "Android tablet"
		} else {
			info.DeviceType, info.Device = DeviceMobile, "Android"
		}
	case useragent.Windows:
		info.Platform = PlatformWindows
		info.OSVersion = windowsVersion(p.OSVersion)
		info.DeviceType, info.Device = DeviceDesktop, "Windows PC"
	case useragent.MacOS:
		info.Platform = PlatformMacOS
		info.DeviceType, info.Device = DeviceDesktop, "Mac"
	case useragent.Linux:
		info.DeviceType, info.Device = DeviceDesktop, "Linux PC"
	case useragent.ChromeOS:
		info.DeviceType, info.Device = DeviceDesktop, "Chromebook"
	case useragent.FreeBSD:
		info.DeviceType, info.Device = DeviceDesktop, "PC"
	case useragent.WindowsPhone:
		info.DeviceType, info.Device = DeviceMobile, "Windows Phone"
	case useragent.BlackBerry:
		info.DeviceType, info.Device = DeviceMobile, "BlackBerry"
	case useragent.Harmony:
		info.OS = "HarmonyOS"
		info.DeviceType, info.Device = DeviceMobile, "HarmonyOS device"
	default:
		info.Device = "Other"
		switch {
		case p.Tablet:
			info.DeviceType = DeviceTablet
		case p.Mobile:
			info.DeviceType = DeviceMobile
		default:
			info.DeviceType = DeviceDesktop
		}
	}
	// Televisions and game consoles: not phones or tablets, whatever OS
	// token they carry (Samsung TVs send SamsungBrowser, read as Android).
	for _, t := range bigScreens {
		if strings.Contains(s, t.token) {
			info.DeviceType, info.Device, info.Platform = DeviceDesktop, t.device, PlatformOther
			if t.os != "" {
				info.OS, info.OSVersion = t.os, ""
			}
			break
		}
	}
	// Keep only versions that look like versions ("x86_64" is not one).
	if info.OS == "" {
		info.OSVersion = ""
	}
	if info.OSVersion != "" && (info.OSVersion[0] < '0' || info.OSVersion[0] > '9') && info.OS != useragent.Windows {
		info.OSVersion = ""
	}
}

// bigScreens recognise televisions and game consoles.
var bigScreens = []struct{ token, device, os string }{
	{"Tizen", "Smart TV", "Tizen"},
	{"Web0S", "Smart TV", "webOS"},
	{"SMART-TV", "Smart TV", ""},
	{"SmartTV", "Smart TV", ""},
	{"; AFT", "Smart TV", ""}, // Amazon Fire TV models: "Android 9; AFTMM Build/..."
	{"CrKey", "Smart TV", ""},
	{"Android TV", "Smart TV", ""},
	{"AppleTV", "Smart TV", "tvOS"},
	{"PlayStation", "Game console", ""},
	{"Xbox", "Game console", ""},
	{"Nintendo", "Game console", ""},
}

// isAndroidTablet: useragent misses most Android tablets. Chrome and the
// Android web view leave out the "Mobile" token on tablets (that is how
// sites tell them apart), Firefox says "Tablet", and several tablet model
// names are recognisable even in a "mobile" user agent.
func isAndroidTablet(s string, p *useragent.UserAgent) bool {
	if p.Tablet || strings.Contains(s, "Tablet") {
		return true
	}
	if m := p.Device; m != "" {
		for _, pre := range []string{"SM-T", "SM-X", "SM-P", "GT-P", "Lenovo TB", "TB-", "KF"} {
			if strings.HasPrefix(m, pre) {
				return true
			}
		}
		for _, sub := range []string{" Tab", "Tab ", "Pad", "Pixel Tablet", "Nexus 7", "Nexus 9", "Nexus 10"} {
			if strings.Contains(m, sub) {
				return true
			}
		}
	}
	hasEngine := strings.Contains(s, "AppleWebKit/") || strings.Contains(s, "Gecko/")
	return hasEngine && !strings.Contains(s, "Mobile")
}

// windowsVersion maps a Windows NT version to the marketing name. Windows 11
// still sends "10.0".
func windowsVersion(nt string) string {
	switch nt {
	case "10.0":
		return "10"
	case "6.3":
		return "8.1"
	case "6.2":
		return "8"
	case "6.1":
		return "7"
	case "6.0":
		return "Vista"
	case "5.1", "5.2":
		return "XP"
	}
	return nt
}

// looksLikeBrowser reports whether s has the shape of a real browser's user
// agent: a Mozilla/5.0 (...) product with a rendering engine token. Such
// user agents skip crawlerdetect unless suspicious.
func looksLikeBrowser(s string) bool {
	if !strings.HasPrefix(s, "Mozilla/5.0 (") {
		return false
	}
	return strings.Contains(s, "AppleWebKit/") || strings.Contains(s, "Gecko/") || strings.Contains(s, "Trident/")
}

// isWebView reports an embedded web view of an app that we do not name: on
// iOS a WebKit user agent without "Safari/" (Safari, Chrome, Firefox and Edge
// for iOS all send it), on Android the "; wv)" marker.
func isWebView(s string, p *useragent.UserAgent) bool {
	switch p.OS {
	case useragent.IOS:
		return !strings.Contains(s, "Safari/")
	case useragent.Android:
		return strings.Contains(s, "; wv)")
	}
	return false
}

func matchBot(s string) (*botToken, bool) {
	for i := range botTokens {
		t := &botTokens[i]
		if t.prefix {
			if strings.HasPrefix(s, t.token) {
				return t, true
			}
		} else if strings.Contains(s, t.token) {
			return t, true
		}
	}
	return nil, false
}

// crawlerWords (lower case) mark a user agent that is not browser-shaped
// and not in botTokens as a crawler, monitor or fetcher rather than a
// script: such agents name themselves so ("...bot", "+https://...").
var crawlerWords = [][]byte{
	[]byte("bot"), []byte("crawl"), []byte("spider"), []byte("slurp"),
	[]byte("preview"), []byte("scrape"), []byte("monitor"), []byte("check"),
	[]byte("http://"), []byte("https://"), []byte("fetch"), []byte("scan"),
	[]byte("archive"), []byte("index"), []byte("feed"), []byte("uptime"),
}

func matchApp(s string) (app, version string, ok bool) {
	for i := range appTokens {
		t := &appTokens[i]
		if !strings.Contains(s, t.token) {
			continue
		}
		version = versionAfter(s, t.version)
		if version == "" && t.app == "TikTok" {
			// iOS TikTok: "musical_ly_35.1.0" (Android puts a build number
			// there and the version in app_version/).
			if v := versionAfter(s, "musical_ly_"); strings.Contains(v, ".") {
				version = v
			}
		}
		return t.app, version, true
	}
	return "", "", false
}

// versionAfter returns the run of digits and dots that follows the first
// occurrence of marker in s.
func versionAfter(s, marker string) string {
	if marker == "" {
		return ""
	}
	i := strings.Index(s, marker)
	if i < 0 {
		return ""
	}
	v := s[i+len(marker):]
	n := 0
	for n < len(v) && n < 32 && (v[n] == '.' || v[n] >= '0' && v[n] <= '9') {
		n++
	}
	return strings.TrimRight(v[:n], ".")
}

// browserName normalises useragent's name. Unknown names are product tokens
// found in the user agent; they are kept when short and clean, otherwise the
// browser is "Other" (statistics keys must not be arbitrary strings).
func browserName(p *useragent.UserAgent) string {
	if n, ok := browserNames[p.Name]; ok {
		return n
	}
	if p.Name == "" || p.Name == p.String || !cleanName(p.Name) {
		return "Other"
	}
	switch p.Name {
	case "iPhone", "iPad", "iPod", "Mobile", "Version", "Mozilla":
		return "Other"
	}
	return p.Name
}

// browserVersion is useragent's version, except for Presto-based Opera,
// frozen at "Opera/9.80" with the real version in "Version/".
func browserVersion(s string, p *useragent.UserAgent) string {
	if p.Name == useragent.Opera && p.Version == "9.80" {
		if v := versionAfter(s, "Version/"); v != "" {
			return v
		}
	}
	return p.Version
}

// botName names a bot that our table does not know: useragent's name when
// clean, else the first product token of the user agent.
func botName(s string, p *useragent.UserAgent) string {
	n := p.Name
	switch n {
	case useragent.HeadlessChrome:
		return "HeadlessChrome"
	case useragent.Bingbot:
		return "Bingbot"
	}
	if n != "" && n != s && cleanName(n) && n != "Mozilla" {
		if _, isBrowser := browserNames[n]; !isBrowser {
			return n
		}
	}
	// "Name/1.0 ..." -> "Name"; "Mozilla/5.0 (compatible; Name/1.0; ...)" -> "Name".
	t := s
	if i := strings.Index(t, "compatible; "); i >= 0 {
		t = t[i+len("compatible; "):]
	}
	end := strings.IndexAny(t, "/ ;()+")
	if end < 0 {
		end = len(t)
	}
	if end > 0 && end <= maxNameLen && cleanName(t[:end]) && t[:end] != "Mozilla" {
		return t[:end]
	}
	return "Other"
}

// cleanName accepts short names of letters, digits, spaces, '.', '-', '_'
// and '!'.
func cleanName(n string) bool {
	if len(n) == 0 || len(n) > maxNameLen {
		return false
	}
	for i := 0; i < len(n); i++ {
		c := n[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case c == ' ' || c == '.' || c == '-' || c == '_' || c == '!':
		default:
			return false
		}
	}
	return true
}

// asciiLower appends s lower-cased (ASCII only) to dst, up to its capacity.
func asciiLower(dst []byte, s string) []byte {
	if len(s) > cap(dst)-len(dst) {
		s = s[:cap(dst)-len(dst)]
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		dst = append(dst, c)
	}
	return dst
}

func containsAny(b []byte, words [][]byte) bool {
	for _, w := range words {
		if bytes.Contains(b, w) {
			return true
		}
	}
	return false
}
