package stats

import (
	"context"
	"fmt"

	ch "github.com/linkd/linkd/projections/clickhouse"
)

// The tables of the projection, the stable names of docs/analytics.md. The
// migrations of projections/clickhouse define them; the column lists below
// are those of the projector's INSERTs.
const (
	tClicks             = "clicks"
	tDailyInput         = "clicks_daily_input" // Null: the projector writes the daily tables through it
	tLinkDaily          = "link_clicks_daily"
	tWorkspaceDaily     = "workspace_clicks_daily"
	tLinkBreakdown      = "link_clicks_daily_breakdown_v2"
	tWorkspaceBreakdown = "workspace_clicks_daily_breakdown_v2"
	tValues             = "breakdown_values"
	tLinkFinal          = "link_clicks_daily_final"
	tWorkspaceFinal     = "workspace_clicks_daily_final"
	inputSuffix         = "_input" // the Null table a breakdown table is written through
	tLinks              = "links"
	tCheckpoint         = "projection_checkpoint"
	tLeads              = "leads"
	tSales              = "sales"
)

// storedTables are the tables that hold the projection's data (not the Null
// inputs): Reset empties them.
var storedTables = []string{
	tClicks, tLinkDaily, tWorkspaceDaily, tLinkBreakdown, tWorkspaceBreakdown, tValues,
	tLinkFinal, tWorkspaceFinal, tLinks, tCheckpoint, tLeads, tSales,
}

// legacyBreakdowns are the breakdown tables of schema version 1, which
// nothing writes since version 2: they keep their data for analysts until a
// replay (Reset drops them).
var legacyBreakdowns = []string{"link_clicks_daily_breakdown", "workspace_clicks_daily_breakdown"}

// dailyCounters are the counters of the daily tables (and of the final
// records), in the order of their columns.
var dailyCounters = []string{"clicks", "qr_scans", "direct_clicks", "chrome_clicks", "ios_clicks", "android_clicks"}

// dailyInputColumns are the columns of clicks_daily_input, which the
// projector writes when it flushes; the daily views read them.
var dailyInputColumns = ch.Columns("link_id", "workspace_id", "date", "timestamp", "qr", "browser", "os", "visitor", "click_seq", "insert_id")

// views are the materialized views that write the aggregates: each target
// holds a prefix of the units of clicks, which recovery completes
// (recover.go).
var views = []ch.View{
	ch.MustView(tLinkDaily + "_mv"),
	ch.MustView(tWorkspaceDaily + "_mv"),
	ch.MustView(tLinkBreakdown + "_mv"),
	ch.MustView(tWorkspaceBreakdown + "_mv"),
}

func (p *Projection) tbl(name string) string { return p.db.Table(name) }

// emptyTables empties the tables of the projection and drops those of
// schema version 1.
func (p *Projection) emptyTables(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, p.opts.DDLTimeout)
	defer cancel()
	for _, name := range storedTables {
		if err := p.conn.Exec(ctx, "TRUNCATE TABLE IF EXISTS "+p.tbl(name)); err != nil {
			return fmt.Errorf("empty table %s: %w", name, err)
		}
	}
	for _, name := range legacyBreakdowns {
		if err := p.conn.Exec(ctx, "DROP TABLE IF EXISTS "+p.tbl(name)); err != nil {
			return fmt.Errorf("drop table %s: %w", name, err)
		}
	}
	return nil
}
