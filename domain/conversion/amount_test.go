package conversion_test

import (
	"encoding/json"
	"errors"
	"math/big"
	"math/rand"
	"strconv"
	"strings"
	"testing"
	"testing/quick"

	"github.com/linkd/linkd/domain/conversion"
)

func TestParseAmount(t *testing.T) {
	t.Parallel()
	decimals := func(c string, d int) string { return conversion.MsgAmountDecimals(c, d) }
	cases := []struct {
		name, raw, currency string
		want                int64
		msg                 string // "" when accepted
	}{
		{"cents", "29.99", "usd", 2999, ""},
		{"whole", "2999", "usd", 299900, ""},
		{"one decimal", "29.9", "eur", 2990, ""},
		{"smallest", "0.01", "usd", 1, ""},
		{"yen whole", "2999", "jpy", 2999, ""},
		{"yen trailing zero", "2999.0", "jpy", 2999, ""},
		{"trailing zeros", "29.990000", "usd", 2999, ""},
		{"three digits", "1.234", "bhd", 1234, ""},
		{"four digits", "1.2345", "clf", 12345, ""},
		{"exponent", "2.999e1", "usd", 2999, ""},
		{"exponent upper", "2.999E1", "usd", 2999, ""},
		{"exponent plus", "1e+2", "jpy", 100, ""},
		{"negative exponent", "2999e-2", "usd", 2999, ""},
		{"exponent zero", "5e0", "usd", 500, ""},
		{"exponent leading zeros", "5e007", "jpy", 50000000, ""},
		{"leading zero", "0.5", "usd", 50, ""},
		{"largest", "90071992547409.91", "usd", conversion.MaxAmountMinor, ""},
		{"largest yen", "9007199254740991", "jpy", conversion.MaxAmountMinor, ""},
		{"largest by exponent", "9.007199254740991e15", "jpy", conversion.MaxAmountMinor, ""},
		{"long zero fraction", "1." + strings.Repeat("0", 500), "jpy", 1, ""},

		{"zero", "0", "usd", 0, conversion.MsgAmountPositive},
		{"zero decimals", "0.00", "usd", 0, conversion.MsgAmountPositive},
		{"negative zero", "-0", "usd", 0, conversion.MsgAmountPositive},
		{"negative", "-29.99", "usd", 0, conversion.MsgAmountPositive},
		{"negative too precise", "-29.999", "usd", 0, conversion.MsgAmountPositive},
		{"zero by exponent", "0e5", "usd", 0, conversion.MsgAmountPositive},
		{"too many decimals", "29.999", "usd", 0, decimals("usd", 2)},
		{"yen decimals", "10.5", "jpy", 0, decimals("jpy", 0)},
		{"dinar decimals", "1.2345", "kwd", 0, decimals("kwd", 3)},
		{"below a cent", "0.001", "usd", 0, decimals("usd", 2)},
		{"exponent decimals", "2999e-3", "usd", 0, decimals("usd", 2)},
		{"tiny by exponent", "1e-999999999999999999999", "usd", 0, decimals("usd", 2)},
		{"too large", "90071992547409.92", "usd", 0, conversion.MsgAmountTooLarge},
		{"too large yen", "9007199254740992", "jpy", 0, conversion.MsgAmountTooLarge},
		{"int64 overflow", "92233720368547758.08", "usd", 0, conversion.MsgAmountTooLarge},
		{"huge", strings.Repeat("9", 400), "usd", 0, conversion.MsgAmountTooLarge},
		{"huge exponent", "1e999999999999999999999", "usd", 0, conversion.MsgAmountTooLarge},
		{"exponent overflow", "1e19", "jpy", 0, conversion.MsgAmountTooLarge},

		{"empty", "", "usd", 0, conversion.MsgAmountNotNumber},
		{"leading plus", "+29.99", "usd", 0, conversion.MsgAmountNotNumber},
		{"leading zeros", "029.99", "usd", 0, conversion.MsgAmountNotNumber},
		{"hex", "0x1F", "usd", 0, conversion.MsgAmountNotNumber},
		{"NaN", "NaN", "usd", 0, conversion.MsgAmountNotNumber},
		{"Infinity", "Infinity", "usd", 0, conversion.MsgAmountNotNumber},
		{"negative Infinity", "-Infinity", "usd", 0, conversion.MsgAmountNotNumber},
		{"inf", "inf", "usd", 0, conversion.MsgAmountNotNumber},
		{"bare point", ".5", "usd", 0, conversion.MsgAmountNotNumber},
		{"trailing point", "5.", "usd", 0, conversion.MsgAmountNotNumber},
		{"bare exponent", "5e", "usd", 0, conversion.MsgAmountNotNumber},
		{"exponent sign only", "5e+", "usd", 0, conversion.MsgAmountNotNumber},
		{"space", " 5", "usd", 0, conversion.MsgAmountNotNumber},
		{"trailing space", "5 ", "usd", 0, conversion.MsgAmountNotNumber},
		{"comma", "29,99", "usd", 0, conversion.MsgAmountNotNumber},
		{"underscore", "1_000", "usd", 0, conversion.MsgAmountNotNumber},
		{"quoted", `"29.99"`, "usd", 0, conversion.MsgAmountNotNumber},
		{"two points", "1.2.3", "usd", 0, conversion.MsgAmountNotNumber},
		{"minus only", "-", "usd", 0, conversion.MsgAmountNotNumber},
		{"fullwidth digit", "２９", "usd", 0, conversion.MsgAmountNotNumber},

		{"uppercase currency", "29.99", "USD", 0, conversion.MsgCurrencyLowercase},
		{"unknown currency", "29.99", "xyz", 0, conversion.MsgCurrencyUnknown},
		{"no currency", "29.99", "", 0, conversion.MsgCurrencyUnknown},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := conversion.ParseAmount(c.raw, c.currency)
			if c.msg == "" {
				if err != nil || got != c.want {
					t.Fatalf("ParseAmount(%q, %s) = %d, %v; want %d", c.raw, c.currency, got, err, c.want)
				}
				return
			}
			var ve *conversion.ValueError
			if !errors.As(err, &ve) || ve.Message != c.msg {
				t.Fatalf("ParseAmount(%q, %s) = %d, %v; want error %q", c.raw, c.currency, got, err, c.msg)
			}
		})
	}
}

func TestFormatAmount(t *testing.T) {
	t.Parallel()
	cases := []struct {
		minor    int64
		currency string
		want     string
	}{
		{2999, "usd", "29.99"},
		{2990, "usd", "29.9"},
		{2900, "usd", "29"},
		{1, "usd", "0.01"},
		{10, "usd", "0.1"},
		{0, "usd", "0"},
		{2999, "jpy", "2999"},
		{1234, "bhd", "1.234"},
		{5, "clf", "0.0005"},
		{-2999, "usd", "-29.99"},
		{-1, "usd", "-0.01"},
		{-9223372036854775808, "usd", "-92233720368547758.08"},
		{9223372036854775807, "jpy", "9223372036854775807"},
		{2999, "zzz", "29.99"},
	}
	for _, c := range cases {
		if got := conversion.FormatAmount(c.minor, c.currency); got != c.want {
			t.Errorf("FormatAmount(%d, %s) = %q, want %q", c.minor, c.currency, got, c.want)
		}
	}
}

// oracle computes what ParseAmount must answer, through math/big: the
// minor amount, or "" plus the message.
func oracle(raw, currency string) (int64, string) {
	digits, _ := conversion.MinorDigits(currency)
	isNumber := raw != "" && (raw[0] == '-' || (raw[0] >= '0' && raw[0] <= '9')) &&
		strings.TrimSpace(raw) == raw && json.Valid([]byte(raw))
	if !isNumber {
		return 0, conversion.MsgAmountNotNumber
	}
	r, ok := new(big.Rat).SetString(raw)
	if !ok {
		panic("big.Rat refused a JSON number: " + raw)
	}
	if r.Sign() <= 0 {
		return 0, conversion.MsgAmountPositive
	}
	r.Mul(r, new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(digits)), nil)))
	if !r.IsInt() {
		return 0, conversion.MsgAmountDecimals(currency, digits)
	}
	if r.Num().Cmp(big.NewInt(conversion.MaxAmountMinor)) > 0 {
		return 0, conversion.MsgAmountTooLarge
	}
	return r.Num().Int64(), ""
}

func checkAgainstOracle(t *testing.T, raw, currency string) {
	t.Helper()
	want, wantMsg := oracle(raw, currency)
	got, err := conversion.ParseAmount(raw, currency)
	var gotMsg string
	if err != nil {
		var ve *conversion.ValueError
		if !errors.As(err, &ve) {
			t.Fatalf("ParseAmount(%q, %s): error %T %v", raw, currency, err, err)
		}
		gotMsg = ve.Message
	}
	if got != want || gotMsg != wantMsg {
		t.Fatalf("ParseAmount(%q, %s) = %d, %q; want %d, %q", raw, currency, got, gotMsg, want, wantMsg)
	}
}

// randomNumber writes a random decimal text in or near the JSON number
// grammar, often within the currency's digits, sometimes not.
func randomNumber(rng *rand.Rand, digits int) string {
	var b strings.Builder
	if rng.Intn(10) == 0 {
		b.WriteByte('-')
	}
	if rng.Intn(40) == 0 {
		b.WriteByte('+')
	}
	n := rng.Intn(18)
	if rng.Intn(4) == 0 {
		b.WriteByte('0')
	} else {
		b.WriteByte(byte('1' + rng.Intn(9)))
		for range n {
			b.WriteByte(byte('0' + rng.Intn(10)))
		}
	}
	if rng.Intn(2) == 0 {
		b.WriteByte('.')
		f := rng.Intn(digits + 1)
		if rng.Intn(5) == 0 {
			f = rng.Intn(digits + 4)
		}
		if rng.Intn(30) == 0 {
			f = 0 // "5." is not a number
		}
		for range f {
			b.WriteByte(byte('0' + rng.Intn(10)))
		}
	}
	if rng.Intn(6) == 0 {
		b.WriteByte("eE"[rng.Intn(2)])
		if s := rng.Intn(3); s > 0 {
			b.WriteByte("+-"[s-1])
		}
		b.WriteString(strconv.Itoa(rng.Intn(25)))
	}
	return b.String()
}

// Every decimal within a currency's digits reads back exactly, and every
// other text is refused for the same reason math/big gives, over random
// texts of every shape.
func TestParseAmountAgainstBig(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewSource(20251114))
	currencies := conversion.Currencies()
	for range 200000 {
		c := currencies[rng.Intn(len(currencies))]
		d, _ := conversion.MinorDigits(c)
		checkAgainstOracle(t, randomNumber(rng, d), c)
	}
}

// Formatting minor units and parsing them back gives the same minor units,
// and the text is a JSON number that math/big reads as the same value.
func TestAmountRoundTrip(t *testing.T) {
	t.Parallel()
	currencies := conversion.Currencies()
	f := func(minor int64, pick uint16) bool {
		if minor < 0 {
			minor = -(minor + 1)
		}
		minor = minor%conversion.MaxAmountMinor + 1
		c := currencies[int(pick)%len(currencies)]
		s := conversion.FormatAmount(minor, c)
		back, err := conversion.ParseAmount(s, c)
		if err != nil || back != minor {
			t.Logf("%d %s: %q read back as %d, %v", minor, c, s, back, err)
			return false
		}
		var n json.Number
		if err := json.Unmarshal([]byte(s), &n); err != nil || n.String() != s {
			t.Logf("%q is not a JSON number: %v", s, err)
			return false
		}
		return true
	}
	if err := quick.Check(f, &quick.Config{MaxCount: 100000, Rand: rand.New(rand.NewSource(7))}); err != nil {
		t.Fatal(err)
	}
	// Small amounts and the edges, in every currency.
	for _, c := range currencies {
		for _, m := range []int64{1, 9, 10, 11, 99, 100, 101, 999, 1000, 1001, conversion.MaxAmountMinor} {
			s := conversion.FormatAmount(m, c)
			if back, err := conversion.ParseAmount(s, c); err != nil || back != m {
				t.Errorf("%d %s: %q read back as %d, %v", m, c, s, back, err)
			}
		}
	}
}

// Every decimal text within a currency's digits (with or without trailing
// zeros, with or without an exponent) reads as the value math/big gives.
func TestDecimalTextsWithinDigits(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewSource(42))
	currencies := conversion.Currencies()
	for range 100000 {
		c := currencies[rng.Intn(len(currencies))]
		d, _ := conversion.MinorDigits(c)
		minor := rng.Int63n(conversion.MaxAmountMinor) + 1
		if rng.Intn(2) == 0 {
			minor = rng.Int63n(100000) + 1
		}
		s := conversion.FormatAmount(minor, c)
		// Pad the fraction with zeros up to the currency's digits (the
		// form most clients send), or write it with an exponent.
		switch rng.Intn(3) {
		case 0:
			if d > 0 {
				intPart, frac, _ := strings.Cut(s, ".")
				s = intPart + "." + frac + strings.Repeat("0", d-len(frac))
			}
		case 1:
			s = conversion.FormatAmount(minor, "jpy") + "e-" + strconv.Itoa(d)
		}
		got, err := conversion.ParseAmount(s, c)
		if err != nil || got != minor {
			t.Fatalf("ParseAmount(%q, %s) = %d, %v; want %d", s, c, got, err, minor)
		}
	}
}

func FuzzParseAmount(f *testing.F) {
	for _, s := range []string{"29.99", "2999", "0.001", "-1", "1e2", "2.999e1", "+1", "0x10", "NaN", "Infinity", "1e999", "9007199254740992", ".5", "5.", "00", "1E-2"} {
		f.Add(s, uint8(0))
	}
	currencies := conversion.Currencies()
	f.Fuzz(func(t *testing.T, raw string, pick uint8) {
		if len(raw) > 1000 {
			return // big.Rat is slow on huge exponents; the grammar is the same
		}
		if i := strings.IndexAny(raw, "eE"); i >= 0 {
			if e, err := strconv.Atoi(strings.TrimLeft(raw[i+1:], "+-")); err != nil || e > 10000 {
				return // keep math/big's exponentiation small
			}
		}
		checkAgainstOracle(t, raw, currencies[int(pick)%len(currencies)])
	})
}

func TestCurrencies(t *testing.T) {
	t.Parallel()
	for _, c := range conversion.SpecCurrencies {
		if err := conversion.ValidateCurrency(c); err != nil {
			t.Errorf("spec currency %s refused: %v", c, err)
		}
	}
	for _, c := range conversion.Currencies() {
		if len(c) != 3 || strings.ToLower(c) != c || strings.Trim(c, "abcdefghijklmnopqrstuvwxyz") != "" {
			t.Errorf("code %q is not three lowercase letters", c)
		}
		if d, _ := conversion.MinorDigits(c); d != 0 && d != 2 && d != 3 && d != 4 {
			t.Errorf("%s has %d digits", c, d)
		}
	}
	digits := map[string]int{
		"usd": 2, "eur": 2, "gbp": 2, "chf": 2, "cad": 2, "aud": 2, "jpy": 0, "krw": 0, "clp": 0, "vnd": 0,
		"isk": 0, "ugx": 0, "pyg": 0, "xaf": 0, "xof": 0, "xpf": 0, "bif": 0, "djf": 0, "gnf": 0, "kmf": 0,
		"rwf": 0, "vuv": 0, "uyi": 0, "bhd": 3, "kwd": 3, "omr": 3, "jod": 3, "tnd": 3, "lyd": 3, "iqd": 3,
		"clf": 4, "uyw": 4, "inr": 2, "idr": 2, "huf": 2, "twd": 2, "xcg": 2, "zwg": 2, "sle": 2, "ves": 2,
	}
	for c, want := range digits {
		if got, ok := conversion.MinorDigits(c); !ok || got != want {
			t.Errorf("MinorDigits(%s) = %d, %v; want %d", c, got, ok, want)
		}
	}
	if n := len(conversion.Currencies()); n < 150 {
		t.Errorf("only %d currencies", n)
	}
	for c, msg := range map[string]string{
		"USD": conversion.MsgCurrencyLowercase, "Eur": conversion.MsgCurrencyLowercase,
		"xau": conversion.MsgCurrencyUnknown, "xxx": conversion.MsgCurrencyUnknown, "xts": conversion.MsgCurrencyUnknown,
		"xdr": conversion.MsgCurrencyUnknown, "": conversion.MsgCurrencyUnknown, "us": conversion.MsgCurrencyUnknown,
		"usdt": conversion.MsgCurrencyUnknown, " usd": conversion.MsgCurrencyUnknown, "btc": conversion.MsgCurrencyUnknown,
		"XYZ": conversion.MsgCurrencyUnknown,
	} {
		err := conversion.ValidateCurrency(c)
		var ve *conversion.ValueError
		if !errors.As(err, &ve) || ve.Message != msg {
			t.Errorf("ValidateCurrency(%q) = %v, want %q", c, err, msg)
		}
	}
}
