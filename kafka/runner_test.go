package kafka_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/linkd/linkd/eventstore"
	"github.com/linkd/linkd/kafka"
	"github.com/linkd/linkd/kafka/kafkatest"
	"github.com/linkd/linkd/projections"
)

// feed publishes, for each stream, versions [from, to) straight to Kafka (no
// relay), streams interleaved. Positions are unique and increase.
type feed struct {
	t       *testing.T
	pub     *kafka.Publisher
	streams []string
	pos     uint64
	total   int
}

func newFeed(t *testing.T, cfg kafka.Config, streams []string) *feed {
	pub, err := kafka.NewPublisher(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pub.Close() })
	return &feed{t: t, pub: pub, streams: streams}
}

func (f *feed) publish(from, to uint64) {
	f.t.Helper()
	for v := from; v < to; v++ {
		for _, s := range f.streams {
			f.pos++
			e := kafkatest.Event(s, v, f.pos)
			if err := f.pub.Publish(kafka.TopicOf(s), kafka.EncodeEvent(e)); err != nil {
				f.t.Fatal(err)
			}
			f.total++
		}
	}
}

// publishBatches publishes, for each stream, versions [from, to) in batch
// messages of at most per events (as the relay does), streams in turn.
func (f *feed) publishBatches(from, to uint64, per int) {
	f.t.Helper()
	for lo := from; lo < to; lo += uint64(per) {
		hi := min(to, lo+uint64(per))
		for _, s := range f.streams {
			var evs []eventstore.RecordedEvent
			for v := lo; v < hi; v++ {
				f.pos++
				evs = append(evs, kafkatest.Event(s, v, f.pos))
			}
			if err := f.pub.Publish(kafka.TopicOf(s), kafka.EncodeBatch(evs)); err != nil {
				f.t.Fatal(err)
			}
			f.total += len(evs)
		}
	}
}

// start runs a Kafka runner until the returned stop is called; stop waits
// for it and fails the test if Run failed.
func start(t *testing.T, cfg kafka.Config, opts kafka.RunnerOptions, ps ...projections.Projector) (*kafka.Runner, func()) {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = quiet
	}
	r, err := kafka.NewRunner(cfg, ps, opts)
	if err != nil {
		t.Fatal(err)
	}
	return r, runRunner(t, r)
}

func checkExactlyOnce(t *testing.T, m *kafkatest.Model, total int) {
	t.Helper()
	if p := m.Problems(); len(p) > 0 {
		t.Errorf("%d gaps or reorderings, first: %s", len(p), p[0])
	}
	if applied, _ := m.Counts(); applied != total {
		t.Errorf("applied %d events, want %d", applied, total)
	}
}

func waitApplied(t *testing.T, m *kafkatest.Model, total int) {
	t.Helper()
	kafkatest.Eventually(t, 60*time.Second, func() bool {
		a, _ := m.Counts()
		return a >= total
	}, func() string {
		a, s := m.Counts()
		return fmt.Sprintf("applied %d of %d events (%d duplicates skipped)", a, total, s)
	})
}

func TestNewRunnerValidates(t *testing.T) {
	t.Parallel()
	m := kafkatest.NewModel()
	_, err := kafka.NewRunner(kafka.Config{}, []projections.Projector{
		kafkatest.NewProjector("a", m, "link"),
		kafkatest.NewProjector("a", m, "link"),
		kafkatest.NewProjector("b", m),
	}, kafka.RunnerOptions{})
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{"no brokers", "two projectors named a", "b has no categories"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}

// TestRunnerResumesAfterRestart stops a runner while events flow and
// starts a new one in the same consumer group: it resumes from the
// committed offsets, losing nothing, and what it sees twice changes nothing.
func TestRunnerResumesAfterRestart(t *testing.T) {
	t.Parallel()
	kafkatest.Deadline(t, 150*time.Second)
	cfg := kafkatest.Start(t, 6)
	f := newFeed(t, cfg, streamNames(40, "link", "clicks"))
	m := kafkatest.NewModel()

	f.publish(0, 10) // 400 events before the first start
	p1 := kafkatest.NewProjector("counts", m, "link", "clicks")
	_, stop := start(t, cfg, kafka.RunnerOptions{}, p1)
	waitApplied(t, m, f.total)
	f.publish(10, 15)
	stop() // events may still be on their way
	first := p1.Delivered.Load()

	f.publish(15, 25)
	p2 := kafkatest.NewProjector("counts", m, "link", "clicks")
	_, stop = start(t, cfg, kafka.RunnerOptions{}, p2)
	waitApplied(t, m, f.total)
	stop()

	checkExactlyOnce(t, m, f.total)
	redelivered := first + p2.Delivered.Load() - int64(f.total)
	t.Logf("%d events; first runner got %d, second %d: %d redelivered", f.total, first, p2.Delivered.Load(), redelivered)
	// The second runner resumed from committed offsets, not from the start.
	if p2.Delivered.Load() >= int64(f.total) {
		t.Errorf("second runner got %d events of %d: it did not resume", p2.Delivered.Load(), f.total)
	}
}

// TestRunnerRestartAfterLostCommits: a runner whose offset commits
// never reached the broker (it was killed) is restarted in the same group:
// Kafka redelivers what it had applied, and the duplicates change nothing.
func TestRunnerRestartAfterLostCommits(t *testing.T) {
	t.Parallel()
	kafkatest.Deadline(t, 150*time.Second)
	cfg, cluster := kafkatest.StartCluster(t, 6)
	var lose atomic.Bool
	kafkatest.LoseCommits(cluster, &lose)
	f := newFeed(t, cfg, streamNames(30, "link"))
	m := kafkatest.NewModel()

	f.publish(0, 5) // committed normally
	p1 := kafkatest.NewProjector("links", m, "link")
	_, stop := start(t, cfg, kafka.RunnerOptions{}, p1)
	waitApplied(t, m, f.total)
	// Commits share the connection with long-polling fetches (500 ms): give
	// them time to land.
	time.Sleep(1500 * time.Millisecond)
	lose.Store(true)
	f.publish(5, 15)
	waitApplied(t, m, f.total)
	stop()
	lose.Store(false)

	f.publish(15, 20)
	p2 := kafkatest.NewProjector("links", m, "link")
	_, stop = start(t, cfg, kafka.RunnerOptions{}, p2)
	waitApplied(t, m, f.total)
	stop()

	checkExactlyOnce(t, m, f.total)
	_, skipped := m.Counts()
	t.Logf("%d events; second runner got %d, %d of them duplicates", f.total, p2.Delivered.Load(), skipped)
	if skipped < 300 {
		t.Errorf("%d duplicates skipped; want the 300 events whose commits were lost", skipped)
	}
	if p2.Delivered.Load() >= int64(f.total) {
		t.Errorf("second runner got all %d events: the commits before the loss were lost too", f.total)
	}
}

// TestRunnerSharesPartitions runs two instances of a projector in one
// group over a shared read model: both get partitions, every event is
// applied once in effect, and when one stops the other takes over.
func TestRunnerSharesPartitions(t *testing.T) {
	t.Parallel()
	kafkatest.Deadline(t, 150*time.Second)
	cfg := kafkatest.Start(t, 8)
	f := newFeed(t, cfg, streamNames(64, "link"))
	m := kafkatest.NewModel()
	a := kafkatest.NewProjector("links", m, "link")
	b := kafkatest.NewProjector("links", m, "link")
	_, stopA := start(t, cfg, kafka.RunnerOptions{}, a)
	_, stopB := start(t, cfg, kafka.RunnerOptions{}, b)

	// Publish in rounds until both instances have had work: the second
	// member may join after the first took every partition.
	for v := uint64(0); ; v++ {
		f.publish(v, v+1)
		waitApplied(t, m, f.total)
		if a.Applied.Load() > 0 && b.Applied.Load() > 0 && v >= 4 {
			break
		}
		if v > 200 {
			t.Fatalf("after %d rounds: instance a applied %d, b %d", v, a.Applied.Load(), b.Applied.Load())
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("shared: a applied %d, b applied %d of %d", a.Applied.Load(), b.Applied.Load(), f.total)

	stopA()
	before := b.Applied.Load()
	rounds := uint64(len(m.Snapshot()["link-0000"]))
	f.publish(rounds, rounds+5)
	waitApplied(t, m, f.total)
	stopB()
	if got := b.Applied.Load() - before; got < 5*64 {
		t.Errorf("after a stopped, b applied %d events, want all %d", got, 5*64)
	}
	checkExactlyOnce(t, m, f.total)
}

// TestRunnerRetriesFailedApply makes Apply fail a few times: the
// messages are rejected and redelivered, and nothing is lost.
func TestRunnerRetriesFailedApply(t *testing.T) {
	t.Parallel()
	kafkatest.Deadline(t, 90*time.Second)
	cfg := kafkatest.Start(t, 4)
	f := newFeed(t, cfg, streamNames(20, "link"))
	m := kafkatest.NewModel()
	p := kafkatest.NewProjector("flaky", m, "link")
	p.FailNext(3)
	f.publish(0, 10)
	r, stop := start(t, cfg, kafka.RunnerOptions{RetryBackoff: 10 * time.Millisecond}, p)
	waitApplied(t, m, f.total)
	stop()
	checkExactlyOnce(t, m, f.total)
	if s := r.Stats("flaky"); s.Events < uint64(f.total) || s.Batches == 0 {
		t.Errorf("stats %+v", s)
	}
}

// TestRunnerWatermark: an event registered on the watermark (as the
// relay does before publishing it) is reached once applied.
func TestRunnerWatermark(t *testing.T) {
	t.Parallel()
	kafkatest.Deadline(t, 90*time.Second)
	cfg := kafkatest.Start(t, 4)
	m := kafkatest.NewModel()
	r, _ := start(t, cfg, kafka.RunnerOptions{}, kafkatest.NewProjector("wm", m, "link"))
	wm := r.Watermark("wm")
	if wm == nil {
		t.Fatal("no watermark")
	}
	f := newFeed(t, cfg, streamNames(5, "link"))
	for i := 1; i <= 5; i++ {
		wm.Register(eventstore.Position{Commit: uint64(i), Prepare: uint64(i)})
	}
	last := eventstore.Position{Commit: 5, Prepare: 5}
	wm.Published(last)
	if wm.Reached(last) {
		t.Fatal("reached before anything was applied")
	}
	f.publish(0, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := wm.Wait(ctx, last); err != nil {
		t.Fatalf("watermark: %v (pending %d)", err, wm.Pending())
	}
}

// TestRunnerBatchMessages: a topic holding single-event messages (older
// relays) then batch messages of one stream each; Apply fails once and a
// restart after lost commits redelivers batches: every event is applied once
// in effect, in order, and a batch's events are bounded by MaxEvents (a
// message is kept whole).
func TestRunnerBatchMessages(t *testing.T) {
	t.Parallel()
	kafkatest.Deadline(t, 150*time.Second)
	cfg, cluster := kafkatest.StartCluster(t, 4)
	var lose atomic.Bool
	kafkatest.LoseCommits(cluster, &lose)
	f := newFeed(t, cfg, streamNames(20, "link", "clicks"))
	m := kafkatest.NewModel()
	const maxEvents, per = 25, 10
	opts := kafka.RunnerOptions{MaxEvents: maxEvents, RetryBackoff: 10 * time.Millisecond}

	f.publish(0, 3) // single-event messages
	f.publishBatches(3, 33, per)
	p1 := kafkatest.NewProjector("both", m, "link", "clicks")
	p1.FailNext(1)
	r1, stop := start(t, cfg, opts, p1)
	waitApplied(t, m, f.total)
	time.Sleep(1500 * time.Millisecond) // let the commits land
	lose.Store(true)
	f.publishBatches(33, 53, per)
	waitApplied(t, m, f.total)
	stop()
	lose.Store(false)
	s1 := r1.Stats("both")

	p2 := kafkatest.NewProjector("both", m, "link", "clicks")
	r2, stop := start(t, cfg, opts, p2)
	f.publishBatches(53, 60, per)
	waitApplied(t, m, f.total)
	stop()

	checkExactlyOnce(t, m, f.total)
	_, skipped := m.Counts()
	s2 := r2.Stats("both")
	t.Logf("%d events; first runner %+v, second %+v; %d duplicates skipped", f.total, s1, s2, skipped)
	if skipped < 20*20 {
		t.Errorf("%d duplicates skipped; want the %d events whose commits were lost", skipped, 20*20)
	}
	for _, s := range []kafka.RunnerStats{s1, s2} {
		if s.Batches == 0 || s.Events > s.Batches*(maxEvents+per-1) {
			t.Errorf("stats %+v: batches over MaxEvents", s)
		}
	}
}
