package bus_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill-kafka/v3/pkg/kafka"
	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/linkd/linkd/eventstore"
	"github.com/linkd/linkd/internal/bus"
	"github.com/linkd/linkd/projections/projectiontest/bustest"
)

func TestParseBrokers(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   string
		want []string
	}{
		{"empty", "", nil},
		{"blank", " , ,", nil},
		{"one", "kafka:9092", []string{"kafka:9092"}},
		{"several with blanks", " a:9092, b:9092 ,,c:9093 ", []string{"a:9092", "b:9092", "c:9093"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := bus.ParseBrokers(tt.in); !slices.Equal(got, tt.want) {
				t.Errorf("ParseBrokers(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestKafkaConfigValidate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		cfg  bus.KafkaConfig
		want []string // substrings of the error; none means valid
	}{
		{"defaults", bus.KafkaConfig{Brokers: []string{"localhost:9092"}}, nil},
		{"no brokers", bus.KafkaConfig{}, []string{"no brokers"}},
		{"everything wrong at once", bus.KafkaConfig{
			Brokers: []string{"nohost"}, Partitions: -1, ReplicationFactor: -2, CommitInterval: -1,
		}, []string{`"nohost" is not host:port`, "partitions -1", "replication factor -2", "commit interval"}},
		{"session shorter than heartbeats", bus.KafkaConfig{
			Brokers: []string{"k:1"}, HeartbeatInterval: time.Second, SessionTimeout: 2 * time.Second,
		}, []string{"less than 3 heartbeats"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			if len(tt.want) == 0 {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate() = nil, want errors %q", tt.want)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Validate() = %q, want it to mention %q", err, w)
				}
			}
		})
	}
}

func TestKafkaConfigDefaults(t *testing.T) {
	t.Parallel()
	c := bus.KafkaConfig{Brokers: []string{"k:9092"}}.WithDefaults()
	if c.Partitions != 12 || c.ReplicationFactor != 1 || c.ClientID != "linkd" {
		t.Errorf("defaults = %+v", c)
	}
	pc := c.SaramaProducerConfig()
	if err := pc.Validate(); err != nil {
		t.Errorf("producer config: %v", err)
	}
	if !pc.Producer.Idempotent || pc.Net.MaxOpenRequests != 1 || pc.Metadata.Retry.Backoff > 250*time.Millisecond {
		t.Errorf("producer config: idempotent %v, max open requests %d, metadata backoff %s",
			pc.Producer.Idempotent, pc.Net.MaxOpenRequests, pc.Metadata.Retry.Backoff)
	}
	cc := c.SaramaConsumerConfig()
	if err := cc.Validate(); err != nil {
		t.Errorf("consumer config: %v", err)
	}
	if cc.Consumer.Group.Heartbeat.Interval > time.Second {
		t.Errorf("heartbeat %s", cc.Consumer.Group.Heartbeat.Interval)
	}
}

func TestStreamKeyRefusesUnkeyedMessages(t *testing.T) {
	t.Parallel()
	m := bus.EncodeBatch([]eventstore.RecordedEvent{bustest.Event("link-1", 0, 1), bustest.Event("link-2", 0, 2)})
	if _, err := bus.KafkaMarshaler().Marshal("linkd.link", m); err == nil {
		t.Fatal("a batch message of two streams was keyed")
	}
	for _, m := range []*message.Message{
		bus.EncodeEvent(bustest.Event("link-1", 0, 1)),
		bus.EncodeBatch([]eventstore.RecordedEvent{bustest.Event("link-1", 0, 1), bustest.Event("link-1", 1, 2)}),
	} {
		k, err := bus.KafkaMarshaler().Marshal("linkd.link", m)
		if err != nil {
			t.Fatal(err)
		}
		if key, _ := k.Key.Encode(); string(key) != "link-1" {
			t.Errorf("key %q, want link-1", key)
		}
	}
	if n := bus.EventCount(bus.EncodeBatch([]eventstore.RecordedEvent{bustest.Event("link-1", 0, 1), bustest.Event("link-1", 1, 2)})); n != 2 {
		t.Errorf("EventCount of a 2-event batch: %d", n)
	}
	if n := bus.EventCount(bus.EncodeEvent(bustest.Event("link-1", 0, 1))); n != 1 {
		t.Errorf("EventCount of a single-event message: %d", n)
	}
}

// subscribe subscribes group to topic and returns the messages.
func subscribe(t *testing.T, ctx context.Context, cfg bus.KafkaConfig, group, topic string) <-chan *message.Message {
	t.Helper()
	sub, err := bus.NewKafkaSubscriber(cfg, group, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Close() })
	if err := sub.SubscribeInitialize(topic); err != nil {
		t.Fatal(err)
	}
	msgs, err := sub.Subscribe(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	return msgs
}

func TestKafkaCodecRoundTrip(t *testing.T) {
	t.Parallel()
	bustest.Deadline(t, 90*time.Second)
	cfg := bustest.Kafka(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	pub, err := bus.NewKafkaPublisher(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close()

	withMeta := bustest.Event("link-7b4e", 3, 42)
	withMeta.Metadata = []byte(`{"user":"u1","correlation":"c-9"}`)
	withMeta.Position = eventstore.Position{Commit: 42, Prepare: 41}
	withMeta.Time = time.Date(2026, 5, 1, 12, 30, 45, 123456789, time.UTC)
	withMeta.Data = []byte(`{"url":"https://example.com/ä?q=1"}`)
	plain := bustest.Event("link-7b4e", 4, 43)
	plain.Type = "LinkArchived"
	want := []eventstore.RecordedEvent{withMeta, plain}

	for _, e := range want {
		if err := pub.Publish(bus.TopicOf(e.Stream), bus.EncodeEvent(e)); err != nil {
			t.Fatal(err)
		}
	}
	msgs := subscribe(t, ctx, cfg, "codec", "linkd.link")
	for i, w := range want {
		var m *message.Message
		select {
		case m = <-msgs:
		case <-ctx.Done():
			t.Fatalf("message %d not received: %v", i, ctx.Err())
		}
		got, err := bus.Decode(m)
		if err != nil {
			t.Fatalf("decode: %v", err)
		}
		if len(got) != 1 || !reflect.DeepEqual(got[0], w) {
			t.Errorf("event %d:\n got %+v\nwant %+v", i, got, w)
		}
		if key, _ := kafka.MessageKeyFromCtx(m.Context()); string(key) != w.Stream {
			t.Errorf("key %q, want %q", key, w.Stream)
		}
		m.Ack()
	}
}

// TestKafkaPerKeyOrder publishes many streams concurrently (each stream's
// events in order, streams interleaved) over several partitions and brokers,
// and checks that each stream keeps one partition and arrives in order.
func TestKafkaPerKeyOrder(t *testing.T) {
	t.Parallel()
	bustest.Deadline(t, 120*time.Second)
	const (
		partitions = 8
		streams    = 200
		perStream  = 25
		publishers = 16
	)
	cfg := bustest.Kafka(t, partitions, bustest.NumBrokers(3))
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()

	pub, err := bus.NewKafkaPublisher(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close()
	// Subscribe before publishing: delivery and publishing overlap.
	msgs := subscribe(t, ctx, cfg, "order", "linkd.link")

	var wg sync.WaitGroup
	errs := make(chan error, publishers)
	for w := range publishers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for v := range uint64(perStream) {
				for s := w; s < streams; s += publishers {
					e := bustest.Event(fmt.Sprintf("link-%03d", s), v, 1)
					if err := pub.Publish("linkd.link", bus.EncodeEvent(e)); err != nil {
						errs <- err
						return
					}
				}
			}
		}()
	}

	next := map[string]uint64{}
	partitionOf := map[string]int32{}
	used := map[int32]bool{}
	for n := 0; n < streams*perStream; n++ {
		var m *message.Message
		select {
		case m = <-msgs:
		case err := <-errs:
			t.Fatalf("publish: %v", err)
		case <-ctx.Done():
			t.Fatalf("received %d of %d messages: %v", n, streams*perStream, ctx.Err())
		}
		evs, err := bus.Decode(m)
		if err != nil {
			t.Fatal(err)
		}
		e := evs[0]
		if e.Version != next[e.Stream] {
			t.Fatalf("%s: got version %d, want %d", e.Stream, e.Version, next[e.Stream])
		}
		next[e.Stream]++
		p, _ := kafka.MessagePartitionFromCtx(m.Context())
		if q, ok := partitionOf[e.Stream]; ok && q != p {
			t.Fatalf("%s in partitions %d and %d", e.Stream, q, p)
		}
		partitionOf[e.Stream] = p
		used[p] = true
		m.Ack()
	}
	wg.Wait()
	if len(used) != partitions {
		t.Errorf("streams landed in %d partitions of %d", len(used), partitions)
	}
}

func TestWatermillLogLevels(t *testing.T) {
	t.Parallel()
	var buf strings.Builder
	l := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	wl := bus.WatermillLogger(l).With(watermill.LogFields{"topic": "linkd.link"})
	wl.Trace("per message", nil)
	wl.Info("subscribed", watermill.LogFields{"group": "g"})
	wl.Error("failed", errors.New("boom"), nil)
	out := buf.String()
	for _, want := range []string{"level=DEBUG msg=subscribed", "group=g", "topic=linkd.link", "level=ERROR msg=failed", "err=boom"} {
		if !strings.Contains(out, want) {
			t.Errorf("log %q lacks %q", out, want)
		}
	}
	if strings.Contains(out, "per message") {
		t.Errorf("trace logged at debug level: %q", out)
	}
}
