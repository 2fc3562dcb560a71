package webhooks

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/linkd/linkd/eventstore/postgres"
	"github.com/linkd/linkd/internal/ssrf"
	"github.com/linkd/linkd/internal/testsupport/pgtest"
)

// hookReceiver answers webhook requests, counting them by webhook-id.
type hookReceiver struct {
	*httptest.Server
	mu    sync.Mutex
	tries map[string]int // requests by webhook-id
	ok    map[string]int // 2xx answers by webhook-id
	// fail says whether to answer the n-th request (from 1) of a message
	// with a 500.
	fail func(id string, n int) bool
	// hold, when set, is called first by every request.
	hold func()
}

func newHookReceiver(t *testing.T) *hookReceiver {
	rc := &hookReceiver{tries: map[string]int{}, ok: map[string]int{}}
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get("webhook-id")
		rc.mu.Lock()
		hold := rc.hold
		rc.mu.Unlock()
		if hold != nil {
			hold()
		}
		rc.mu.Lock()
		rc.tries[id]++
		fail := rc.fail != nil && rc.fail(id, rc.tries[id])
		if !fail {
			rc.ok[id]++
		}
		rc.mu.Unlock()
		if fail {
			w.WriteHeader(http.StatusInternalServerError)
		}
	}))
	t.Cleanup(rc.Close)
	return rc
}

// delivered is how many messages were answered 2xx, and how many of them
// more than once.
func (rc *hookReceiver) delivered() (n, twice int) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	for _, c := range rc.ok {
		n++
		if c > 1 {
			twice++
		}
	}
	return n, twice
}

// waitDelivered waits until n messages were answered 2xx.
func (rc *hookReceiver) waitDelivered(t *testing.T, n int, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		got, _ := rc.delivered()
		if got >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d messages delivered within %v", got, n, within)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// takenOver checks that n messages another deliverer claimed at from are
// delivered once its claims end, after hold: none within 700 ms, all
// within 10 s.
func (rc *hookReceiver) takenOver(t *testing.T, n int, from time.Time, hold time.Duration) {
	t.Helper()
	time.Sleep(700 * time.Millisecond)
	if got, _ := rc.delivered(); got != 0 {
		t.Fatalf("%d messages delivered while another deliverer held them", got)
	}
	rc.waitDelivered(t, n, 10*time.Second)
	if wait := time.Since(from); wait < hold {
		t.Errorf("delivered %v after the claims, before they ended (%v)", wait, hold)
	}
}

// deliver runs a deliverer of s until the test ends (or stop is called).
func deliver(t *testing.T, s *Store, o DeliveryOptions) (d *Deliverer, stop func()) {
	t.Helper()
	nets, _ := ssrf.ParseNetworks("127.0.0.0/8")
	o.Guard = ssrf.New(nets, nil)
	o.Decrypt = func(s string) (string, error) { return s, nil }
	if o.Schedule == nil {
		o.Schedule = []time.Duration{50 * time.Millisecond, 50 * time.Millisecond}
	}
	d = s.NewDeliverer(o)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = d.Run(ctx)
	}()
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); <-done }) }
	t.Cleanup(stop)
	return d, stop
}

// waitClaimed waits until n messages of s's queue are claimed.
func waitClaimed(t *testing.T, s *Store, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		var held int
		if err := s.q.(*pgQueue).pool.QueryRow(t.Context(), `SELECT count(*) FROM linkd_webhook_messages WHERE claimed_by IS NOT NULL`).Scan(&held); err != nil {
			t.Fatal(err)
		}
		if held == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d messages claimed", held, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// instances opens n Stores on open's queue, with webhook w1 sending to url,
// each delivering.
func instances(t *testing.T, open opener, n int, url string, o DeliveryOptions) ([]*Store, []*Deliverer) {
	var stores []*Store
	var ds []*Deliverer
	for range n {
		s := open(t)
		addHook(t, s, "w1", url)
		d, _ := deliver(t, s, o)
		stores, ds = append(stores, s), append(ds, d)
	}
	return stores, ds
}

func eventIDs(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("e%04d", i)
	}
	return out
}

// deadAndLive opens two instances on one PostgreSQL queue, with webhook
// w1 sending to rc, and n messages due.
func deadAndLive(t *testing.T, n int) (dead, live *Store, rc *hookReceiver) {
	t.Helper()
	open := onPostgres(t)
	rc = newHookReceiver(t)
	dead, live = open(t), open(t)
	addHook(t, dead, "w1", rc.URL+"/hook")
	addHook(t, live, "w1", rc.URL+"/hook")
	put(t, dead, "w1", time.Now(), false, eventIDs(n)...)
	return dead, live, rc
}

// claimAll makes s's queue a deliverer that said it was alive at said,
// and claims every due message of webhook w1 (n of them) for claimFor.
func claimAll(t *testing.T, s *Store, n int, claimFor time.Duration, said time.Time) []message {
	t.Helper()
	q := s.q.(*pgQueue)
	q.claimFor = claimFor
	if _, err := q.alive(t.Context(), said.UnixMilli()); err != nil {
		t.Fatal(err)
	}
	held, _, err := q.take(t.Context(), "w1", time.Now(), 16, 0)
	if err != nil || len(held) != n {
		t.Fatalf("the deliverer took %d messages, want %d (%v)", len(held), n, err)
	}
	return held
}

// Three instances on one PostgreSQL queue every message (each from its
// own projection) and deliver each exactly once: one success per message,
// one more attempt for each that failed once, and the deliveries log is
// the same read from any of them.
func TestSharedQueueDeliversEachMessageOnce(t *testing.T) {
	open := onPostgres(t)
	rc := newHookReceiver(t)
	failOnce := map[string]bool{}
	const n = 600
	ids := eventIDs(n)
	for i, e := range ids {
		if i%10 == 0 {
			failOnce[MessageID(e, "w1")] = true
		}
	}
	rc.fail = func(id string, n int) bool { return n == 1 && failOnce[id] }
	stores, ds := instances(t, open, 3, rc.URL+"/hook", DeliveryOptions{Concurrency: 8})
	// Every instance's projection queues every message, in batches, at
	// the same time as the others.
	var wg sync.WaitGroup
	for _, s := range stores {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < n; i += 50 {
				put(t, s, "w1", time.Now(), false, ids[i:i+50]...)
			}
		}()
	}
	wg.Wait()
	rc.waitDelivered(t, n, 30*time.Second)
	time.Sleep(300 * time.Millisecond) // a duplicate would come now
	if got, twice := rc.delivered(); got != n || twice != 0 {
		t.Errorf("%d messages delivered, %d of them more than once", got, twice)
	}
	rc.mu.Lock()
	for id, c := range rc.tries {
		if want := map[bool]int{true: 2, false: 1}[failOnce[id]]; c != want {
			t.Errorf("%s: %d requests, want %d", id, c, want)
		}
	}
	rc.mu.Unlock()
	var per []int64
	for _, d := range ds {
		per = append(per, d.Delivered.Load())
	}
	t.Logf("successes per instance: %v", per)

	// The log is the same on every instance; every attempt is in it once.
	var logs [][]string
	for _, s := range stores {
		var lines []string
		for _, l := range deliveries(t, s, "w1") {
			lines = append(lines, fmt.Sprintf("%s %s %d %s %v", l.ID, l.MessageID, l.Attempt, l.Status, l.NextAttemptAt != nil))
		}
		logs = append(logs, lines)
	}
	if len(logs[0]) != n+n/10 {
		t.Errorf("%d attempts logged, want %d", len(logs[0]), n+n/10)
	}
	for i := 1; i < len(logs); i++ {
		if !reflect.DeepEqual(logs[0], logs[i]) {
			t.Errorf("instance %d's log differs from instance 0's", i)
		}
	}
}

// A deliverer that dies holding claims (it took messages, and never
// recorded a result) delays them until its claims end: then another
// instance delivers every one of them, once.
func TestClaimsOfADeadDelivererAreTakenOver(t *testing.T) {
	dead, live, rc := deadAndLive(t, 20)
	// It said it was alive (10 s ago at most, for its claims' 1.5 s).
	held := claimAll(t, dead, 20, 1500*time.Millisecond, time.Now())
	claimed := time.Now()
	deliver(t, live, DeliveryOptions{Concurrency: 4})
	rc.takenOver(t, 20, claimed, 1500*time.Millisecond)
	time.Sleep(200 * time.Millisecond)
	if got, twice := rc.delivered(); got != 20 || twice != 0 {
		t.Errorf("%d delivered, %d twice", got, twice)
	}
	// The dead deliverer's late result changes no message another took
	// over (it is logged: the attempt was made).
	d := dead.NewDeliverer(DeliveryOptions{Schedule: []time.Duration{time.Hour}})
	if _, err := d.record(t.Context(), []result{{msg: held[0], webhookID: "w1", status: 500, at: time.Now()}}); err != nil {
		t.Fatal(err)
	}
	for _, l := range deliveries(t, live, "w1") {
		if l.Status == "pending" {
			t.Errorf("a late result of a claim taken over made %s pending again", l.MessageID)
		}
	}
}

// The claims of a deliverer that stopped saying it is alive (SIGKILL)
// end then, not at their deadline.
func TestClaimsEndWithTheirDeliverer(t *testing.T) {
	dead, live, rc := deadAndLive(t, 20)
	said := time.Now()
	claimAll(t, dead, 20, time.Hour, said)
	live.q.(*pgQueue).aliveFor = 1500 * time.Millisecond
	deliver(t, live, DeliveryOptions{Concurrency: 4})
	rc.takenOver(t, 20, said, 1500*time.Millisecond)
}

// A deliverer late to say it is alive does not take its own claims again
// (its runners hold them); another does.
func TestLateDelivererKeepsItsOwnClaims(t *testing.T) {
	open := onPostgres(t)
	late, other := open(t), open(t)
	addHook(t, late, "w1", "http://127.0.0.1:9/hook")
	put(t, late, "w1", time.Now(), false, eventIDs(10)...)
	claimAll(t, late, 10, time.Hour, time.Now().Add(-time.Minute))
	if again, _, err := late.q.take(t.Context(), "w1", time.Now(), 16, 0); err != nil || len(again) != 0 {
		t.Errorf("the late deliverer took %d of its own claims again (%v)", len(again), err)
	}
	if taken, _, err := other.q.take(t.Context(), "w1", time.Now(), 16, 0); err != nil || len(taken) != 10 {
		t.Errorf("another deliverer took %d of the late one's claims, want 10 (%v)", len(taken), err)
	}
}

// A process started again on the data directory of one that died (SIGKILL)
// takes its claims over at once: not when they end, nor when the dead one
// stops counting as alive.
func TestRestartTakesOverTheClaimsOfTheDeadProcess(t *testing.T) {
	dsn := pgtest.DSN(t)
	if err := postgres.Migrate(t.Context(), dsn); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "webhooks.db")
	rc := newHookReceiver(t)
	before, err := Open(path, Options{Postgres: dsn})
	if err != nil {
		t.Fatal(err)
	}
	addHook(t, before, "w1", rc.URL+"/hook")
	put(t, before, "w1", time.Now(), false, eventIDs(20)...)
	claimAll(t, before, 20, time.Hour, time.Now())
	before.Close() // its claims stay, as a SIGKILL leaves them
	started := time.Now()
	after, err := Open(path, Options{Postgres: dsn})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { after.Close() })
	deliver(t, after, DeliveryOptions{Concurrency: 4})
	rc.waitDelivered(t, 20, 5*time.Second) // aliveFor is 10 s
	if took := time.Since(started); took >= aliveFor {
		t.Errorf("the dead process's claims taken over after %v", took)
	}
	if _, twice := rc.delivered(); twice != 0 {
		t.Errorf("%d messages delivered twice", twice)
	}
}

// A deliverer that stops gives up its claims: another sends the messages
// at once, not after the claims' deadline.
func TestStoppedDelivererReleasesItsClaims(t *testing.T) {
	open := onPostgres(t)
	rc := newHookReceiver(t)
	release := make(chan struct{})
	a, b := open(t), open(t)
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer slow.Close()
	defer close(release)
	addHook(t, a, "w1", slow.URL+"/hook")
	addHook(t, b, "w1", rc.URL+"/hook")
	put(t, a, "w1", time.Now(), false, eventIDs(10)...)
	_, stop := deliver(t, a, DeliveryOptions{Concurrency: 5, Timeout: time.Minute}) // holds up to 10
	waitClaimed(t, a, 10)
	stop()
	start := time.Now()
	deliver(t, b, DeliveryOptions{Concurrency: 4})
	rc.waitDelivered(t, 10, 5*time.Second)
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("released claims taken after %v", took)
	}
}

// A message pruned after it was delivered is not queued again by an
// instance that reads the log from its start; newer events are.
func TestPrunedMessagesAreNotQueuedAgain(t *testing.T) {
	open := onPostgres(t)
	old, ctx := open(t), context.Background()
	t0 := time.Now().Add(-40 * 24 * time.Hour)
	put(t, old, "w1", t0, false, "e-old")
	msgs, _, err := old.q.take(ctx, "w1", t0, 4, 0)
	if err != nil || len(msgs) != 1 {
		t.Fatalf("take: %v %v", msgs, err)
	}
	d := old.NewDeliverer(DeliveryOptions{})
	if _, err := d.record(ctx, []result{{msg: msgs[0], webhookID: "w1", status: 204, at: t0}}); err != nil {
		t.Fatal(err)
	}
	d.prune(ctx)
	if n := len(deliveries(t, old, "w1")); n != 0 {
		t.Fatalf("%d lines after pruning, want 0", n)
	}
	// A new instance projects the log from its start.
	fresh := open(t)
	now := time.Now()
	c := &changes{now: now.UnixMilli(), msgs: []queued{
		{webhookID: "w1", eventID: "e-old", eventType: "link.created", body: []byte(`{}`), eventTime: t0},
		{webhookID: "w1", eventID: "e-new", eventType: "link.created", body: []byte(`{}`), eventTime: now.Add(-time.Hour)},
	}}
	if err := fresh.q.write(ctx, nil, c); err != nil {
		t.Fatal(err)
	}
	got, _, err := fresh.q.take(ctx, "w1", now, 4, 0)
	if err != nil || len(got) != 1 || got[0].id != MessageID("e-new", "w1") {
		t.Fatalf("queued again: %v %v", got, err)
	}
}

// Each webhook's concurrency is shared by the live deliverers: three
// instances with a concurrency of 6 send at most 6 requests at once to a
// slow receiver, 2 each.
func TestConcurrencyIsSharedByTheDeliverers(t *testing.T) {
	open := onPostgres(t)
	var mu sync.Mutex
	in, most, served := 0, 0, 0
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		in++
		most = max(most, in)
		mu.Unlock()
		time.Sleep(30 * time.Millisecond)
		mu.Lock()
		in--
		served++
		mu.Unlock()
	}))
	defer slow.Close()
	stores, ds := instances(t, open, 3, slow.URL+"/hook", DeliveryOptions{Concurrency: 6})
	// Every deliverer has counted the others.
	deadline := time.Now().Add(5 * time.Second)
	for _, d := range ds {
		for d.share.Load() != 2 {
			if time.Now().After(deadline) {
				t.Fatalf("share %d, want 2", d.share.Load())
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	for _, s := range stores {
		put(t, s, "w1", time.Now(), false, eventIDs(90)...)
	}
	deadline = time.Now().Add(20 * time.Second)
	for {
		mu.Lock()
		n := served
		mu.Unlock()
		if n >= 90 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of 90 served", n)
		}
		time.Sleep(20 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	if most > 6 || most < 3 {
		t.Errorf("at most %d requests at once, want 6 (3 to 6)", most)
	}
	t.Logf("at most %d requests at once over three deliverers", most)
}

// A deliverer keeps the messages it holds for longer than its claims
// last (a slow receiver): it extends them, and no other sends them.
func TestHeldClaimsAreExtended(t *testing.T) {
	open := onPostgres(t)
	fast := newHookReceiver(t)
	var mu sync.Mutex
	slowGot := 0
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(1500 * time.Millisecond):
		case <-r.Context().Done():
		}
		mu.Lock()
		slowGot++
		mu.Unlock()
	}))
	defer slow.Close()
	a, b := open(t), open(t)
	addHook(t, a, "w1", slow.URL+"/hook")
	addHook(t, b, "w1", fast.URL+"/hook")
	put(t, a, "w1", time.Now(), false, eventIDs(3)...)
	deliver(t, a, DeliveryOptions{Concurrency: 1, ClaimTimeout: 600 * time.Millisecond})
	waitClaimed(t, a, 3)
	deliver(t, b, DeliveryOptions{Concurrency: 1, ClaimTimeout: 600 * time.Millisecond})
	time.Sleep(2500 * time.Millisecond) // four times the claims' length
	if got, _ := fast.delivered(); got != 0 {
		t.Errorf("another deliverer sent %d messages held by a live one", got)
	}
	mu.Lock()
	defer mu.Unlock()
	if slowGot == 0 {
		t.Error("the slow receiver got nothing")
	}
}

// An instance that ran with a queue of its own moves its pending messages
// to the shared one when it opens on PostgreSQL, and keeps none itself.
func TestPendingMessagesMoveToTheSharedQueue(t *testing.T) {
	dsn := pgtest.DSN(t)
	if err := postgres.Migrate(t.Context(), dsn); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "webhooks.db")
	own, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	put(t, own, "w1", time.Now(), false, "e1", "e2")
	if err := own.Close(); err != nil {
		t.Fatal(err)
	}
	shared, err := Open(path, Options{Postgres: dsn})
	if err != nil {
		t.Fatal(err)
	}
	defer shared.Close()
	got, _, err := shared.q.take(t.Context(), "w1", time.Now(), 4, 0)
	if err != nil || len(got) != 2 || got[0].id != MessageID("e1", "w1") && got[1].id != MessageID("e1", "w1") {
		t.Fatalf("moved: %v %v", got, err)
	}
	var left int
	if err := shared.r.QueryRow(`SELECT COUNT(*) FROM messages WHERE status = 'pending'`).Scan(&left); err != nil || left != 0 {
		t.Errorf("%d pending messages left in the instance's own queue (%v)", left, err)
	}
}

// A failed attempt is recorded (the message due again, its claim ended)
// before the runner forgets it; a take in between finds the next attempt,
// which is sent at once, not left claimed and unsent until its claim ends
// (TestSharedQueueDeliversEachMessageOnce's flake under load).
func TestRetryTakenBeforeTheAttemptIsForgotten(t *testing.T) {
	open := onPostgres(t)
	rc := newHookReceiver(t)
	rc.fail = func(_ string, n int) bool { return n == 1 }
	s := open(t)
	addHook(t, s, "w1", rc.URL+"/hook")
	put(t, s, "w1", time.Now(), false, "e1")
	start := time.Now()
	// The runner takes again (at least every second) while the results
	// loop waits between recording the failure and forgetting it.
	deliver(t, s, DeliveryOptions{Concurrency: 2, Schedule: []time.Duration{10 * time.Millisecond},
		afterRecord: func() { time.Sleep(1500 * time.Millisecond) }})
	rc.waitDelivered(t, 1, 10*time.Second)
	t.Logf("delivered after %v", time.Since(start))
	if took := time.Since(start); took > 8*time.Second {
		t.Errorf("the retry was delivered after %v", took)
	}
}
