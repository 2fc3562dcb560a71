package kafka_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/google/uuid"

	"github.com/linkd/linkd/eventstore"
	"github.com/linkd/linkd/kafka"
	"github.com/linkd/linkd/kafka/kafkatest"
	"github.com/linkd/linkd/projections"
)

// kafkaPath runs the Kafka path of linkd in the test: a runner over
// projectors and, per call of startRelay, a relay publishing to Kafka.
type kafkaPath struct {
	t      *testing.T
	cfg    kafka.Config
	store  eventstore.Store
	runner *kafka.Runner
	procs  []*kafkatest.Projector
}

func newKafkaPath(t *testing.T, partitions int32, brokers int, procs ...*kafkatest.Projector) *kafkaPath {
	t.Helper()
	k := &kafkaPath{t: t, cfg: kafkatest.Start(t, partitions, kafkatest.NumBrokers(brokers)), store: openStore(t), procs: procs}
	ps := make([]projections.Projector, len(procs))
	for i, p := range procs {
		ps[i] = p
	}
	var err error
	k.runner, err = kafka.NewRunner(k.cfg, ps, kafka.RunnerOptions{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func (k *kafkaPath) startRunner() (stop func()) { return runRunner(k.t, k.runner) }

// registering is the store as a relay that registers the events it reads
// on the runner's watermarks sees it (kafkatest.Registering).
func (k *kafkaPath) registering() eventstore.Store {
	var ws []kafkatest.Watch
	for _, p := range k.procs {
		ws = append(ws, kafkatest.Watch{Watermark: k.runner.Watermark(p.Name()), Categories: p.Categories()})
	}
	return kafkatest.Registering(k.store, ws...)
}

func (k *kafkaPath) publisher() *kafka.Publisher {
	pub, err := kafka.NewPublisher(k.cfg, quiet)
	if err != nil {
		k.t.Fatal(err)
	}
	k.t.Cleanup(func() { _ = pub.Close() })
	return pub
}

// waitApplied waits until every projector's model has applied everything
// of its categories in the store.
func (k *kafkaPath) waitApplied(models map[string]*kafkatest.Model) {
	k.t.Helper()
	for _, p := range k.procs {
		want := kafkatest.NewModel()
		if _, err := projections.Replay(context.Background(), k.store, kafkatest.NewProjector(p.Name(), want, p.Categories()...), projections.ReplayOptions{}); err != nil {
			k.t.Fatal(err)
		}
		total, _ := want.Counts()
		m := models[p.Name()]
		kafkatest.Eventually(k.t, 60*time.Second, func() bool {
			a, _ := m.Counts()
			return a >= total
		}, func() string {
			a, s := m.Counts()
			return fmt.Sprintf("%s applied %d of %d (%d duplicates)", p.Name(), a, total, s)
		})
	}
}

// TestKafkaReplayEquality: read models built live through relay, Kafka and
// runner equal those Replay builds from the store; and a read waiting on the
// watermark after a write sees that write.
func TestKafkaReplayEquality(t *testing.T) {
	t.Parallel()
	kafkatest.Deadline(t, 150*time.Second)
	models := map[string]*kafkatest.Model{"links": kafkatest.NewModel(), "clicks": kafkatest.NewModel(), "both": kafkatest.NewModel()}
	links := kafkatest.NewProjector("links", models["links"], "link")
	clicks := kafkatest.NewProjector("clicks", models["clicks"], "clicks")
	both := kafkatest.NewProjector("both", models["both"], "link", "clicks")
	k := newKafkaPath(t, 6, 3, links, clicks, both)

	streams := streamNames(60, "link", "clicks", "workspace")
	appendRounds(t, k.store, streams, 0, 10) // history before anything runs
	stopRunner := k.startRunner()
	r := kafka.NewRelay(k.registering(), k.publisher(), kafka.NewFileCheckpoint(filepath.Join(t.TempDir(), kafka.CheckpointFile)),
		kafka.RelayOptions{Workers: 8, Logger: quiet})
	stopRelay := runRelay(t, r)

	// Reads follow writes: after a write, waiting on the watermark of a
	// projection that consumes it is enough to read it.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	next := map[string]uint64{}
	for _, s := range streams {
		next[s] = 10
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 60 {
		s := streams[rng.IntN(len(streams))]
		if eventstore.Category(s) == "workspace" {
			continue
		}
		res, err := appendOne(k.store, s, next[s])
		if err != nil {
			t.Fatal(err)
		}
		next[s]++
		for _, p := range []*kafkatest.Projector{links, clicks, both} {
			if !projections.Relevant(p, s) {
				continue
			}
			if err := k.runner.Watermark(p.Name()).Wait(ctx, res.Position); err != nil {
				t.Fatalf("write %d to %s: %s's watermark: %v", i, s, p.Name(), err)
			}
			if v, ok, _ := p.AppliedVersion(ctx, s); !ok || v != res.NextExpectedVersion {
				t.Fatalf("write %d: %s read version %d (%v) of %s after waiting, want %d", i, p.Name(), v, ok, s, res.NextExpectedVersion)
			}
		}
	}
	for _, s := range streams { // bring every stream to version 20
		for v := next[s]; v < 20; v++ {
			if _, err := appendOne(k.store, s, v); err != nil {
				t.Fatal(err)
			}
		}
	}
	appendRounds(t, k.store, streams, 20, 25) // a burst, live
	k.waitApplied(models)
	if err := stopRelay(); err != nil {
		t.Fatal(err)
	}
	stopRunner()

	checkModel(t, k.store, models["links"], "links", "link")
	checkModel(t, k.store, models["clicks"], "clicks", "clicks")
	checkModel(t, k.store, models["both"], "both", "link", "clicks")
}

// TestKafkaRelayCrashLosesNothing: the relay's connection fails mid-way and
// its process dies with an old checkpoint; the restarted relay publishes
// again from there. The runner keeps running throughout: nothing is lost,
// the duplicates it receives change nothing.
func TestKafkaRelayCrashLosesNothing(t *testing.T) {
	t.Parallel()
	kafkatest.Deadline(t, 150*time.Second)
	m := kafkatest.NewModel()
	links := kafkatest.NewProjector("links", m, "link")
	k := newKafkaPath(t, 6, 1, links)
	streams := streamNames(50, "link")
	appendRounds(t, k.store, streams, 0, 20) // 1000 events
	stopRunner := k.startRunner()

	cp := &crashableCheckpoint{CheckpointStore: kafka.NewFileCheckpoint(filepath.Join(t.TempDir(), kafka.CheckpointFile))}
	failing := &failingPublisher{next: k.publisher(), n: 800, crashAt: 500, onCrash: cp.Crash}
	r1 := kafka.NewRelay(k.store, failing, cp, kafka.RelayOptions{
		Workers: 8, MaxBatch: 50, MaxInFlight: 200, PublishBatch: 4, SaveInterval: 5 * time.Millisecond, RetryBackoff: time.Millisecond, Logger: quiet,
	})
	stop := runRelay(t, r1)
	t0 := time.Now()
	kafkatest.Eventually(t, 60*time.Second, failing.failed.Load, func() string { return "publisher never failed" })
	t.Logf("failed after %s, stats %+v", time.Since(t0), r1.Stats())
	_ = stop()
	saved, _ := cp.Load(context.Background())
	if saved.IsZero() {
		t.Fatal("no checkpoint was saved before the crash")
	}

	appendRounds(t, k.store, streams, 20, 30) // written while no relay runs
	r2 := kafka.NewRelay(k.store, k.publisher(), cp.CheckpointStore, kafka.RelayOptions{Workers: 8, Logger: quiet})
	stop = runRelay(t, r2)
	waitAcked(t, r2, k.store)
	k.waitApplied(map[string]*kafkatest.Model{"links": m})
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	stopRunner()

	checkModel(t, k.store, m, "links", "link")
	applied, skipped := m.Counts()
	t.Logf("checkpoint at crash %s; first run published %d, second %d; applied %d, duplicates skipped %d",
		saved, r1.Stats().Published, r2.Stats().Published, applied, skipped)
	if applied != 1500 {
		t.Errorf("applied %d, want 1500", applied)
	}
	if skipped == 0 {
		t.Error("no duplicates reached the projector: the crash re-published nothing, so the test proves little")
	}
}

// TestKafkaRelayBatchesStreams: with many events of a few streams, the
// relay's messages carry several events each, all of one stream, keyed by
// it (one partition per stream), in order; a relay whose connection fails
// and whose process dies mid-way, restarted from its old checkpoint, loses
// nothing, and the runner applies every stream in order.
func TestKafkaRelayBatchesStreams(t *testing.T) {
	t.Parallel()
	kafkatest.Deadline(t, 150*time.Second)
	m := kafkatest.NewModel()
	links := kafkatest.NewProjector("links", m, "link")
	k := newKafkaPath(t, 6, 1, links)
	streams := streamNames(5, "link")
	appendRounds(t, k.store, streams, 0, 300) // 1500 events
	stopRunner := k.startRunner()

	cp := &crashableCheckpoint{CheckpointStore: kafka.NewFileCheckpoint(filepath.Join(t.TempDir(), kafka.CheckpointFile))}
	failing := &failingPublisher{next: k.publisher(), n: 900, crashAt: 600, onCrash: cp.Crash, delay: 2 * time.Millisecond}
	r1 := kafka.NewRelay(k.store, failing, cp, kafka.RelayOptions{
		Workers: 4, MaxBatch: 64, MaxInFlight: 256, MaxMessageEvents: 16, SaveInterval: 5 * time.Millisecond,
		RetryBackoff: time.Millisecond, Logger: quiet,
	})
	stop := runRelay(t, r1)
	kafkatest.Eventually(t, 60*time.Second, failing.failed.Load, func() string { return "publisher never failed" })
	_ = stop()
	saved, _ := cp.Load(context.Background())
	if saved.IsZero() {
		t.Fatal("no checkpoint was saved before the crash")
	}

	appendRounds(t, k.store, streams, 300, 400) // written while no relay runs
	// failing is no kafka.Partitioned: r1 published messages of one stream
	// each, as relays before ADR 0121 did; r2 publishes messages of one
	// partition. The checks below hold across the two, as across an upgrade.
	r2 := kafka.NewRelay(k.store, k.publisher(), cp.CheckpointStore, kafka.RelayOptions{Workers: 4, MaxMessageEvents: 16, Logger: quiet})
	stop = runRelay(t, r2)
	waitAcked(t, r2, k.store)
	k.waitApplied(map[string]*kafkatest.Model{"links": m})
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	stopRunner()
	checkModel(t, k.store, m, "links", "link")
	applied, skipped := m.Counts()
	if applied != 2000 {
		t.Errorf("applied %d, want 2000", applied)
	}
	if skipped == 0 {
		t.Error("no duplicates reached the projector: the crash re-published nothing, so the test proves little")
	}

	// The topic itself, read by another consumer group.
	sub, err := kafka.NewSubscriber(k.cfg, "raw", quiet)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	msgs, err := sub.Subscribe(ctx, "linkd.link")
	if err != nil {
		t.Fatal(err)
	}
	type sv struct {
		stream  string
		version uint64
	}
	seen := map[sv]bool{}
	partition := map[string]int32{}
	last := map[string]uint64{} // the version last read of each stream
	var nmsgs, nevents, multi, several int
	for len(seen) < 2000 {
		var msg *message.Message
		select {
		case msg = <-msgs:
		case <-ctx.Done():
			t.Fatalf("read %d of 2000 events from the topic", len(seen))
		}
		msg.Ack()
		evs, err := kafka.Decode(msg)
		if err != nil {
			t.Fatal(err)
		}
		nmsgs++
		nevents += len(evs)
		if len(evs) > 1 {
			multi++
		}
		if len(evs) > 16 {
			t.Errorf("a message of %d events, over MaxMessageEvents", len(evs))
		}
		// A message holds one partition's events, of one stream or several
		// (ADR 0121): a stream stays in one partition, its versions in
		// order without a gap (a run re-published after the crash repeats
		// versions, never skips one).
		p, _ := kafka.PartitionOf(msg)
		streams := map[string]bool{}
		for _, e := range evs {
			s := e.Stream
			streams[s] = true
			if q, ok := partition[s]; ok && q != p {
				t.Errorf("%s in partitions %d and %d", s, q, p)
			}
			partition[s] = p
			if l, ok := last[s]; ok && e.Version > l+1 {
				t.Fatalf("%s: version %d read after %d: a gap", s, e.Version, l)
			}
			last[s] = e.Version
			seen[sv{s, e.Version}] = true
		}
		if len(streams) > 1 {
			several++
		}
	}
	t.Logf("%d messages, %d events (%.1f per message), %d of several events, %d of several streams; duplicates skipped by the projector %d",
		nmsgs, nevents, float64(nevents)/float64(nmsgs), multi, several, skipped)
	if several == 0 {
		t.Error("no message holds several streams of its partition")
	}
	if multi < nmsgs/2 {
		t.Errorf("only %d of %d messages carry several events", multi, nmsgs)
	}
}

// TestPublisherPartitionOf: the partition PartitionOf gives a key is the one
// Kafka puts the key's messages in, on topics of any partition count (one
// made by an operator with 5, not linkd's 6), so that a message of several
// streams keyed by one of them holds only streams of its partition.
func TestPublisherPartitionOf(t *testing.T) {
	t.Parallel()
	kafkatest.Deadline(t, 90*time.Second)
	k := newKafkaPath(t, 6, 1)
	if err := kafka.EnsureTopics(kafka.Config{Brokers: k.cfg.Brokers, Partitions: 5}, "linkd.odd"); err != nil {
		t.Fatal(err)
	}
	pub := k.publisher()
	want := map[string]int32{}
	for _, topic := range []string{"linkd.link", "linkd.odd"} {
		for i := range 60 {
			stream := fmt.Sprintf("%s-%04d", strings.TrimPrefix(topic, "linkd."), i)
			p, err := pub.PartitionOf(topic, stream)
			if err != nil {
				t.Fatal(err)
			}
			want[stream] = p
			ev := eventstore.RecordedEvent{Stream: stream, Type: "T", Data: []byte("{}"), ID: uuid.New()}
			if err := pub.Publish(topic, kafka.EncodeBatch([]eventstore.RecordedEvent{ev})); err != nil {
				t.Fatal(err)
			}
		}
	}
	sub, err := kafka.NewSubscriber(k.cfg, "partitions", quiet)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	parts := map[string]map[int32]bool{}
	for _, topic := range []string{"linkd.link", "linkd.odd"} {
		msgs, err := sub.Subscribe(ctx, topic)
		if err != nil {
			t.Fatal(err)
		}
		parts[topic] = map[int32]bool{}
		for range 60 {
			var m *message.Message
			select {
			case m = <-msgs:
			case <-ctx.Done():
				t.Fatalf("%s: not every message came back", topic)
			}
			m.Ack()
			s := m.Metadata.Get(kafka.MetaStream)
			got, _ := kafka.PartitionOf(m)
			if got != want[s] {
				t.Errorf("%s went to partition %d; PartitionOf said %d", s, got, want[s])
			}
			parts[topic][got] = true
		}
	}
	if len(parts["linkd.link"]) != 6 || len(parts["linkd.odd"]) != 5 {
		t.Errorf("partitions used: %d of linkd.link (6), %d of linkd.odd (5)", len(parts["linkd.link"]), len(parts["linkd.odd"]))
	}
}
