package kafka_test

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	wmkafka "github.com/ThreeDotsLabs/watermill-kafka/v3/pkg/kafka"
	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/linkd/linkd/eventstore"
	"github.com/linkd/linkd/kafka"
	"github.com/linkd/linkd/kafka/kafkatest"
)

func TestStreamKeyRefusesUnkeyedMessages(t *testing.T) {
	t.Parallel()
	m := kafka.EncodeBatch([]eventstore.RecordedEvent{kafkatest.Event("link-1", 0, 1), kafkatest.Event("link-2", 0, 2)})
	if _, err := kafka.Marshaler().Marshal("linkd.link", m); err == nil {
		t.Fatal("a batch message of two streams was keyed")
	}
	for _, m := range []*message.Message{
		kafka.EncodeEvent(kafkatest.Event("link-1", 0, 1)),
		kafka.EncodeBatch([]eventstore.RecordedEvent{kafkatest.Event("link-1", 0, 1), kafkatest.Event("link-1", 1, 2)}),
	} {
		k, err := kafka.Marshaler().Marshal("linkd.link", m)
		if err != nil {
			t.Fatal(err)
		}
		if key, _ := k.Key.Encode(); string(key) != "link-1" {
			t.Errorf("key %q, want link-1", key)
		}
	}
	if n := kafka.EventCount(kafka.EncodeBatch([]eventstore.RecordedEvent{kafkatest.Event("link-1", 0, 1), kafkatest.Event("link-1", 1, 2)})); n != 2 {
		t.Errorf("EventCount of a 2-event batch: %d", n)
	}
	if n := kafka.EventCount(kafka.EncodeEvent(kafkatest.Event("link-1", 0, 1))); n != 1 {
		t.Errorf("EventCount of a single-event message: %d", n)
	}
}

// subscribe subscribes group to topic and returns the messages.
func subscribe(t *testing.T, ctx context.Context, cfg kafka.Config, group, topic string) <-chan *message.Message {
	t.Helper()
	sub, err := kafka.NewSubscriber(cfg, group, nil)
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
	kafkatest.Deadline(t, 90*time.Second)
	cfg := kafkatest.Start(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	pub, err := kafka.NewPublisher(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close()

	withMeta := kafkatest.Event("link-7b4e", 3, 42)
	withMeta.Metadata = []byte(`{"user":"u1","correlation":"c-9"}`)
	withMeta.Position = eventstore.Position{Commit: 42, Prepare: 41}
	withMeta.Time = time.Date(2026, 5, 1, 12, 30, 45, 123456789, time.UTC)
	withMeta.Data = []byte(`{"url":"https://example.com/ä?q=1"}`)
	plain := kafkatest.Event("link-7b4e", 4, 43)
	plain.Type = "LinkArchived"
	want := []eventstore.RecordedEvent{withMeta, plain}

	for _, e := range want {
		if err := pub.Publish(kafka.TopicOf(e.Stream), kafka.EncodeEvent(e)); err != nil {
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
		got, err := kafka.Decode(m)
		if err != nil {
			t.Fatalf("decode: %v", err)
		}
		if len(got) != 1 || !reflect.DeepEqual(got[0], w) {
			t.Errorf("event %d:\n got %+v\nwant %+v", i, got, w)
		}
		if key, _ := wmkafka.MessageKeyFromCtx(m.Context()); string(key) != w.Stream {
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
	kafkatest.Deadline(t, 120*time.Second)
	const (
		partitions = 8
		streams    = 200
		perStream  = 25
		publishers = 16
	)
	cfg := kafkatest.Start(t, partitions, kafkatest.NumBrokers(3))
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()

	pub, err := kafka.NewPublisher(cfg, nil)
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
					e := kafkatest.Event(fmt.Sprintf("link-%03d", s), v, 1)
					if err := pub.Publish("linkd.link", kafka.EncodeEvent(e)); err != nil {
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
		evs, err := kafka.Decode(m)
		if err != nil {
			t.Fatal(err)
		}
		e := evs[0]
		if e.Version != next[e.Stream] {
			t.Fatalf("%s: got version %d, want %d", e.Stream, e.Version, next[e.Stream])
		}
		next[e.Stream]++
		p, _ := wmkafka.MessagePartitionFromCtx(m.Context())
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
