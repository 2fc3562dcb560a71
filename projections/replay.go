package projections

import (
	"context"
	"fmt"

	"github.com/linkd/linkd/eventstore"
)

// ReplayOptions tune a replay.
type ReplayOptions struct {
	// PageSize is the number of events read per page (default 8192).
	PageSize int
	// ApplyBatch is the number of events applied per transaction (default
	// 65536): large batches let projectors fold many events of one row
	// (a link's clicks) into one write.
	ApplyBatch int
	// Progress, when set, is called after each applied batch with the
	// position reached and the head the replay runs to.
	Progress func(reached, head eventstore.Position, events uint64)
}

type page struct {
	events []Event
	last   eventstore.Position
	done   bool
	err    error
}

// Bounded is a projector whose replay stops before the head: where, after
// its Reset, ReplayBound says (the webhooks projection: where it had made
// messages up to; what follows is left to live processing).
type Bounded interface {
	ReplayBound() eventstore.Position
}

// Replay rebuilds a read model from the event store: it empties it, then
// applies every event it consumes, in global order, up to the head at the
// time the replay started. The result is the read model live processing
// builds from the same events. Reading the log and applying run in
// parallel.
func Replay(ctx context.Context, store eventstore.Store, p Projector, opts ReplayOptions) (uint64, error) {
	if opts.PageSize <= 0 {
		opts.PageSize = 8192
	}
	if opts.ApplyBatch <= 0 {
		opts.ApplyBatch = 65536
	}
	if err := p.Reset(ctx); err != nil {
		return 0, fmt.Errorf("replay %s: reset: %w", p.Name(), err)
	}
	head, err := store.Head(ctx)
	if err != nil {
		return 0, fmt.Errorf("replay %s: head: %w", p.Name(), err)
	}
	if b, ok := p.(Bounded); ok && b.ReplayBound().Less(head) {
		head = b.ReplayBound()
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// The reader runs up to a whole batch ahead: while one is applied,
	// the next is read.
	pages := make(chan page, max(4, opts.ApplyBatch/opts.PageSize))
	cats := p.Categories()
	go func() {
		defer close(pages)
		pos := eventstore.Start
		for pos.Less(head) {
			events, err := store.ReadAll(ctx, pos, opts.PageSize)
			if err != nil {
				pages <- page{err: err}
				return
			}
			if len(events) == 0 {
				break
			}
			pg := page{events: make([]Event, 0, len(events))}
			for _, ev := range events {
				if head.Less(ev.Position) {
					pg.done = true
					break
				}
				pos = ev.Position
				if inCategories(cats, ev.Stream) {
					pg.events = append(pg.events, Event{RecordedEvent: ev})
				}
			}
			pg.last = pos
			select {
			case pages <- pg:
			case <-ctx.Done():
				return
			}
			if pg.done {
				return
			}
		}
	}()
	var (
		applied uint64
		batch   = make([]Event, 0, opts.ApplyBatch)
		reached eventstore.Position
	)
	flush := func() error {
		if len(batch) > 0 {
			if err := p.Apply(ctx, batch); err != nil {
				return fmt.Errorf("replay %s: apply: %w", p.Name(), err)
			}
			applied += uint64(len(batch))
			batch = batch[:0]
		}
		if opts.Progress != nil {
			opts.Progress(reached, head, applied)
		}
		return nil
	}
	for pg := range pages {
		if pg.err != nil {
			return applied, fmt.Errorf("replay %s: read: %w", p.Name(), pg.err)
		}
		batch = append(batch, pg.events...)
		reached = pg.last
		if len(batch) >= opts.ApplyBatch {
			if err := flush(); err != nil {
				return applied, err
			}
		}
	}
	if err := ctx.Err(); err != nil {
		return applied, err
	}
	if err := flush(); err != nil {
		return applied, err
	}
	if f, ok := p.(Flusher); ok {
		if err := f.Flush(ctx); err != nil {
			return applied, fmt.Errorf("replay %s: flush: %w", p.Name(), err)
		}
	}
	return applied, nil
}
