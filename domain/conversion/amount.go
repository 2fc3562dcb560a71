package conversion

import (
	"fmt"
	"strconv"
	"strings"
)

// ValueError is a refused value. Its message is what the caller reads at the
// path of the field that held the value.
type ValueError struct{ Message string }

func (e *ValueError) Error() string { return e.Message }

func valueError(msg string) *ValueError { return &ValueError{Message: msg} }

// MaxAmountMinor is the largest amount accepted, in minor units: 2^53-1, so
// that every stored amount is an integer a float64 (a JavaScript number)
// holds exactly, and sums of many of them stay far from int64 overflow.
const MaxAmountMinor = 1<<53 - 1

// Amount messages, shown at path "amount".
const (
	MsgAmountNotNumber = "Amount must be a number"
	MsgAmountPositive  = "Amount must be greater than 0"
	MsgAmountTooLarge  = "Amount is too large"
)

// MsgAmountDecimals is the message of an amount with more decimals than
// its currency has.
func MsgAmountDecimals(currency string, digits int) string {
	if digits == 0 {
		return fmt.Sprintf("Amount must be a whole number: %s has no decimals", currency)
	}
	return fmt.Sprintf("Amount has more decimals than %s allows (%d)", currency, digits)
}

// ParseAmount reads raw, the text of a JSON number (a json.Number), as an
// amount of currency and returns it in minor units: "29.99" usd is 2999,
// "2999" jpy is 2999. The text is read exactly as a decimal, never through
// a float.
//
// raw must follow the JSON number grammar: no leading '+', no leading
// zeros, no hex, no NaN or Infinity, no surrounding space. Exponents are
// part of that grammar and are read exactly ("2.999e1" usd is 2999,
// "1e2" jpy is 100). The value must be greater than zero, at most
// MaxAmountMinor minor units, and have no more decimals than the currency:
// the test is on the value, so trailing zeros ("29.990" usd) are fine.
// Errors are *ValueError.
func ParseAmount(raw, currency string) (int64, error) {
	digits, ok := MinorDigits(currency)
	if !ok {
		return 0, ValidateCurrency(currency)
	}
	return parseMinor(raw, digits, currency)
}

// decimal is a parsed JSON number: mant * 10^exp, mant without leading or
// trailing zeros ("" for zero).
type decimal struct {
	neg  bool
	mant string
	exp  int64
}

// maxExp bounds exponents as read: beyond it every nonzero value is either
// too large or has too many decimals, whatever its mantissa (a mantissa is
// shorter than the text, and texts are far shorter than this).
const maxExp = 1 << 40

// parseJSONNumber reads the JSON number grammar:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func parseJSONNumber(s string) (decimal, bool) {
	var d decimal
	i := 0
	if i < len(s) && s[i] == '-' {
		d.neg = true
		i++
	}
	intStart := i
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case i < len(s) && s[i] >= '1' && s[i] <= '9':
		for i < len(s) && isDigit(s[i]) {
			i++
		}
	default:
		return d, false
	}
	intPart := s[intStart:i]
	fracPart := ""
	if i < len(s) && s[i] == '.' {
		i++
		start := i
		for i < len(s) && isDigit(s[i]) {
			i++
		}
		if i == start {
			return d, false
		}
		fracPart = s[start:i]
	}
	var exp int64
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		expNeg := false
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			expNeg = s[i] == '-'
			i++
		}
		start := i
		for i < len(s) && isDigit(s[i]) {
			if exp < maxExp {
				exp = exp*10 + int64(s[i]-'0')
			}
			i++
		}
		if i == start {
			return d, false
		}
		exp = min(exp, maxExp)
		if expNeg {
			exp = -exp
		}
	}
	if i != len(s) {
		return d, false
	}
	mant := strings.TrimLeft(intPart+fracPart, "0")
	exp -= int64(len(fracPart))
	trimmed := strings.TrimRight(mant, "0")
	exp += int64(len(mant) - len(trimmed))
	d.mant = trimmed
	d.exp = exp
	return d, true
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// parseMinor reads raw as an amount with digits decimals and returns it
// scaled to minor units.
func parseMinor(raw string, digits int, currency string) (int64, error) {
	d, ok := parseJSONNumber(raw)
	if !ok {
		return 0, valueError(MsgAmountNotNumber)
	}
	if d.neg || d.mant == "" {
		return 0, valueError(MsgAmountPositive)
	}
	scale := d.exp + int64(digits) // minor = mant * 10^scale
	if scale < 0 {
		// mant has no trailing zero, so the value is not a whole number
		// of minor units.
		return 0, valueError(MsgAmountDecimals(currency, digits))
	}
	if int64(len(d.mant))+scale > 16 { // MaxAmountMinor has 16 digits
		return 0, valueError(MsgAmountTooLarge)
	}
	v, err := strconv.ParseUint(d.mant, 10, 64)
	if err != nil { // cannot happen with at most 16 digits
		return 0, valueError(MsgAmountTooLarge)
	}
	for range scale {
		v *= 10
	}
	if v > MaxAmountMinor {
		return 0, valueError(MsgAmountTooLarge)
	}
	return int64(v), nil
}

// FormatAmount writes an amount in minor units of currency as a decimal in
// currency units, in the shortest form that ParseAmount reads back to the
// same value: 2999 usd is "29.99", 2990 usd "29.9", 2900 usd "29", 2999
// jpy "2999". The text is also a JSON number. A currency outside the table
// is written with 2 decimals (no stored sale has one: codes are never
// removed from the table).
func FormatAmount(minor int64, currency string) string {
	digits, ok := MinorDigits(currency)
	if !ok {
		digits = 2
	}
	return formatMinor(minor, digits)
}

func formatMinor(minor int64, digits int) string {
	neg := minor < 0
	var mag uint64
	if neg {
		mag = uint64(-(minor + 1)) + 1 // math.MinInt64 too
	} else {
		mag = uint64(minor)
	}
	s := strconv.FormatUint(mag, 10)
	if digits > 0 {
		if len(s) <= digits {
			s = strings.Repeat("0", digits-len(s)+1) + s
		}
		intPart, frac := s[:len(s)-digits], strings.TrimRight(s[len(s)-digits:], "0")
		s = intPart
		if frac != "" {
			s += "." + frac
		}
	}
	if neg {
		s = "-" + s
	}
	return s
}
