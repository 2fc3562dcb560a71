package queries

import (
	"fmt"
	"math"
	"strconv"

	"github.com/biter777/countries"

	"github.com/linkd/linkd/domain/conversion"
)

// What every Radar read model computes the same way from its own totals:
// the overview's rates and revenue, and which sales count.

// RadarSale is a sale recorded on the click a project's visitor came
// through.
type RadarSale struct {
	ConversionID string
	VisitorID    string
	Country      string // the visitor's
	AmountMinor  int64
	Currency     string
}

// RadarSales gathers a range's sales: each conversion once (a click that
// two visitors came through counts its sale once).
type RadarSales struct {
	List  []RadarSale
	seen  map[string]bool
	count map[string]int
}

// Add adds a sale, unless its conversion is in already.
func (s *RadarSales) Add(x RadarSale) {
	if s.seen == nil {
		s.seen, s.count = map[string]bool{}, map[string]int{}
	}
	if s.seen[x.ConversionID] {
		return
	}
	s.seen[x.ConversionID] = true
	s.List = append(s.List, x)
	s.count[x.Currency]++
}

// Currency is the currency revenue is reported in: RevenueCurrency of its
// sales per currency.
func (s *RadarSales) Currency(want string) string { return RevenueCurrency(s.count, want) }

// RevenueCurrency is the currency revenue is reported in, given the number
// of sales in each: want when given, else the one with the most sales (the
// first in alphabetical order on a tie); "" without sales.
func RevenueCurrency(sales map[string]int, want string) string {
	if want != "" {
		return want
	}
	cur := ""
	for c, n := range sales {
		if cur == "" || n > sales[cur] || n == sales[cur] && c < cur {
			cur = c
		}
	}
	return cur
}

// RadarSaleTotals are what an overview takes of a range's sales (each
// conversion once): their number, the visitors they are on, and their
// amount in the overview's currency (minor units).
type RadarSaleTotals struct {
	Sales, Buyers, RevenueMinor int64
}

// RadarTotals are a range's counts that an overview is computed from.
type RadarTotals struct {
	People, Visits, Pageviews, Events int64
	Bounces                           int64 // visits with one page view and no event
	DurationMS                        int64 // of the visits that are not bounces
}

// NewRadarOverview computes spec 2.9's metrics from a range's totals and
// sales, revenue in currency (see RadarSales.Currency; "usd" when there is
// none).
func NewRadarOverview(t RadarTotals, sales []RadarSale, currency string) RadarOverview {
	var st RadarSaleTotals
	buyers := map[string]bool{}
	for _, x := range sales {
		st.Sales++
		buyers[x.VisitorID] = true
		if x.Currency == currency {
			st.RevenueMinor += x.AmountMinor
		}
	}
	st.Buyers = int64(len(buyers))
	return NewRadarOverviewOfTotals(t, st, currency)
}

// NewRadarOverviewOfTotals is NewRadarOverview of sales already totalled
// (by a store that sums them where they are).
func NewRadarOverviewOfTotals(t RadarTotals, st RadarSaleTotals, currency string) RadarOverview {
	o := RadarOverview{People: t.People, Visits: t.Visits, Pageviews: t.Pageviews, Events: t.Events,
		BounceRate: Percent(t.Bounces, t.Visits), RevenueCurrency: currency}
	if t.Visits > 0 {
		o.AvgDurationS = int64(math.Round(float64(t.DurationMS) / 1000 / float64(t.Visits)))
	}
	o.AvgDurationMMSS = fmt.Sprintf("%02d:%02d", o.AvgDurationS/60, o.AvgDurationS%60)
	if o.RevenueCurrency == "" {
		o.RevenueCurrency = "usd"
	}
	o.Sales = st.Sales
	o.Revenue = CurrencyUnits(st.RevenueMinor, o.RevenueCurrency)
	o.ConversionRate = Percent(st.Buyers, o.People)
	if o.People > 0 {
		o.RevenuePerVisitor = Round2(o.Revenue / float64(o.People))
	}
	return o
}

// RevenueByCountry sums the sales in currency by the visitors' country.
func RevenueByCountry(sales []RadarSale, currency string) map[string]int64 {
	out := map[string]int64{}
	for _, x := range sales {
		if x.Currency == currency {
			out[x.Country] += x.AmountMinor
		}
	}
	return out
}

// Round2 rounds to two decimals, as every rate and amount of Radar is.
func Round2(f float64) float64 { return math.Round(f*100) / 100 }

// Percent is part / whole x 100, to two decimals; 0 when whole is.
func Percent(part, whole int64) float64 {
	if whole == 0 {
		return 0
	}
	return Round2(float64(part) * 100 / float64(whole))
}

// CurrencyUnits converts minor units of currency to currency units (through
// the exact decimal text: the nearest float).
func CurrencyUnits(minor int64, currency string) float64 {
	f, _ := strconv.ParseFloat(conversion.FormatAmount(minor, currency), 64)
	return f
}

// CountryName is the English name of an ISO 3166-1 alpha-2 code; the code
// itself when it names no country.
func CountryName(code string) string {
	c := countries.ByName(code)
	if c == countries.Unknown {
		return code
	}
	return c.String()
}
