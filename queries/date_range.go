package queries

import (
	"time"

	"github.com/linkd/linkd/domain"
)

// MaxRangeDays is the longest range a statistics query covers.
const MaxRangeDays = 30

// DateRange is the range a statistics request asks for (spec 4.6): either
// bound may be absent; MaxDays (0 for none) keeps the last days of it, or
// the first when Start is given.
type DateRange struct {
	Start, End *time.Time
	MaxDays    int
}

// Days are the UTC days a statistics query covers, From and To included,
// both at 00:00 UTC.
type Days struct {
	From, To time.Time
}

// Day is the UTC day of t, at 00:00 UTC.
func Day(t time.Time) time.Time {
	t = t.UTC()
	return time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
}

// Resolve applies the spec's date rules at time now:
//  1. only Start: End is 30 days after it; only End: Start is 30 days
//     before it; neither: the 30 days up to now;
//  2. the range may not exceed 30 days;
//  3. Start may not be after End;
//
// and the days must be ISO 8601 dates, years 1 to 9999.
func (r DateRange) Resolve(now time.Time) (Days, error) {
	var start, end time.Time
	switch {
	case r.Start != nil && r.End != nil:
		start, end = *r.Start, *r.End
	case r.Start != nil:
		start = *r.Start
		end = start.AddDate(0, 0, MaxRangeDays)
	case r.End != nil:
		end = *r.End
		start = end.AddDate(0, 0, -MaxRangeDays)
	default:
		end = now
		start = Day(now).AddDate(0, 0, -MaxRangeDays)
	}
	if r.MaxDays != 0 && (r.MaxDays < 1 || r.MaxDays > MaxRangeDays) {
		return Days{}, domain.Invalid("max_days must be an integer from 1 to 30")
	}
	if start.After(end) {
		return Days{}, domain.Invalid("start_date cannot be after end_date")
	}
	if days := int(end.Sub(start) / (24 * time.Hour)); days > MaxRangeDays {
		return Days{}, domain.Invalid("Date range cannot exceed 30 days. Current range: %d days", days)
	}
	d := Days{From: Day(start), To: Day(end)}
	if d.From.Year() < 1 || d.To.Year() > 9999 {
		return Days{}, domain.Invalid("Dates must be within the years 1 to 9999")
	}
	if r.MaxDays > 0 {
		if r.Start != nil {
			if lim := d.From.AddDate(0, 0, r.MaxDays-1); lim.Before(d.To) {
				d.To = lim
			}
		} else if lim := d.To.AddDate(0, 0, -(r.MaxDays - 1)); lim.After(d.From) {
			d.From = lim
		}
	}
	return d, nil
}
