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

// checkLog refuses a data directory whose read models were built from
// another event log than store's: LINKD_EVENTSTORE changed under it (the
// embedded store left for PostgreSQL, another database named). Its
// projections would resume from positions of the other log, skipping this
// one's first events and serving the other's. The first start on a log
// with events records it. A log that cannot be read now is not checked
// (warned about): linkd starts as it did before the check.
func checkLog(ctx context.Context, store eventstore.Store, dataDir string, log *slog.Logger) error {
	first, err := firstEventID(ctx, store)
	if err != nil {
		log.Warn("could not check that the read models are the event log's", "err", err)
		return nil
	}
	path := filepath.Join(dataDir, logFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		if first == "" {
			return nil
		}
		return saveLogID(dataDir, first)
	}
	if err != nil {
		return fmt.Errorf("data dir: %w", err)
	}
	recorded := strings.TrimSpace(string(b))
	if recorded == first {
		return nil
	}
	if first == "" {
		first = "none, it is empty"
	}
	return fmt.Errorf("the read models in %s were built from another event log than LINKD_EVENTSTORE's "+
		"(its first event %s, this log's %s): start linkd on an empty data directory, or rebuild them from this log "+
		"with linkd replay (docs/operations.md, \"Changing the event store\")", dataDir, recorded, first)
}

// recordLog records store's log as the one the read models in dataDir
// were built from (after a replay of all of them).
func recordLog(ctx context.Context, store eventstore.Store, dataDir string) error {
	first, err := firstEventID(ctx, store)
	if err != nil {
		return err
	}
	return saveLogID(dataDir, first)
}

// saveLogID records first as the first event of the read models' log; an
// empty log leaves no record.
func saveLogID(dataDir, first string) error {
	path := filepath.Join(dataDir, logFile)
	var err error
	if first == "" {
		if err = os.Remove(path); errors.Is(err, fs.ErrNotExist) {
			err = nil
		}
	} else {
		err = fsdir.WriteFile(path, []byte(first+"\n"), 0o600)
	}
	if err != nil {
		return fmt.Errorf("data dir: %w", err)
	}
	return nil
}
