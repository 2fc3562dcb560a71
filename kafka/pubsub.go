package kafka

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/IBM/sarama"
	wmkafka "github.com/ThreeDotsLabs/watermill-kafka/v3/pkg/kafka"
	"github.com/ThreeDotsLabs/watermill/message"
)

// StreamKey is the partition key of a message: a stream, so that the events
// of one aggregate stay in one partition, in order. It is MetaKey (set on
// batches of several streams, all of which the key's partition holds), else
// MetaStream (single-event messages and batches of one stream). A message
// with neither cannot go to Kafka.
func StreamKey(_ string, m *message.Message) (string, error) {
	if k := m.Metadata.Get(MetaKey); k != "" {
		return k, nil
	}
	s := m.Metadata.Get(MetaStream)
	if s == "" {
		return "", fmt.Errorf("%w: message %s has no %s to key it by", ErrBadMessage, m.UUID, MetaStream)
	}
	return s, nil
}

// Partitioned is a publisher that tells which partition of a topic a key
// goes to. The relay then puts the events of one partition in one message,
// whatever their streams (ADR 0121).
type Partitioned interface {
	PartitionOf(topic, key string) (int32, error)
}

// hashPartition is the partition of n that sarama's hash partitioner (the
// producer's, Config.SaramaProducerConfig) gives key: FNV-1a, as a signed
// 32-bit number, modulo n, made positive.
func hashPartition(key string, n int32) int32 {
	p := int32(fnv1a(key)) % n
	if p < 0 {
		p = -p
	}
	return p
}

// Marshaler turns messages into Kafka records keyed by
// stream, every metadata entry a header, and back.
func Marshaler() wmkafka.MarshalerUnmarshaler {
	return wmkafka.NewWithPartitioningMarshaler(StreamKey)
}

// Publisher publishes messages to Kafka, keyed by stream.
// Publish blocks until the brokers have acknowledged every message given
// (one round trip each); it is safe for concurrent use, and concurrent
// callers share the producer's requests. Before it first publishes to a
// topic it creates the topic with the configured partitions, unless
// SkipTopicCreation is set.
type Publisher struct {
	cfg    Config
	pub    *wmkafka.Publisher
	mu     sync.Mutex
	topics map[string]bool  // topics known to exist
	parts  map[string]int32 // partitions of the topics PartitionOf was asked about
}

// NewPublisher connects a publisher. logger may be nil.
func NewPublisher(cfg Config, logger *slog.Logger) (*Publisher, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.WithDefaults()
	pub, err := wmkafka.NewPublisher(wmkafka.PublisherConfig{
		Brokers:               cfg.Brokers,
		Marshaler:             Marshaler(),
		OverwriteSaramaConfig: cfg.SaramaProducerConfig(),
	}, wmLogger(logger))
	if err != nil {
		return nil, fmt.Errorf("kafka: publisher: %w", err)
	}
	return &Publisher{cfg: cfg, pub: pub, topics: map[string]bool{}, parts: map[string]int32{}}, nil
}

// Publish sends msgs to topic in order and waits for their acknowledgement.
func (p *Publisher) Publish(topic string, msgs ...*message.Message) error {
	if err := p.ensure(topic); err != nil {
		return err
	}
	if err := p.pub.Publish(topic, msgs...); err != nil {
		return fmt.Errorf("kafka: publish to %s: %w", topic, err)
	}
	return nil
}

func (p *Publisher) ensure(topic string) error {
	if p.cfg.SkipTopicCreation {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.topics[topic] {
		return nil
	}
	if err := EnsureTopics(p.cfg, topic); err != nil {
		return err
	}
	p.topics[topic] = true
	return nil
}

// PartitionOf is the partition of topic that key goes to. It makes the
// topic if needed and reads its partitions from Kafka once: partitions added
// to a topic later move keys to other partitions (for every Kafka producer),
// and reach the relay when it starts again.
func (p *Publisher) PartitionOf(topic, key string) (int32, error) {
	p.mu.Lock()
	n, ok := p.parts[topic]
	p.mu.Unlock()
	if !ok {
		if err := p.ensure(topic); err != nil {
			return 0, err
		}
		var err error
		if n, err = topicPartitions(p.cfg, topic); err != nil {
			return 0, err
		}
		p.mu.Lock()
		p.parts[topic] = n
		p.mu.Unlock()
	}
	return hashPartition(key, n), nil
}

// topicPartitions reads how many partitions topic has.
func topicPartitions(cfg Config, topic string) (int32, error) {
	admin, err := sarama.NewClusterAdmin(cfg.Brokers, cfg.saramaConfig())
	if err != nil {
		return 0, fmt.Errorf("kafka: admin: %w", err)
	}
	defer admin.Close()
	ds, err := admin.DescribeTopics([]string{topic})
	if err != nil {
		return 0, fmt.Errorf("kafka: describe topic %s: %w", topic, err)
	}
	if len(ds) != 1 || ds[0].Err != sarama.ErrNoError || len(ds[0].Partitions) == 0 {
		e := error(errors.New("no partitions"))
		if len(ds) == 1 && ds[0].Err != sarama.ErrNoError {
			e = ds[0].Err
		}
		return 0, fmt.Errorf("kafka: describe topic %s: %w", topic, e)
	}
	return int32(len(ds[0].Partitions)), nil
}

// Close flushes and closes the producer.
func (p *Publisher) Close() error { return p.pub.Close() }

// NewSubscriber makes a subscriber in consumer group group (a
// projection's name): each Subscribe joins the group for one topic, and the
// group's members share the topic's partitions. A new member starts at the
// oldest offset of partitions the group never committed. Watermill-kafka
// delivers at most one unacknowledged message per partition at a time and
// marks its offset when it is acknowledged; a Nack redelivers it after
// 100 ms. logger may be nil.
func NewSubscriber(cfg Config, group string, logger *slog.Logger) (*wmkafka.Subscriber, error) {
	var errs []error
	if err := cfg.Validate(); err != nil {
		errs = append(errs, err)
	}
	if group == "" {
		errs = append(errs, errors.New("kafka: no consumer group"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	cfg = cfg.WithDefaults()
	sub, err := wmkafka.NewSubscriber(wmkafka.SubscriberConfig{
		Brokers:               cfg.Brokers,
		Unmarshaler:           Marshaler(),
		OverwriteSaramaConfig: cfg.SaramaConsumerConfig(),
		ConsumerGroup:         group,
		NackResendSleep:       100 * time.Millisecond,
		ReconnectRetrySleep:   time.Second,
		InitializeTopicDetails: &sarama.TopicDetail{
			NumPartitions:     cfg.Partitions,
			ReplicationFactor: cfg.ReplicationFactor,
		},
	}, wmLogger(logger))
	if err != nil {
		return nil, fmt.Errorf("kafka: subscriber: %w", err)
	}
	return sub, nil
}

// EnsureTopics creates the topics that do not exist yet, with cfg's
// partitions and replication factor. Existing topics are left as they are.
func EnsureTopics(cfg Config, topics ...string) error {
	if len(topics) == 0 {
		return nil
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	cfg = cfg.WithDefaults()
	admin, err := sarama.NewClusterAdmin(cfg.Brokers, cfg.saramaConfig())
	if err != nil {
		return fmt.Errorf("kafka: admin: %w", err)
	}
	defer admin.Close()
	detail := &sarama.TopicDetail{NumPartitions: cfg.Partitions, ReplicationFactor: cfg.ReplicationFactor}
	for _, t := range topics {
		err := admin.CreateTopic(t, detail, false)
		if err != nil && !errors.Is(err, sarama.ErrTopicAlreadyExists) {
			return fmt.Errorf("kafka: create topic %s: %w", t, err)
		}
	}
	return nil
}

// PartitionOf returns the partition a message delivered by a Kafka
// subscriber came from.
func PartitionOf(m *message.Message) (int32, bool) {
	return wmkafka.MessagePartitionFromCtx(m.Context())
}
