package queries

import (
	"testing"
	"time"

	"github.com/linkd/linkd/domain"
)

func TestDateRangeResolve(t *testing.T) {
	now := time.Date(2026, 11, 24, 15, 30, 0, 0, time.UTC)
	at := func(s string) *time.Time {
		v, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return &v
	}
	cases := []struct {
		name     string
		r        DateRange
		from, to string // want, or "" when an error is wanted
		err      string
	}{
		{"neither: the 30 days up to now", DateRange{}, "2026-10-25", "2026-11-24", ""},
		{"only start: 30 days after it", DateRange{Start: at("2026-01-01T00:00:00Z")}, "2026-01-01", "2026-01-31", ""},
		{"only end: 30 days before it", DateRange{End: at("2026-03-31T12:00:00Z")}, "2026-03-01", "2026-03-31", ""},
		{"both, times cut to days", DateRange{Start: at("2026-05-01T23:59:00Z"), End: at("2026-05-03T00:01:00Z")}, "2026-05-01", "2026-05-03", ""},
		{"offsets count in UTC", DateRange{Start: at("2026-05-02T01:00:00+02:00"), End: at("2026-05-02T01:00:00+02:00")}, "2026-05-01", "2026-05-01", ""},
		{"exactly 30 days", DateRange{Start: at("2026-01-01T00:00:00Z"), End: at("2026-01-31T00:00:00Z")}, "2026-01-01", "2026-01-31", ""},
		{"31 days", DateRange{Start: at("2026-01-01T00:00:00Z"), End: at("2026-02-01T00:00:00Z")}, "", "", "Date range cannot exceed 30 days. Current range: 31 days"},
		{"start after end", DateRange{Start: at("2026-01-02T00:00:00Z"), End: at("2026-01-01T00:00:00Z")}, "", "", "start_date cannot be after end_date"},
		{"max_days keeps the last days", DateRange{MaxDays: 7}, "2026-11-18", "2026-11-24", ""},
		{"max_days after a start keeps the first days", DateRange{Start: at("2026-01-01T00:00:00Z"), MaxDays: 3}, "2026-01-01", "2026-01-03", ""},
		{"max_days longer than the range", DateRange{Start: at("2026-01-01T00:00:00Z"), End: at("2026-01-02T00:00:00Z"), MaxDays: 30}, "2026-01-01", "2026-01-02", ""},
		{"max_days 31", DateRange{MaxDays: 31}, "", "", "max_days must be an integer from 1 to 30"},
		{"max_days negative", DateRange{MaxDays: -1}, "", "", "max_days must be an integer from 1 to 30"},
		{"past year 9999", DateRange{Start: at("9999-12-31T00:00:00Z")}, "", "", "Dates must be within the years 1 to 9999"},
		{"before year 1", DateRange{End: at("0001-01-01T00:00:00Z")}, "", "", "Dates must be within the years 1 to 9999"},
		{"last days of 9999", DateRange{Start: at("9999-12-01T00:00:00Z"), End: at("9999-12-31T00:00:00Z")}, "9999-12-01", "9999-12-31", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d, err := c.r.Resolve(now)
			if c.err != "" {
				if err == nil || domain.KindOf(err) != domain.KindInvalid || err.Error() != c.err {
					t.Fatalf("Resolve = %v, %v; want invalid %q", d, err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := d.From.Format(time.DateOnly) + ".." + d.To.Format(time.DateOnly); got != c.from+".."+c.to {
				t.Fatalf("Resolve = %s, want %s..%s", got, c.from, c.to)
			}
		})
	}
}
