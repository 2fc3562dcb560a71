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

// recordingPublisher records the events and the key of every message
// published: the key is the stream of its first event (a message of one
// stream, or one partition's streams keyed by the first).
type recordingPublisher struct {
	mu    sync.Mutex
	msgs  [][]eventstore.RecordedEvent
	size  []int
	keys  []string
	count int
}

func (p *recordingPublisher) Publish(_ string, msgs ...*message.Message) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, m := range msgs {
		evs, err := kafka.Decode(m)
		if err != nil {
			return err
		}
		if k, err := kafka.StreamKey("", m); err != nil || k != evs[0].Stream {
			return fmt.Errorf("message keyed %q (%v) holds %s first", k, err, evs[0].Stream)
		}
		p.msgs = append(p.msgs, evs)
		p.size = append(p.size, len(m.Payload))
		p.keys = append(p.keys, evs[0].Stream)
		p.count += len(evs)
	}
	return nil
}

func (p *recordingPublisher) published() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.count
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
		relayAll(t, store, pub, kafka.RelayOptions{Workers: 1, MaxMessageEvents: c.events, MaxMessageBytes: c.bytes})
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

// partitionedPublisher is a recordingPublisher that says, as a Kafka
// publisher with parts partitions per topic would, which partition a key
// goes to (kafka.Partitioned: a hash of it).
type partitionedPublisher struct {
	recordingPublisher
	parts int32
}

func (p *partitionedPublisher) PartitionOf(_, key string) (int32, error) {
	h := fnv.New32a()
	h.Write([]byte(key))
	return int32(h.Sum32() % uint32(p.parts)), nil
}

// TestRelayMessagesPerPartition: with a Partitioned publisher a message
// holds events of one partition, of several streams, keyed by one of them
// (ADR 0121); each stream's events come in order, each once.
func TestRelayMessagesPerPartition(t *testing.T) {
	t.Parallel()
	kafkatest.Deadline(t, 60*time.Second)
	store := openStore(t)
	streams := streamNames(40, "link")
	appendRounds(t, store, streams, 0, 25) // 1,000 events
	pub := &partitionedPublisher{parts: 4}
	relayAll(t, store, pub, kafka.RelayOptions{Workers: 8, MaxMessageEvents: 64})
	next := map[string]uint64{}
	several := 0
	for i, evs := range pub.msgs {
		kp, _ := pub.PartitionOf("", pub.keys[i])
		in := map[string]bool{}
		for _, e := range evs {
			if p, _ := pub.PartitionOf("", e.Stream); p != kp {
				t.Fatalf("a message keyed %s (partition %d) holds %s (partition %d)", pub.keys[i], kp, e.Stream, p)
			}
			if e.Version != next[e.Stream] {
				t.Fatalf("%s: version %d, want %d", e.Stream, e.Version, next[e.Stream])
			}
			next[e.Stream]++
			in[e.Stream] = true
		}
		if len(evs) > 64 {
			t.Errorf("a message of %d events, over MaxMessageEvents", len(evs))
		}
		if len(in) > 1 {
			several++
		}
	}
	if pub.count != 1000 {
		t.Errorf("%d events published, want 1,000", pub.count)
	}
	t.Logf("%d messages for 1,000 events of 40 streams in 4 partitions, %d of several streams", len(pub.msgs), several)
	if several == 0 {
		t.Error("no message holds several streams of its partition")
	}
}

// TestRelayPace: a worker that published less than Pace ago waits out the
// rest before it publishes again, so that its partition's events share a
// message; an idle one publishes at once; a backlog (a PublishBatch in
// its queue, or half of MaxInFlight unacknowledged) goes at once. The pace
// is an hour here: whatever is published in the test's time did not wait
// for it.
func TestRelayPace(t *testing.T) {
	t.Parallel()
	kafkatest.Deadline(t, 90*time.Second)
	for _, c := range []struct {
		name                  string
		opts                  kafka.RelayOptions
		parts, backlogN, want int // want: events published at once, the first included
	}{
		// The waiting event and 15 more fill the queue: all go.
		{"a full queue", kafka.RelayOptions{Workers: 1, PublishBatch: 16}, 1, 16, 17},
		// Those above half of MaxInFlight go; the rest wait for the pace.
		{"half of MaxInFlight unacknowledged", kafka.RelayOptions{Workers: 2, PublishBatch: 512, MaxBatch: 8, MaxInFlight: 16}, 2, 16, 9},
	} {
		t.Run(c.name, func(t *testing.T) {
			store := openStore(t)
			pub := &partitionedPublisher{parts: int32(c.parts)}
			o := c.opts
			o.Pace, o.Logger = time.Hour, quiet
			r := kafka.NewRelay(store, pub, &kafka.MemoryCheckpoint{}, o)
			stop := runRelay(t, r)
			defer stop() //nolint:errcheck
			streams := streamNames(8, "link")
			waitPublished := func(n int, what string) {
				t.Helper()
				kafkatest.Eventually(t, 30*time.Second, func() bool { return pub.published() >= n },
					func() string { return fmt.Sprintf("%s: %d of %d events published", what, pub.published(), n) })
			}

			// Idle: the first event goes at once.
			if _, err := appendOne(store, streams[0], 0); err != nil {
				t.Fatal(err)
			}
			waitPublished(1, "an idle worker")
			// Busy: the next waits for the pace.
			if _, err := appendOne(store, streams[0], 1); err != nil {
				t.Fatal(err)
			}
			time.Sleep(500 * time.Millisecond)
			if n := pub.published(); n != 1 {
				t.Fatalf("%d events published within 0.5 s of a publish, with a pace of an hour", n)
			}
			// A backlog goes at once.
			for i := range c.backlogN {
				s := streams[1+i%(len(streams)-1)]
				if _, err := appendOne(store, s, uint64(i/(len(streams)-1))); err != nil {
					t.Fatal(err)
				}
			}
			waitPublished(c.want, "a backlog")
		})
	}
}
