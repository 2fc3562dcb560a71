package stats

import (
	"context"
	"fmt"
	"time"

	"github.com/linkd/linkd/domain/conversion"
	"github.com/linkd/linkd/projections"
	ch "github.com/linkd/linkd/projections/clickhouse"
	"github.com/linkd/linkd/queries"
)

// Conversions: leads and sales, one row per recorded event, for analysts
// (docs/analytics.md) and for the leads, sales and revenue of the daily
// records. A conversion counts on the UTC day it was recorded, for the link
// of its click.
//
// Delivery is at least once, so a row may be written twice (a batch retried
// after a crash before its checkpoint). Both tables are ReplacingMergeTree
// by conversion_id, which folds copies in merges; every read groups by
// conversion_id first, so copies never count twice before that.

// leadColumns are the columns of leads; sales adds amount and currency.
var (
	leadColumns = []string{
		"event_id",      // the caller's eventId, else conversion_id
		"conversion_id", // linkd's id of the conversion
		"event_name", "click_id", "link_id", "workspace_id", "project_id", "customer_id", "customer_external_id",
		"timestamp", "date", "first", "clicked_at", "country", "device_type", "browser", "os", "referrer", "metadata",
	}
	saleColumns = append(append([]string{}, leadColumns...), "amount", "currency")
)

// conversionRows are the columns of one INSERT.
type conversionRows struct {
	eventID, conversionID, name, clickID, linkID, workspaceID, projectID []string
	customerID, externalID                                               []string
	ts, date, clickedAt                                                  []time.Time
	first                                                                []uint8
	country, device, browser, os, referrer, metadata                     []string
	amount                                                               []int64
	currency                                                             []string
}

func (r *conversionRows) add(eventID, convID, name string, c conversion.Click, customerID, externalID string, ts time.Time, first bool, md []byte) {
	if eventID == "" {
		eventID = convID
	}
	ts = ts.UTC()
	r.eventID = append(r.eventID, eventID)
	r.conversionID = append(r.conversionID, convID)
	r.name = append(r.name, name)
	r.clickID = append(r.clickID, c.ClickID)
	r.linkID = append(r.linkID, c.LinkID)
	r.workspaceID = append(r.workspaceID, c.WorkspaceID)
	r.projectID = append(r.projectID, c.ProjectID)
	r.customerID = append(r.customerID, customerID)
	r.externalID = append(r.externalID, externalID)
	r.ts = append(r.ts, ts.Truncate(time.Second))
	r.date = append(r.date, time.Date(ts.Year(), ts.Month(), ts.Day(), 0, 0, 0, 0, time.UTC))
	r.first = append(r.first, b2u(first))
	r.clickedAt = append(r.clickedAt, c.ClickedAt.UTC().Truncate(time.Second))
	r.country = append(r.country, c.Country)
	r.device = append(r.device, c.DeviceType)
	r.browser = append(r.browser, c.Browser)
	r.os = append(r.os, c.OS)
	r.referrer = append(r.referrer, c.Referrer)
	r.metadata = append(r.metadata, string(md))
}

func (r *conversionRows) columns(sale bool) []any {
	cols := []any{r.eventID, r.conversionID, r.name, r.clickID, r.linkID, r.workspaceID, r.projectID, r.customerID, r.externalID,
		r.ts, r.date, r.first, r.clickedAt, r.country, r.device, r.browser, r.os, r.referrer, r.metadata}
	if sale {
		cols = append(cols, r.amount, r.currency)
	}
	return cols
}

// applyConversions inserts the leads and sales of a batch.
func (p *Projection) applyConversions(ctx context.Context, events []projections.Event) error {
	var leads, sales conversionRows
	for i := range events {
		ev := &events[i]
		if ev.Type != conversion.EventLeadTracked && ev.Type != conversion.EventSaleTracked {
			continue
		}
		e, err := ev.Decode()
		if err != nil {
			p.log.Warn("undecodable conversion skipped", "stream", ev.Stream, "version", ev.Version, "err", err)
			continue
		}
		switch e := e.(type) {
		case *conversion.LeadTracked:
			leads.add(e.EventID, e.ConversionID, e.EventName, e.Click, e.CustomerID, e.CustomerExternalID, e.Timestamp, e.First, e.Metadata)
		case *conversion.SaleTracked:
			sales.add(e.EventID, e.ConversionID, e.EventName, e.Click, e.CustomerID, e.CustomerExternalID, e.Timestamp, e.First, e.Metadata)
			sales.amount = append(sales.amount, e.AmountMinor)
			sales.currency = append(sales.currency, e.Currency)
		}
	}
	if len(leads.conversionID) > 0 {
		if err := p.db.InsertColumns(ctx, tLeads, ch.Columns(leadColumns...), leads.columns(false), ""); err != nil {
			return err
		}
	}
	if len(sales.conversionID) > 0 {
		if err := p.db.InsertColumns(ctx, tSales, ch.Columns(saleColumns...), sales.columns(true), ""); err != nil {
			return err
		}
	}
	return nil
}

// conversionsOf adds the leads, sales and revenue of a scope's days in
// [first, last] to days, making records for days with conversions only.
func (p *Projection) conversionsOf(ctx context.Context, s scope, key string, from, to string, days map[string]*dayRecord) error {
	get := func(d string) *queries.DailyStats {
		rec := days[d]
		if rec == nil {
			rec = &dayRecord{stats: queries.DailyStats{Date: d}}
			if s.key == "link_id" {
				rec.stats.LinkID = key
			} else {
				rec.stats.WorkspaceID = key
			}
			days[d] = rec
		}
		if rec.stats.Revenue == nil {
			rec.stats.Revenue = map[string]int64{}
		}
		return &rec.stats
	}
	where := s.key + " = ? AND date >= toDate(?) AND date <= toDate(?)"
	rows, err := p.conn.Query(ctx, "SELECT toString(d), count() FROM (SELECT conversion_id, any(date) AS d FROM "+p.tbl(tLeads)+
		" WHERE "+where+" GROUP BY conversion_id) GROUP BY d", key, from, to)
	if err != nil {
		return fmt.Errorf("read %s: %w", tLeads, err)
	}
	for rows.Next() {
		var d string
		var n uint64
		if err := rows.Scan(&d, &n); err != nil {
			rows.Close()
			return fmt.Errorf("read %s: %w", tLeads, err)
		}
		get(d).Leads += int64(n)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read %s: %w", tLeads, err)
	}
	rows, err = p.conn.Query(ctx, "SELECT toString(d), c, count(), sum(a) FROM (SELECT conversion_id, any(date) AS d, any(currency) AS c, any(amount) AS a FROM "+
		p.tbl(tSales)+" WHERE "+where+" GROUP BY conversion_id) GROUP BY d, c", key, from, to)
	if err != nil {
		return fmt.Errorf("read %s: %w", tSales, err)
	}
	defer rows.Close()
	for rows.Next() {
		var d, cur string
		var n uint64
		var sum int64
		if err := rows.Scan(&d, &cur, &n, &sum); err != nil {
			return fmt.Errorf("read %s: %w", tSales, err)
		}
		st := get(d)
		st.Sales += int64(n)
		st.Revenue[cur] += sum
	}
	return rows.Err()
}
