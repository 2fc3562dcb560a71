package app

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/linkd/linkd/eventstore"
	"github.com/linkd/linkd/internal/testsupport/chtest"
	ch "github.com/linkd/linkd/projections/clickhouse"
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
	if err := checkLogs(context.Background(), unreadable{}, "embedded", []logPlace{dataDirLog(dir)}, slog.New(slog.NewTextHandler(&logs, nil))); err != nil {
		t.Fatalf("checkLogs on an unreadable log: %v", err)
	}
	if !strings.Contains(logs.String(), "level=WARN") || !strings.Contains(logs.String(), "connection refused") {
		t.Errorf("nothing said of the check not made:\n%s", logs.String())
	}
}

// oneEvent is a log whose first event is first.
type oneEvent struct {
	eventstore.Store
	first uuid.UUID
}

func (s oneEvent) ReadAll(context.Context, eventstore.Position, int) ([]eventstore.RecordedEvent, error) {
	return []eventstore.RecordedEvent{{ID: s.first, Stream: "link-1", Position: eventstore.Position{Commit: 1, Prepare: 1}}}, nil
}

// The record names the kind of store (ADR 0130): one written before it
// did is completed by the next start on the same log; the same log in
// another kind of store (a copy, at other positions) is refused.
func TestLogRecordNamesTheKindOfStore(t *testing.T) {
	dir := t.TempDir()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	store := oneEvent{first: uuid.New()}
	if err := os.WriteFile(filepath.Join(dir, logFile), []byte(store.first.String()+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := checkLogs(context.Background(), store, "embedded", []logPlace{dataDirLog(dir)}, log); err != nil {
		t.Fatal(err)
	}
	if r, err := readLogRecord(dir); err != nil || r != (logRecord{first: store.first.String(), kind: "embedded"}) {
		t.Fatalf("record %+v %v, want the kind added", r, err)
	}
	err := checkLogs(context.Background(), store, "postgres", []logPlace{dataDirLog(dir)}, log)
	if err == nil || !strings.Contains(err.Error(), "other positions") || !strings.Contains(err.Error(), "linkd replay") {
		t.Fatalf("read models of the embedded log on its copy in PostgreSQL: %v", err)
	}
	if err := checkLogs(context.Background(), store, "embedded", []logPlace{dataDirLog(dir)}, log); err != nil {
		t.Fatalf("the same log, the same kind: %v", err)
	}
}

// ClickHouse of another log is refused when linkd feeds it in process
// (its projections would resume at the other log's positions), and only
// reported when Kafka does (they apply this log's events all the same).
func TestClickHouseOfAnotherLogWithKafkaIsReported(t *testing.T) {
	ctx := context.Background()
	db, err := ch.Open(ctx, chtest.DSN(t), ch.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.SetEventLog(ctx, uuid.NewString(), "postgres"); err != nil {
		t.Fatal(err)
	}
	store := oneEvent{first: uuid.New()}
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	if err := checkLogs(ctx, store, "postgres", []logPlace{clickHouseLog{db: db}}, log); err == nil || !strings.Contains(err.Error(), "another event log") {
		t.Fatalf("in process: %v", err)
	}
	if err := checkLogs(ctx, store, "postgres", []logPlace{clickHouseLog{db: db, viaKafka: true}}, log); err != nil {
		t.Fatalf("with Kafka: %v", err)
	}
	if !strings.Contains(logs.String(), "level=ERROR") || !strings.Contains(logs.String(), "another event log") {
		t.Errorf("nothing said with Kafka:\n%s", logs.String())
	}
}
