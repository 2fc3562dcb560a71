package projections

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/linkd/linkd/eventstore"
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
// the global log after the projector's own checkpoint and hands it batches
// of the events it needs (Apply, one transaction with its checkpoint; a
// failed batch is retried until it applies). Each projector goes at its
// own pace, so a slow one (such as ClickHouse) never delays another; the
// feeders share each event's decoding (Decoder), so that an event is
// decoded once for all of them, or not at all when the store hands over
// the appender's value.
type LocalRunner struct {
	store   eventstore.Store
	opts    LocalOptions
	dec     Decoder
	entries []*entry
}

type entry struct {
	p        Projector
	wm       *eventstore.Watermark
	maxBatch int
	linger   time.Duration // r.opts.Linger, or the Lingerer's
	// lingerFor: the Lingerer's linger applies only to batches mostly of
	// this category (CategoryLingerer); others wait r.opts.Linger.
	lingerFor string
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
	r := &LocalRunner{store: store, opts: opts}
	for _, p := range projectors {
		max := r.opts.MaxBatch
		if b, ok := p.(Batcher); ok && b.MaxBatch() > max {
			max = b.MaxBatch()
		}
		linger := r.opts.Linger
		if l, ok := p.(Lingerer); ok && linger > 0 && l.Linger() > linger {
			linger = l.Linger()
		}
		lingerFor := ""
		if c, ok := p.(CategoryLingerer); ok {
			lingerFor = c.LingerFor()
		}
		r.entries = append(r.entries, &entry{p: p, wm: eventstore.NewWatermark(eventstore.Start), maxBatch: max, linger: linger, lingerFor: lingerFor})
	}
	return r
}

// Watermark returns the watermark of the named projection, or nil.
func (r *LocalRunner) Watermark(name string) *eventstore.Watermark {
	for _, e := range r.entries {
		if e.p.Name() == name {
			return e.wm
		}
	}
	return nil
}

// Run feeds every projector until ctx ends. It returns nil on a clean stop.
func (r *LocalRunner) Run(ctx context.Context) error {
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
		wg.Add(1)
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

// drainEvery is how often a lingering feeder whose subscription drains
// (eventstore.Drainer) takes the events that came.
const drainEvery = 10 * time.Millisecond

// carryAfter is how many events of other categories a projector is spared
// before the feeder hands it one to move its checkpoint past them.
const carryAfter = 8192

// Relevant reports whether a projector consumes events of stream.
func Relevant(p Projector, stream string) bool { return inCategories(p.Categories(), stream) }

// inCategories reports whether stream is of one of cats: Relevant for a
// feeder that asked the projector for its categories once (Categories
// may build its slice on every call, and feeders ask for every event).
func inCategories(cats []string, stream string) bool {
	return slices.Contains(cats, eventstore.Category(stream))
}

func (r *LocalRunner) feed(ctx context.Context, e *entry, start eventstore.Position) error {
	sub, err := r.store.SubscribeAll(ctx, start, eventstore.Filter{})
	if err != nil {
		return err
	}
	defer sub.Close()
	_, drains := sub.(eventstore.Drainer)
	// Recv with a context that is already done hands out what the
	// subscription has buffered without waiting (see eventstore.Subscription),
	// a Drainer everything committed.
	drained, cancelDrained := context.WithCancel(ctx)
	cancelDrained()
	batch := make([]Event, 0, e.maxBatch)
	var last eventstore.Position
	var lastEvent eventstore.RecordedEvent
	n, skipped := 0, 0
	cats := e.p.Categories()
	take := func(ev eventstore.RecordedEvent) {
		n++
		last = ev.Position
		if inCategories(cats, ev.Stream) {
			batch = append(batch, r.dec.Event(ev))
		} else {
			skipped++
			lastEvent = ev
		}
	}
	// more receives until the batch is full or recvCtx ends; it reports a
	// failure of the subscription itself.
	more := func(recvCtx context.Context) error {
		for n < e.maxBatch {
			ev, err := sub.Recv(recvCtx)
			if err != nil {
				if recvCtx.Err() != nil && ctx.Err() == nil {
					return nil // nothing more now
				}
				return err
			}
			take(ev)
		}
		return nil
	}
	for {
		ev, err := sub.Recv(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		clear(batch) // the last batch's events, applied: not kept alive here
		batch, n = batch[:0], 0
		take(ev)
		if err := more(drained); err != nil {
			return stopped(ctx, err)
		}
		// Under load (several events were already waiting), wait a little
		// for more: one transaction for many events costs far less than
		// many small ones. A lone event goes at once, so a quiet system
		// answers writes without delay, and a reader waiting for this
		// projection cuts the wait short (Watermark.Wanted).
		if n >= r.opts.LingerAfter && n < e.maxBatch && e.linger > 0 {
			linger := e.linger
			if e.lingerFor != "" && !mostly(batch, e.lingerFor) {
				linger = min(linger, r.opts.Linger)
			}
			lctx, cancel := context.WithTimeout(ctx, linger)
			go func() {
				select {
				case <-e.wm.Wanted():
					cancel()
				case <-lctx.Done():
				}
			}()
			var err error
			if drains {
				// Take what came every drainEvery until the linger ends or
				// the batch is full: receiving meanwhile woke every feeder
				// at every append, a select over five channels each time
				// (1.5% of linkd's CPU under redirects), and one sleep
				// through the whole linger took its events in one burst.
				tick := time.NewTicker(drainEvery)
				for err == nil && n < e.maxBatch && lctx.Err() == nil {
					select {
					case <-tick.C:
					case <-lctx.Done():
					}
					err = more(drained)
				}
				tick.Stop()
			} else {
				err = more(lctx)
			}
			cancel()
			if err != nil {
				return stopped(ctx, err)
			}
		}
		if len(batch) == 0 && skipped >= carryAfter {
			// A long run of events of other categories: hand the last of
			// them over, which the projector skips but records as applied,
			// so that its checkpoint does not stay behind them (a restart
			// would read them all again).
			batch = append(batch, Event{RecordedEvent: lastEvent})
		}
		if len(batch) > 0 {
			skipped = 0
			// The next batch reuses the slice (Projector.Apply keeps
			// none): a copy per batch and projector was 7% of the bytes a
			// redirect allocated.
			if !apply(ctx, e.p, batch, r.opts.Logger) {
				return nil // stopped before the batch applied
			}
		}
		e.wm.Advance(last)
	}
}

// mostly reports whether more than half of batch is of category cat.
func mostly(batch []Event, cat string) bool {
	n := 0
	for _, ev := range batch {
		if eventstore.Category(ev.Stream) == cat {
			n++
		}
	}
	return 2*n > len(batch)
}

// stopped is nil when ctx ended (a clean stop), else err.
func stopped(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// apply applies a batch, retrying a failed one after a pause, so that
// nothing is skipped. It reports false when ctx ended first.
func apply(ctx context.Context, p Projector, batch []Event, log *slog.Logger) bool {
	backoff := 50 * time.Millisecond
	for {
		err := p.Apply(ctx, batch)
		if err == nil {
			return true
		}
		if ctx.Err() != nil || errors.Is(err, context.Canceled) {
			return false
		}
		log.Error("projection: apply failed; retrying", "projection", p.Name(), "err", err)
		select {
		case <-time.After(backoff):
		case <-ctx.Done():
			return false
		}
		if backoff < 5*time.Second {
			backoff *= 2
		}
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
