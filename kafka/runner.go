package kafka

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	wmkafka "github.com/ThreeDotsLabs/watermill-kafka/v3/pkg/kafka"
	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/linkd/linkd/eventstore"
	"github.com/linkd/linkd/projections"
)

// RunnerOptions tune the Runner.
type RunnerOptions struct {
	// MaxBatch bounds the messages applied together (default 1024). A batch
	// holds at most one message per partition the instance owns, since a
	// partition's next message comes only after the previous one is
	// acknowledged.
	MaxBatch int
	// MaxEvents bounds the events applied together (default 16384, or a
	// Batcher projector's MaxBatch if larger). A message carries one event
	// or a batch of one partition's events (see Relay); messages are
	// kept whole, so a batch stops growing once it holds MaxEvents or more,
	// and always holds at least one message.
	MaxEvents int
	// Linger is how long a batch may wait for more messages after its first
	// one (default 1 ms; negative: take only what is there at once). It
	// stops waiting as soon as it holds a message of every partition that
	// delivered recently, since no more can come before the batch is
	// acknowledged, or when no message came for a quarter of Linger. Bigger batches mean fewer transactions; the cost is up to
	// Linger of latency when traffic is light.
	Linger time.Duration
	// RetryBackoff is the first pause after a failed Apply, doubled up to
	// 5 s (default 50 ms).
	RetryBackoff time.Duration
	// Static makes each projector's member of its group, per topic, a
	// static member (Config.GroupInstanceID: the projector's name and the
	// topic), so that the next process to run it takes its partitions at
	// once, even from one that was killed, rather than after a session
	// timeout. Only for one process at a time: the Pipeline's shared lease
	// (ADR 0125).
	Static bool
	Logger *slog.Logger
}

// Runner feeds projectors from Kafka. Each projector is a consumer
// group named after it (Name()) that subscribes to the topics of its
// categories; processes running the same projector join the same group,
// and Kafka shares the partitions among them. In a deployment the Pipeline
// runs it in one instance at a time, under the shared lease (ADR 0125),
// since the ClickHouse projectors trust what they remember of their
// tables. Committed offsets say where the next member resumes.
//
// The runner collects the messages available (at most one per partition),
// decodes their events (a message may carry several events of the
// partition's streams, in order) and applies them in one Apply, then acknowledges them all; when Apply
// fails it waits and rejects them (Nack), and Kafka redelivers them. Delivery
// is at least once (after a crash, a rebalance, or a relay that published
// twice), which projectors absorb by skipping (stream, version) pairs they
// have applied.
//
// Since a batch holds at most one message per partition, a projector
// applies at most (partitions it owns) × (events per message) / (Apply
// latency) events per second (ADR 0016).
//
// The runner reports each event it applies as done on its projector's
// Watermark. Reads follow writes through it when whoever delivers the
// events registers them on it first, and this instance is the only member
// of its groups (tests do: kafkatest.Registering); in a deployment events
// applied by another instance never report Done here, and the Pipeline's
// follower moves the watermark instead (ADR 0106).
type Runner struct {
	cfg     Config
	opts    RunnerOptions
	dec     projections.Decoder // shares each event's decoding between the projections
	entries []*groupEntry
}

type groupEntry struct {
	p         projections.Projector
	wm        *eventstore.Watermark
	maxEvents int
	applied   atomic.Uint64
	batches   atomic.Uint64
}

// NewRunner prepares a runner; Run starts it.
func NewRunner(cfg Config, projectors []projections.Projector, opts RunnerOptions) (*Runner, error) {
	var errs []error
	if err := cfg.Validate(); err != nil {
		errs = append(errs, err)
	}
	seen := map[string]bool{}
	for _, p := range projectors {
		switch {
		case p.Name() == "":
			errs = append(errs, errors.New("kafka: a projector has no name"))
		case seen[p.Name()]:
			errs = append(errs, fmt.Errorf("kafka: two projectors named %s", p.Name()))
		case len(p.Categories()) == 0:
			errs = append(errs, fmt.Errorf("kafka: projector %s has no categories", p.Name()))
		}
		seen[p.Name()] = true
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if opts.MaxBatch <= 0 {
		opts.MaxBatch = 1024
	}
	if opts.MaxEvents <= 0 {
		opts.MaxEvents = 16384
	}
	if opts.Linger == 0 {
		opts.Linger = time.Millisecond
	}
	if opts.RetryBackoff <= 0 {
		opts.RetryBackoff = 50 * time.Millisecond
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	r := &Runner{cfg: cfg.WithDefaults(), opts: opts}
	for _, p := range projectors {
		maxEvents := opts.MaxEvents
		if b, ok := p.(projections.Batcher); ok && b.MaxBatch() > maxEvents {
			maxEvents = b.MaxBatch()
		}
		r.entries = append(r.entries, &groupEntry{p: p, wm: eventstore.NewWatermark(eventstore.Start), maxEvents: maxEvents})
	}
	return r, nil
}

// Watermark returns the watermark of the named projection, or nil. The
// runner reports on it the events it applies (Done).
func (r *Runner) Watermark(name string) *eventstore.Watermark {
	for _, e := range r.entries {
		if e.p.Name() == name {
			return e.wm
		}
	}
	return nil
}

// RunnerStats count what one projection applied in this process.
type RunnerStats struct {
	// Events counts events handed to Apply in successful batches
	// (duplicates included: the projector skips them).
	Events uint64
	// Batches counts successful Apply calls.
	Batches uint64
}

// Stats returns the counters of the named projection.
func (r *Runner) Stats(name string) RunnerStats {
	for _, e := range r.entries {
		if e.p.Name() == name {
			return RunnerStats{Events: e.applied.Load(), Batches: e.batches.Load()}
		}
	}
	return RunnerStats{}
}

// Topics returns the topics a projector consumes.
func Topics(p projections.Projector) []string {
	cats := p.Categories()
	out := make([]string, len(cats))
	for i, c := range cats {
		out[i] = Topic(c)
	}
	return out
}

// Run consumes until ctx ends; it returns nil on a clean stop, or the error
// that kept a projection from subscribing.
func (r *Runner) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if !r.cfg.SkipTopicCreation {
		var topics []string
		for _, e := range r.entries {
			topics = append(topics, Topics(e.p)...)
		}
		if err := EnsureTopics(r.cfg, topics...); err != nil {
			return err
		}
	}
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	for _, e := range r.entries {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := r.runOne(ctx, e); err != nil {
				mu.Lock()
				errs = append(errs, fmt.Errorf("projection %s: %w", e.p.Name(), err))
				mu.Unlock()
				cancel()
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

func (r *Runner) runOne(ctx context.Context, e *groupEntry) error {
	log := r.opts.Logger.With("projection", e.p.Name())
	// Subscriptions end when their subscribers close; consuming stops
	// first, so that the batch in progress is applied and acknowledged
	// before. Each topic has a subscriber of its own: one member of the
	// group each, whose instance id names it when the members are static.
	subCtx, cancelSub := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelSub()
	var (
		subs  []*wmkafka.Subscriber
		chans []<-chan *message.Message
	)
	closeAll := func() error {
		var errs []error
		for _, s := range subs {
			errs = append(errs, s.Close())
		}
		return errors.Join(errs...)
	}
	fail := func(err error) error {
		cancelSub()
		_ = closeAll()
		return err
	}
	for _, topic := range Topics(e.p) {
		cfg := r.cfg
		if r.opts.Static {
			cfg.GroupInstanceID = e.p.Name() + "." + topic
		}
		sub, err := NewSubscriber(cfg, e.p.Name(), r.opts.Logger)
		if err != nil {
			return fail(err)
		}
		subs = append(subs, sub)
		msgs, err := sub.Subscribe(subCtx, topic)
		if err != nil {
			return fail(fmt.Errorf("subscribe %s: %w", topic, err))
		}
		chans = append(chans, msgs)
	}
	// One topic is read directly; several are merged.
	merged := chans[0]
	var fwd sync.WaitGroup
	if len(chans) > 1 {
		ch := make(chan *message.Message)
		for _, msgs := range chans {
			fwd.Add(1)
			go func() {
				defer fwd.Done()
				for m := range msgs {
					select {
					case ch <- m:
					case <-subCtx.Done():
						return
					}
				}
			}()
		}
		merged = ch
	}
	log.Debug("projection: consuming from kafka", "topics", Topics(e.p))
	r.consume(ctx, e, merged, log)
	cancelSub()
	err := closeAll()
	fwd.Wait()
	if err != nil {
		return fmt.Errorf("close subscriber: %w", err)
	}
	if ctx.Err() == nil {
		return errors.New("kafka subscription ended")
	}
	return nil
}

// consume applies batches until ctx ends.
func (r *Runner) consume(ctx context.Context, e *groupEntry, msgs <-chan *message.Message, log *slog.Logger) {
	backoff := r.opts.RetryBackoff
	batch := make([]*message.Message, 0, r.opts.MaxBatch)
	active := map[partKey]time.Time{}
	events := make([]projections.Event, 0, r.opts.MaxBatch)
	for {
		batch = batch[:0]
		select {
		case m, ok := <-msgs:
			if !ok {
				return
			}
			batch = append(batch, m)
		case <-ctx.Done():
			return
		}
		batch = r.collect(ctx, msgs, batch, active, e.maxEvents)

		events = events[:0]
		kept := batch[:0]
		for _, m := range batch {
			evs, err := Decode(m)
			if err != nil {
				log.Error("projection: undecodable message dropped", "message", m.UUID, "err", err)
				m.Ack()
				continue
			}
			for _, ev := range evs {
				events = append(events, r.dec.Event(ev))
			}
			kept = append(kept, m)
		}
		batch = kept
		if len(batch) == 0 {
			continue
		}
		if err := e.p.Apply(ctx, events); err != nil {
			if ctx.Err() == nil && !errors.Is(err, context.Canceled) {
				log.Error("projection: apply failed; retrying", "events", len(events), "retry_in", backoff, "err", err)
				select {
				case <-time.After(backoff):
				case <-ctx.Done():
				}
				backoff = min(2*backoff, 5*time.Second)
			}
			for _, m := range batch {
				m.Nack()
			}
			continue
		}
		backoff = r.opts.RetryBackoff
		e.applied.Add(uint64(len(events)))
		e.batches.Add(1)
		for _, m := range batch {
			m.Ack()
		}
		for i := range events {
			e.wm.Done(events[i].Position)
		}
	}
}

// partKey names a partition.
type partKey struct {
	topic     string
	partition int32
}

func partKeyOf(m *message.Message) (partKey, bool) {
	p, ok := PartitionOf(m)
	if !ok {
		return partKey{}, false
	}
	k, _ := StreamKey("", m)
	return partKey{TopicOf(k), p}, true
}

// activeWindow is how long a partition that delivered counts as active: a
// batch waits (up to Linger) for a message of every active partition.
const activeWindow = 2 * time.Second

// collect adds to batch the messages available now, up to MaxBatch messages
// or until they carry maxEvents events. With a
// Linger it waits up to Linger for more, but no longer than until the batch
// holds a message of every partition that delivered in the last
// activeWindow: since a partition delivers one message at a time, the batch
// cannot grow further.
func (r *Runner) collect(ctx context.Context, msgs <-chan *message.Message, batch []*message.Message, active map[partKey]time.Time, maxEvents int) []*message.Message {
	events := 0
	for _, m := range batch {
		events += EventCount(m)
	}
	room := func() bool { return len(batch) < r.opts.MaxBatch && events < maxEvents }
	if r.opts.Linger <= 0 {
		for room() {
			select {
			case m, ok := <-msgs:
				if !ok {
					return batch
				}
				batch = append(batch, m)
				events += EventCount(m)
			default:
				return batch
			}
		}
		return batch
	}
	now := time.Now()
	for k, seen := range active {
		if now.Sub(seen) > activeWindow {
			delete(active, k)
		}
	}
	inBatch := make(map[partKey]bool, len(active)+1)
	missing := len(active)
	add := func(m *message.Message) {
		k, ok := partKeyOf(m)
		if !ok || inBatch[k] {
			return
		}
		inBatch[k] = true
		if _, ok := active[k]; ok {
			missing--
		}
	}
	for _, m := range batch {
		add(m)
	}
	deadline := time.NewTimer(r.opts.Linger)
	defer deadline.Stop()
	gap := time.NewTimer(r.opts.Linger / 4)
	defer gap.Stop()
	for room() && missing > 0 {
		select {
		case m, ok := <-msgs:
			if !ok {
				return batch
			}
			batch = append(batch, m)
			events += EventCount(m)
			add(m)
			gap.Reset(r.opts.Linger / 4)
		case <-gap.C: // messages stopped coming: a partition has nothing
			missing = 0
		case <-deadline.C:
			missing = 0
		case <-ctx.Done():
			missing = 0
		}
	}
	// Take whatever else is already there.
	for room() {
		select {
		case m, ok := <-msgs:
			if !ok {
				return batch
			}
			batch = append(batch, m)
			events += EventCount(m)
			add(m)
		default:
			for k := range inBatch {
				active[k] = now
			}
			return batch
		}
	}
	for k := range inBatch {
		active[k] = now
	}
	return batch
}
