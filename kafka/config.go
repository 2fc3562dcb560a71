package kafka

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/IBM/sarama"
)

// Version is the protocol version linkd's Kafka clients speak: new
// enough for record headers and the idempotent producer (0.11), and the
// newest version Sarama covers fully. Sarama v1.48 or later is needed for
// consumer groups at versions >= 2.4 (older ones cannot decode the
// OffsetFetch answers of some brokers, kfake among them).
var Version = sarama.V2_8_0_0

// Config configures linkd's Kafka publisher and subscribers.
type Config struct {
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
	// GroupInstanceID, when set, makes a consumer a static member of its
	// group (KIP-345): a new consumer with the same id replaces it at once,
	// with its partitions, rather than after its session timed out, and it
	// does not leave the group when it closes. Runner sets it per topic
	// when RunnerOptions.Static.
	GroupInstanceID string
}

// Defaults of Config.
const (
	DefaultPartitions        int32 = 12
	DefaultReplicationFactor int16 = 1
	DefaultClientID                = "linkd"
	DefaultCommitInterval          = time.Second
	DefaultHeartbeatInterval       = 300 * time.Millisecond
	DefaultSessionTimeout          = 10 * time.Second
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
func (c Config) WithDefaults() Config {
	if c.Partitions == 0 {
		c.Partitions = DefaultPartitions
	}
	if c.ReplicationFactor == 0 {
		c.ReplicationFactor = DefaultReplicationFactor
	}
	if c.ClientID == "" {
		c.ClientID = DefaultClientID
	}
	if c.CommitInterval == 0 {
		c.CommitInterval = DefaultCommitInterval
	}
	if c.HeartbeatInterval == 0 {
		c.HeartbeatInterval = DefaultHeartbeatInterval
	}
	if c.SessionTimeout == 0 {
		c.SessionTimeout = DefaultSessionTimeout
	}
	return c
}

// Validate reports every problem of c at once. Unset fields that have
// defaults are not problems.
func (c Config) Validate() error {
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
func (c Config) saramaConfig() *sarama.Config {
	sc := sarama.NewConfig()
	sc.Version = Version
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
func (c Config) SaramaProducerConfig() *sarama.Config {
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
func (c Config) SaramaConsumerConfig() *sarama.Config {
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
	sc.Consumer.Group.InstanceId = c.GroupInstanceID
	return sc
}
