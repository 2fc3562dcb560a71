package link

import (
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/linkd/linkd/domain"
)

// Preview is the link's social preview data. Both representations of the
// spec are accepted: favicon and social_image, or image. Fields are
// pointers so that a link returns exactly the keys it was given, empty
// strings included.
type Preview struct {
	Title       *string `json:"title,omitempty"`
	Description *string `json:"description,omitempty"`
	Favicon     *string `json:"favicon,omitempty"`
	SocialImage *string `json:"social_image,omitempty"`
	Image       *string `json:"image,omitempty"`
}

// IsEmpty reports whether the preview sets no non-empty value.
func (p *Preview) IsEmpty() bool {
	if p == nil {
		return true
	}
	for _, v := range []*string{p.Title, p.Description, p.Favicon, p.SocialImage, p.Image} {
		if v != nil && *v != "" {
			return false
		}
	}
	return true
}

// Validate bounds the preview's texts; its image and favicon must be
// http(s) URLs.
func (p *Preview) Validate() error {
	if p == nil {
		return nil
	}
	for _, v := range []*string{p.Title, p.Description, p.Favicon, p.SocialImage, p.Image} {
		if v != nil {
			if err := ValidateText("metadata", *v, MaxTextLength); err != nil {
				return err
			}
		}
	}
	for _, f := range []struct {
		name string
		v    *string
	}{{"metadata.favicon", p.Favicon}, {"metadata.social_image", p.SocialImage}, {"metadata.image", p.Image}} {
		if f.v != nil {
			if err := ValidatePreviewURL(f.name, *f.v); err != nil {
				return err
			}
		}
	}
	return nil
}

// QRCodeOptions style the link's QR code. Like Preview, given keys are
// kept and absent keys stay absent.
type QRCodeOptions struct {
	Size                 *int    `json:"size,omitempty"`
	Color                *string `json:"color,omitempty"`
	BackgroundColor      *string `json:"background_color,omitempty"`
	Logo                 *string `json:"logo,omitempty"`
	LogoSize             *int    `json:"logo_size,omitempty"`
	ErrorCorrectionLevel *string `json:"error_correction_level,omitempty"`
}

// ExcludedCountry is a country whose visitors may not follow the link.
// Optional keys are kept exactly as given.
type ExcludedCountry struct {
	Code      string  `json:"code"`
	Label     *string `json:"label,omitempty"`
	Phone     *string `json:"phone,omitempty"`
	Suggested *bool   `json:"suggested,omitempty"`
	Lang      *string `json:"lang,omitempty"`
	Continent *string `json:"continent,omitempty"`
}

// Limits of field lengths (the spec leaves them open; docs/decisions.md
// records them).
const (
	MaxURLLength     = 8192
	MaxCodeLength    = 50
	MaxNameLength    = 512
	MaxTextLength    = 4096
	MaxPasswordBytes = 256
	MaxCountries     = 300
)

var allowedSchemes = map[string]bool{
	"http": true, "https": true, "mailto": true, "tel": true, "sms": true,
	"whatsapp": true, "tg": true, "skype": true,
}

// MsgInvalidURL is the spec's text for a refused URL.
const MsgInvalidURL = "Invalid URL format"

// ValidateURL accepts the schemes of the spec: http and https with a host,
// and mailto, tel, sms, whatsapp, tg, skype with something after the colon.
func ValidateURL(raw string) error {
	if raw == "" || len(raw) > MaxURLLength || !utf8.ValidString(raw) || strings.TrimSpace(raw) != raw {
		return domain.Invalid(MsgInvalidURL)
	}
	for _, r := range raw {
		if r < 0x20 || r == 0x7f || r == ' ' {
			return domain.Invalid(MsgInvalidURL)
		}
	}
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" {
		return domain.Invalid(MsgInvalidURL)
	}
	scheme := strings.ToLower(u.Scheme)
	if !allowedSchemes[scheme] {
		return domain.Invalid(MsgInvalidURL)
	}
	switch scheme {
	case "http", "https":
		host := u.Hostname()
		if host == "" || u.Opaque != "" || !validHost(host) {
			return domain.Invalid(MsgInvalidURL)
		}
		if p := u.Port(); p == "" && strings.HasSuffix(u.Host, ":") {
			return domain.Invalid(MsgInvalidURL)
		} else if p != "" {
			if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
				return domain.Invalid(MsgInvalidURL)
			}
		}
	default:
		rest := u.Opaque
		if rest == "" {
			rest = strings.TrimPrefix(u.Host+u.Path, "//")
		}
		if rest == "" && u.RawQuery == "" {
			return domain.Invalid(MsgInvalidURL)
		}
	}
	return nil
}

// validHost accepts an IP address or a host name: dot-separated labels of
// 1 to 63 bytes made of ASCII letters and digits, printable non-ASCII characters (IDN), '-' and '_', none
// starting or ending with '-', with at most one trailing dot. "http://.com",
// "http://a..b.com" and "http://-a.com" name no host.
func validHost(host string) bool {
	if strings.Contains(host, ":") { // IPv6, from between brackets
		ip := host
		if i := strings.IndexByte(ip, '%'); i >= 0 {
			ip = ip[:i]
		}
		return net.ParseIP(ip) != nil
	}
	host = strings.TrimSuffix(host, ".")
	if host == "" || len(host) > 253 {
		return false
	}
	for _, label := range strings.Split(host, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, r := range label {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r >= 0x80 && unicode.IsPrint(r) && !unicode.IsSpace(r)) {
				return false
			}
		}
	}
	return true
}

// ValidateOptionalURL validates a per-platform or logo URL: empty is fine.
func ValidateOptionalURL(field, raw string) error {
	if raw == "" {
		return nil
	}
	if err := ValidateURL(raw); err != nil {
		return domain.Invalid("Invalid URL format for %s", field)
	}
	return nil
}

// browserSchemes run code, read local files or reach browser internals
// when a browser follows them: never a link target, whatever their case.
var browserSchemes = map[string]bool{
	"javascript": true, "vbscript": true, "livescript": true, "jscript": true, "ecmascript": true,
	"data": true, "file": true, "blob": true, "about": true, "filesystem": true,
	"view-source": true, "jar": true, "mhtml": true, "mk": true, "ms-its": true, "its": true,
	"res": true, "resource": true, "wyciwyg": true, "chrome": true, "chrome-extension": true,
	"chrome-untrusted": true, "moz-extension": true, "ms-browser-extension": true,
	"safari-extension": true, "edge": true, "opera": true, "brave": true, "vivaldi": true,
	"devtools": true, "chrome-devtools": true, "content": true, "cid": true, "mid": true,
}

// IsBrowserScheme reports whether a URL scheme is one a browser runs as
// code or resolves inside itself (browserSchemes, or any scheme naming a
// script or an extension: "x-javascript", "x-vbscript").
func IsBrowserScheme(scheme string) bool {
	s := strings.ToLower(scheme)
	return browserSchemes[s] || strings.Contains(s, "script") || strings.HasSuffix(s, "-extension")
}

// validAppScheme is an allowlist: a scheme an app may register is ASCII
// letters, digits, '+', '-' and '.', starting with a letter (RFC 3986),
// and not a browser scheme.
func validAppScheme(scheme string) bool {
	if scheme == "" || IsBrowserScheme(scheme) {
		return false
	}
	for i := 0; i < len(scheme); i++ {
		c := scheme[i]
		letter := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
		if !(letter || i > 0 && (c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.')) {
			return false
		}
	}
	return true
}

// ValidateDeepLink validates a per-platform link (ios_link, android_link,
// windows_link, macos_link): empty, an http(s) URL with a host, or a URL of
// an app scheme ("fb://profile", "myapp:open", "intent://..."). Browser
// schemes are refused (IsBrowserScheme), and so is an Android intent: URL
// whose inner scheme is one, or whose fallback URL is not http(s).
func ValidateDeepLink(field, raw string) error {
	if raw == "" {
		return nil
	}
	bad := domain.Invalid("Invalid URL format for %s", field)
	if len(raw) > MaxURLLength || !utf8.ValidString(raw) || strings.ContainsFunc(raw, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
		return bad
	}
	u, err := url.Parse(raw)
	if err != nil || !validAppScheme(u.Scheme) {
		return bad
	}
	s := strings.ToLower(u.Scheme)
	if s == "http" || s == "https" || allowedSchemes[s] {
		if ValidateURL(raw) != nil {
			return bad
		}
		return nil
	}
	if u.Opaque == "" && u.Host == "" && u.Path == "" && u.RawQuery == "" {
		return bad
	}
	if s == "intent" && !safeIntent(raw) {
		return bad
	}
	return nil
}

// safeIntent checks the parameters of an Android intent: URL
// ("intent://host/path#Intent;scheme=app;package=...;S.browser_fallback_url=...;end"):
// its scheme must be an app scheme, and its fallback an http(s) URL.
func safeIntent(raw string) bool {
	i := strings.Index(strings.ToLower(raw), "#intent;")
	if i < 0 {
		return true // no parameters: Android opens it as is
	}
	for _, param := range strings.Split(raw[i+len("#intent;"):], ";") {
		name, value, _ := strings.Cut(param, "=")
		if v, err := url.QueryUnescape(value); err == nil {
			value = v
		}
		switch strings.ToLower(name) {
		case "scheme":
			if !validAppScheme(value) {
				return false
			}
		case "s.browser_fallback_url":
			fu, err := url.Parse(value)
			if err != nil || (!strings.EqualFold(fu.Scheme, "http") && !strings.EqualFold(fu.Scheme, "https")) || ValidateURL(value) != nil {
				return false
			}
		}
	}
	return true
}

// ValidatePreviewURL validates a URL of a link's preview (image, favicon,
// social_image): empty, or http(s) with a host. Chat apps and browsers
// fetch and show it; nothing else is safe to hand them.
func ValidatePreviewURL(field, raw string) error {
	if raw == "" {
		return nil
	}
	u, err := url.Parse(raw)
	if err != nil || ValidateURL(raw) != nil || (!strings.EqualFold(u.Scheme, "http") && !strings.EqualFold(u.Scheme, "https")) {
		return domain.Invalid("Invalid URL format for %s", field)
	}
	return nil
}

// ValidateCode checks a custom short code: 1 to 50 letters, digits, '-' and
// '_'. Reserved paths of the listener are refused.
func ValidateCode(code string) error {
	if code == "" || len(code) > MaxCodeLength {
		return domain.Invalid("Custom code must be 1 to %d characters", MaxCodeLength)
	}
	for i := 0; i < len(code); i++ {
		c := code[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return domain.Invalid("Custom code may contain only letters, digits, '-' and '_'")
		}
	}
	if IsReservedCode(code) {
		return domain.Invalid("Custom code %q is reserved", code)
	}
	return nil
}

var reservedCodes = map[string]bool{
	"healthz": true, "metrics": true, "openapi.json": true, "radar.js": true,
	"v1": true, "api": true, "favicon.ico": true, "robots.txt": true,
	"static": true, "assets": true, "docs": true, "admin": true,
	"readyz": true, "livez": true, "debug": true, "dashboard": true,
}

// IsReservedCode reports whether code is a path the listener serves itself.
func IsReservedCode(code string) bool { return reservedCodes[strings.ToLower(code)] }

// NormalizeColor checks a "#RGB" or "#RRGGBB" colour and returns it in
// upper case, keeping its digit count.
func NormalizeColor(s string) (string, bool) {
	if len(s) != 4 && len(s) != 7 || s[0] != '#' {
		return "", false
	}
	for i := 1; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return "", false
		}
	}
	return strings.ToUpper(s), true
}

// Validate checks and normalises QR code options.
func (q *QRCodeOptions) Validate() error {
	if q == nil {
		return nil
	}
	if q.Size != nil && (*q.Size < 64 || *q.Size > 2048) {
		return domain.Invalid("qr_code_options.size must be between 64 and 2048")
	}
	if q.LogoSize != nil && (*q.LogoSize < 0 || *q.LogoSize > 1024) {
		return domain.Invalid("qr_code_options.logo_size must be between 0 and 1024")
	}
	for _, c := range []*string{q.Color, q.BackgroundColor} {
		if c == nil || *c == "" {
			continue
		}
		n, ok := NormalizeColor(*c)
		if !ok {
			return domain.Invalid("qr_code_options colours must be hex colours like #000000")
		}
		*c = n
	}
	if l := q.ErrorCorrectionLevel; l != nil {
		switch up := strings.ToUpper(*l); up {
		case "", "L", "M", "Q", "H":
			*l = up
		default:
			return domain.Invalid("qr_code_options.error_correction_level must be L, M, Q or H")
		}
	}
	if q.Logo != nil {
		if err := ValidateOptionalURL("qr_code_options.logo", *q.Logo); err != nil {
			return err
		}
	}
	return nil
}

// ValidateCountries checks and normalises excluded countries. strict requires
// code, label and phone (the update rules of the spec).
func ValidateCountries(cs []ExcludedCountry, strict bool) error {
	if len(cs) > MaxCountries {
		return domain.Invalid("Too many excluded countries")
	}
	for i := range cs {
		c := strings.ToUpper(strings.TrimSpace(cs[i].Code))
		if len(c) != 2 || c[0] < 'A' || c[0] > 'Z' || c[1] < 'A' || c[1] > 'Z' {
			return domain.Invalid("excluded_countries code must be an ISO 3166-1 alpha-2 code")
		}
		cs[i].Code = c
		if strict && (empty(cs[i].Label) || empty(cs[i].Phone)) {
			return domain.Invalid("excluded_countries entries need code, label and phone")
		}
		for _, s := range []*string{cs[i].Label, cs[i].Phone, cs[i].Lang, cs[i].Continent} {
			if s != nil {
				if err := ValidateText("excluded_countries", *s, MaxNameLength); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func empty(s *string) bool { return s == nil || *s == "" }

// ValidateText bounds free text fields.
func ValidateText(field, s string, max int) error {
	if len(s) > max {
		return domain.Invalid("%s is too long (at most %d bytes)", field, max)
	}
	if !utf8.ValidString(s) {
		return domain.Invalid("%s is not valid UTF-8", field)
	}
	return nil
}

// Expired reports whether a link with these limits has expired at now with
// clicks counted clicks.
func Expired(expiresAt *time.Time, clickLimit *int64, clicks int64, now time.Time) bool {
	if expiresAt != nil && !now.Before(*expiresAt) {
		return true
	}
	if clickLimit != nil && clicks >= *clickLimit {
		return true
	}
	return false
}
