package kafka_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/linkd/linkd/kafka"
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
			if got := kafka.ParseBrokers(tt.in); !slices.Equal(got, tt.want) {
				t.Errorf("ParseBrokers(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		cfg  kafka.Config
		want []string // substrings of the error; none means valid
	}{
		{"defaults", kafka.Config{Brokers: []string{"localhost:9092"}}, nil},
		{"no brokers", kafka.Config{}, []string{"no brokers"}},
		{"everything wrong at once", kafka.Config{
			Brokers: []string{"nohost"}, Partitions: -1, ReplicationFactor: -2, CommitInterval: -1,
		}, []string{`"nohost" is not host:port`, "partitions -1", "replication factor -2", "commit interval"}},
		{"session shorter than heartbeats", kafka.Config{
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

func TestConfigDefaults(t *testing.T) {
	t.Parallel()
	c := kafka.Config{Brokers: []string{"k:9092"}}.WithDefaults()
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
