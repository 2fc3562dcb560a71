package webhooks

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/linkd/linkd/queries"
)

// Messages delivered at their first attempt never touch the messages
// table: the projection hands them over in memory, only their attempts
// are written, and the checkpoint reaches the last event once they are.
func TestHandOffDeliversWithoutRows(t *testing.T) {
	rc := newHookReceiver(t)
	l := newHookLog(t, rc.URL+"/hook")
	d, _ := deliver(t, l.s, DeliveryOptions{})
	l.apply(t)
	l.add(t, 100)
	l.apply(t)
	rc.waitDelivered(t, 100, 10*time.Second)
	waitFor(t, "the checkpoint at the last event", func() bool { return l.checkpoint(t) == l.applied })
	if n, twice := rc.delivered(); n != 100 || twice != 0 {
		t.Errorf("%d delivered, %d twice", n, twice)
	}
	if rows, atts := l.count(t, `SELECT count(*) FROM messages`), l.count(t, `SELECT count(*) FROM attempts WHERE status = 'succeeded'`); rows != 0 || atts != 100 {
		t.Errorf("%d message rows, %d attempts; want 0 and 100", rows, atts)
	}
	if d.Pending() != 0 && d.Lag() > time.Minute {
		t.Errorf("pending %d, lag %v", d.Pending(), d.Lag())
	}
}

// A crash loses nothing in memory and sends nothing twice: the stored
// checkpoint stayed before the oldest message neither delivered nor
// written, the projection applies the events after it again, and of their
// messages only those never attempted are made again (in the table).
func TestHandOffCrashMakesOnlyUnattemptedAgain(t *testing.T) {
	rc := newHookReceiver(t)
	l := newHookLog(t, rc.URL+"/hook")
	l.handOff(t, 10)
	if n, _ := l.s.hot.stats(); n != 10 || l.count(t, `SELECT count(*) FROM messages`) != 0 {
		t.Fatalf("%d messages in memory, %d rows", n, l.count(t, `SELECT count(*) FROM messages`))
	}
	if cp := l.checkpoint(t); !cp.Less(l.applied) {
		t.Fatalf("checkpoint %v stored past the messages only in memory (last %v)", cp, l.applied)
	}
	taken := l.s.hot.take("wh1", 4)
	d := l.s.NewDeliverer(DeliveryOptions{Schedule: []time.Duration{10 * time.Millisecond}})
	now := time.Now()
	res := []result{{msg: taken[0], webhookID: "wh1", status: 200, at: now}, {msg: taken[1], webhookID: "wh1", status: 200, at: now},
		{msg: taken[2], webhookID: "wh1", status: 200, at: now}, {msg: taken[3], webhookID: "wh1", status: 500, at: now}}
	if _, err := d.record(t.Context(), res); err != nil {
		t.Fatal(err)
	}
	cp := l.checkpoint(t)
	if !cp.Less(l.applied) {
		t.Fatalf("checkpoint %v is not before the messages in memory (last %v)", cp, l.applied)
	}
	// The crash: nothing of memory is written.
	l.s.Close()
	l.open(t)
	if l.applied != cp {
		t.Fatalf("reopened at %v, want %v", l.applied, cp)
	}
	l.apply(t)
	if rows := l.count(t, `SELECT count(*) FROM messages`); rows != 7 {
		t.Fatalf("%d message rows after the crash, want 7 (6 never attempted, 1 to retry)", rows)
	}
	deliver(t, l.s, DeliveryOptions{})
	rc.waitDelivered(t, 7, 10*time.Second)
	waitFor(t, "the checkpoint at the last event", func() bool { return l.checkpoint(t) == l.applied })
	rc.mu.Lock()
	defer rc.mu.Unlock()
	for _, m := range taken[:3] {
		if rc.tries[m.id] != 0 {
			t.Errorf("%s, delivered before the crash, sent again", m.id)
		}
	}
	if rc.ok[taken[3].id] != 1 {
		t.Errorf("the message that failed before the crash: %d deliveries", rc.ok[taken[3].id])
	}
}

// A message that waits a second in memory (its receiver is slow) is
// written to the table, and the checkpoint moves past its event.
func TestHandOffSpillsWhatWaits(t *testing.T) {
	l := newHookLog(t, "http://127.0.0.1:1/hook")
	l.handOff(t, 5)
	if err := l.s.spill(t.Context(), time.Now().Add(-time.Hour).UnixMilli(), false); err != nil {
		t.Fatal(err)
	}
	if rows := l.count(t, `SELECT count(*) FROM messages`); rows != 0 {
		t.Fatalf("%d messages younger than the cutoff written", rows)
	}
	if err := l.s.spill(t.Context(), time.Now().Add(time.Second).UnixMilli(), false); err != nil {
		t.Fatal(err)
	}
	if rows := l.count(t, `SELECT count(*) FROM messages WHERE status = 'pending'`); rows != 5 {
		t.Fatalf("%d pending rows, want 5", rows)
	}
	if n, _ := l.s.hot.stats(); n != 0 || l.checkpoint(t) != l.applied {
		t.Errorf("%d in memory, checkpoint %v, want %v", n, l.checkpoint(t), l.applied)
	}
}

// A deliverer that stops writes what it held in memory, also the messages
// being sent: the next start sends them.
func TestHandOffStopWritesWhatItHeld(t *testing.T) {
	rc := newHookReceiver(t)
	gate := make(chan struct{})
	var once sync.Once
	defer once.Do(func() { close(gate) })
	var arrived atomic.Int32
	rc.mu.Lock()
	rc.hold = func() { arrived.Add(1); <-gate }
	rc.mu.Unlock()
	l := newHookLog(t, rc.URL+"/hook")
	d, stop := deliver(t, l.s, DeliveryOptions{Concurrency: 2})
	l.apply(t)
	l.add(t, 6)
	l.apply(t)
	waitFor(t, "two attempts under way", func() bool { return arrived.Load() == 2 })
	waitFor(t, "the six counted pending", func() bool { return d.Pending() == 6 && d.Lag() < time.Minute })
	stop()
	once.Do(func() { close(gate) })
	if rows := l.count(t, `SELECT count(*) FROM messages WHERE status = 'pending'`); rows != 6 {
		t.Fatalf("%d pending rows after the stop, want 6", rows)
	}
	if cp := l.checkpoint(t); cp != l.applied {
		t.Errorf("checkpoint %v after the stop, want %v", cp, l.applied)
	}
}

// The deliveries log shows a message in memory as pending, before its
// first attempt.
func TestHandOffPendingInTheLog(t *testing.T) {
	l := newHookLog(t, "http://127.0.0.1:1/hook")
	l.handOff(t, 2)
	log := deliveries(t, l.s, "wh1")
	if len(log) != 2 || log[0].Status != "pending" || log[0].Attempt != 1 || log[0].NextAttemptAt == nil {
		t.Fatalf("log: %+v", log)
	}
	res, err := l.s.WebhookDeliveries(t.Context(), "wh1", queries.Page{Page: 2, PageSize: 1})
	if err != nil || len(res.Items) != 1 || res.Items[0].ID != log[1].ID {
		t.Fatalf("second page: %+v %v", res.Items, err)
	}
}

// The hand-off holds at most its capacity: beyond it messages are written
// to the table, so a receiver that is down grows the table, not the heap
// (and its first failures write the ones held).
func TestHandOffIsBounded(t *testing.T) {
	l := newHookLog(t, "http://127.0.0.1:1/hook")
	l.s.hot.capacity = 3
	l.handOff(t, 5)
	if n, _ := l.s.hot.stats(); n != 3 || l.count(t, `SELECT count(*) FROM messages WHERE status = 'pending'`) != 2 {
		t.Fatalf("%d in memory, %d rows; want 3 and 2", n, l.count(t, `SELECT count(*) FROM messages`))
	}
	taken := l.s.hot.take("wh1", 10)
	d := l.s.NewDeliverer(DeliveryOptions{Schedule: []time.Duration{time.Hour}})
	var res []result
	for _, m := range taken {
		res = append(res, result{msg: m, webhookID: "wh1", status: 503, at: time.Now()})
	}
	if _, err := d.record(t.Context(), res); err != nil {
		t.Fatal(err)
	}
	if n, _ := l.s.hot.stats(); n != 0 || l.count(t, `SELECT count(*) FROM messages WHERE status = 'pending' AND attempts = 1`) != 3 {
		t.Fatalf("after their first failures: %d in memory, %d retries in the table", n, l.count(t, `SELECT count(*) FROM messages WHERE attempts = 1`))
	}
	if cp := l.checkpoint(t); cp != l.applied {
		t.Errorf("checkpoint %v, want %v", cp, l.applied)
	}
}

// A runner whose last read of the table found nothing due does not read
// it again until something is written to it (or the next message is due,
// or a second passed), and then sees what was written.
func TestIdleTableIsNotReadAgain(t *testing.T) {
	s := openStore(t, Options{})
	q := s.q.(*sqliteQueue)
	t0 := time.Now()
	take := func() []message {
		t.Helper()
		msgs, _, err := q.take(t.Context(), "w1", t0, 10, 0)
		if err != nil {
			t.Fatal(err)
		}
		return msgs
	}
	if len(take()) != 0 || len(take()) != 0 || q.reads.Load() != 1 {
		t.Fatalf("%d reads for two takes of an empty table, want 1", q.reads.Load())
	}
	put(t, s, "w1", t0, false, "e1")
	if got := take(); len(got) != 1 || q.reads.Load() != 2 {
		t.Fatalf("after a write: %d messages, %d reads", len(got), q.reads.Load())
	}
}

// Pending counts the messages due in the table at most as often as the
// count's cost allows (countShare); Lag follows the oldest at every
// measure, and a table with none due counts as none at once.
func TestPendingCountIsPacedByItsCost(t *testing.T) {
	l := newHookLog(t, "http://127.0.0.1:9/hook")
	l.add(t, 5)
	l.apply(t) // no deliverer: the messages go to the table
	d := l.s.NewDeliverer(DeliveryOptions{})
	ctx := t.Context()
	d.measure(ctx)
	if d.Pending() != 5 || d.countEvery <= 0 {
		t.Fatalf("pending %d, next count after %v; want 5 and the count's cost", d.Pending(), d.countEvery)
	}
	d.countEvery = time.Hour // as after a count of millions
	l.add(t, 3)
	l.apply(t)
	if _, err := l.s.w.Exec(`UPDATE messages SET next_attempt_at = next_attempt_at - 60000`); err != nil {
		t.Fatal(err)
	}
	d.measure(ctx)
	if d.Pending() != 5 || d.Lag() < time.Minute {
		t.Fatalf("pending %d, lag %v: want the last count (5) and the oldest's age at once", d.Pending(), d.Lag())
	}
	d.countEvery = 0
	d.measure(ctx)
	if d.Pending() != 8 {
		t.Fatalf("pending %d, want 8 once a count is due", d.Pending())
	}
	d.countEvery = time.Hour
	if _, err := l.s.w.Exec(`UPDATE messages SET status = 'succeeded'`); err != nil {
		t.Fatal(err)
	}
	d.measure(ctx)
	if d.Pending() != 0 || d.Lag() != 0 {
		t.Fatalf("pending %d, lag %v with none due, want 0 and 0", d.Pending(), d.Lag())
	}
}

// flakyQueue fails the first fails records of attempts, as a database
// that is away for a while does.
type flakyQueue struct {
	queue
	fails atomic.Int32
}

func (q *flakyQueue) record(ctx context.Context, outs []outcome, failing map[string]int64, healthy []string) (map[string]int64, error) {
	if q.fails.Add(-1) >= 0 {
		return nil, errors.New("flakyQueue: the database is away")
	}
	return q.queue.record(ctx, outs, failing, healthy)
}

// Failed attempts whose record fails for a while are recorded once the
// queue takes writes again, and retried: the deliverer does not drop
// them (which left their messages taken in memory, never sent again until
// a restart).
func TestRecordsAreRetriedUntilWritten(t *testing.T) {
	rc := newHookReceiver(t)
	rc.fail = func(_ string, n int) bool { return n == 1 } // each message's first attempt
	l := newHookLog(t, rc.URL+"/hook")
	q := &flakyQueue{queue: l.s.q}
	q.fails.Store(6)
	l.s.q = q
	deliver(t, l.s, DeliveryOptions{Schedule: []time.Duration{10 * time.Millisecond}})
	l.apply(t)
	l.add(t, 3)
	l.apply(t)
	rc.waitDelivered(t, 3, 20*time.Second)
	if q.fails.Load() >= 0 {
		t.Fatalf("%d record failures left: the test tests nothing", q.fails.Load()+1)
	}
	waitFor(t, "a failure and a success recorded for each", func() bool {
		return l.count(t, `SELECT count(*) FROM attempts`) == 6
	})
	waitFor(t, "the checkpoint at the last event", func() bool { return l.checkpoint(t) == l.applied })
}
