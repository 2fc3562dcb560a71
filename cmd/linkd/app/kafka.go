package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"time"

	"github.com/linkd/linkd/eventstore"
	"github.com/linkd/linkd/kafka"
	"github.com/linkd/linkd/projections"
)

// relayLease is the name of the lease the relay runs under, and of its
// checkpoint in a store shared by many instances.
const relayLease = "relay"

// kafkaMode runs a deployment's share of the Kafka pipeline in this
// process (ADR 0106):
//
//   - the instance's own read models (local) follow the event store
//     directly, as in process;
//   - the read models every instance shares (ClickHouse: shared) are fed
//     from Kafka, one consumer group each, whose partitions the instances
//     split between them;
//   - the relay publishes the log to Kafka in the one instance that holds
//     the relay's lease, from the checkpoint the last holder saved.
type kafkaMode struct {
	cfg    kafka.Config
	store  eventstore.Store
	local  *projections.LocalRunner
	shared *kafka.Runner
	projs  []projections.Projector // shared
	cp     kafka.CheckpointStore
	lease  eventstore.Leaser // nil: this process is the store's only one
	log    *slog.Logger
	m      *metrics
}

func newKafkaRunner(cfg Config, store, raw eventstore.Store, local, shared []projections.Projector, log *slog.Logger, m *metrics) (runner, error) {
	kc := kafka.Config{Brokers: kafka.ParseBrokers(cfg.KafkaBrokers), Partitions: int32(cfg.KafkaPartitions), ClientID: "linkd"}.WithDefaults()
	if err := kc.Validate(); err != nil {
		return nil, fmt.Errorf("kafka: %w", err)
	}
	r, err := kafka.NewRunner(kc, shared, kafka.RunnerOptions{Logger: log})
	if err != nil {
		return nil, fmt.Errorf("kafka: %w", err)
	}
	k := &kafkaMode{
		cfg: kc, store: store, shared: r, projs: shared, log: log, m: m,
		local: projections.NewLocalRunner(store, local, projections.LocalOptions{Logger: log}),
		cp:    kafka.NewFileCheckpoint(filepath.Join(cfg.DataDir, kafka.CheckpointFile)),
	}
	if cps, ok := raw.(eventstore.Checkpoints); ok {
		k.cp = sharedCheckpoint{cps}
	}
	k.lease, _ = raw.(eventstore.Leaser)
	return k, nil
}

// sharedCheckpoint keeps the relay's checkpoint in the event store, where
// the next holder of its lease finds it.
type sharedCheckpoint struct{ s eventstore.Checkpoints }

func (c sharedCheckpoint) Load(ctx context.Context) (eventstore.Position, error) {
	return c.s.LoadCheckpoint(ctx, relayLease)
}

func (c sharedCheckpoint) Save(ctx context.Context, p eventstore.Position) error {
	return c.s.SaveCheckpoint(ctx, relayLease, p)
}

func (k *kafkaMode) Watermark(name string) *eventstore.Watermark {
	if wm := k.local.Watermark(name); wm != nil {
		return wm
	}
	return k.shared.Watermark(name)
}

// Run runs the local projections, the shared consumers and, while this
// instance holds the lease, the relay, until ctx ends.
func (k *kafkaMode) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, 3)
	run := func(name string, f func(context.Context) error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := f(ctx); err != nil && ctx.Err() == nil {
				errs <- fmt.Errorf("%s: %w", name, err)
				cancel()
			}
		}()
	}
	run("projections", k.local.Run)
	if len(k.projs) > 0 {
		run("kafka consumers", k.shared.Run)
		for _, p := range k.projs {
			go k.follow(ctx, p)
		}
	}
	run("relay", k.runRelay)
	wg.Wait()
	close(errs)
	var all []error
	for err := range errs {
		all = append(all, err)
	}
	return errors.Join(all...)
}

// runRelay runs the relay whenever this instance holds the lease, until
// ctx ends.
func (k *kafkaMode) runRelay(ctx context.Context) error {
	pub, err := kafka.NewPublisher(k.cfg, k.log)
	if err != nil {
		return fmt.Errorf("kafka publisher: %w", err)
	}
	defer pub.Close()
	for ctx.Err() == nil {
		held, release := ctx, func() {}
		if k.lease != nil {
			held, release, err = k.lease.AcquireLease(ctx, relayLease)
			if err != nil {
				if ctx.Err() != nil {
					return nil
				}
				return fmt.Errorf("lease: %w", err)
			}
			k.log.Info("relay: this instance holds the lease")
		}
		k.m.relayLead.Set(1)
		rl := kafka.NewRelay(k.store, pub, k.cp, kafka.RelayOptions{Logger: k.log})
		wctx, stopWatch := context.WithCancel(held)
		go k.m.watchRelay(wctx, rl)
		err := rl.Run(held)
		stopWatch()
		release()
		k.m.relayLead.Set(0)
		if err != nil && ctx.Err() == nil {
			k.log.Error("relay stopped; it starts again under the lease", "err", err)
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
		}
	}
	return nil
}

// follow moves a shared projection's watermark: to the relay's checkpoint
// as it was before the end of every Kafka partition was read, once the
// projection's consumer group has committed past those ends. Every event
// up to that checkpoint had been published and acknowledged, so it was
// below the ends, and so it is applied: wherever in the deployment it was
// consumed (the group's members are the instances). It asks when a read
// waits, and every second otherwise.
func (k *kafkaMode) follow(ctx context.Context, p projections.Projector) {
	wm := k.shared.Watermark(p.Name())
	topics := kafka.Topics(p)
	t := time.NewTicker(time.Second)
	defer t.Stop()
	var watch *kafka.GroupWatch
	defer func() {
		if watch != nil {
			watch.Close()
		}
	}()
	for ctx.Err() == nil {
		at, err := k.cp.Load(ctx)
		if err == nil && watch == nil {
			watch, err = kafka.NewGroupWatch(k.cfg)
		}
		if err == nil {
			err = watch.WaitConsumed(ctx, p.Name(), topics)
		}
		if err == nil {
			wm.Advance(at)
		} else if ctx.Err() == nil {
			k.log.Debug("kafka: following a shared projection", "projection", p.Name(), "err", err)
		}
		select {
		case <-ctx.Done():
		case <-wm.Wanted():
		case <-t.C:
		}
	}
}
