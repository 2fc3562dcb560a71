package kafka

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/IBM/sarama"
)

// GroupWatch reads consumer groups' progress, on one client for many
// reads.
type GroupWatch struct {
	client sarama.Client
	admin  sarama.ClusterAdmin
}

// NewGroupWatch connects to the brokers of cfg.
func NewGroupWatch(cfg Config) (*GroupWatch, error) {
	client, err := sarama.NewClient(cfg.Brokers, cfg.SaramaConsumerConfig())
	if err != nil {
		return nil, fmt.Errorf("kafka: %w", err)
	}
	admin, err := sarama.NewClusterAdminFromClient(client)
	if err != nil {
		client.Close()
		return nil, fmt.Errorf("kafka: %w", err)
	}
	return &GroupWatch{client: client, admin: admin}, nil
}

// Close closes the client.
func (g *GroupWatch) Close() error { return g.admin.Close() }

// WaitConsumed waits until consumer group has committed offsets at or past
// the end of every partition of topics, as the ends were when it was
// called: everything published before then has been consumed and
// acknowledged, by whichever member of the group. Topics that do not
// exist yet hold nothing to wait for.
func (g *GroupWatch) WaitConsumed(ctx context.Context, group string, topics []string) error {
	client, admin := g.client, g.admin
	if err := client.RefreshMetadata(topics...); err != nil && !errors.Is(err, sarama.ErrUnknownTopicOrPartition) {
		return fmt.Errorf("kafka: metadata: %w", err)
	}
	ends := map[string]map[int32]int64{}
	parts := map[string][]int32{}
	for _, topic := range topics {
		ps, err := client.Partitions(topic)
		if errors.Is(err, sarama.ErrUnknownTopicOrPartition) {
			continue
		}
		if err != nil {
			return fmt.Errorf("kafka: partitions of %s: %w", topic, err)
		}
		ends[topic] = map[int32]int64{}
		for _, p := range ps {
			end, err := client.GetOffset(topic, p, sarama.OffsetNewest)
			if err != nil {
				return fmt.Errorf("kafka: end of %s/%d: %w", topic, p, err)
			}
			start, err := client.GetOffset(topic, p, sarama.OffsetOldest)
			if err != nil {
				return fmt.Errorf("kafka: start of %s/%d: %w", topic, p, err)
			}
			if end > start {
				ends[topic][p] = end
				parts[topic] = append(parts[topic], p)
			}
		}
	}
	if len(parts) == 0 {
		return nil
	}
	for {
		offsets, err := admin.ListConsumerGroupOffsets(group, parts)
		if err != nil {
			return fmt.Errorf("kafka: offsets of %s: %w", group, err)
		}
		behind := 0
		for topic, ps := range parts {
			for _, p := range ps {
				b := offsets.GetBlock(topic, p)
				if b == nil || b.Err != sarama.ErrNoError || b.Offset < ends[topic][p] {
					behind++
				}
			}
		}
		if behind == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("kafka: group %s still behind on %d partitions: %w", group, behind, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}
