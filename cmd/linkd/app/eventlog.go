package app

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/linkd/linkd/eventstore"
	"github.com/linkd/linkd/internal/storage/fsdir"
	ch "github.com/linkd/linkd/projections/clickhouse"
	chstats "github.com/linkd/linkd/projections/clickhouse/stats"
)

// logFile, in the data directory, names the event log its read models
// were built from: the id of the log's first event (ADR 0129).
const logFile = "eventlog.id"

// firstEventID is the id of the log's first event, "" when it is empty.
func firstEventID(ctx context.Context, store eventstore.Store) (string, error) {
	evs, err := store.ReadAll(ctx, eventstore.Start, 1)
	if err != nil {
		return "", fmt.Errorf("event store: reading its first event: %w", err)
	}
	if len(evs) == 0 {
		return "", nil
	}
	return evs[0].ID.String(), nil
}

// logRecord is what logFile holds: the log's first event and the kind of
// store that keeps it ("embedded", "postgres", "esdb"). A copy of a log
// (linkd copy-log) has the same events at other positions: the read
// models' checkpoints are positions, so they are the copy's only when
// the kind is the same (ADR 0130).
type logRecord struct{ first, kind string }

func (r logRecord) String() string {
	if r.kind == "" {
		return r.first
	}
	return r.first + " (" + r.kind + ")"
}

// logPlace is where read models record the log they were built from:
// the data directory (its own read models, ADR 0129) or the ClickHouse
// database (the deployment's statistics and Radar, ADR 0131).
type logPlace interface {
	// load returns the record; ok false when there is none.
	load(ctx context.Context) (r logRecord, ok bool, err error)
	// save records r; a record of an empty log (r.first "") is none.
	save(ctx context.Context, r logRecord) error
	// what names the read models; remedy says how to rebuild them.
	what() string
	remedy() string
}

// dataDirLog is the data directory's record, the file logFile.
type dataDirLog string

func (d dataDirLog) load(context.Context) (logRecord, bool, error) {
	r, err := readLogRecord(string(d))
	if errors.Is(err, fs.ErrNotExist) {
		return r, false, nil
	}
	if err != nil {
		return r, false, fmt.Errorf("data dir: %w", err)
	}
	return r, true, nil
}

func (d dataDirLog) save(_ context.Context, r logRecord) error { return saveLog(string(d), r) }
func (d dataDirLog) what() string                              { return "the read models in " + string(d) }
func (d dataDirLog) remedy() string {
	return "start linkd on an empty data directory, or rebuild them from this log with linkd replay"
}

func readLogRecord(dataDir string) (logRecord, error) {
	b, err := os.ReadFile(filepath.Join(dataDir, logFile))
	if err != nil {
		return logRecord{}, err
	}
	first, kind, _ := strings.Cut(strings.TrimSpace(string(b)), " ")
	return logRecord{first: first, kind: kind}, nil
}

// logKind names the kind of store cfg's log is kept in.
func logKind(cfg Config) string {
	switch k := strings.ToLower(storeKind(cfg)); k {
	case "postgresql":
		return "postgres"
	case "kurrentdb", "esdb+discover", "kurrentdb+discover":
		return "esdb"
	default:
		return k
	}
}

// checkPlace is checkLogs' finding for one place, now being the store's
// log.
func checkPlace(ctx context.Context, now logRecord, place logPlace, log *slog.Logger) error {
	first, kind := now.first, now.kind
	recorded, ok, err := place.load(ctx)
	switch {
	case err != nil:
		log.Warn("could not check that the read models are the event log's", "err", err)
		return nil
	case !ok, recorded == now:
		if ok || first == "" {
			return nil
		}
		return place.save(ctx, now)
	case recorded.first == first && recorded.kind == "":
		// Recorded before the kind was: the read models were built here.
		return place.save(ctx, now)
	case recorded.first == first:
		return fmt.Errorf("%s were built from this event log as the %s store keeps it, at other positions "+
			"than the %s store's copy of it: rebuild them with %s (docs/operations.md, \"Changing the event store\")",
			place.what(), recorded.kind, kind, replayOf(place))
	}
	if first == "" {
		now.first = "none, it is empty"
	}
	return fmt.Errorf("%s were built from another event log than LINKD_EVENTSTORE's "+
		"(its first event %s, this log's %s): %s (docs/operations.md, \"Changing the event store\")",
		place.what(), recorded, now, place.remedy())
}

// replayOf is the replay that rebuilds the read models of place.
func replayOf(place logPlace) string {
	if _, ok := place.(dataDirLog); ok {
		return "linkd replay"
	}
	return "linkd replay --projection clickhouse --projection clickhouse_radar"
}

// recordLog records store's log as the one the read models of places
// were built from (after a replay of all of them).
func recordLog(ctx context.Context, store eventstore.Store, kind string, places []logPlace) error {
	first, err := firstEventID(ctx, store)
	if err != nil {
		return err
	}
	for _, p := range places {
		if err := p.save(ctx, logRecord{first: first, kind: kind}); err != nil {
			return err
		}
	}
	return nil
}

// saveLog records r as the read models' log; an empty log leaves no
// record.
func saveLog(dataDir string, r logRecord) error {
	path := filepath.Join(dataDir, logFile)
	var err error
	if r.first == "" {
		if err = os.Remove(path); errors.Is(err, fs.ErrNotExist) {
			err = nil
		}
	} else {
		err = fsdir.WriteFile(path, []byte(r.first+" "+r.kind+"\n"), 0o600)
	}
	if err != nil {
		return fmt.Errorf("data dir: %w", err)
	}
	return nil
}

// clickHouseLog is the ClickHouse database's record (table event_log),
// shared by the instances of a deployment. viaKafka: its projections are
// fed from Kafka's consumer groups, not from their checkpoints.
type clickHouseLog struct {
	db       *ch.DB
	viaKafka bool
}

// A record of an empty log (after a replay from one) is a row without a
// first event: none.
func (c clickHouseLog) load(ctx context.Context) (logRecord, bool, error) {
	first, kind, ok, err := c.db.EventLog(ctx)
	return logRecord{first: first, kind: kind}, ok && first != "", err
}

func (c clickHouseLog) save(ctx context.Context, r logRecord) error {
	return c.db.SetEventLog(ctx, r.first, r.kind)
}

func (c clickHouseLog) what() string {
	return "the statistics and Radar in the ClickHouse database " + c.db.Name()
}
func (c clickHouseLog) remedy() string {
	return "name another database in LINKD_CLICKHOUSE_DSN, or rebuild them from this log with " + replayOf(c)
}

// logPlaces are the places whose read models cfg's instance checks against
// the log: its data directory, and the ClickHouse database when stats is
// there.
func logPlaces(cfg Config, stats statsProjection) []logPlace {
	places := []logPlace{dataDirLog(cfg.DataDir)}
	if p, ok := stats.(*chstats.Projection); ok {
		places = append(places, clickHouseLog{db: p.DB(), viaKafka: cfg.KafkaBrokers != ""})
	}
	return places
}

// checkLogs refuses read models built from another event log than
// store's: LINKD_EVENTSTORE changed under them (the embedded store left
// for PostgreSQL, another database named), or the same log copied into
// another kind of store. Their projections would resume from positions
// of the other log, skipping this one's first events and serving the
// other's. The first start on a log with events records it. A log (or a
// place) that cannot be read now is not checked (warned about): linkd
// starts as it did before the check. The log's first event is read once
// for every place.
// ClickHouse fed from Kafka is not refused, only reported: its
// projections resume at the consumer groups' offsets and skip what they
// applied by stream version, so this log's events are applied all the
// same; the other log's rows stay.
func checkLogs(ctx context.Context, store eventstore.Store, kind string, places []logPlace, log *slog.Logger) error {
	first, err := firstEventID(ctx, store)
	if err != nil {
		log.Warn("could not check that the read models are the event log's", "err", err)
		return nil
	}
	for _, p := range places {
		err := checkPlace(ctx, logRecord{first: first, kind: kind}, p, log)
		if c, ok := p.(clickHouseLog); ok && c.viaKafka && err != nil {
			log.Error("ClickHouse, fed from Kafka, is not confirmed to be this event log's; starting all the same", "err", err)
			continue
		}
		if err != nil {
			return err
		}
	}
	return nil
}
