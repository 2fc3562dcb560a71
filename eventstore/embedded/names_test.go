package embedded

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/google/uuid"
)

// TestPackName: names pack shorter where they hold ids, and unpack to
// themselves.
func TestPackName(t *testing.T) {
	ws := "0b4c2a9e-5f7d-4c1e-9a3b-2d6e8f1a7c40"
	sha := strings.Repeat("0123456789abcdef", 4)
	for _, c := range []struct {
		name string
		size int // packed size, -1: not checked
	}{
		{"customer-" + ws + "-" + sha, 9 + 17 + 1 + 33},
		{"conversionevent-" + ws + "-" + sha, 16 + 17 + 1 + 33},
		{"clicks-" + ws, 7 + 17},
		{"", 0},
		{"a", 1},
		{strings.ToUpper(ws), 36},   // uppercase: not canonical, as is
		{sha[:63], 63},              // one digit short of a sha256
		{sha + "a", 34},             // a sha256 and one more digit
		{sha + sha, 66},             // two
		{ws[:35], 35},               // a UUID cut short
		{"\x00\x01\x02\x03\x04", 9}, // escaped bytes
		{"\x01" + ws + "\x02", 2 + 17 + 2},
		{ws + ws, 34},
		{"x-" + ws[:8] + "_" + ws[9:], -1}, // a dash missing
		{"héllo wörld", -1},
	} {
		p := packName(nil, c.name)
		if c.size >= 0 && len(p) != c.size {
			t.Errorf("%q packs into %d bytes, want %d", c.name, len(p), c.size)
		}
		got, err := unpackName(nil, p)
		if err != nil || string(got) != c.name {
			t.Errorf("%q: unpacks to %q, %v", c.name, got, err)
		}
	}
}

// TestPackNameRandom: random names built from the pieces that pack (UUIDs,
// hex runs, the escaped bytes) and from others unpack to themselves, and
// two different names never pack alike.
func TestPackNameRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	pieces := []func() string{
		func() string { return uuid.NewString() },
		func() string { return strings.ToUpper(uuid.NewString()) },
		func() string {
			b := make([]byte, 1+r.IntN(80))
			for i := range b {
				b[i] = "0123456789abcdef"[r.IntN(16)]
			}
			return string(b)
		},
		func() string { return string([]byte{byte(r.IntN(5))}) },
		func() string { return []string{"-", "customer-", "clicks-", "x", "é"}[r.IntN(5)] },
	}
	seen := map[string]string{}
	for range 20000 {
		var b strings.Builder
		for range r.IntN(6) {
			b.WriteString(pieces[r.IntN(len(pieces))]())
		}
		name := b.String()
		p := packName(nil, name)
		got, err := unpackName(nil, p)
		if err != nil || string(got) != name {
			t.Fatalf("%q: unpacks to %q, %v", name, got, err)
		}
		if other, ok := seen[string(p)]; ok && other != name {
			t.Fatalf("%q and %q pack alike", name, other)
		}
		seen[string(p)] = name
	}
}

// TestUnpackNameCorrupt: a cut or invalid packed name is an error, not a
// wrong name.
func TestUnpackNameCorrupt(t *testing.T) {
	for _, p := range [][]byte{
		{packUUID, 1, 2},
		{packSHA256},
		{packEscape},
		{packEscape, 'a'},
		{0x00},
	} {
		if got, err := unpackName(nil, p); err == nil {
			t.Errorf("%x unpacked to %q", p, got)
		}
	}
}

func FuzzPackName(f *testing.F) {
	f.Add("customer-0b4c2a9e-5f7d-4c1e-9a3b-2d6e8f1a7c40-" + strings.Repeat("ab", 32))
	f.Add("\x01\x02\x03")
	f.Fuzz(func(t *testing.T, name string) {
		p := packName(nil, name)
		got, err := unpackName(nil, p)
		if err != nil || !bytes.Equal(got, []byte(name)) {
			t.Fatalf("%q: unpacks to %q, %v", name, got, err)
		}
	})
}
