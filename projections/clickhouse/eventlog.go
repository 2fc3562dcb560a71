package clickhouse

import (
	"context"
	"fmt"
	"time"
)

// EventLog returns the event log the database's projections were built
// from, as last recorded by SetEventLog: the id of its first event and
// the kind of store that keeps it; ok is false when none is.
func (db *DB) EventLog(ctx context.Context) (first, kind string, ok bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, db.opts.QueryTimeout)
	defer cancel()
	rows, err := db.conn.Query(ctx, "SELECT first_event, store_kind FROM "+db.Table("event_log")+" ORDER BY recorded_at DESC LIMIT 1")
	if err != nil {
		return "", "", false, fmt.Errorf("clickhouse: event log: %w", err)
	}
	defer rows.Close()
	if rows.Next() {
		if err := rows.Scan(&first, &kind); err != nil {
			return "", "", false, fmt.Errorf("clickhouse: event log: %w", err)
		}
		ok = true
	}
	if err := rows.Err(); err != nil {
		return "", "", false, fmt.Errorf("clickhouse: event log: %w", err)
	}
	return first, kind, ok, nil
}

// SetEventLog records the event log the projections are built from (ADR
// 0131).
func (db *DB) SetEventLog(ctx context.Context, first, kind string) error {
	err := db.InsertColumns(ctx, "event_log", Columns("first_event", "store_kind", "recorded_at"),
		[]any{[]string{first}, []string{kind}, []uint64{uint64(time.Now().UnixNano())}}, "")
	if err != nil {
		return fmt.Errorf("clickhouse: record the event log: %w", err)
	}
	return nil
}
