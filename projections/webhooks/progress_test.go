package webhooks

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/linkd/linkd/domain"
	"github.com/linkd/linkd/domain/link"
	"github.com/linkd/linkd/domain/webhook"
	"github.com/linkd/linkd/eventstore"
	"github.com/linkd/linkd/projections"
)

// mortalRecords are an instance's way to the shared records (leases,
// checkpoints): once dead, every write fails, as for a process killed.
type mortalRecords struct {
	eventstore.RecordStore
	dead atomic.Bool
}

func (r *mortalRecords) PutRecord(ctx context.Context, stream string, expected eventstore.ExpectedVersion, data eventstore.Record) (uint64, error) {
	if r.dead.Load() {
		return 0, errors.New("dead")
	}
	return r.RecordStore.PutRecord(ctx, stream, expected, data)
}

// peer is one instance of a deployment on one event store without a
// shared queue: its projection, fed by a loop as the runner feeds it, and
// its deliverer.
type peer struct {
	s       *Store
	d       *Deliverer
	records *mortalRecords
	stop    func()
}

func newPeer(t *testing.T, l *hookLog, name string, o DeliveryOptions) *peer {
	t.Helper()
	p := &peer{records: &mortalRecords{RecordStore: eventstore.StoreRecords(l.es)}}
	shared := eventstore.NewShared(p.records, eventstore.SharedOptions{Holder: name, LeaseTTL: 600 * time.Millisecond, Retry: 20 * time.Millisecond})
	s, err := Open(filepath.Join(t.TempDir(), "webhooks.db"), Options{
		Events: l.es, Coordinate: shared,
		RenderLink: func(_ context.Context, k *link.Link, _ int64) (map[string]any, error) {
			return map[string]any{"id": k.ID}, nil
		},
		RequestReplay: func(ctx context.Context, id, ws string, start, end time.Time) error {
			return l.put(ctx, webhook.ReplayStream(id), &webhook.ReplayRequested{ID: id, WorkspaceID: ws, Start: start, End: end, At: time.Now().UTC()})
		},
		PublishAttempts: func(ctx context.Context, e *webhook.AttemptsRecorded) error {
			return l.put(ctx, webhook.AttemptsStream(e.ID), e)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	p.s = s
	// The log up to now is applied before the deliverer starts, as
	// App.Start waits for the projections to catch up.
	var after eventstore.Position
	if recs, err := l.es.ReadAll(t.Context(), after, 1<<20); err != nil || len(recs) == 0 {
		t.Fatal("an empty log", err)
	} else if err := s.Apply(t.Context(), projections.Envelopes(recs)); err != nil {
		t.Fatal(err)
	} else {
		after = recs[len(recs)-1].Position
	}
	ctx, cancel := context.WithCancel(context.Background())
	fed := make(chan struct{})
	go func() {
		defer close(fed)
		for ctx.Err() == nil {
			recs, err := l.es.ReadAll(ctx, after, 1000)
			if err == nil && len(recs) > 0 {
				if err := s.Apply(ctx, projections.Envelopes(recs)); err == nil {
					after = recs[len(recs)-1].Position
				}
				continue
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	var stopDelivering func()
	p.d, stopDelivering = deliver(t, s, o)
	var once sync.Once
	p.stop = func() {
		once.Do(func() {
			stopDelivering()
			cancel()
			<-fed
			s.Close()
		})
	}
	t.Cleanup(p.stop)
	return p
}

// leaderAndOther waits for the one of a and b that holds the deliverers'
// lease, and returns it first.
func leaderAndOther(t *testing.T, a, b *peer) (lead, other *peer) {
	t.Helper()
	if lead = leader(t, a, b); lead == a {
		return a, b
	}
	return b, a
}

// leader waits for the one peer of ps that holds the deliverers' lease.
func leader(t *testing.T, ps ...*peer) *peer {
	t.Helper()
	var lead *peer
	waitFor(t, "one deliverer", func() bool {
		n := 0
		for _, p := range ps {
			if p.d.Leading.Load() {
				lead, n = p, n+1
			}
		}
		return n == 1
	})
	return lead
}

// Two instances on one event store: one delivers, each message once. When
// it dies while its receiver holds requests, the other takes the lease
// over, makes again the messages after the progress the dead one saved,
// and every message arrives, those the dead one had in flight included.
// A replay asked of the instance that does not deliver is carried out by
// the one that does.
func TestOneDelivererAmongInstances(t *testing.T) {
	rc := newHookReceiver(t)
	l := newHookLog(t, rc.URL+"/hook")
	a, b := newPeer(t, l, "a", DeliveryOptions{}), newPeer(t, l, "b", DeliveryOptions{})
	l.add(t, 200)
	rc.waitDelivered(t, 200, 10*time.Second)
	time.Sleep(300 * time.Millisecond) // a second delivery would have come by now
	if n, twice := rc.delivered(); n != 200 || twice != 0 {
		t.Fatalf("two instances: %d messages delivered, %d of them twice; want 200 and 0", n, twice)
	}
	lead, other := leaderAndOther(t, a, b)
	// The deliveries log is the same on both: the other's from the
	// attempts the leader recorded in the log.
	waitFor(t, "the attempts in the other instance's deliveries log", func() bool {
		return count(t, other.s, `SELECT count(*) FROM attempts WHERE status = 'succeeded'`) == 200
	})
	if n := count(t, lead.s, `SELECT count(*) FROM attempts`); n != 200 {
		t.Errorf("the leader's log has %d attempts, want its 200 (not its own again from the log)", n)
	}
	if got, want := deliveryLines(t, other.s), deliveryLines(t, lead.s); !slices.Equal(got, want) {
		t.Errorf("the deliveries logs differ:\n%v\n%v", got, want)
	}
	waitFor(t, "the leader's progress saved at the last event", func() bool {
		p, err := lead.s.coord.LoadCheckpoint(t.Context(), progressName("wh1"))
		return err == nil && !p.Less(l.lastPosition(t))
	})

	// The receiver holds every request; the leader dies with some in
	// flight and more coming.
	release := make(chan struct{})
	var held atomic.Int64
	rc.mu.Lock()
	rc.hold = func() {
		held.Add(1)
		<-release
	}
	rc.mu.Unlock()
	l.add(t, 50)
	waitFor(t, "requests held", func() bool { return held.Load() > 0 })
	lead.records.dead.Store(true)
	go lead.stop()
	l.add(t, 50)
	waitFor(t, "the other instance leading", func() bool { return other.d.Leading.Load() })
	rc.mu.Lock()
	rc.hold = nil
	rc.mu.Unlock()
	close(release)
	rc.waitDelivered(t, 300, 15*time.Second)
	n, twice := rc.delivered()
	t.Logf("after the takeover: %d delivered, %d twice (%d requests held)", n, twice, held.Load())
	if twice > int(held.Load()) {
		t.Errorf("%d messages delivered twice, %d were in flight when the deliverer died: the takeover made again more than they", twice, held.Load())
	}

	// A replay asked of an instance that does not deliver: the other
	// instance, restarted, is not leading.
	c := newPeer(t, l, "c", DeliveryOptions{})
	time.Sleep(100 * time.Millisecond)
	if c.d.Leading.Load() {
		t.Fatal("a new instance took the lease from a live holder")
	}
	before := rc.total()
	q, err := c.s.Replay(t.Context(), "wh1", time.Now().Add(-time.Hour), time.Now().Add(time.Hour))
	if err != nil || q != 300 {
		t.Fatalf("replay: %d queued, %v; want 300", q, err)
	}
	waitFor(t, "the replay delivered by the leader", func() bool { return rc.total()-before >= 300 })
	time.Sleep(300 * time.Millisecond)
	if n := rc.total() - before; n != 300 {
		t.Errorf("the replay sent %d requests, want 300 (once each)", n)
	}
	if rows := count(t, c.s, `SELECT count(*) FROM messages`); rows != 0 {
		t.Errorf("the instance that does not deliver has %d messages", rows)
	}
}

// A webhook's progress stays before its oldest message not done with: a
// retry waiting in the table holds it, a success lets it go on. Another
// instance follows the webhook's run of failures from the attempts in the
// log.
func TestProgressWaitsForTheOldestUnfinished(t *testing.T) {
	rc := newHookReceiver(t)
	failing := atomic.Bool{}
	failing.Store(true)
	rc.fail = func(string, int) bool { return failing.Load() }
	l := newHookLog(t, rc.URL+"/hook")
	p := newPeer(t, l, "a", DeliveryOptions{Schedule: []time.Duration{2 * time.Second}})
	leader(t, p)
	other := newPeer(t, l, "b", DeliveryOptions{Schedule: []time.Duration{2 * time.Second}})
	l.add(t, 1)
	first := l.lastPosition(t)
	waitFor(t, "a failed attempt", func() bool { return count(t, p.s, `SELECT count(*) FROM attempts`) > 0 })
	// The other instance, which would deliver next, knows since when the
	// webhook fails.
	waitFor(t, "the run of failures on the other instance", func() bool {
		return count(t, other.s, `SELECT count(*) FROM webhooks WHERE failing_since IS NOT NULL`) == 1
	})
	l.add(t, 20)
	time.Sleep(300 * time.Millisecond)
	failing.Store(false)
	time.Sleep(1200 * time.Millisecond)
	prog, err := p.s.coord.LoadCheckpoint(t.Context(), progressName("wh1"))
	if err != nil {
		t.Fatal(err)
	}
	if !prog.Less(first) {
		t.Fatalf("progress %v with the first message (%v) waiting for its retry", prog, first)
	}
	rc.waitDelivered(t, 21, 10*time.Second)
	last := l.lastPosition(t)
	waitFor(t, "progress at the last event once the retry succeeded", func() bool {
		p, err := p.s.coord.LoadCheckpoint(t.Context(), progressName("wh1"))
		return err == nil && !p.Less(last)
	})
	waitFor(t, "the run of failures ended on the other instance", func() bool {
		return count(t, other.s, `SELECT count(*) FROM webhooks WHERE failing_since IS NOT NULL`) == 0
	})
}

func count(t *testing.T, s *Store, q string) int {
	t.Helper()
	var n int
	if err := s.w.QueryRow(q).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// lastPosition is the position of the log's last link event: the last a
// message of wh1 is made of (not an attempt recorded, a lease or a
// checkpoint, which come later).
func (l *hookLog) lastPosition(t *testing.T) eventstore.Position {
	t.Helper()
	recs, err := l.es.ReadAll(t.Context(), eventstore.Start, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	for i := len(recs) - 1; i >= 0; i-- {
		if strings.HasPrefix(recs[i].Stream, "link-") {
			return recs[i].Position
		}
	}
	t.Fatal("no link event")
	return eventstore.Start
}

// total is how many requests were answered 2xx.
func (rc *hookReceiver) total() int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	n := 0
	for _, c := range rc.ok {
		n += c
	}
	return n
}

// The first holder of a deployment whose deliverers saved no progress
// (each instance delivered everything before ADR 0114) does not send the
// log's history again: it starts at the last event it applied.
func TestFirstHolderDoesNotSendTheHistoryAgain(t *testing.T) {
	rc := newHookReceiver(t)
	l := newHookLog(t, rc.URL+"/hook")
	l.add(t, 30) // delivered before, by instances that saved no progress
	p := newPeer(t, l, "a", DeliveryOptions{})
	leader(t, p)
	waitFor(t, "the deliverers' mark", func() bool {
		m, err := p.s.coord.LoadCheckpoint(t.Context(), deliverersMark)
		return err == nil && !m.IsZero()
	})
	l.add(t, 5)
	rc.waitDelivered(t, 5, 10*time.Second)
	time.Sleep(200 * time.Millisecond)
	if n, _ := rc.delivered(); n != 5 {
		t.Fatalf("%d messages delivered, want the 5 made after the first holder started", n)
	}
}

// put appends e to stream, from any goroutine.
func (l *hookLog) put(ctx context.Context, stream string, e domain.Event) error {
	typ, data, err := domain.EncodeEvent(e)
	if err != nil {
		return err
	}
	_, err = l.es.Append(ctx, stream, eventstore.Any(), eventstore.EventData{Type: typ, Data: data})
	return err
}

// deliveryLines are the lines of wh1's deliveries log without their ids
// (each instance numbers its own).
func deliveryLines(t *testing.T, s *Store) []string {
	t.Helper()
	ds, err := s.q.deliveries(t.Context(), "wh1", 1000, 0)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = fmt.Sprintf("%s %d %s %v %d", d.MessageID, d.Attempt, d.Status, d.CreatedAt.UnixMilli(), *d.ResponseStatus)
	}
	slices.Sort(out)
	return out
}

// kill stops p as a killed process would: its writes to the shared
// records fail from now.
func kill(p *peer) {
	p.records.dead.Store(true)
	go p.stop()
}

// A message waiting for its retry holds its webhook's progress; a
// takeover does not send again the messages after it that were delivered:
// their attempts reached the new holder through the log.
func TestTakeoverSkipsWhatWasDelivered(t *testing.T) {
	rc := newHookReceiver(t)
	var mu sync.Mutex
	poison := ""
	rc.fail = func(id string, n int) bool {
		mu.Lock()
		defer mu.Unlock()
		if poison == "" {
			poison = id
		}
		return id == poison
	}
	l := newHookLog(t, rc.URL+"/hook")
	o := DeliveryOptions{Schedule: []time.Duration{time.Hour}}
	a, b := newPeer(t, l, "a", o), newPeer(t, l, "b", o)
	lead, other := leaderAndOther(t, a, b)
	l.add(t, 1)
	time.Sleep(300 * time.Millisecond)
	l.add(t, 100)
	rc.waitDelivered(t, 100, 10*time.Second)
	waitFor(t, "the attempts on the other instance", func() bool {
		return count(t, other.s, `SELECT count(*) FROM attempts`) == 101
	})
	kill(lead)
	waitFor(t, "the other leading", func() bool { return other.d.Leading.Load() })
	waitFor(t, "the retry waiting on the new holder", func() bool {
		return count(t, other.s, `SELECT count(*) FROM messages WHERE status = 'pending' AND attempts = 1`) == 1
	})
	time.Sleep(500 * time.Millisecond)
	if n, twice := rc.delivered(); n != 100 || twice != 0 {
		t.Errorf("after the takeover: %d delivered, %d twice; want 100 and 0", n, twice)
	}
}

// retriesWaiting makes two instances whose webhook wh1's receiver fails
// (until failing is cleared), with the 10 messages of 10 new links
// waiting for their retry, 2 s after their first attempt.
func retriesWaiting(t *testing.T) (rc *hookReceiver, failing *atomic.Bool, l *hookLog, a, b *peer) {
	t.Helper()
	rc = newHookReceiver(t)
	failing = &atomic.Bool{}
	failing.Store(true)
	rc.fail = func(string, int) bool { return failing.Load() }
	l = newHookLog(t, rc.URL+"/hook")
	o := DeliveryOptions{Schedule: []time.Duration{2 * time.Second, 2 * time.Second, 2 * time.Second}}
	a, b = newPeer(t, l, "a", o), newPeer(t, l, "b", o)
	lead, _ := leaderAndOther(t, a, b)
	l.add(t, 10)
	waitFor(t, "10 failed attempts", func() bool {
		return count(t, lead.s, `SELECT count(*) FROM messages WHERE status = 'pending'`) == 10
	})
	return rc, failing, l, a, b
}

// A webhook turned off while messages wait for their retry, a takeover
// while it is off: once it is on again they are delivered, as on one
// instance.
func TestTakeoverKeepsTheMessagesOfAWebhookOff(t *testing.T) {
	rc, failing, l, a, b := retriesWaiting(t)
	lead, other := leaderAndOther(t, a, b)
	l.append(t, webhook.Stream("wh1"), &webhook.Updated{ID: "wh1", WorkspaceID: "ws", IsActive: domain.Some(false), At: time.Now().UTC()})
	waitFor(t, "off on both", func() bool {
		return count(t, a.s, `SELECT count(*) FROM webhooks WHERE is_active = 0`) == 1 && count(t, b.s, `SELECT count(*) FROM webhooks WHERE is_active = 0`) == 1
	})
	time.Sleep(1500 * time.Millisecond) // progress saved
	kill(lead)
	waitFor(t, "the other leading", func() bool { return other.d.Leading.Load() })
	time.Sleep(time.Second)
	if n := count(t, other.s, `SELECT count(*) FROM messages WHERE status = 'pending'`); n != 10 {
		t.Errorf("the new holder has %d messages waiting for the webhook, want 10", n)
	}
	failing.Store(false)
	l.append(t, webhook.Stream("wh1"), &webhook.Updated{ID: "wh1", WorkspaceID: "ws", IsActive: domain.Some(true), At: time.Now().UTC()})
	rc.waitDelivered(t, 10, 10*time.Second)
}

// A takeover matches each event against the webhook as it was at the
// event: messages owed under the event types it had are made again after
// it stopped wanting them, and events after that make none.
func TestTakeoverMatchesWebhooksAsTheyWere(t *testing.T) {
	rc, failing, l, a, b := retriesWaiting(t)
	lead, other := leaderAndOther(t, a, b)
	l.append(t, webhook.Stream("wh1"), &webhook.Updated{ID: "wh1", WorkspaceID: "ws", Events: domain.Some([]string{webhook.TypeLinkClicked}), At: time.Now().UTC()})
	l.add(t, 5)                         // not wanted any more
	time.Sleep(1500 * time.Millisecond) // progress saved
	kill(lead)
	waitFor(t, "the other leading", func() bool { return other.d.Leading.Load() })
	failing.Store(false)
	rc.waitDelivered(t, 10, 10*time.Second)
	time.Sleep(300 * time.Millisecond)
	if n, _ := rc.delivered(); n != 10 {
		t.Errorf("%d messages delivered, want the 10 owed before the webhook stopped wanting links created", n)
	}
}
