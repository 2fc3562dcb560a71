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

// checkLog refuses a data directory whose read models were built from
// another event log than store's: LINKD_EVENTSTORE changed under it (the
// embedded store left for PostgreSQL, another database named), or the
// same log copied into another kind of store. Its projections would
// resume from positions of the other log, skipping this one's first
// events and serving the other's. The first start on a log with events
// records it. A log that cannot be read now is not checked (warned
// about): linkd starts as it did before the check.
func checkLog(ctx context.Context, store eventstore.Store, kind, dataDir string, log *slog.Logger) error {
	first, err := firstEventID(ctx, store)
	if err != nil {
		log.Warn("could not check that the read models are the event log's", "err", err)
		return nil
	}
	now := logRecord{first: first, kind: kind}
	recorded, err := readLogRecord(dataDir)
	if errors.Is(err, fs.ErrNotExist) {
		return saveLog(dataDir, now)
	}
	if err != nil {
		return fmt.Errorf("data dir: %w", err)
	}
	switch {
	case recorded == now:
		return nil
	case recorded.first == first && recorded.kind == "":
		// Recorded before the kind was: the read models were built here.
		return saveLog(dataDir, now)
	case recorded.first == first:
		return fmt.Errorf("the read models in %s were built from this event log as the %s store keeps it, at other positions "+
			"than the %s store's copy of it: rebuild them with linkd replay (docs/operations.md, \"Changing the event store\")",
			dataDir, recorded.kind, kind)
	}
	if first == "" {
		now.first = "none, it is empty"
	}
	return fmt.Errorf("the read models in %s were built from another event log than LINKD_EVENTSTORE's "+
		"(its first event %s, this log's %s): start linkd on an empty data directory, or rebuild them from this log "+
		"with linkd replay (docs/operations.md, \"Changing the event store\")", dataDir, recorded, now)
}

// recordLog records store's log as the one the read models in dataDir
// were built from (after a replay of all of them).
func recordLog(ctx context.Context, store eventstore.Store, kind, dataDir string) error {
	first, err := firstEventID(ctx, store)
	if err != nil {
		return err
	}
	return saveLog(dataDir, logRecord{first: first, kind: kind})
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
