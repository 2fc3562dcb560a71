package kafka_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/linkd/linkd/eventstore"
	"github.com/linkd/linkd/eventstore/embedded"
	"github.com/linkd/linkd/kafka"
	"github.com/linkd/linkd/projections"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func openStore(t testing.TB) *embedded.Store {
	t.Helper()
	s, err := embedded.Open(embedded.Options{Dir: t.TempDir(), Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func streamNames(n int, cats ...string) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%04d", cats[i%len(cats)], i)
	}
	return out
}

// appendRounds appends versions [from, to) to every stream, one event per
// Append, from several goroutines, so that streams interleave in the log.
func appendRounds(t testing.TB, s eventstore.Store, streams []string, from, to uint64) {
	t.Helper()
	const writers = 4
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for v := from; v < to; v++ {
				for i := w; i < len(streams); i += writers {
					if _, err := appendOne(s, streams[i], v); err != nil {
						errs <- err
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

func appendOne(s eventstore.Store, stream string, v uint64) (eventstore.AppendResult, error) {
	exp := eventstore.NoStream()
	if v > 0 {
		exp = eventstore.Exact(v - 1)
	}
	return s.Append(context.Background(), stream, exp, eventstore.EventData{
		Type:     "Tested",
		Data:     fmt.Appendf(nil, `{"stream":%q,"v":%d}`, stream, v),
		Metadata: []byte(`{"by":"test"}`),
	})
}

// background runs run (a Relay's, a Runner's or a Pipeline's Run) until
// the returned stop is called, or the test ends. stop cancels it and
// returns its error; later calls return the same.
func background(t testing.TB, what string, run func(context.Context) error) (stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx) }()
	var once sync.Once
	var err error
	stop = func() error {
		once.Do(func() {
			cancel()
			select {
			case err = <-done:
			case <-time.After(30 * time.Second):
				err = fmt.Errorf("%s did not stop within 30 s", what)
			}
		})
		return err
	}
	t.Cleanup(func() { _ = stop() })
	return stop
}

// runRelay runs r until the returned stop is called; stop returns Run's
// error.
func runRelay(t testing.TB, r *kafka.Relay) (stop func() error) {
	t.Helper()
	return background(t, "relay", r.Run)
}

// runRunner runs r until the returned stop is called, or the test ends;
// stop waits for it and fails the test if Run failed.
func runRunner(t testing.TB, r *kafka.Runner) (stop func()) {
	t.Helper()
	stopRun := background(t, "runner", r.Run)
	var once sync.Once
	stop = func() {
		t.Helper()
		once.Do(func() {
			if err := stopRun(); err != nil {
				t.Errorf("runner: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// relayAll runs a relay of store through pub, from the start, until it has
// acknowledged the store's head, then stops it.
func relayAll(t testing.TB, store eventstore.Store, pub message.Publisher, o kafka.RelayOptions) {
	t.Helper()
	o.Logger = quiet
	r := kafka.NewRelay(store, pub, &kafka.MemoryCheckpoint{}, o)
	stop := runRelay(t, r)
	waitAcked(t, r, store)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}

// waitAcked waits until the relay has acknowledged everything up to the
// store's head.
func waitAcked(t testing.TB, r *kafka.Relay, s eventstore.Store) {
	t.Helper()
	head, err := s.Head(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	end := time.Now().Add(60 * time.Second)
	for r.Acked().Less(head) {
		if time.Now().After(end) {
			t.Fatalf("relay acknowledged up to %s, head is %s (stats %+v)", r.Acked(), head, r.Stats())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// applyPublisher hands each published event straight to an Apply function,
// as if a bus delivered it at once: a publisher for tests without Kafka.
type applyPublisher struct {
	mu    sync.Mutex
	apply func(context.Context, []projections.Event) error
	// topics records the topic of each stream.
	topics map[string]string
}

func (p *applyPublisher) Publish(topic string, msgs ...*message.Message) error {
	for _, m := range msgs {
		evs, err := kafka.Decode(m)
		if err != nil {
			return err
		}
		p.mu.Lock()
		if p.topics == nil {
			p.topics = map[string]string{}
		}
		p.topics[evs[0].Stream] = topic
		err = p.apply(context.Background(), projections.Envelopes(evs))
		p.mu.Unlock()
		if err != nil {
			return err
		}
	}
	return nil
}

func (p *applyPublisher) Close() error { return nil }

// failingPublisher passes the first n events through, calls onCrash at
// event crashAt, and fails every publish after n: a broker connection that
// dies mid-way. It counts events, not messages: a message may carry many.
type failingPublisher struct {
	next    message.Publisher
	n       int64
	count   atomic.Int64
	crashAt int64
	onCrash func()
	delay   time.Duration // before each publish: a broker round trip
	failed  atomic.Bool
}

func (p *failingPublisher) Publish(topic string, msgs ...*message.Message) error {
	time.Sleep(p.delay)
	k := int64(0)
	for _, m := range msgs {
		k += int64(kafka.EventCount(m))
	}
	c := p.count.Add(k)
	if c-k < p.crashAt && c >= p.crashAt && p.onCrash != nil {
		p.onCrash()
	}
	if c > p.n {
		p.failed.Store(true)
		return errors.New("test: broker gone")
	}
	return p.next.Publish(topic, msgs...)
}

func (p *failingPublisher) Close() error { return nil }

// crashableCheckpoint saves through to a real store until Crash: after it
// nothing is saved any more, as when the process dies.
type crashableCheckpoint struct {
	kafka.CheckpointStore
	crashed atomic.Bool
	saved   atomic.Bool // a position past the start was saved
}

func (c *crashableCheckpoint) Save(ctx context.Context, p eventstore.Position) error {
	if c.crashed.Load() {
		return nil
	}
	err := c.CheckpointStore.Save(ctx, p)
	if err == nil && !p.IsZero() {
		c.saved.Store(true)
	}
	return err
}

// Crash stops the saves. It first waits (up to 5 s) for a checkpoint past
// the start to be saved, so that a crash after a fast start, or on a loaded
// machine, still leaves one to resume from.
func (c *crashableCheckpoint) Crash() {
	for end := time.Now().Add(5 * time.Second); !c.saved.Load() && time.Now().Before(end); {
		time.Sleep(time.Millisecond)
	}
	c.crashed.Store(true)
}
