package bus

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/IBM/sarama"
	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill-kafka/v3/pkg/kafka"
	"github.com/ThreeDotsLabs/watermill/message"
)

// KafkaVersion is the protocol version linkd's Kafka clients speak: new
// enough for record headers and the idempotent producer (0.11), and the
// newest version Sarama covers fully. Sarama v1.48 or later is needed for
// consumer groups at versions >= 2.4 (older ones cannot decode the
// OffsetFetch answers of some brokers, kfake among them).
var KafkaVersion = sarama.V2_8_0_0

// KafkaConfig configures linkd's Kafka publisher and subscribers.
type KafkaConfig struct {
	// Brokers are the bootstrap brokers, "host:port". Required.
	Brokers []string
	// Partitions of each topic linkd creates (default 12). The partition of
	// an event is chosen by hashing its stream name, so this number must
	// never change once a topic holds events.
	Partitions int32
	// ReplicationFactor of each topic linkd creates (default 1).
	ReplicationFactor int16
	// ClientID names linkd's connections in the broker's logs (default
	// "linkd").
	ClientID string
	// CommitInterval is how often a consumer commits the offsets of the
	// messages it has acknowledged (default 1 s). A crash re-delivers at most
	// this much; projectors are idempotent.
	CommitInterval time.Duration
	// HeartbeatInterval of consumer-group members (default 300 ms): a
	// rebalance completes within a few heartbeats.
	HeartbeatInterval time.Duration
	// SessionTimeout after which a silent consumer leaves its group (default
	// 10 s; brokers refuse less than their group.min.session.timeout.ms,
	// 6 s by default).
	SessionTimeout time.Duration
	// SkipTopicCreation stops linkd from creating its topics (with
	// Partitions and ReplicationFactor) before it first uses them: set it
	// when topics are managed outside linkd.
	SkipTopicCreation bool
}

// Defaults of KafkaConfig.
const (
	DefaultKafkaPartitions        int32 = 12
	DefaultKafkaReplicationFactor int16 = 1
	DefaultKafkaClientID                = "linkd"
	DefaultKafkaCommitInterval          = time.Second
	DefaultKafkaHeartbeatInterval       = 300 * time.Millisecond
	DefaultKafkaSessionTimeout          = 10 * time.Second
)

// ParseBrokers splits a comma-separated broker list (LINKD_KAFKA_BROKERS),
// trimming blanks and dropping empty entries. An empty string gives nil: no
// Kafka.
func ParseBrokers(s string) []string {
	var out []string
	for _, b := range strings.Split(s, ",") {
		if b = strings.TrimSpace(b); b != "" {
			out = append(out, b)
		}
	}
	return out
}

// WithDefaults returns c with every unset field at its default.
func (c KafkaConfig) WithDefaults() KafkaConfig {
	if c.Partitions == 0 {
		c.Partitions = DefaultKafkaPartitions
	}
	if c.ReplicationFactor == 0 {
		c.ReplicationFactor = DefaultKafkaReplicationFactor
	}
	if c.ClientID == "" {
		c.ClientID = DefaultKafkaClientID
	}
	if c.CommitInterval == 0 {
		c.CommitInterval = DefaultKafkaCommitInterval
	}
	if c.HeartbeatInterval == 0 {
		c.HeartbeatInterval = DefaultKafkaHeartbeatInterval
	}
	if c.SessionTimeout == 0 {
		c.SessionTimeout = DefaultKafkaSessionTimeout
	}
	return c
}

// Validate reports every problem of c at once. Unset fields that have
// defaults are not problems.
func (c KafkaConfig) Validate() error {
	var errs []error
	if len(c.Brokers) == 0 {
		errs = append(errs, errors.New("kafka: no brokers"))
	}
	for _, b := range c.Brokers {
		if _, port, err := net.SplitHostPort(b); err != nil || port == "" {
			errs = append(errs, fmt.Errorf("kafka: broker %q is not host:port", b))
		}
	}
	if c.Partitions < 0 {
		errs = append(errs, fmt.Errorf("kafka: partitions %d < 1", c.Partitions))
	}
	if c.ReplicationFactor < 0 {
		errs = append(errs, fmt.Errorf("kafka: replication factor %d < 1", c.ReplicationFactor))
	}
	if c.CommitInterval < 0 {
		errs = append(errs, errors.New("kafka: negative commit interval"))
	}
	if c.HeartbeatInterval < 0 {
		errs = append(errs, errors.New("kafka: negative heartbeat interval"))
	}
	if c.SessionTimeout < 0 {
		errs = append(errs, errors.New("kafka: negative session timeout"))
	}
	d := c.WithDefaults()
	if d.HeartbeatInterval > 0 && d.SessionTimeout > 0 && d.SessionTimeout < 3*d.HeartbeatInterval {
		errs = append(errs, fmt.Errorf("kafka: session timeout %s is less than 3 heartbeats of %s",
			d.SessionTimeout, d.HeartbeatInterval))
	}
	return errors.Join(errs...)
}

// saramaConfig is the Sarama configuration shared by linkd's producers,
// consumers and admin clients. c has its defaults.
func (c KafkaConfig) saramaConfig() *sarama.Config {
	sc := sarama.NewConfig()
	sc.Version = KafkaVersion
	sc.ClientID = c.ClientID
	// Watermill's publisher default waits 2 s between metadata retries, which
	// makes every failure slow; Sarama's own default is 250 ms.
	sc.Metadata.Retry.Max = 5
	sc.Metadata.Retry.Backoff = 100 * time.Millisecond
	sc.Net.DialTimeout = 10 * time.Second
	sc.Admin.Retry.Backoff = 100 * time.Millisecond
	sc.Admin.Timeout = 10 * time.Second
	return sc
}

// SaramaProducerConfig is the Sarama configuration of linkd's publisher:
// an idempotent producer (no duplicates and no reordering on retries within
// one producer session) that waits for every in-sync replica.
func (c KafkaConfig) SaramaProducerConfig() *sarama.Config {
	c = c.WithDefaults()
	sc := c.saramaConfig()
	sc.Producer.Return.Successes = true // the sync producer needs them
	sc.Producer.Return.Errors = true
	sc.Producer.Idempotent = true
	sc.Producer.RequiredAcks = sarama.WaitForAll
	sc.Net.MaxOpenRequests = 1
	sc.Producer.Retry.Max = 10
	sc.Producer.Retry.Backoff = 100 * time.Millisecond
	sc.Producer.Timeout = 10 * time.Second
	sc.Producer.Partitioner = sarama.NewHashPartitioner // key = stream
	return sc
}

// SaramaConsumerConfig is the Sarama configuration of linkd's consumers.
func (c KafkaConfig) SaramaConsumerConfig() *sarama.Config {
	c = c.WithDefaults()
	sc := c.saramaConfig()
	sc.Consumer.Return.Errors = true
	sc.Consumer.Offsets.Initial = sarama.OffsetOldest
	// Offsets of acknowledged messages are committed in the background and
	// when a session ends (clean stop or rebalance); watermill-kafka marks a
	// message only once it is acknowledged. Committing each message instead
	// would cost a round trip per event.
	sc.Consumer.Offsets.AutoCommit.Enable = true
	sc.Consumer.Offsets.AutoCommit.Interval = c.CommitInterval
	sc.Consumer.Retry.Backoff = 200 * time.Millisecond
	sc.Consumer.Group.Heartbeat.Interval = c.HeartbeatInterval
	sc.Consumer.Group.Session.Timeout = c.SessionTimeout
	sc.Consumer.Group.Rebalance.Retry.Backoff = 200 * time.Millisecond
	sc.Consumer.Group.Rebalance.Retry.Max = 10
	return sc
}

// StreamKey is the partition key of a message: its stream (MetaStream, set
// on single-event messages and on batch messages of one stream), so that the
// events of one aggregate stay in one partition, in order. A message without
// one (a batch of several streams) cannot go to Kafka.
func StreamKey(_ string, m *message.Message) (string, error) {
	s := m.Metadata.Get(MetaStream)
	if s == "" {
		return "", fmt.Errorf("%w: message %s has no %s to key it by", ErrBadMessage, m.UUID, MetaStream)
	}
	return s, nil
}

// KafkaMarshaler turns messages into Kafka records keyed by
// stream, every metadata entry a header, and back.
func KafkaMarshaler() kafka.MarshalerUnmarshaler {
	return kafka.NewWithPartitioningMarshaler(StreamKey)
}

// KafkaPublisher publishes messages to Kafka, keyed by stream.
// Publish blocks until the brokers have acknowledged every message given
// (one round trip each); it is safe for concurrent use, and concurrent
// callers share the producer's requests. Before it first publishes to a
// topic it creates the topic with the configured partitions, unless
// SkipTopicCreation is set.
type KafkaPublisher struct {
	cfg    KafkaConfig
	pub    *kafka.Publisher
	mu     sync.Mutex
	topics map[string]bool // topics known to exist
}

// NewKafkaPublisher connects a publisher. logger may be nil.
func NewKafkaPublisher(cfg KafkaConfig, logger *slog.Logger) (*KafkaPublisher, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.WithDefaults()
	pub, err := kafka.NewPublisher(kafka.PublisherConfig{
		Brokers:               cfg.Brokers,
		Marshaler:             KafkaMarshaler(),
		OverwriteSaramaConfig: cfg.SaramaProducerConfig(),
	}, wmLogger(logger))
	if err != nil {
		return nil, fmt.Errorf("kafka: publisher: %w", err)
	}
	return &KafkaPublisher{cfg: cfg, pub: pub, topics: map[string]bool{}}, nil
}

// Publish sends msgs to topic in order and waits for their acknowledgement.
func (p *KafkaPublisher) Publish(topic string, msgs ...*message.Message) error {
	if err := p.ensure(topic); err != nil {
		return err
	}
	if err := p.pub.Publish(topic, msgs...); err != nil {
		return fmt.Errorf("kafka: publish to %s: %w", topic, err)
	}
	return nil
}

func (p *KafkaPublisher) ensure(topic string) error {
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

// Close flushes and closes the producer.
func (p *KafkaPublisher) Close() error { return p.pub.Close() }

// NewKafkaSubscriber makes a subscriber in consumer group group (a
// projection's name): each Subscribe joins the group for one topic, and the
// group's members share the topic's partitions. A new member starts at the
// oldest offset of partitions the group never committed. Watermill-kafka
// delivers at most one unacknowledged message per partition at a time and
// marks its offset when it is acknowledged; a Nack redelivers it after
// 100 ms. logger may be nil.
func NewKafkaSubscriber(cfg KafkaConfig, group string, logger *slog.Logger) (*kafka.Subscriber, error) {
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
	sub, err := kafka.NewSubscriber(kafka.SubscriberConfig{
		Brokers:               cfg.Brokers,
		Unmarshaler:           KafkaMarshaler(),
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
func EnsureTopics(cfg KafkaConfig, topics ...string) error {
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

// WatermillLogger adapts slog to Watermill for linkd's other Watermill
// components (nil gives a logger that drops everything).
func WatermillLogger(l *slog.Logger) watermill.LoggerAdapter { return wmLogger(l) }

// wmLogger adapts slog to Watermill, one level down: Watermill's Info is
// chatty (every subscribe and reconnect), so it goes to Debug. Unlike
// Watermill's own adapter it checks the level before building attributes:
// watermill-kafka logs at Trace for every message.
func wmLogger(l *slog.Logger) watermill.LoggerAdapter {
	if l == nil {
		return watermill.NopLogger{}
	}
	return slogAdapter{l}
}

type slogAdapter struct{ l *slog.Logger }

func (a slogAdapter) log(level slog.Level, msg string, fields watermill.LogFields, extra ...any) {
	if !a.l.Enabled(context.Background(), level) {
		return
	}
	args := make([]any, 0, 2*len(fields)+len(extra))
	for k, v := range fields {
		args = append(args, k, v)
	}
	a.l.Log(context.Background(), level, msg, append(args, extra...)...)
}

func (a slogAdapter) Error(msg string, err error, fields watermill.LogFields) {
	a.log(slog.LevelError, msg, fields, "err", err)
}
func (a slogAdapter) Info(msg string, fields watermill.LogFields) {
	a.log(slog.LevelDebug, msg, fields)
}
func (a slogAdapter) Debug(msg string, fields watermill.LogFields) {
	a.log(slog.LevelDebug, msg, fields)
}
func (a slogAdapter) Trace(msg string, fields watermill.LogFields) {
	a.log(watermill.LevelTrace, msg, fields)
}
func (a slogAdapter) With(fields watermill.LogFields) watermill.LoggerAdapter {
	args := make([]any, 0, 2*len(fields))
	for k, v := range fields {
		args = append(args, k, v)
	}
	return slogAdapter{a.l.With(args...)}
}

// KafkaPartition returns the partition a message delivered by a Kafka
// subscriber came from.
func KafkaPartition(m *message.Message) (int32, bool) {
	return kafka.MessagePartitionFromCtx(m.Context())
}
