package jsonscan

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestString(t *testing.T) {
	for in, want := range map[string]string{
		`"plain"`:         "plain",
		`"a\"b\\c\/d"`:    `a"b\c/d`,
		`"tab\tnl\n"`:     "tab\tnl\n",
		`"\u00e9t\u00E9"`: "été",
		`"café"`:          "café",
		`""`:              "",
	} {
		s := Scanner{B: []byte(in)}
		got, escaped, err := s.String()
		if err != nil || string(got) != want || s.I != len(in) {
			t.Errorf("%s: %q %v %v at %d, want %q", in, got, escaped, err, s.I, want)
		}
		if !escaped && string(s.B[s.I-1-len(got):s.I-1]) != want {
			t.Errorf("%s: unescaped value is not where String says", in)
		}
	}
	for _, in := range []string{`"\ud83d\ude00"`, "\"ctl\x01\"", "\"bad\xff\"", `"open`, `'x'`, `"\q"`} {
		s := Scanner{B: []byte(in)}
		if _, _, err := s.String(); !errors.Is(err, ErrSlowPath) {
			t.Errorf("%q: %v, want ErrSlowPath", in, err)
		}
	}
}

func TestKey(t *testing.T) {
	var keys []string
	var b bool
	var ts time.Time
	s := Scanner{B: []byte(` { "a" : true , "t":"2026-11-22T01:02:03Z", "n": null } `)}
	err := readObject(&s, func(key []byte) error {
		keys = append(keys, string(key))
		switch string(key) {
		case "a", "n":
			return s.Bool(&b)
		default:
			return s.Time(&ts)
		}
	})
	if err != nil || len(keys) != 3 || !b || !ts.Equal(time.Date(2026, 11, 22, 1, 2, 3, 0, time.UTC)) {
		t.Fatalf("keys %v b %v ts %v err %v", keys, b, ts, err)
	}
	for _, in := range []string{`[]`, `{"a":true} x`, `{"a":true,}`, `{"a" true}`, `{"\u0061":true}`, `{"a":true,"\u0062":true}`, `{"a":true,"b"}`, `{"a":true,"b`} {
		s := Scanner{B: []byte(in)}
		if err := readObject(&s, func([]byte) error { return s.Bool(&b) }); !errors.Is(err, ErrSlowPath) {
			t.Errorf("%s: %v, want ErrSlowPath", in, err)
		}
	}
}

func readObject(s *Scanner, field func(key []byte) error) error {
	for {
		key, ok, err := s.Key()
		if err != nil || !ok {
			return err
		}
		if err := field(key); err != nil {
			return err
		}
	}
}

func TestEmptyObject(t *testing.T) {
	s := Scanner{B: []byte(" {} ")}
	if key, ok, err := s.Key(); key != nil || ok || err != nil {
		t.Errorf("{}: %q %v %v", key, ok, err)
	}
}

// TestStringEveryOffset puts each byte that ends a plain run at every
// offset of a long string, so that the eight-byte steps meet it in every
// lane and at the tail.
func TestStringEveryOffset(t *testing.T) {
	plain := strings.Repeat("Mozilla/5.0 (X11) ", 3)
	for _, mark := range []string{`\"`, `\\`, `\n`, `\u00e9`, "é", "\u2028", "\x01", "\xff", `"`} {
		for at := 0; at <= len(plain); at++ {
			in := `"` + plain[:at] + mark + plain[at:] + `"`
			checkString(t, in)
		}
	}
	for n := 0; n <= 20; n++ {
		checkString(t, `"`+plain[:n]+`"`)
		checkString(t, `"`+plain[:n]) // unterminated
	}
}

// FuzzString checks String against encoding/json: whatever String takes,
// it reads as json.Unmarshal does.
func FuzzString(f *testing.F) {
	for _, s := range []string{`"plain"`, `"a\"b"`, `"café, a long plain run of text"`, "\"ctl\x01 after eight\"", `"\u2028"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) { checkString(t, in) })
}

func checkString(t *testing.T, in string) {
	t.Helper()
	s := Scanner{B: []byte(in)}
	got, escaped, err := s.String()
	if err != nil {
		if !errors.Is(err, ErrSlowPath) {
			t.Fatalf("%q: %v, want ErrSlowPath", in, err)
		}
		return
	}
	var want string
	if err := json.Unmarshal([]byte(in[:s.I]), &want); err != nil || string(got) != want {
		t.Fatalf("%q: %q (escaped %v) ending at %d; encoding/json reads %q (%v)", in, got, escaped, s.I, want, err)
	}
}

// FuzzTime checks Time against time.Time.UnmarshalJSON: the same time, in
// the same zone (the very same value in UTC), or ErrSlowPath where it
// fails.
func FuzzTime(f *testing.F) {
	for _, s := range []string{`"2026-11-22T01:02:03Z"`, `"2026-11-22T01:02:03.982347937Z"`, `"2026-02-28T23:59:59.5Z"`,
		`"2026-02-29T00:00:00Z"`, `"2028-02-29T00:00:00Z"`, `"2100-02-29T00:00:00Z"`, `"2000-02-29T00:00:00Z"`, `"2026-04-31T00:00:00Z"`, `"2026-05-31T00:00:00Z"`, `"2026-11-22T01:02:03+01:00"`, `"2026-11-22T24:00:00Z"`, `"2026-11-22T01:02:03.Z"`,
		`"2026-11-22T01:02:03.1234567891Z"`, `"2026-13-01T00:00:00Z"`, `"0000-01-01T00:00:00Z"`, `"2026-11-22t01:02:03z"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		s := Scanner{B: []byte(in)}
		var got time.Time
		err := s.Time(&got)
		var want time.Time
		jerr := want.UnmarshalJSON([]byte(in))
		switch {
		case err != nil:
			if !errors.Is(err, ErrSlowPath) {
				t.Fatalf("%q: %v", in, err)
			}
		case s.I != len(in):
			return // Time read a prefix: a later key would fail
		case jerr != nil:
			t.Fatalf("%q: Time reads %v, UnmarshalJSON fails: %v", in, got, jerr)
		case !got.Equal(want) || got.String() != want.String():
			t.Fatalf("%q: %v, want %v", in, got, want)
		case want.Location() == time.UTC && got != want: // the fast path's results, exactly
			t.Fatalf("%q: %#v, want %#v", in, got, want)
		}
	})
}
