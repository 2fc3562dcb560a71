package dashboard

import (
	"encoding/json"
	"fmt"
	"html/template"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/linkd/linkd/domain/conversion"
)

// series names one line of a chart: its label and the field it reads.
type series struct{ Label, Field string }

// chart is a daily chart drawn as SVG on the server: no script.
type chart struct {
	SVG    template.HTML
	Totals []chartTotal
	Empty  bool
}

type chartTotal struct {
	Label string
	Total int64
	Class string
}

// number reads a JSON number (json.Number, float64, int) or 0.
func number(v any) float64 {
	switch v := v.(type) {
	case json.Number:
		f, _ := v.Float64()
		return f
	case float64:
		return v
	case int:
		return float64(v)
	case int64:
		return float64(v)
	}
	return 0
}

// dailyChart draws the last n days to today of rows (each with a date in
// dateField) as lines, one per series.
func dailyChart(rows []any, today time.Time, n int, dateField string, ss []series) chart {
	byDay := map[string]map[string]any{}
	for _, it := range rows {
		m, _ := it.(map[string]any)
		day, _ := m[dateField].(string)
		if len(day) >= 10 {
			byDay[day[:10]] = m
		}
	}
	days := make([]string, n)
	for i := range days {
		days[i] = today.AddDate(0, 0, i-n+1).Format("2006-01-02")
	}
	vals := make([][]float64, len(ss))
	top := 0.0
	c := chart{}
	for si, s := range ss {
		vals[si] = make([]float64, n)
		var tot int64
		for i, day := range days {
			v := number(byDay[day][s.Field])
			vals[si][i] = v
			tot += int64(v)
			top = math.Max(top, v)
		}
		c.Totals = append(c.Totals, chartTotal{Label: s.Label, Total: tot, Class: fmt.Sprintf("s%d", si)})
	}
	c.Empty = top == 0
	if top < 4 {
		top = 4
	}
	top = niceCeil(top)
	const w, h, left, bottom, right, topPad = 640.0, 220.0, 40.0, 24.0, 8.0, 10.0
	pw, ph := w-left-right, h-bottom-topPad
	x := func(i int) float64 {
		if n == 1 {
			return left + pw/2
		}
		return left + pw*float64(i)/float64(n-1)
	}
	y := func(v float64) float64 { return topPad + ph - ph*v/top }
	var b strings.Builder
	var labels []string
	for _, s := range ss {
		labels = append(labels, s.Label)
	}
	fmt.Fprintf(&b, `<svg class="chart" viewBox="0 0 %g %g" role="img" aria-label="Daily %s, last %d days" preserveAspectRatio="none">`,
		w, h, template.HTMLEscapeString(strings.Join(labels, ", ")), n)
	for i := 0; i <= 4; i++ {
		v := top * float64(i) / 4
		fmt.Fprintf(&b, `<line class="grid" x1="%g" x2="%g" y1="%.1f" y2="%.1f"/>`, left, w-right, y(v), y(v))
		fmt.Fprintf(&b, `<text class="axis" x="%g" y="%.1f" text-anchor="end">%s</text>`, left-6, y(v)+4, formatNumber(v))
	}
	for _, i := range []int{0, n / 2, n - 1} {
		anchor := "middle"
		switch i {
		case 0:
			anchor = "start"
		case n - 1:
			anchor = "end"
		}
		fmt.Fprintf(&b, `<text class="axis" x="%.1f" y="%g" text-anchor="%s">%s</text>`, x(i), h-6, anchor, days[i][5:])
	}
	for si := range ss {
		var pts []string
		for i, v := range vals[si] {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(i), y(v)))
		}
		fmt.Fprintf(&b, `<polyline class="line s%d" points="%s"/>`, si, strings.Join(pts, " "))
		for i, v := range vals[si] {
			if v > 0 {
				fmt.Fprintf(&b, `<circle class="dot s%d" cx="%.1f" cy="%.1f" r="3"><title>%s %s: %s</title></circle>`, si, x(i), y(v), days[i], template.HTMLEscapeString(ss[si].Label), formatNumber(v))
			}
		}
	}
	b.WriteString(`</svg>`)
	c.SVG = template.HTML(b.String()) // every text in it is escaped or a number
	return c
}

func niceCeil(v float64) float64 {
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}

func formatNumber(v float64) string {
	if v != math.Trunc(v) {
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
	s := strconv.FormatInt(int64(v), 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

func formatPercent(v float64) string {
	if v <= 1 {
		v *= 100
	}
	return strconv.FormatFloat(v, 'f', 1, 64) + "%"
}

// formatMoney shows amounts per currency ({"eur": 29.99}) or a number.
func formatMoney(v any) string {
	switch m := v.(type) {
	case map[string]any:
		if len(m) == 0 {
			return "0"
		}
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var parts []string
		for _, k := range keys {
			parts = append(parts, formatAmount(m[k], k))
		}
		return strings.Join(parts, ", ")
	}
	return strconv.FormatFloat(number(v), 'f', 2, 64)
}

// formatAmount writes an amount in its currency's units with the
// currency's own decimals: "49.90 USD", "2999 JPY".
func formatAmount(v any, currency string) string {
	digits, ok := conversion.MinorDigits(currency)
	if !ok {
		digits = 2
	}
	return strconv.FormatFloat(number(v), 'f', digits, 64) + " " + strings.ToUpper(currency)
}

func shortDate(s string) string {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return s
	}
	return t.UTC().Format("2006-01-02 15:04")
}
