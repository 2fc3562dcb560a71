package kafka

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/linkd/linkd/eventstore"
	"github.com/linkd/linkd/projections"
)

// RelayLease is the name of the lease the relay runs under, and of its
// checkpoint in a store shared by many instances (StoreCheckpoint).
const RelayLease = "relay"

// SharedLease is the name of the lease under which one instance at a time
// feeds the shared read models from Kafka (ADR 0125).
const SharedLease = "shared-projections"

// PipelineOptions configure a Pipeline.
type PipelineOptions struct {
	// Local are the instance's own read models: they follow the event store
	// directly, in process (projections.LocalRunner).
	Local []projections.Projector
	// Shared are the read models every instance shares (ClickHouse): fed
	// from Kafka, one consumer group each, by the one instance that holds
	// the shared lease (SharedLease) when Lease is set. ClickHouse has no
	// transactions: their projectors keep in memory what the tables hold,
	// which is right only while one process writes them (ADR 0125).
	Shared []projections.Projector
	// Checkpoint keeps the relay's checkpoint: in the event store
	// (StoreCheckpoint) when it is shared, else in a file. Required.
	Checkpoint CheckpointStore
	// Lease, when set, is taken before the relay runs, and before the
	// shared read models are fed, so that one instance of the deployment
	// relays, and one writes them, at a time. Nil: this process is the
	// store's only one.
	Lease eventstore.Leaser
	// OnLead, when set, is called each time this instance starts relaying,
	// with the relay; the function it returns is called when the relay
	// stops (metrics).
	OnLead func(*Relay) (stopped func())
	// OnShared, when set, is called each time this instance starts feeding
	// the shared read models; the function it returns is called when it
	// stops (metrics).
	OnShared func() (stopped func())
	Logger   *slog.Logger
}

// Pipeline runs a deployment's share of the Kafka pipeline in this
// process (ADR 0106):
//
//   - the instance's own read models (Local) follow the event store
//     directly, as in process;
//   - the read models every instance shares (Shared) are fed from Kafka by
//     a Runner in the one instance that holds the shared lease, and a
//     follower moves each one's watermark in every instance;
//   - the relay publishes the log to Kafka in the one instance that holds
//     the relay's lease, from the checkpoint the last holder saved.
type Pipeline struct {
	cfg    Config
	store  eventstore.Store
	local  *projections.LocalRunner
	shared *Runner
	opts   PipelineOptions
	log    *slog.Logger
}

// NewPipeline prepares a pipeline over store; Run starts it.
func NewPipeline(cfg Config, store eventstore.Store, opts PipelineOptions) (*Pipeline, error) {
	if opts.Checkpoint == nil {
		return nil, errors.New("kafka: a pipeline needs a checkpoint store")
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	shared, err := NewRunner(cfg, opts.Shared, RunnerOptions{Logger: opts.Logger, Static: opts.Lease != nil})
	if err != nil {
		return nil, err
	}
	return &Pipeline{
		cfg: cfg.WithDefaults(), store: store, shared: shared, opts: opts, log: opts.Logger,
		local: projections.NewLocalRunner(store, opts.Local, projections.LocalOptions{Logger: opts.Logger}),
	}, nil
}

// Watermark returns the watermark of the named projection, local or
// shared, or nil.
func (p *Pipeline) Watermark(name string) *eventstore.Watermark {
	if wm := p.local.Watermark(name); wm != nil {
		return wm
	}
	return p.shared.Watermark(name)
}

// Run runs the local projections, the shared consumers and, while this
// instance holds the lease, the relay, until ctx ends.
func (p *Pipeline) Run(ctx context.Context) error {
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
	run("projections", p.local.Run)
	if len(p.opts.Shared) > 0 {
		run("kafka consumers", p.runShared)
		for _, proj := range p.opts.Shared {
			go p.follow(ctx, proj)
		}
	}
	run("relay", p.runRelay)
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
func (p *Pipeline) runRelay(ctx context.Context) error {
	pub, err := NewPublisher(p.cfg, p.log)
	if err != nil {
		return fmt.Errorf("kafka publisher: %w", err)
	}
	defer pub.Close()
	return p.inTurns(ctx, RelayLease, "relay", func(held context.Context) error {
		rl := NewRelay(p.store, pub, p.opts.Checkpoint, RelayOptions{Logger: p.log})
		stopped := func() {}
		if p.opts.OnLead != nil {
			stopped = p.opts.OnLead(rl)
		}
		defer stopped()
		return rl.Run(held)
	})
}

// inTurns runs turn whenever this instance holds the lease name (always,
// without a Lease), until ctx ends. turn gets the lease's context, which
// ends when the lease is lost; the lease is given up once turn returns. A
// turn that fails is followed by another a second later.
func (p *Pipeline) inTurns(ctx context.Context, name, what string, turn func(held context.Context) error) error {
	for ctx.Err() == nil {
		held, release := ctx, func() {}
		if p.opts.Lease != nil {
			var err error
			held, release, err = p.opts.Lease.AcquireLease(ctx, name)
			if err != nil {
				if ctx.Err() != nil {
					return nil
				}
				return fmt.Errorf("lease: %w", err)
			}
			p.log.Info(what + ": this instance holds the lease")
		}
		err := turn(held)
		release()
		if err != nil && ctx.Err() == nil {
			p.log.Error(what+" stopped; it starts again under the lease", "err", err)
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
		}
	}
	return nil
}

// reloadTimeout bounds the Reload that ends a turn: writing what is
// pending, else stopping this process's INSERTs.
const reloadTimeout = 10 * time.Second

// runShared feeds the shared read models whenever this instance holds the
// shared lease (always, without a Lease), until ctx ends. Each turn starts
// and ends with Reload of the projectors, so that none trusts in memory
// what another instance may have written meanwhile (ADR 0125); the lease
// is given up only after the turn's last Apply returned and its INSERTs
// are over. A turn that ends in an error (Kafka unreachable, a
// subscription that ended) is followed by another after a second: the
// instance's own read models go on meanwhile.
func (p *Pipeline) runShared(ctx context.Context) error {
	return p.inTurns(ctx, SharedLease, "shared read models", func(held context.Context) error {
		if p.opts.OnShared != nil {
			defer p.opts.OnShared()()
		}
		p.reloadShared(held)
		err := p.shared.Run(held)
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), reloadTimeout)
		defer cancel()
		p.reloadShared(rctx)
		return err
	})
}

func (p *Pipeline) reloadShared(ctx context.Context) {
	for _, proj := range p.opts.Shared {
		if r, ok := proj.(projections.Reloader); ok {
			r.Reload(ctx)
		}
	}
}

// follow moves a shared projection's watermark: to the relay's checkpoint
// as it was before the end of every Kafka partition was read, once the
// projection's consumer group has committed past those ends. Every event
// up to that checkpoint had been published and acknowledged, so it was
// below the ends, and so it is applied: by whichever instance held the
// shared lease when it was consumed. It asks when a read
// waits, and every second otherwise.
func (p *Pipeline) follow(ctx context.Context, proj projections.Projector) {
	wm := p.shared.Watermark(proj.Name())
	topics := Topics(proj)
	t := time.NewTicker(time.Second)
	defer t.Stop()
	var watch *GroupWatch
	defer func() {
		if watch != nil {
			watch.Close()
		}
	}()
	for ctx.Err() == nil {
		at, err := p.opts.Checkpoint.Load(ctx)
		if err == nil && watch == nil {
			watch, err = NewGroupWatch(p.cfg)
		}
		if err == nil {
			err = watch.WaitConsumed(ctx, proj.Name(), topics)
		}
		if err == nil {
			wm.Advance(at)
		} else if ctx.Err() == nil {
			p.log.Debug("kafka: following a shared projection", "projection", proj.Name(), "err", err)
		}
		select {
		case <-ctx.Done():
		case <-wm.Wanted():
		case <-t.C:
		}
	}
}
