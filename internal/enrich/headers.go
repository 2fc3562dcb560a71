package enrich

import (
	"strings"
	"unicode/utf8"
)

const (
	// maxReferrerURL is the longest Referer value kept in a Result.
	maxReferrerURL = 512
	// maxLangEntries bounds the work spent on one Accept-Language header.
	maxLangEntries = 16
)

// twoLetter interns lower-case two-letter language subtags so that the
// common case allocates nothing and keeps no reference to the header.
var twoLetter = func() *[26 * 26]string {
	var t [26 * 26]string
	for a := byte('a'); a <= 'z'; a++ {
		for b := byte('a'); b <= 'z'; b++ {
			t[int(a-'a')*26+int(b-'a')] = string([]byte{a, b})
		}
	}
	return &t
}()

// Language returns the primary language subtag, lower case, of the
// preferred language of an Accept-Language header ("pt-BR,pt;q=0.9" gives
// "pt"): the entry with the highest quality, the first one on a tie. The
// wildcard, entries with q=0 and malformed entries are ignored; "" when none
// is left.
func Language(header string) string {
	best, bestQ := "", -1
	for n := 0; header != "" && n < maxLangEntries; n++ {
		var entry string
		if i := strings.IndexByte(header, ','); i >= 0 {
			entry, header = header[:i], header[i+1:]
		} else {
			entry, header = header, ""
		}
		tag, params, _ := strings.Cut(entry, ";")
		tag = strings.TrimSpace(tag)
		primary := tag
		if i := strings.IndexAny(tag, "-_"); i >= 0 {
			primary = tag[:i]
		}
		if len(primary) < 2 || len(primary) > 3 || !isAlpha(primary) {
			continue
		}
		q := parseQ(params)
		if q > bestQ {
			best, bestQ = primary, q
		}
	}
	if bestQ <= 0 {
		return ""
	}
	return lowerTag(best)
}

func isAlpha(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i] | 0x20
		if c < 'a' || c > 'z' {
			return false
		}
	}
	return true
}

func lowerTag(s string) string {
	if len(s) == 2 {
		return twoLetter[int(s[0]|0x20-'a')*26+int(s[1]|0x20-'a')]
	}
	return strings.ToLower(s)
}

// parseQ returns the quality of an Accept-Language entry's parameters in
// thousandths: 1000 when absent, 0 when malformed.
func parseQ(params string) int {
	for params != "" {
		var p string
		p, params, _ = strings.Cut(params, ";")
		p = strings.TrimSpace(p)
		if len(p) < 2 || (p[0] != 'q' && p[0] != 'Q') || p[1] != '=' {
			continue
		}
		v := strings.TrimSpace(p[2:])
		if v == "" {
			return 0
		}
		switch v[0] {
		case '1':
			return 1000
		case '0':
		default:
			return 0
		}
		q, scale := 0, 100
		if len(v) > 1 {
			if v[1] != '.' {
				return 0
			}
			for i := 2; i < len(v) && i < 5; i++ {
				if v[i] < '0' || v[i] > '9' {
					return 0
				}
				q += int(v[i]-'0') * scale
				scale /= 10
			}
		}
		return q
	}
	return 1000
}

// ReferrerHost returns the host of a Referer value, lower case, without a
// port, without a leading "www." and without IPv6 brackets; "" when the
// value has no "scheme://host" part.
func ReferrerHost(ref string) string {
	i := strings.Index(ref, "://")
	if i <= 0 {
		return ""
	}
	h := ref[i+3:]
	if j := strings.IndexAny(h, "/?#"); j >= 0 {
		h = h[:j]
	}
	if j := strings.LastIndexByte(h, '@'); j >= 0 {
		h = h[j+1:]
	}
	if strings.HasPrefix(h, "[") {
		if j := strings.IndexByte(h, ']'); j > 0 {
			h = h[1:j]
		} else {
			return ""
		}
	} else if j := strings.LastIndexByte(h, ':'); j >= 0 {
		h = h[:j]
	}
	h = strings.TrimSuffix(h, ".")
	if len(h) > 253 {
		return ""
	}
	h = lowerASCII(h)
	h = strings.TrimPrefix(h, "www.")
	return h
}

// lowerASCII lower-cases ASCII letters, allocating only when s has capitals.
func lowerASCII(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 'A' && c <= 'Z' {
			return strings.ToLower(s)
		}
	}
	return s
}

// truncateUTF8 cuts s to at most n bytes without splitting a UTF-8 sequence.
func truncateUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[:n]
	for i := 0; i < utf8.UTFMax && len(s) > 0; i++ {
		r, size := utf8.DecodeLastRuneInString(s)
		if r != utf8.RuneError || size > 1 {
			break
		}
		s = s[:len(s)-1]
	}
	return s
}
