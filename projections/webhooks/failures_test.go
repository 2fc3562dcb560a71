package webhooks

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/linkd/linkd/domain/webhook"
	"github.com/linkd/linkd/internal/storage/sqlitedb"
)

// Five days of nothing but failures turn a webhook off; a success in
// between starts the count again; a 410 turns it off at once.
func TestFailureWindowAndGone(t *testing.T) {
	s, err := Open(filepath.Join(t.TempDir(), "webhooks.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	if _, err := s.w.Exec(`INSERT INTO webhooks (id, workspace_id, url, events, link_ids, description, secret_enc, is_active,
		created_at, updated_at, created_commit, created_prepare, version) VALUES ('w1', 'ws', 'https://x.example', '[]', '[]', '', '', 1, 0, 0, 0, 0, 0)`); err != nil {
		t.Fatal(err)
	}
	d := s.NewDeliverer(DeliveryOptions{Schedule: []time.Duration{time.Hour}})
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	fail := func(at time.Time, status int) map[string]string {
		t.Helper()
		off, err := d.record(ctx, []result{{msg: message{id: "m-" + at.String()}, webhookID: "w1", status: status, at: at}})
		if err != nil {
			t.Fatal(err)
		}
		return off
	}
	if off := fail(t0, 500); len(off) != 0 {
		t.Fatalf("off after one failure: %v", off)
	}
	if off := fail(t0.Add(4*24*time.Hour), 500); len(off) != 0 {
		t.Fatalf("off after four days: %v", off)
	}
	// A success resets the window.
	if _, err := d.record(ctx, []result{{msg: message{id: "ok"}, webhookID: "w1", status: 200, at: t0.Add(4*24*time.Hour + time.Hour)}}); err != nil {
		t.Fatal(err)
	}
	if off := fail(t0.Add(6*24*time.Hour), 500); len(off) != 0 {
		t.Fatalf("off although a success came two days ago: %v", off)
	}
	if off := fail(t0.Add(11*24*time.Hour+2*time.Hour), 503); off["w1"] != webhook.ReasonFailures {
		t.Fatalf("five days of failures: %v", off)
	}
	if off := fail(t0.Add(12*24*time.Hour), 410); off["w1"] != webhook.ReasonGone {
		t.Fatalf("410: %v", off)
	}
	if d.Delivered.Load() != 1 || d.Failed.Load() != 5 {
		t.Errorf("counters %d delivered, %d failed", d.Delivered.Load(), d.Failed.Load())
	}
}

// A replay that queues a message again while an attempt of it is in
// flight starts a new round: the attempt's result, recorded after, does
// not end the replayed message, which is delivered again.
func TestReplayDuringAnAttemptIsNotEndedByIt(t *testing.T) {
	s, err := Open(filepath.Join(t.TempDir(), "webhooks.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	queue := func(replay bool) {
		t.Helper()
		tx, err := s.w.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback()
		if err := s.enqueue(sqlitedb.NewBatch(ctx, tx), "w1", "e1", "link.created", []byte(`{}`), t0, replay); err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	queue(false)
	msgs, _, err := s.due(ctx, "w1", t0, 10, 0, "")
	if err != nil || len(msgs) != 1 {
		t.Fatalf("due: %v %v", msgs, err)
	}
	queue(true) // the replay, while msgs[0] is being sent
	d := s.NewDeliverer(DeliveryOptions{Schedule: []time.Duration{time.Hour}})
	if _, err := d.record(ctx, []result{{msg: msgs[0], webhookID: "w1", status: 200, at: t0}}); err != nil {
		t.Fatal(err)
	}
	again, _, err := s.due(ctx, "w1", t0, 10, 0, "")
	if err != nil || len(again) != 1 || again[0].attempts != 0 {
		t.Fatalf("after the first round's success, the replayed message: %v %v", again, err)
	}
	if _, err := d.record(ctx, []result{{msg: again[0], webhookID: "w1", status: 200, at: t0}}); err != nil {
		t.Fatal(err)
	}
	if rest, _, err := s.due(ctx, "w1", t0, 10, 0, ""); err != nil || len(rest) != 0 {
		t.Fatalf("after the replay's success: %v %v", rest, err)
	}
	var attempts int
	if err := s.r.QueryRow(`SELECT COUNT(*) FROM attempts WHERE message_id = ?`, MessageID("e1", "w1")).Scan(&attempts); err != nil || attempts != 2 {
		t.Errorf("attempts logged %d (%v), want 2", attempts, err)
	}
}
