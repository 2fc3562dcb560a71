package link

import (
	"net/url"
	"strings"
)

// WithWhatsAppText gives a WhatsApp target the link's whatsapp_message as
// its text parameter, when the target has no text of its own: targets
// whatsapp://send, https://wa.me/..., https://api.whatsapp.com/send and
// https://web.whatsapp.com/send. Any other target, or an empty message,
// comes back exactly as given; so does a target whose text is not empty.
func WithWhatsAppText(target, message string) string {
	if message == "" || !IsWhatsApp(target) {
		return target
	}
	q := splitQuery(target)
	var kept []string
	for _, pair := range q.pairs {
		if pairName(pair) == "text" {
			if _, value, _ := strings.Cut(pair, "="); value != "" {
				return target // the target's own text wins
			}
			continue // an empty text is none
		}
		kept = append(kept, pair)
	}
	// %20, not '+': WhatsApp reads both in https links, but the
	// whatsapp:// handlers of some platforms show a '+' as it is.
	kept = append(kept, "text="+strings.ReplaceAll(url.QueryEscape(message), "+", "%20"))
	return q.with(kept)
}

// IsWhatsApp reports whether target opens a WhatsApp chat: the whatsapp:
// scheme, wa.me, or the /send path of api.whatsapp.com, web.whatsapp.com
// or whatsapp.com.
func IsWhatsApp(target string) bool {
	u, err := url.Parse(target)
	if err != nil {
		return false
	}
	switch strings.ToLower(u.Scheme) {
	case "whatsapp":
		return true
	case "http", "https":
	default:
		return false
	}
	switch strings.TrimSuffix(strings.ToLower(u.Hostname()), ".") {
	case "wa.me", "www.wa.me":
		return true
	case "api.whatsapp.com", "web.whatsapp.com", "whatsapp.com", "www.whatsapp.com":
		return strings.TrimSuffix(u.Path, "/") == "/send"
	}
	return false
}
