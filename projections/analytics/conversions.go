package analytics

import (
	"encoding/binary"
	"errors"
	"slices"
	"sort"

	"github.com/linkd/linkd/domain/conversion"
	"github.com/linkd/linkd/queries"
)

// Conversions: leads, sales and revenue per (link, UTC day) and per
// (workspace, UTC day), from LeadTracked and SaleTracked of the customer
// streams. A conversion counts on the day it was recorded, for the link of
// the click it is attributed to.
//
//	tagConvLink <uvarint len><link id><day>      -> conversion record (merge operands)
//	tagConvWS   <uvarint len><workspace id><day> -> conversion record (merge operands)
//
// A conversion record: convFormat, uvarint leads, uvarint sales, uvarint n,
// then n pairs (currency string, varint minor units) sorted by currency.
// Records add up (leads, sales, and revenue per currency), so deltas merge
// in any order, as click records do.

const convFormat byte = 0xc1

// convRecord is one scope-day's conversions.
type convRecord struct {
	leads, sales int64
	revenue      map[string]int64 // currency -> minor units
}

func (r *convRecord) add(o *convRecord) {
	r.leads += o.leads
	r.sales += o.sales
	for cur, n := range o.revenue {
		if r.revenue == nil {
			r.revenue = map[string]int64{}
		}
		r.revenue[cur] += n
	}
}

func (r *convRecord) encode(b []byte) []byte {
	b = append(b, convFormat)
	b = binary.AppendUvarint(b, uint64(r.leads))
	b = binary.AppendUvarint(b, uint64(r.sales))
	curs := make([]string, 0, len(r.revenue))
	for c := range r.revenue {
		curs = append(curs, c)
	}
	sort.Strings(curs)
	b = binary.AppendUvarint(b, uint64(len(curs)))
	for _, c := range curs {
		b = appendString(b, c)
		b = binary.AppendVarint(b, r.revenue[c])
	}
	return b
}

var errConvCorrupt = errors.New("analytics: corrupt conversion record")

func decodeConv(b []byte) (*convRecord, error) {
	if len(b) == 0 || b[0] != convFormat {
		return nil, errConvCorrupt
	}
	d := decoder{b: b[1:]}
	r := &convRecord{leads: int64(d.uvarint()), sales: int64(d.uvarint())}
	n := d.uvarint()
	if n > 0 {
		r.revenue = make(map[string]int64, n)
	}
	for i := uint64(0); i < n && d.err == nil; i++ {
		c := d.str()
		r.revenue[c] += d.varint()
	}
	if d.err != nil || len(d.b) != 0 {
		return nil, errConvCorrupt
	}
	return r, nil
}

// mergeConv adds two encoded conversion records.
func mergeConv(dst, a, b []byte) ([]byte, error) {
	ra, err := decodeConv(a)
	if err != nil {
		return nil, err
	}
	rb, err := decodeConv(b)
	if err != nil {
		return nil, err
	}
	ra.add(rb)
	return ra.encode(dst), nil
}

// convAgg adds up a batch's conversions per scope-day key.
type convAgg map[string]*convRecord

func (a convAgg) add(key []byte, lead bool, minor int64, currency string) {
	r := a[string(key)]
	if r == nil {
		r = &convRecord{}
		a[string(key)] = r
	}
	if lead {
		r.leads++
		return
	}
	r.sales++
	if r.revenue == nil {
		r.revenue = map[string]int64{}
	}
	r.revenue[currency] += minor
}

// sorted returns the batch's deltas in key order.
func (a convAgg) sorted() []encoded {
	keys := make([]string, 0, len(a))
	for k := range a {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := make([]encoded, len(keys))
	for i, k := range keys {
		out[i] = encoded{key: []byte(k), value: a[k].encode(nil)}
	}
	return out
}

// addConversion counts a decoded LeadTracked or SaleTracked.
func (a convAgg) addConversion(e any) {
	var key []byte
	switch e := e.(type) {
	case *conversion.LeadTracked:
		day := dayOf(e.Timestamp)
		a.add(dayKey(key[:0], tagConvLink, e.LinkID, day), true, 0, "")
		a.add(dayKey(key[:0], tagConvWS, e.WorkspaceID, day), true, 0, "")
	case *conversion.SaleTracked:
		day := dayOf(e.Timestamp)
		a.add(dayKey(key[:0], tagConvLink, e.LinkID, day), false, e.AmountMinor, e.Currency)
		a.add(dayKey(key[:0], tagConvWS, e.WorkspaceID, day), false, e.AmountMinor, e.Currency)
	}
}

// withConversions merges a scope's conversion records into its daily
// records (clicks), adding records for days with conversions and no click.
// Both lists are in day order; the result is too.
func withConversions(days []queries.DailyStats, conv map[string]*convRecord, linkID, workspaceID string) []queries.DailyStats {
	for i := range days {
		days[i].Revenue = map[string]int64{}
		if c, ok := conv[days[i].Date]; ok {
			days[i].Leads, days[i].Sales = c.leads, c.sales
			for cur, n := range c.revenue {
				days[i].Revenue[cur] = n
			}
			delete(conv, days[i].Date)
		}
	}
	for date, c := range conv {
		d := queries.DailyStats{Date: date, LinkID: linkID, WorkspaceID: workspaceID, Leads: c.leads, Sales: c.sales, Revenue: map[string]int64{}}
		for cur, n := range c.revenue {
			d.Revenue[cur] = n
		}
		days = append(days, d)
	}
	sort.SliceStable(days, func(i, j int) bool { return days[i].Date < days[j].Date })
	return days
}
