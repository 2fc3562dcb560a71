// Package jsonscan reads flat JSON objects in place, for hand-written
// event decoders beside their encoders (click.Recorded.DecodePlain). It
// handles what linkd
// itself writes; anything else (surrogate escapes, control characters,
// invalid UTF-8, nested values, unexpected syntax) gives ErrSlowPath, and
// the caller falls back to encoding/json, so that the result is always what
// json.Unmarshal gives.
package jsonscan

import (
	"encoding/binary"
	"errors"
	"math/bits"
	"time"
	"unicode/utf8"
)

// ErrSlowPath means the input is not on the fast path.
var ErrSlowPath = errors.New("jsonscan: not on the fast path")

// Scanner reads B from I.
type Scanner struct {
	B []byte
	I int

	open bool // Key has read the object's '{'
}

// WS skips white space.
func (s *Scanner) WS() {
	for s.I < len(s.B) {
		switch s.B[s.I] {
		case ' ', '\t', '\n', '\r':
			s.I++
		default:
			return
		}
	}
}

// Peek is the next byte, 0 at the end.
func (s *Scanner) Peek() byte {
	if s.I < len(s.B) {
		return s.B[s.I]
	}
	return 0
}

// Literal consumes lit if it comes next.
func (s *Scanner) Literal(lit string) bool {
	if len(s.B)-s.I >= len(lit) && string(s.B[s.I:s.I+len(lit)]) == lit {
		s.I += len(lit)
		return true
	}
	return false
}

// String scans a string. Without escapes the result aliases B (it is
// B[s.I-1-len(out) : s.I-1] afterwards); with escapes it is a new slice
// holding the decoded text.
func (s *Scanner) String() (out []byte, escaped bool, err error) {
	if s.Peek() != '"' {
		return nil, false, ErrSlowPath
	}
	start := s.I + 1
	ascii := true
	var buf []byte
	from := start // start of the bytes not yet copied into buf
	for j := start; j < len(s.B); j++ {
		j += plainRun(s.B[j:])
		if j >= len(s.B) {
			break
		}
		switch ch := s.B[j]; {
		case ch == '"':
			s.I = j + 1
			if escaped {
				buf = append(buf, s.B[from:j]...)
			} else {
				buf = s.B[start:j]
			}
			if !ascii && !utf8.Valid(buf) {
				return nil, false, ErrSlowPath
			}
			return buf, escaped, nil
		case ch == '\\':
			if j+1 >= len(s.B) {
				return nil, false, ErrSlowPath
			}
			escaped = true
			buf = append(buf, s.B[from:j]...)
			switch e := s.B[j+1]; e {
			case '"', '\\', '/':
				buf = append(buf, e)
			case 'b':
				buf = append(buf, '\b')
			case 'f':
				buf = append(buf, '\f')
			case 'n':
				buf = append(buf, '\n')
			case 'r':
				buf = append(buf, '\r')
			case 't':
				buf = append(buf, '\t')
			case 'u':
				r, ok := hex4(s.B[j+2:])
				if !ok || 0xd800 <= r && r < 0xe000 { // surrogates: slow path
					return nil, false, ErrSlowPath
				}
				buf = utf8.AppendRune(buf, r)
				j += 4
			default:
				return nil, false, ErrSlowPath
			}
			j++
			from = j + 1
		case ch < 0x20:
			return nil, false, ErrSlowPath
		case ch >= utf8.RuneSelf:
			ascii = false
		}
	}
	return nil, false, ErrSlowPath
}

// Eight bytes at a time: lsb has the low bit of each byte set, msb the
// high bit.
const (
	lsb = 0x0101010101010101
	msb = 0x8080808080808080
)

// plainRun is how many bytes at the start of b are plain inside a string
// (no quote, backslash, control character or non-ASCII byte), counted
// eight at a time; the byte after them, if any, may still be plain, and
// the caller's loop decides. Strings of linkd's events are mostly plain
// runs (ids, URLs, names), where this is faster than a byte at a time.
func plainRun(b []byte) int {
	n := 0
	for len(b)-n >= 8 {
		if m := special(binary.LittleEndian.Uint64(b[n:])); m != 0 {
			return n + bits.TrailingZeros64(m)>>3
		}
		n += 8
	}
	return n
}

// special has the high bit set in the lowest byte of w that is '"', '\\',
// below 0x20 or at least 0x80 (a byte of w is one of the string's bytes,
// the first in the lowest). Bytes above the lowest such one may be flagged
// falsely (a borrow of the subtractions), never a byte below it, and w
// without such bytes gives 0.
func special(w uint64) uint64 {
	q := w ^ (lsb * '"')
	bs := w ^ (lsb * '\\')
	return ((q-lsb)&^q | (bs-lsb)&^bs | (w-lsb*0x20)&^w | w) & msb
}

// RawString scans a string without escapes (escapes: ErrSlowPath); the
// result aliases B.
func (s *Scanner) RawString() ([]byte, error) {
	b, escaped, err := s.String()
	if err != nil || escaped {
		return nil, ErrSlowPath
	}
	return b, nil
}

func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// NullableString reads a string or null. ok is false for null, which
// leaves a destination unchanged, as encoding/json does; b is as String
// gives it.
func (s *Scanner) NullableString() (b []byte, escaped, ok bool, err error) {
	if s.Literal("null") {
		return nil, false, false, nil
	}
	b, escaped, err = s.String()
	return b, escaped, err == nil, err
}

// SkipString checks a string or null whose value is not needed.
func (s *Scanner) SkipString() error {
	_, _, _, err := s.NullableString()
	return err
}

// Bool reads true, false or null into *dst (null leaves it unchanged, as
// encoding/json does).
func (s *Scanner) Bool(dst *bool) error {
	switch {
	case s.Literal("true"):
		*dst = true
	case s.Literal("false"):
		*dst = false
	case s.Literal("null"):
	default:
		return ErrSlowPath
	}
	return nil
}

// Time reads a time the way time.Time.UnmarshalJSON does (null leaves it
// unchanged); escaped strings take the slow path.
func (s *Scanner) Time(dst *time.Time) error {
	if s.Literal("null") {
		return nil
	}
	start := s.I
	b, err := s.RawString()
	if err != nil {
		return err
	}
	if t, ok := utcTime(b); ok {
		*dst = t
		return nil
	}
	var t time.Time
	if err := t.UnmarshalJSON(s.B[start:s.I]); err != nil {
		return ErrSlowPath
	}
	*dst = t
	return nil
}

// utcTime reads the times linkd writes, 2006-01-02T15:04:05.999999999Z
// (0 to 9 digits of fraction), as time.Parse would with RFC 3339 (the same
// time, in UTC); anything else is not ok, for the caller's general path.
// Parsing took a tenth of a click's decoding.
func utcTime(b []byte) (time.Time, bool) {
	if len(b) < 20 || b[4] != '-' || b[7] != '-' || b[10] != 'T' || b[13] != ':' || b[16] != ':' || b[len(b)-1] != 'Z' {
		return time.Time{}, false
	}
	year, month, day := digits(b[0:4]), digits(b[5:7]), digits(b[8:10])
	hour, minute, sec := digits(b[11:13]), digits(b[14:16]), digits(b[17:19])
	if year < 0 || month < 1 || month > 12 || day < 1 || day > daysIn(month, year) ||
		hour < 0 || hour > 23 || minute < 0 || minute > 59 || sec < 0 || sec > 59 {
		return time.Time{}, false
	}
	nsec := 0
	if frac := b[19 : len(b)-1]; len(frac) > 0 {
		if len(frac) < 2 || len(frac) > 10 || frac[0] != '.' {
			return time.Time{}, false
		}
		if nsec = digits(frac[1:]); nsec < 0 {
			return time.Time{}, false
		}
		for range 10 - len(frac) {
			nsec *= 10
		}
	}
	return time.Date(year, time.Month(month), day, hour, minute, sec, nsec, time.UTC), true
}

// digits is the decimal number b spells, -1 if a byte is not a digit.
func digits(b []byte) int {
	v := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return -1
		}
		v = v*10 + int(c-'0')
	}
	return v
}

// daysIn is the number of days of a month (1-12) in the proleptic
// Gregorian calendar, as time.Parse counts them.
func daysIn(month, year int) int {
	switch month {
	case 2:
		if year%4 == 0 && (year%100 != 0 || year%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// Key reads the next key of a document that is one object, leaving the
// scanner at its value, which the caller consumes before asking for the
// next key. The key has no escapes and aliases B. ok is false, with a nil
// error, once the object and the document are over:
//
//	for {
//		key, ok, err := s.Key()
//		if err != nil || !ok {
//			return err
//		}
//		// read the value of key
//	}
func (s *Scanner) Key() (key []byte, ok bool, err error) {
	if key, ok := s.packedKey(); ok {
		return key, true, nil
	}
	s.WS()
	if !s.open {
		if s.Peek() != '{' {
			return nil, false, ErrSlowPath
		}
		s.open = true
		s.I++
		s.WS()
		if s.Peek() == '}' {
			s.I++
			return nil, false, s.end()
		}
	} else {
		switch s.Peek() {
		case ',':
			s.I++
			s.WS()
		case '}':
			s.I++
			return nil, false, s.end()
		default:
			return nil, false, ErrSlowPath
		}
	}
	if key, err = s.RawString(); err != nil {
		return nil, false, err
	}
	s.WS()
	if s.Peek() != ':' {
		return nil, false, ErrSlowPath
	}
	s.I++
	s.WS()
	return key, true, nil
}

// packedKey reads the next key where it follows the previous value as
// linkd writes it, without white space: `,"key":`. Anything else leaves
// the scanner where it was, for Key's general path.
func (s *Scanner) packedKey() ([]byte, bool) {
	i := s.I
	if !s.open || len(s.B)-i < 4 || s.B[i] != ',' || s.B[i+1] != '"' {
		return nil, false
	}
	for j := i + 2; j < len(s.B); j++ { // keys are short: a byte at a time
		switch c := s.B[j]; {
		case c == '"':
			if j+1 == len(s.B) || s.B[j+1] != ':' {
				return nil, false
			}
			s.I = j + 2
			s.WS()
			return s.B[i+2 : j], true
		case c == '\\' || c < 0x20 || c >= utf8.RuneSelf:
			return nil, false
		}
	}
	return nil, false
}

// end checks that nothing but white space follows.
func (s *Scanner) end() error {
	s.WS()
	if s.I != len(s.B) {
		return ErrSlowPath
	}
	return nil
}
