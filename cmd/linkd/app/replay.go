package app

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/linkd/linkd/api"
	"github.com/linkd/linkd/eventstore"
	"github.com/linkd/linkd/internal/clock"
	"github.com/linkd/linkd/kafka"
	"github.com/linkd/linkd/projections"
	"github.com/linkd/linkd/projections/core"
)

// ReplayProgress receives a replay's progress.
type ReplayProgress func(name string, reached, head eventstore.Position, events uint64)

// Replay rebuilds the named projections (all when names is empty) from the
// event store. linkd serve must not be running on the same data directory:
// the embedded store is locked by the process that holds it.
func Replay(ctx context.Context, cfg Config, log *slog.Logger, names []string, progress ReplayProgress, out io.Writer) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	store, err := OpenStore(ctx, cfg, log)
	if err != nil {
		return fmt.Errorf("event store (is linkd serve running on this data directory?): %w", err)
	}
	defer store.Close()
	cs, err := core.Open(filepath.Join(cfg.DataDir, "readmodel.db"))
	if err != nil {
		return err
	}
	defer cs.Close()
	stats, err := openStats(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer closeOf(stats)()
	clicks, err := openClickIndex(cfg, clock.System{}, log)
	if err != nil {
		return err
	}
	defer clicks.Close()
	rs, err := openRadar(cfg)
	if err != nil {
		return err
	}
	defer rs.Close()
	// The webhooks are rebuilt from the events the projection had made
	// messages of; a replay sends nothing and renders no link (ReplayBound).
	noAPI := func() *api.Server { return nil }
	hooks, err := openWebhooks(cfg, store, nil, &noAPI, nil, log)
	if err != nil {
		return err
	}
	defer hooks.Close()
	all := map[string]projections.Projector{cs.Name(): cs, stats.Name(): stats, clicks.Name(): clicks, rs.Name(): rs, hooks.Name(): hooks}
	chRadar, err := openClickHouseRadar(ctx, stats)
	if err != nil {
		return err
	}
	if chRadar != nil {
		all[chRadar.Name()] = chRadar
	}
	writeVersionsBehind(stats, clicks) // a replay applies in log order
	everything := len(names) == 0
	if everything {
		for n := range all {
			names = append(names, n)
		}
		sort.Strings(names)
	}
	for _, n := range names {
		if _, ok := all[n]; !ok {
			known := make([]string, 0, len(all))
			for k := range all {
				known = append(known, k)
			}
			sort.Strings(known)
			return fmt.Errorf("unknown projection %q (known: %s)", n, strings.Join(known, ", "))
		}
	}
	release, err := holdSharedLease(ctx, cfg, store, names, all)
	if err != nil {
		return err
	}
	defer release()
	for _, n := range names {
		p := all[n]
		start := time.Now()
		applied, err := projections.Replay(ctx, store, p, projections.ReplayOptions{
			Progress: func(reached, head eventstore.Position, events uint64) {
				if progress != nil {
					progress(n, reached, head, events)
				}
			},
		})
		if err != nil {
			return err
		}
		el := time.Since(start)
		fmt.Fprintf(out, "replayed %s: %d events in %s (%.0f events/s)\n", n, applied, el.Round(time.Millisecond), float64(applied)/max(el.Seconds(), 1e-9))
	}
	// The read models of a place are this log's once every one was
	// replayed: the data directory's after all projections, ClickHouse's
	// after both of its own.
	places := logPlaces(cfg, stats)
	if !everything {
		places = places[1:]
		if !slices.Contains(names, "clickhouse") || !slices.Contains(names, "clickhouse_radar") {
			places = nil
		}
	}
	if len(places) == 0 {
		return nil
	}
	return recordLog(ctx, store, logKind(cfg), places)
}

// sharedLeaseWait is how long a replay waits for the shared lease.
var sharedLeaseWait = 5 * time.Second

// holdSharedLease takes, for a replay of read models that the instances of a
// deployment share (ClickHouse fed through Kafka), the lease under which one
// instance at a time writes them (ADR 0125), so that no instance writes
// them while they are rebuilt. It fails when an instance holds it: that one
// is running, and must be stopped first. The returned function gives it
// back.
func holdSharedLease(ctx context.Context, cfg Config, store eventstore.Store, names []string, all map[string]projections.Projector) (func(), error) {
	l, ok := store.(eventstore.Leaser)
	if cfg.KafkaBrokers == "" || !ok {
		return func() {}, nil
	}
	var which []string
	for _, n := range names {
		if _, shared := all[n].(projections.Reloader); shared {
			which = append(which, n)
		}
	}
	if len(which) == 0 {
		return func() {}, nil
	}
	wctx, cancel := context.WithTimeout(ctx, sharedLeaseWait)
	defer cancel()
	_, release, err := l.AcquireLease(wctx, kafka.SharedLease)
	if err != nil {
		if ctx.Err() == nil {
			return nil, fmt.Errorf("replay of %s: an instance of the deployment writes them (it holds the lease %q): stop every linkd serve on this store first", strings.Join(which, ", "), kafka.SharedLease)
		}
		return nil, err
	}
	return release, nil
}
