package app

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/linkd/linkd/eventstore"
)

// unreadable is an event store whose log cannot be read (down).
type unreadable struct{ eventstore.Store }

func (unreadable) ReadAll(context.Context, eventstore.Position, int) ([]eventstore.RecordedEvent, error) {
	return nil, errors.New("connection refused")
}

// A log that cannot be read at start is not checked: linkd starts, as
// before the check, and says so.
func TestLogUnreadableAtStartIsNotChecked(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, logFile), []byte("01a22bfd-f1db-798d-9dd6-13554c2735a6\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	if err := checkLog(context.Background(), unreadable{}, dir, slog.New(slog.NewTextHandler(&logs, nil))); err != nil {
		t.Fatalf("checkLog on an unreadable log: %v", err)
	}
	if !strings.Contains(logs.String(), "level=WARN") || !strings.Contains(logs.String(), "connection refused") {
		t.Errorf("nothing said of the check not made:\n%s", logs.String())
	}
}
