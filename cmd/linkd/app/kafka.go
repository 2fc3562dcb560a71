package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"

	"github.com/linkd/linkd/eventstore"
	"github.com/linkd/linkd/internal/bus"
	"github.com/linkd/linkd/internal/relay"
	"github.com/linkd/linkd/projections"
)

// kafkaMode runs the relay (event store to Kafka) and the projectors'
// consumer groups in this process.
type kafkaMode struct {
	cfg    bus.KafkaConfig
	store  eventstore.Store
	runner *projections.KafkaRunner
	cp     relay.CheckpointStore
	projs  []projections.Projector
	log    *slog.Logger
	m      *metrics
}

func newKafkaRunner(cfg Config, store eventstore.Store, projs []projections.Projector, log *slog.Logger, m *metrics) (runner, error) {
	kc := bus.KafkaConfig{Brokers: bus.ParseBrokers(cfg.KafkaBrokers), Partitions: int32(cfg.KafkaPartitions), ClientID: "linkd"}.WithDefaults()
	if err := kc.Validate(); err != nil {
		return nil, fmt.Errorf("kafka: %w", err)
	}
	r, err := projections.NewKafkaRunner(kc, projs, projections.KafkaOptions{Logger: log})
	if err != nil {
		return nil, fmt.Errorf("kafka: %w", err)
	}
	return &kafkaMode{
		cfg: kc, store: store, runner: r, projs: projs, log: log, m: m,
		cp: relay.NewFileCheckpoint(filepath.Join(cfg.DataDir, relay.CheckpointFile)),
	}, nil
}

func (k *kafkaMode) Watermark(name string) *eventstore.Watermark { return k.runner.Watermark(name) }

// Run runs relay and consumers until ctx ends.
func (k *kafkaMode) Run(ctx context.Context) error {
	pub, err := bus.NewKafkaPublisher(k.cfg, k.log)
	if err != nil {
		return fmt.Errorf("kafka publisher: %w", err)
	}
	defer pub.Close()
	start, err := k.cp.Load(ctx)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := k.runner.Run(ctx); err != nil && ctx.Err() == nil {
			errs <- fmt.Errorf("kafka consumers: %w", err)
			cancel()
		}
	}()
	// Events up to the relay's checkpoint were published by an earlier run.
	// Before the relay publishes anything new, wait until each consumer
	// group has consumed what is in Kafka now; from then on the relay
	// registers every event it publishes with the watermarks.
	var followers []relay.Follower
	for _, p := range k.projs {
		if err := bus.WaitConsumed(ctx, k.cfg, p.Name(), projections.Topics(p)); err != nil {
			cancel()
			wg.Wait()
			return err
		}
		wm := k.runner.Watermark(p.Name())
		wm.Published(start)
		followers = append(followers, relay.Follower{Watermark: wm, Categories: p.Categories()})
	}
	rl := relay.New(k.store, pub, k.cp, relay.Options{Followers: followers, Logger: k.log})
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := rl.Run(ctx); err != nil && ctx.Err() == nil {
			errs <- fmt.Errorf("relay: %w", err)
			cancel()
		}
	}()
	go k.m.watchRelay(ctx, rl)
	wg.Wait()
	close(errs)
	var all []error
	for err := range errs {
		all = append(all, err)
	}
	return errors.Join(all...)
}
