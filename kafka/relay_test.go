package kafka_test

import (
	"context"
	"fmt"
	"hash/fnv"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/linkd/linkd/eventstore"
	"github.com/linkd/linkd/kafka"
	"github.com/linkd/linkd/kafka/kafkatest"
	"github.com/linkd/linkd/projections"
)

// checkModel fails the test unless m holds what a replay of store builds,
// with no gap or reordering seen on the way.
func checkModel(t *testing.T, store eventstore.Store, m *kafkatest.Model, name string, cats ...string) {
	t.Helper()
	if p := m.Problems(); len(p) > 0 {
		t.Errorf("%s: %d gaps or reorderings, first: %s", name, len(p), p[0])
	}
	want := kafkatest.NewModel()
	if _, err := projections.Replay(context.Background(), store, kafkatest.NewProjector(name, want, cats...), projections.ReplayOptions{PageSize: 100}); err != nil {
		t.Fatal(err)
	}
	if d := kafkatest.Diff(m.Snapshot(), want.Snapshot()); d != "" {
		t.Errorf("%s: live read model differs from replay:\n%s", name, d)
	}
	if a, _ := want.Counts(); a == 0 {
		t.Errorf("%s: replay applied nothing", name)
	}
}

// TestRelayPublishesInStreamOrder relays history and live appends through a
// publisher that applies each event at once: every event arrives once, in
// its stream's order, on its category's topic; the checkpoint reaches the
// head; the watermark of a registering store (kafkatest.Registering)
// learns each relevant event the relay reads.
func TestRelayPublishesInStreamOrder(t *testing.T) {
	t.Parallel()
	kafkatest.Deadline(t, 60*time.Second)
	store := openStore(t)
	streams := streamNames(40, "link", "clicks")
	appendRounds(t, store, streams, 0, 10)

	m := kafkatest.NewModel()
	proj := kafkatest.NewProjector("all", m, "link", "clicks")
	pub := &applyPublisher{apply: proj.Apply}
	wm := eventstore.NewWatermark(eventstore.Start)
	cp := kafka.NewFileCheckpoint(filepath.Join(t.TempDir(), kafka.CheckpointFile))
	registering := kafkatest.Registering(store, kafkatest.Watch{Watermark: wm, Categories: []string{"link"}})
	r := kafka.NewRelay(registering, pub, cp, kafka.RelayOptions{
		Workers: 8, MaxBatch: 64, MaxInFlight: 128, PublishBatch: 4, Logger: quiet,
	})
	stop := runRelay(t, r)
	appendRounds(t, store, streams, 10, 20) // live
	waitAcked(t, r, store)
	if err := stop(); err != nil {
		t.Fatal(err)
	}

	checkModel(t, store, m, "all", "link", "clicks")
	if applied, skipped := m.Counts(); applied != 800 || skipped != 0 {
		t.Errorf("applied %d, skipped %d; want 800 and 0", applied, skipped)
	}
	if s := r.Stats(); s.Published != 800 || s.Pending != 0 || s.Failures != 0 {
		t.Errorf("stats %+v", s)
	}
	for stream, topic := range pub.topics {
		if want := "linkd." + eventstore.Category(stream); topic != want {
			t.Errorf("%s published on %s, want %s", stream, topic, want)
		}
	}
	head, _ := store.Head(context.Background())
	if saved, _ := cp.Load(context.Background()); saved != head {
		t.Errorf("checkpoint %s, head %s", saved, head)
	}
	// 400 link events were registered; none is done, since no runner
	// reports to this watermark.
	if n := wm.Pending(); n != 400 {
		t.Errorf("watermark has %d events pending, want 400", n)
	}
}

// TestRelayResumesFromCheckpointAfterCrash: a relay whose publisher fails
// mid-way, and whose process dies (its checkpoint stops being saved earlier
// still), is restarted from the saved checkpoint: nothing is lost, and the
// events published twice change nothing.
func TestRelayResumesFromCheckpointAfterCrash(t *testing.T) {
	t.Parallel()
	kafkatest.Deadline(t, 60*time.Second)
	store := openStore(t)
	streams := streamNames(30, "link")
	appendRounds(t, store, streams, 0, 30)

	m := kafkatest.NewModel()
	proj := kafkatest.NewProjector("links", m, "link")
	cp := &crashableCheckpoint{CheckpointStore: kafka.NewFileCheckpoint(filepath.Join(t.TempDir(), kafka.CheckpointFile))}
	failing := &failingPublisher{next: &applyPublisher{apply: proj.Apply}, n: 600, crashAt: 300, onCrash: cp.Crash, delay: 200 * time.Microsecond}
	r1 := kafka.NewRelay(store, failing, cp, kafka.RelayOptions{
		Workers: 4, MaxBatch: 32, MaxInFlight: 64, PublishBatch: 4, SaveInterval: 5 * time.Millisecond,
		RetryBackoff: time.Millisecond, Logger: quiet,
	})
	stop := runRelay(t, r1)
	kafkatest.Eventually(t, 30*time.Second, failing.failed.Load, func() string { return "publisher never failed" })
	_ = stop() // killed: its checkpoint is no longer saved
	saved, _ := cp.Load(context.Background())
	if saved.IsZero() {
		t.Fatal("no checkpoint was saved before the crash")
	}

	r2 := kafka.NewRelay(store, &applyPublisher{apply: proj.Apply}, cp.CheckpointStore, kafka.RelayOptions{Workers: 4, Logger: quiet})
	stop = runRelay(t, r2)
	waitAcked(t, r2, store)
	if err := stop(); err != nil {
		t.Fatal(err)
	}

	checkModel(t, store, m, "links", "link")
	applied, skipped := m.Counts()
	t.Logf("checkpoint at crash %s; applied %d, duplicates skipped %d, second run published %d",
		saved, applied, skipped, r2.Stats().Published)
	if applied != 900 {
		t.Errorf("applied %d events, want 900", applied)
	}
	if skipped == 0 {
		t.Error("no duplicates: the crash did not re-publish anything, so the test proves little")
	}
}

// gatedPublisher holds every publish of one stream until open is closed.
type gatedPublisher struct {
	next   message.Publisher
	stream string
	open   chan struct{}
}

func (g *gatedPublisher) Publish(topic string, msgs ...*message.Message) error {
	if msgs[0].Metadata.Get(kafka.MetaStream) == g.stream {
		<-g.open
	}
	return g.next.Publish(topic, msgs...)
}

func (g *gatedPublisher) Close() error { return nil }

// TestRelayBusyStreamDoesNotHoldUpOthers: while one stream's publishes
// hang, the events of the streams of the other workers are published; the
// checkpoint waits for the stuck stream.
func TestRelayBusyStreamDoesNotHoldUpOthers(t *testing.T) {
	t.Parallel()
	kafkatest.Deadline(t, 60*time.Second)
	store := openStore(t)
	streams := streamNames(20, "link")
	appendRounds(t, store, streams, 0, 20) // 400 events, 20 of them in link-0000

	m := kafkatest.NewModel()
	proj := kafkatest.NewProjector("links", m, "link")
	gate := &gatedPublisher{next: &applyPublisher{apply: proj.Apply}, stream: "link-0000", open: make(chan struct{})}
	r := kafka.NewRelay(store, gate, &kafka.MemoryCheckpoint{}, kafka.RelayOptions{
		Workers: 4, MaxBatch: 16, PublishBatch: 2, Logger: quiet,
	})
	// Streams go to workers by FNV-1a of their name, as the relay does.
	worker := func(s string) uint32 { h := fnv.New32a(); h.Write([]byte(s)); return h.Sum32() % 4 }
	free := 0
	for _, s := range streams {
		if worker(s) != worker(gate.stream) {
			free += 20
		}
	}
	if free < 200 {
		t.Fatalf("only %d events on the other workers: pick other stream names", free)
	}
	stop := runRelay(t, r)
	kafkatest.Eventually(t, 30*time.Second, func() bool { return r.Published() >= uint64(free) },
		func() string {
			return fmt.Sprintf("published %d events; the streams of the other workers have %d", r.Published(), free)
		})
	if head, _ := store.Head(context.Background()); !r.Acked().Less(head) {
		t.Fatal("checkpoint passed events not yet published")
	}
	close(gate.open)
	waitAcked(t, r, store)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	checkModel(t, store, m, "links", "link")
}

// recordingPublisher records the events of every message published.
type recordingPublisher struct {
	mu   sync.Mutex
	msgs [][]eventstore.RecordedEvent
	size []int
}

func (p *recordingPublisher) Publish(_ string, msgs ...*message.Message) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, m := range msgs {
		evs, err := kafka.Decode(m)
		if err != nil {
			return err
		}
		if s := m.Metadata.Get(kafka.MetaStream); s != evs[0].Stream {
			return fmt.Errorf("message keyed %q holds %s", s, evs[0].Stream)
		}
		p.msgs = append(p.msgs, evs)
		p.size = append(p.size, len(m.Payload))
	}
	return nil
}

func (p *recordingPublisher) Close() error { return nil }

// TestRelayCapsMessages: a message holds the events of one stream, in
// order, within MaxMessageEvents and MaxMessageBytes.
func TestRelayCapsMessages(t *testing.T) {
	t.Parallel()
	kafkatest.Deadline(t, 60*time.Second)
	store := openStore(t)
	streams := streamNames(3, "link")
	appendRounds(t, store, streams, 0, 200)
	for _, c := range []struct{ events, bytes int }{{8, 0}, {0, 1000}} {
		pub := &recordingPublisher{}
		r := kafka.NewRelay(store, pub, &kafka.MemoryCheckpoint{}, kafka.RelayOptions{
			Workers: 1, MaxMessageEvents: c.events, MaxMessageBytes: c.bytes, Logger: quiet,
		})
		stop := runRelay(t, r)
		waitAcked(t, r, store)
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		next := map[string]uint64{}
		multi := 0
		for i, evs := range pub.msgs {
			if c.events > 0 && len(evs) > c.events {
				t.Errorf("cap %+v: a message of %d events", c, len(evs))
			}
			if c.bytes > 0 && pub.size[i] > c.bytes {
				t.Errorf("cap %+v: a message of %d bytes", c, pub.size[i])
			}
			if len(evs) > 1 {
				multi++
			}
			for _, e := range evs {
				if e.Stream != evs[0].Stream || e.Version != next[e.Stream] {
					t.Fatalf("cap %+v: %s version %d, want %s version %d", c, e.Stream, e.Version, evs[0].Stream, next[e.Stream])
				}
				next[e.Stream]++
			}
		}
		t.Logf("cap %+v: %d messages of 600 events", c, len(pub.msgs))
		if multi == 0 {
			t.Errorf("cap %+v: no message of several events", c)
		}
	}
}
