package webhooks

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/linkd/linkd/domain/webhook"
	"github.com/linkd/linkd/eventstore/postgres"
	"github.com/linkd/linkd/internal/testsupport/pgtest"
	"github.com/linkd/linkd/queries"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// opener opens a Store: one instance of a deployment. With PostgreSQL,
// every Store an opener opens shares the queue.
type opener func(t *testing.T) *Store

// eachQueue runs a test on both queues: the instance's own SQLite and
// PostgreSQL (where pgtest finds a server).
func eachQueue(t *testing.T, run func(t *testing.T, open opener)) {
	t.Run("sqlite", func(t *testing.T) {
		run(t, func(t *testing.T) *Store { return openStore(t, Options{}) })
	})
	t.Run("postgres", func(t *testing.T) { run(t, onPostgres(t)) })
}

// onPostgres is an opener of Stores sharing one new PostgreSQL database.
func onPostgres(t *testing.T) opener {
	dsn := pgtest.DSN(t)
	if err := postgres.Migrate(t.Context(), dsn); err != nil {
		t.Fatal(err)
	}
	return func(t *testing.T) *Store { return openStore(t, Options{Postgres: dsn}) }
}

func openStore(t *testing.T, o Options) *Store {
	t.Helper()
	s, err := Open(filepath.Join(t.TempDir(), "webhooks.db"), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// addHook puts webhook id, sending to url, in s's read model.
func addHook(t *testing.T, s *Store, id, url string) {
	t.Helper()
	if _, err := s.w.Exec(`INSERT INTO webhooks (id, workspace_id, url, events, link_ids, description, secret_enc, is_active,
		created_at, updated_at, created_commit, created_prepare, version) VALUES (?, 'ws', ?, '["link.created"]', '[]', '', 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', 1, 0, 0, 0, 0, 0)`, id, url); err != nil {
		t.Fatal(err)
	}
	if err := s.loadHooks(t.Context()); err != nil {
		t.Fatal(err)
	}
}

// put queues messages of events for a webhook, as the projection does
// (replay: as a replay does).
func put(t *testing.T, s *Store, webhookID string, at time.Time, replay bool, eventIDs ...string) {
	t.Helper()
	c := &changes{replay: replay, now: at.UnixMilli()}
	for _, e := range eventIDs {
		c.msgs = append(c.msgs, queued{webhookID: webhookID, eventID: e, eventType: webhook.TypeLinkCreated, body: []byte(`{"e":"` + e + `"}`), eventTime: at})
	}
	if err := s.q.write(t.Context(), nil, c); err != nil {
		t.Fatal(err)
	}
}

// deliveries is every line of a webhook's deliveries log.
func deliveries(t *testing.T, s *Store, webhookID string) []queries.WebhookDelivery {
	t.Helper()
	res, err := s.WebhookDeliveries(t.Context(), webhookID, queries.Page{PageSize: 100000})
	if err != nil {
		t.Fatal(err)
	}
	return res.Items
}

// Five days of nothing but failures turn a webhook off; a success in
// between starts the count again; a 410 turns it off at once.
func TestFailureWindowAndGone(t *testing.T) {
	eachQueue(t, func(t *testing.T, open opener) {
		s := open(t)
		ctx := context.Background()
		addHook(t, s, "w1", "https://x.example")
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
		if n := len(deliveries(t, s, "w1")); n != 6 {
			t.Errorf("%d attempts logged, want 6", n)
		}
	})
}

// A replay that queues a message again while an attempt of it is in
// flight starts a new round: the attempt's result, recorded after, does
// not end the replayed message, which is delivered again.
func TestReplayDuringAnAttemptIsNotEndedByIt(t *testing.T) {
	eachQueue(t, func(t *testing.T, open opener) {
		s := open(t)
		ctx := context.Background()
		t0 := time.Now()
		put(t, s, "w1", t0, false, "e1")
		msgs, _, err := s.q.take(ctx, "w1", t0, 10, 0)
		if err != nil || len(msgs) != 1 {
			t.Fatalf("take: %v %v", msgs, err)
		}
		put(t, s, "w1", t0, true, "e1") // the replay, while msgs[0] is being sent
		d := s.NewDeliverer(DeliveryOptions{Schedule: []time.Duration{time.Hour}})
		if _, err := d.record(ctx, []result{{msg: msgs[0], webhookID: "w1", status: 200, at: t0}}); err != nil {
			t.Fatal(err)
		}
		again, _, err := s.q.take(ctx, "w1", t0, 10, 0)
		if err != nil || len(again) != 1 || again[0].attempts != 0 || again[0].round != msgs[0].round+1 {
			t.Fatalf("after the first round's success, the replayed message: %v %v", again, err)
		}
		if _, err := d.record(ctx, []result{{msg: again[0], webhookID: "w1", status: 200, at: t0}}); err != nil {
			t.Fatal(err)
		}
		if rest, _, err := s.q.take(ctx, "w1", t0, 10, 0); err != nil || len(rest) != 0 {
			t.Fatalf("after the replay's success: %v %v", rest, err)
		}
		n := 0
		for _, l := range deliveries(t, s, "w1") {
			if l.MessageID == MessageID("e1", "w1") && l.Status == "succeeded" {
				n++
			}
		}
		if n != 2 {
			t.Errorf("attempts logged %d, want 2", n)
		}
	})
}

// A failed attempt leaves its message pending until its next attempt;
// the log shows the attempt and the pending one, in either queue alike.
func TestRetryIsPendingInTheLog(t *testing.T) {
	eachQueue(t, func(t *testing.T, open opener) {
		s := open(t)
		ctx := context.Background()
		t0 := time.Now()
		put(t, s, "w1", t0, false, "e1", "e2")
		msgs, _, err := s.q.take(ctx, "w1", t0, 10, 0)
		if err != nil || len(msgs) != 2 || msgs[0].id > msgs[1].id && msgs[0].next == msgs[1].next {
			t.Fatalf("take: %v %v", msgs, err)
		}
		d := s.NewDeliverer(DeliveryOptions{Schedule: []time.Duration{time.Hour}})
		if _, err := d.record(ctx, []result{{msg: msgs[0], webhookID: "w1", status: 500, body: "no\x00\xff", at: t0}, {msg: msgs[1], webhookID: "w1", abandon: true}}); err != nil {
			t.Fatal(err)
		}
		if rest, wait, err := s.q.take(ctx, "w1", t0.Add(time.Minute), 10, 0); err != nil || len(rest) != 0 || wait < 50*time.Minute {
			t.Fatalf("before the retry: %v, next in %v, %v", rest, wait, err)
		}
		log := deliveries(t, s, "w1")
		if len(log) != 2 || log[0].Status != "pending" || log[0].Attempt != 2 || log[1].Status != "failed" || *log[1].ResponseStatus != 500 ||
			log[1].NextAttemptAt == nil || log[0].MessageID != msgs[0].id {
			t.Fatalf("log: %+v", log)
		}
		retry, _, err := s.q.take(ctx, "w1", t0.Add(2*time.Hour), 10, 0)
		if err != nil || len(retry) != 1 || retry[0].attempts != 1 || string(retry[0].body) == "" {
			t.Fatalf("the retry: %v %v", retry, err)
		}
	})
}

// A replay of a message whose attempt is in flight sends it again, soon:
// the new round is not left waiting behind the old one (in PostgreSQL its
// claim would hold it until the claim ended).
func TestReplayOfAMessageInFlightIsSent(t *testing.T) {
	eachQueue(t, func(t *testing.T, open opener) {
		s := open(t)
		rc := newHookReceiver(t)
		gate, first := make(chan struct{}), make(chan struct{})
		var once sync.Once
		rc.mu.Lock()
		rc.hold = func() {
			isFirst := false
			once.Do(func() { isFirst = true; close(first) })
			if isFirst {
				<-gate
			}
		}
		rc.mu.Unlock()
		addHook(t, s, "w1", rc.URL+"/hook")
		put(t, s, "w1", time.Now(), false, "e1")
		deliver(t, s, DeliveryOptions{Concurrency: 2})
		select {
		case <-first:
		case <-time.After(10 * time.Second):
			t.Fatal("no first attempt")
		}
		put(t, s, "w1", time.Now(), true, "e1") // the replay, while the first attempt waits
		time.Sleep(1500 * time.Millisecond)     // the runner reads the queue meanwhile
		close(gate)
		deadline := time.Now().Add(5 * time.Second)
		for {
			rc.mu.Lock()
			n := rc.ok[MessageID("e1", "w1")]
			rc.mu.Unlock()
			if n == 2 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d deliveries of a message replayed while in flight, want 2 within 5 s", n)
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
}
