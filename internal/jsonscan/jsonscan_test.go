package jsonscan

import (
	"errors"
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
	for _, in := range []string{`[]`, `{"a":true} x`, `{"a":true,}`, `{"a" true}`, `{"\u0061":true}`} {
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
