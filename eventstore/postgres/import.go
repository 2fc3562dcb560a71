package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/linkd/linkd/eventstore"
)

// importSQL puts a page of another log's events after this log's head, in
// their order: the rows keep their ids, streams, versions and times; only
// positions are this log's. The append lock orders it with every append.
const importSQL = `WITH ins AS (
	INSERT INTO linkd_events (position, stream, version, id, type, data, metadata, created)
	SELECT $1::bigint + u.o, u.s, u.v, u.i, u.t, u.d, u.m, u.c
	FROM unnest($2::text[], $3::bigint[], $4::uuid[], $5::text[], $6::bytea[], $7::bytea[], $8::timestamptz[])
		WITH ORDINALITY AS u(s, v, i, t, d, m, c, o)
	RETURNING stream, position)
INSERT INTO linkd_heads (category, position)
	SELECT split_part(stream, '-', 1), max(position) FROM ins GROUP BY 1
	ON CONFLICT (category) DO UPDATE SET position = excluded.position`

// Import appends events read from another log (linkd copy-log, ADR 0130)
// after this log's head, in one transaction and in their order, keeping
// each one's id, stream, version, type, data, metadata and time (to the
// microsecond, as PostgreSQL keeps it). Only their positions are this
// log's. It does not check that a version follows its stream's last: the
// events must come from a log, in its order, after what this one holds of
// it. A version this log already has fails the whole page with
// ErrWrongExpectedVersion and writes nothing.
func (s *Store) Import(ctx context.Context, events []eventstore.RecordedEvent) (eventstore.Position, error) {
	if err := s.enter(ctx); err != nil {
		return eventstore.Start, err
	}
	defer s.exit()
	n := len(events)
	if n == 0 {
		return eventstore.Start, nil
	}
	var (
		streams = make([]string, n)
		vers    = make([]int64, n)
		ids     = make([]uuid.UUID, n)
		types   = make([]string, n)
		datas   = make([][]byte, n)
		metas   = make([][]byte, n)
		times   = make([]time.Time, n)
	)
	for i, e := range events {
		if err := validate(e.Stream, []eventstore.EventData{{Type: e.Type, Data: e.Data, Metadata: e.Metadata}}); err != nil {
			return eventstore.Start, err
		}
		streams[i], vers[i], ids[i], types[i] = e.Stream, int64(e.Version), e.ID, e.Type
		datas[i], metas[i], times[i] = e.Data, e.Metadata, e.Time
		if datas[i] == nil {
			datas[i] = []byte{}
		}
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return eventstore.Start, s.dbErr(ctx, "import", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // after Commit it does nothing
	var head int64
	if _, err = tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", appendLock); err == nil {
		err = tx.QueryRow(ctx, "SELECT coalesce(max(position), 0) FROM linkd_events").Scan(&head)
	}
	if err == nil {
		_, err = tx.Exec(ctx, importSQL, head, streams, vers, ids, types, datas, metas, times)
	}
	if err == nil {
		// Subscriptions of every process, this one's too, read it as
		// another process's append.
		_, err = tx.Exec(ctx, "SELECT pg_notify($1, $2)", notifyChannel, fmt.Sprintf("import %d", head+int64(n)))
	}
	if err == nil {
		err = tx.Commit(ctx)
	}
	// The streams' versions the writer knew may be behind the page now.
	s.forgetVersions()
	if err != nil {
		return eventstore.Start, s.dbErr(ctx, "import", err)
	}
	return position(head + int64(n)), nil
}
