package clickindex

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/google/uuid"
)

// TestParseUUID: parseUUID takes exactly the canonical lowercase text of a
// UUID, giving its bytes, and refuses every other string of its length:
// uppercase digits, other bytes, dashes elsewhere.
func TestParseUUID(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	const alphabet = "0123456789abcdefABCDEFgx-\x00\xff"
	for i := 0; i < 20000; i++ {
		u := uuid.New()
		s := []byte(u.String())
		if i%2 == 1 { // a byte or two changed
			for range 1 + rng.IntN(2) {
				s[rng.IntN(len(s))] = alphabet[rng.IntN(len(alphabet))]
			}
		}
		var got [16]byte
		ok := parseUUID(s, &got)
		want, err := uuid.ParseBytes(s)
		wantOK := err == nil && string(s) == strings.ToLower(string(s)) && want.String() == string(s)
		if ok != wantOK || ok && got != [16]byte(want) {
			t.Fatalf("parseUUID(%q) = %x, %v; want %x, %v", s, got, ok, want, wantOK)
		}
	}
}
