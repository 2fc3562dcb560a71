package enrich

import "strings"

// ChooseTarget picks the redirect target of a link for a visitor on
// platform (a Result.Platform value): the link's per-platform deep link when
// one is set for that platform, else original. Blank per-platform links
// count as unset.
func ChooseTarget(platform string, original, ios, android, windows, macos string) string {
	var t string
	switch platform {
	case PlatformIOS:
		t = ios
	case PlatformAndroid:
		t = android
	case PlatformWindows:
		t = windows
	case PlatformMacOS:
		t = macos
	}
	if strings.TrimSpace(t) == "" {
		return original
	}
	return t
}
