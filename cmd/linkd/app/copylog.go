package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"time"

	"github.com/linkd/linkd/eventstore"
	"github.com/linkd/linkd/eventstore/postgres"
	ch "github.com/linkd/linkd/projections/clickhouse"
)

// Pages of a log copy: read this many events at a time, and import at
// most copyBytes of them in one transaction.
const (
	copyPage  = 1000
	copyBytes = 8 << 20
)

// CopyResult tells what CopyLog did.
type CopyResult struct {
	Copied, Present uint64 // events copied now, and found there from an earlier copy
	Head            eventstore.Position
}

// CopyLog copies the event log cfg names (the embedded store of its data
// directory, or LINKD_EVENTSTORE's) into the PostgreSQL database to
// names, keeping every event's id, stream, version, type, data, metadata
// and time (ADR 0130). The target must be empty or hold the start of
// this log, from an earlier copy that stopped or from before the last
// events: the copy goes on from there (a copy cut short, or one made from
// a copy of the events folder taken while linkd served). Any other
// content is refused.
// Read models built from the source are not the copy's (positions
// differ): linkd replay rebuilds them from it.
func CopyLog(ctx context.Context, cfg Config, to string, log *slog.Logger, out io.Writer) (CopyResult, error) {
	var res CopyResult
	if err := cfg.Validate(); err != nil {
		return res, err
	}
	if !postgres.IsDSN(to) {
		return res, errors.New("copy-log: --to must name a PostgreSQL database (postgres://...)")
	}
	if to == cfg.EventStore {
		return res, errors.New("copy-log: --to names LINKD_EVENTSTORE itself")
	}
	src, err := OpenStore(ctx, cfg, log)
	if err != nil {
		return res, fmt.Errorf("event store (is linkd serve running on this data directory?): %w", err)
	}
	defer src.Close()
	if err := nameLogKind(ctx, src, cfg, log); err != nil {
		return res, err
	}
	dst, err := postgres.Open(ctx, to, postgres.Options{Logger: log})
	if err != nil {
		return res, fmt.Errorf("copy-log: the target: %w", err)
	}
	defer dst.Close()
	after, err := copiedBefore(ctx, src, dst, &res)
	if err != nil {
		return res, err
	}
	start, last := time.Now(), time.Now()
	for {
		page, err := src.ReadAll(ctx, after, copyPage)
		if err != nil {
			return res, fmt.Errorf("copy-log: reading the log: %w", err)
		}
		if len(page) == 0 {
			break
		}
		after = page[len(page)-1].Position
		for len(page) > 0 {
			n, size := 0, 0
			for n < len(page) && (n == 0 || size+len(page[n].Data)+len(page[n].Metadata) <= copyBytes) {
				size += len(page[n].Data) + len(page[n].Metadata)
				n++
			}
			if res.Head, err = dst.Import(ctx, page[:n]); err != nil {
				return res, fmt.Errorf("copy-log: writing the copy (after %d events): %w", res.Present+res.Copied, err)
			}
			res.Copied += uint64(n)
			page = page[n:]
		}
		if time.Since(last) > 5*time.Second {
			last = time.Now()
			log.Info("copying the event log", "copied", res.Copied, "events_per_s", int(float64(res.Copied)/time.Since(start).Seconds()))
		}
	}
	el := time.Since(start)
	fmt.Fprintf(out, "copied %d events in %s (%.0f events/s); %d were there from an earlier copy\n",
		res.Copied, el.Round(time.Millisecond), float64(res.Copied)/max(el.Seconds(), 1e-9), res.Present)
	return res, nil
}

// copiedBefore compares the target with the start of the source, event by
// event, and answers the source's position after what the target already
// holds; a target that holds anything else is refused.
func copiedBefore(ctx context.Context, src eventstore.Store, dst *postgres.Store, res *CopyResult) (eventstore.Position, error) {
	var srcAt, dstAt eventstore.Position
	for {
		have, err := dst.ReadAll(ctx, dstAt, copyPage)
		if err != nil {
			return srcAt, fmt.Errorf("copy-log: reading the target: %w", err)
		}
		if len(have) == 0 {
			return srcAt, nil
		}
		want, err := src.ReadAll(ctx, srcAt, len(have))
		if err != nil {
			return srcAt, fmt.Errorf("copy-log: reading the log: %w", err)
		}
		for i, h := range have {
			if i >= len(want) {
				return srcAt, fmt.Errorf("copy-log: the target holds %d events more than this log: it is not a copy of it", len(have)-i)
			}
			w := want[i]
			if h.ID != w.ID || h.Stream != w.Stream || h.Version != w.Version || h.Type != w.Type {
				return srcAt, fmt.Errorf("copy-log: the target is not a copy of this log: its event %d is %s (%s %d), this log's %s (%s %d); "+
					"copy into an empty database", res.Present+1, h.ID, h.Stream, h.Version, w.ID, w.Stream, w.Version)
			}
			srcAt, dstAt = w.Position, h.Position
			res.Present++
			res.Head = h.Position
		}
	}
}

// nameLogKind makes the records of the read models built from the source
// name its kind of store, where they did not, so that a start on the copy
// (at other positions) is refused until a replay (ADR 0130):
//   - the data directory's, written before kinds were; an embedded log
//     lives in the data directory, whose read models are its: they are
//     recorded if nothing was;
//   - the ClickHouse database's, when LINKD_CLICKHOUSE_DSN names one that
//     has none (made before it had the table, ADR 0131).
func nameLogKind(ctx context.Context, src eventstore.Store, cfg Config, log *slog.Logger) error {
	var places []logPlace
	r, err := readLogRecord(cfg.DataDir)
	switch {
	case errors.Is(err, fs.ErrNotExist) && cfg.Embedded(), err == nil && r.kind == "":
		places = append(places, dataDirLog(cfg.DataDir))
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("data dir: %w", err)
	}
	if cfg.ClickHouseDSN != "" {
		db, err := ch.Open(ctx, cfg.ClickHouseDSN, ch.Options{Logger: log})
		if err != nil {
			return fmt.Errorf("copy-log: %w", err)
		}
		defer db.Close()
		places = append(places, clickHouseLog{db: db})
	}
	if len(places) == 0 {
		return nil
	}
	first, err := firstEventID(ctx, src)
	if err != nil {
		log.Warn("could not check that the read models are the event log's", "err", err)
		return nil
	}
	for _, p := range places {
		if err := checkPlace(ctx, logRecord{first: first, kind: logKind(cfg)}, p, log); err != nil {
			log.Warn("read models of another log", "err", err)
		}
	}
	return nil
}
