package webhooks

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/linkd/linkd/domain/webhook"
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
