package conversion

import "strings"

// minorDigits is the number of minor-unit digits (decimals) of every ISO
// 4217 currency a sale may use, keyed by its lowercase code. Written by hand
// from the ISO 4217 list; codes whose minor unit is "N.A." (gold, silver,
// platinum, palladium, the SDR, bond units, XTS for testing, XXX for "no
// currency") are left out, since nothing is sold in them.
//
// A few codes ISO withdrew recently (ANG, BGN, CUC, HRK, SLL, VEF, ZWL) are
// still accepted: a shop that has not updated its code should not lose a
// sale to a 400. They are marked below.
var minorDigits = map[string]int{
	"aed": 2, "afn": 2, "all": 2, "amd": 2, "ang": 2 /* withdrawn 2025 for xcg */, "aoa": 2,
	"ars": 2, "aud": 2, "awg": 2, "azn": 2,
	"bam": 2, "bbd": 2, "bdt": 2, "bgn": 2 /* euro since 2026 */, "bhd": 3, "bif": 0,
	"bmd": 2, "bnd": 2, "bob": 2, "bov": 2, "brl": 2, "bsd": 2, "btn": 2, "bwp": 2,
	"byn": 2, "bzd": 2,
	"cad": 2, "cdf": 2, "che": 2, "chf": 2, "chw": 2, "clf": 4, "clp": 0, "cny": 2,
	"cop": 2, "cou": 2, "crc": 2, "cuc": 2 /* withdrawn */, "cup": 2, "cve": 2, "czk": 2,
	"djf": 0, "dkk": 2, "dop": 2, "dzd": 2,
	"egp": 2, "ern": 2, "etb": 2, "eur": 2,
	"fjd": 2, "fkp": 2,
	"gbp": 2, "gel": 2, "ghs": 2, "gip": 2, "gmd": 2, "gnf": 0, "gtq": 2, "gyd": 2,
	"hkd": 2, "hnl": 2, "hrk": 2 /* euro since 2023 */, "htg": 2, "huf": 2,
	"idr": 2, "ils": 2, "inr": 2, "iqd": 3, "irr": 2, "isk": 0,
	"jmd": 2, "jod": 3, "jpy": 0,
	"kes": 2, "kgs": 2, "khr": 2, "kmf": 0, "kpw": 2, "krw": 0, "kwd": 3, "kyd": 2,
	"kzt": 2,
	"lak": 2, "lbp": 2, "lkr": 2, "lrd": 2, "lsl": 2, "lyd": 3,
	"mad": 2, "mdl": 2, "mga": 2, "mkd": 2, "mmk": 2, "mnt": 2, "mop": 2, "mru": 2,
	"mur": 2, "mvr": 2, "mwk": 2, "mxn": 2, "mxv": 2, "myr": 2, "mzn": 2,
	"nad": 2, "ngn": 2, "nio": 2, "nok": 2, "npr": 2, "nzd": 2,
	"omr": 3,
	"pab": 2, "pen": 2, "pgk": 2, "php": 2, "pkr": 2, "pln": 2, "pyg": 0,
	"qar": 2,
	"ron": 2, "rsd": 2, "rub": 2, "rwf": 0,
	"sar": 2, "sbd": 2, "scr": 2, "sdg": 2, "sek": 2, "sgd": 2, "shp": 2, "sle": 2,
	"sll": 2 /* withdrawn for sle */, "sos": 2, "srd": 2, "ssp": 2, "stn": 2, "svc": 2,
	"syp": 2, "szl": 2,
	"thb": 2, "tjs": 2, "tmt": 2, "tnd": 3, "top": 2, "try": 2, "ttd": 2, "twd": 2,
	"tzs": 2,
	"uah": 2, "ugx": 0, "usd": 2, "usn": 2, "uyi": 0, "uyu": 2, "uyw": 4, "uzs": 2,
	"ved": 2, "vef": 2 /* withdrawn for ves */, "ves": 2, "vnd": 0, "vuv": 0,
	"wst": 2,
	"xaf": 0, "xcd": 2, "xcg": 2, "xof": 0, "xpf": 0,
	"yer": 2,
	"zar": 2, "zmw": 2, "zwg": 2, "zwl": 2, /* withdrawn for zwg */
}

// SpecCurrencies are the codes the interface lists; they are always
// accepted.
var SpecCurrencies = []string{"eur", "usd", "gbp", "jpy", "chf", "cad", "aud"}

// MinorDigits returns the number of decimals of a lowercase ISO 4217 code,
// and false for anything else (an uppercase code included).
func MinorDigits(currency string) (int, bool) {
	d, ok := minorDigits[currency]
	return d, ok
}

// Currencies lists every accepted code, unsorted.
func Currencies() []string {
	out := make([]string, 0, len(minorDigits))
	for c := range minorDigits {
		out = append(out, c)
	}
	return out
}

// Currency messages, shown at path "currency".
const (
	MsgCurrencyLowercase = "Currency must be a lowercase ISO 4217 code"
	MsgCurrencyUnknown   = "Currency must be an ISO 4217 code such as eur, usd, gbp, jpy, chf, cad or aud"
)

// ValidateCurrency checks a currency code: a lowercase ISO 4217 code of
// the table. An uppercase or mixed-case spelling of a known code is refused
// with a message saying so; it is not lowercased silently, since the
// interface fixes lowercase.
func ValidateCurrency(currency string) error {
	if _, ok := minorDigits[currency]; ok {
		return nil
	}
	if lower := strings.ToLower(currency); lower != currency {
		if _, ok := minorDigits[lower]; ok {
			return valueError(MsgCurrencyLowercase)
		}
	}
	return valueError(MsgCurrencyUnknown)
}
