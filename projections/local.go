package projections

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/pubsub/gochannel"

	"github.com/linkd/linkd/eventstore"
	"github.com/linkd/linkd/internal/bus"
)

// LocalOptions tune the in-process runner.
type LocalOptions struct {
	// MaxBatch bounds the events of one delivery (default 4096).
	MaxBatch int
	// Linger is how long a delivery waits for more events once LingerAfter
	// events were already waiting (defaults 5 ms and 16; a negative Linger
	// turns it off).
	Linger      time.Duration
	LingerAfter int
	Logger      *slog.Logger
}

// LocalRunner feeds projectors in process. For each projector a feeder reads
// the global log after the projector's own checkpoint and publishes batches
// of the events it needs through an in-process Watermill bus (gochannel,
// each publish blocking until the projector has acknowledged it); the
// projector applies each batch in one transaction with its checkpoint and
// acknowledges. Each projector goes at its own pace, so a slow one (such as
// ClickHouse) never delays another.
type LocalRunner struct {
	store   eventstore.Store
	opts    LocalOptions
	pubsub  *gochannel.GoChannel
	entries []*entry
}

type entry struct {
	p  Projector
	wm *Watermark
}

// NewLocalRunner prepares a runner; Run starts it.
func NewLocalRunner(store eventstore.Store, projectors []Projector, opts LocalOptions) *LocalRunner {
	if opts.MaxBatch <= 0 {
		opts.MaxBatch = 4096
	}
	if opts.Linger == 0 {
		opts.Linger = 5 * time.Millisecond
	}
	if opts.LingerAfter <= 0 {
		opts.LingerAfter = 16
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	r := &LocalRunner{
		store: store,
		opts:  opts,
		pubsub: gochannel.NewGoChannel(gochannel.Config{
			OutputChannelBuffer:            0,
			BlockPublishUntilSubscriberAck: true,
		}, watermill.NopLogger{}),
	}
	for _, p := range projectors {
		r.entries = append(r.entries, &entry{p: p, wm: NewWatermark(eventstore.Start)})
	}
	return r
}

// Watermark returns the watermark of the named projection, or nil.
func (r *LocalRunner) Watermark(name string) *Watermark {
	for _, e := range r.entries {
		if e.p.Name() == name {
			return e.wm
		}
	}
	return nil
}

// Watermarks returns every projection's watermark by name.
func (r *LocalRunner) Watermarks() map[string]*Watermark {
	m := make(map[string]*Watermark, len(r.entries))
	for _, e := range r.entries {
		m[e.p.Name()] = e.wm
	}
	return m
}

// LocalTopic is the in-process topic of a projection.
func LocalTopic(name string) string { return "projection." + name }

// Run feeds every projector until ctx ends. It returns nil on a clean stop.
func (r *LocalRunner) Run(ctx context.Context) error {
	defer r.pubsub.Close()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, 2*len(r.entries))
	for _, e := range r.entries {
		start, err := e.p.Checkpoint(ctx)
		if err != nil {
			return fmt.Errorf("projection %s: checkpoint: %w", e.p.Name(), err)
		}
		e.wm.Advance(start)
		msgs, err := r.pubsub.Subscribe(ctx, LocalTopic(e.p.Name()))
		if err != nil {
			return err
		}
		wg.Add(2)
		go func() {
			defer wg.Done()
			consume(ctx, e.p, msgs, r.opts.Logger)
		}()
		go func() {
			defer wg.Done()
			if err := r.feed(ctx, e, start); err != nil && ctx.Err() == nil {
				errs <- fmt.Errorf("projection %s: %w", e.p.Name(), err)
				cancel()
			}
		}()
	}
	wg.Wait()
	select {
	case err := <-errs:
		return err
	default:
		return nil
	}
}

// Relevant reports whether a projector consumes events of stream.
func Relevant(p Projector, stream string) bool {
	cat := eventstore.Category(stream)
	for _, c := range p.Categories() {
		if c == cat {
			return true
		}
	}
	return false
}

func (r *LocalRunner) feed(ctx context.Context, e *entry, start eventstore.Position) error {
	sub, err := r.store.SubscribeAll(ctx, start, eventstore.Filter{})
	if err != nil {
		return err
	}
	defer sub.Close()
	type item struct {
		ev  eventstore.RecordedEvent
		err error
	}
	ch := make(chan item, r.opts.MaxBatch)
	go func() {
		for {
			ev, err := sub.Recv(ctx)
			select {
			case ch <- item{ev, err}:
			case <-ctx.Done():
				return
			}
			if err != nil {
				return
			}
		}
	}()
	topic := LocalTopic(e.p.Name())
	batch := make([]eventstore.RecordedEvent, 0, r.opts.MaxBatch)
	for {
		var first item
		select {
		case first = <-ch:
		case <-ctx.Done():
			return nil
		}
		if first.err != nil {
			return first.err
		}
		batch = batch[:0]
		last := first.ev.Position
		if Relevant(e.p, first.ev.Stream) {
			batch = append(batch, first.ev)
		}
		n := 1
		take := func(it item) error {
			if it.err != nil {
				return it.err
			}
			n++
			last = it.ev.Position
			if Relevant(e.p, it.ev.Stream) {
				batch = append(batch, it.ev)
			}
			return nil
		}
	drain:
		for n < r.opts.MaxBatch {
			select {
			case it := <-ch:
				if err := take(it); err != nil {
					return err
				}
			default:
				break drain
			}
		}
		// Under load (several events were already waiting), wait a little
		// for more: one transaction for many events costs far less than
		// many small ones. A lone event goes at once, so a quiet system
		// answers writes without delay.
		if n >= r.opts.LingerAfter && n < r.opts.MaxBatch && r.opts.Linger > 0 {
			timer := time.NewTimer(r.opts.Linger)
		linger:
			for n < r.opts.MaxBatch {
				select {
				case it := <-ch:
					if err := take(it); err != nil {
						timer.Stop()
						return err
					}
				case <-timer.C:
					break linger
				case <-ctx.Done():
					break linger
				}
			}
			timer.Stop()
		}
		if len(batch) > 0 {
			if err := r.pubsub.Publish(topic, bus.EncodeBatch(batch)); err != nil {
				if ctx.Err() != nil {
					return nil
				}
				return err
			}
			if ctx.Err() != nil {
				return nil // the consumer may have stopped without applying
			}
		}
		e.wm.Advance(last)
	}
}

// consume applies delivered batches and acknowledges them; a failed batch is
// retried after a pause, so that nothing is skipped.
func consume(ctx context.Context, p Projector, msgs <-chan *message.Message, log *slog.Logger) {
	backoff := 50 * time.Millisecond
	for msg := range msgs {
		events, err := bus.Decode(msg)
		if err != nil {
			log.Error("projection: undecodable message dropped", "projection", p.Name(), "err", err)
			msg.Ack()
			continue
		}
		if err := p.Apply(ctx, events); err != nil {
			if ctx.Err() != nil || errors.Is(err, context.Canceled) {
				msg.Nack()
				return
			}
			log.Error("projection: apply failed; retrying", "projection", p.Name(), "err", err)
			select {
			case <-time.After(backoff):
			case <-ctx.Done():
			}
			if backoff < 5*time.Second {
				backoff *= 2
			}
			msg.Nack()
			continue
		}
		backoff = 50 * time.Millisecond
		msg.Ack()
	}
}

// Prefixes returns the stream prefixes of a projector's categories.
func Prefixes(p Projector) []string {
	cats := p.Categories()
	out := make([]string, len(cats))
	for i, c := range cats {
		out[i] = strings.TrimSuffix(c, "-") + "-"
	}
	return out
}
