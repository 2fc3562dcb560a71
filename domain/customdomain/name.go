package customdomain

import (
	"strings"

	"github.com/linkd/linkd/domain"
)

// NormalizeName checks a custom domain name and returns it in lower case
// without a trailing dot. Internationalised names must be given in their
// ASCII (punycode) form.
func NormalizeName(s string) (string, error) {
	n := strings.TrimSuffix(strings.ToLower(strings.TrimSpace(s)), ".")
	if n == "" {
		return "", domain.Invalid("Domain is required")
	}
	bad := domain.Invalid("Invalid domain name")
	if len(n) > 253 || !strings.Contains(n, ".") {
		return "", bad
	}
	for _, label := range strings.Split(n, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return "", bad
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
				return "", bad
			}
		}
	}
	tld := n[strings.LastIndexByte(n, '.')+1:]
	if tld[0] >= '0' && tld[0] <= '9' {
		return "", bad // an IP address or a numeric TLD
	}
	return n, nil
}
