package api_test

import (
	"net/netip"
	"testing"
	"time"

	"github.com/linkd/linkd/api"
	"github.com/linkd/linkd/internal/enrich"
)

// The fetchers that get a link's preview, by their real user agents, and
// user agents that must keep the redirect: people, in-app browsers,
// scripts, and bots that draw no preview.
func TestIsPreviewFetcher(t *testing.T) {
	t.Parallel()
	e, err := enrich.New(enrich.Config{Secret: []byte("0123456789abcdef0123456789abcdef")})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, ua string
		want     bool
	}{
		{"Slack", "Slackbot-LinkExpanding 1.0 (+https://api.slack.com/robots)", true},
		{"Slack 1.0", "Slackbot 1.0 (+https://api.slack.com/robots)", true},
		{"Facebook", "facebookexternalhit/1.1 (+http://www.facebook.com/externalhit_uatext.php)", true},
		{"Facebook bare", "facebookexternalhit/1.1", true},
		{"Facebot", "Facebot", true},
		{"iMessage", "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_11_1) AppleWebKit/601.2.4 (KHTML, like Gecko) Version/9.0.1 Safari/601.2.4 facebookexternalhit/1.1 Facebot Twitterbot/1.0", true},
		{"X", "Twitterbot/1.0", true},
		{"LinkedIn", "LinkedInBot/1.0 (compatible; Mozilla/5.0; Apache-HttpClient +http://www.linkedin.com)", true},
		{"LinkedIn Jakarta", "LinkedInBot/1.0 (compatible; Mozilla/5.0; Jakarta Commons-HttpClient/3.1 +http://www.linkedin.com)", true},
		{"WhatsApp Android", "WhatsApp/2.23.20.0 A", true},
		{"WhatsApp iOS", "WhatsApp/2.21.12.21 i", true},
		{"Discord", "Mozilla/5.0 (compatible; Discordbot/2.0; +https://discordapp.com)", true},
		{"Telegram", "TelegramBot (like TwitterBot)", true},
		{"Skype", "Mozilla/5.0 (Windows NT 6.1; WOW64) SkypeUriPreview Preview/0.5", true},
		{"Googlebot", "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)", true},
		{"Googlebot smartphone", "Mozilla/5.0 (Linux; Android 6.0.1; Nexus 5X Build/MMB29P) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.6478.126 Mobile Safari/537.36 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)", true},
		{"Bingbot", "Mozilla/5.0 (compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm)", true},
		{"Bingbot evergreen", "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm) Chrome/116.0.1938.76 Safari/537.36", true},

		{"Chrome", "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36", false},
		{"Safari iPhone", "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1", false},
		{"WhatsApp in-app", "Mozilla/5.0 (Linux; Android 14; SM-S918B Build/UP1A.231005.007; wv) AppleWebKit/537.36 (KHTML, like Gecko) Version/4.0 Chrome/125.0.6422.165 Mobile Safari/537.36 WhatsApp/2.24.10.74", false},
		{"Instagram", "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148 Instagram 335.0.3.15.111 (iPhone15,3; iOS 17_5; en_US; en; scale=3.00; 1290x2796; 612165720)", false},
		{"curl", "curl/8.5.0", false},
		{"no user agent", "", false},
		{"AhrefsBot", "Mozilla/5.0 (compatible; AhrefsBot/7.0; +http://ahrefs.com/robot/)", false},
		{"HeadlessChrome", "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/126.0.0.0 Safari/537.36", false},
	}
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	for _, c := range cases {
		info := e.EnrichParts(c.ua, "", "", netip.MustParseAddr("192.0.2.1"), now)
		if got := api.IsPreviewFetcher(&info); got != c.want {
			t.Errorf("%s: IsPreviewFetcher = %v, want %v (bot %v %q, script %v)", c.name, got, c.want, info.Bot, info.BotName, info.Script)
		}
	}
}
