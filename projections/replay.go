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
	// Progress, when set, is called after each page with the position
	// reached and the head the replay runs to.
	Progress func(reached, head eventstore.Position, events uint64)
}

// Replay rebuilds a read model from the event store: it empties it, then
// applies every event it consumes, in global order, up to the head at the
// time the replay started. The result is the read model live processing
// builds from the same events.
func Replay(ctx context.Context, store eventstore.Store, p Projector, opts ReplayOptions) (uint64, error) {
	if opts.PageSize <= 0 {
		opts.PageSize = 8192
	}
	if err := p.Reset(ctx); err != nil {
		return 0, fmt.Errorf("replay %s: reset: %w", p.Name(), err)
	}
	head, err := store.Head(ctx)
	if err != nil {
		return 0, fmt.Errorf("replay %s: head: %w", p.Name(), err)
	}
	var (
		pos     = eventstore.Start
		applied uint64
		batch   = make([]eventstore.RecordedEvent, 0, opts.PageSize)
	)
	for pos.Less(head) {
		page, err := store.ReadAll(ctx, pos, opts.PageSize)
		if err != nil {
			return applied, fmt.Errorf("replay %s: read: %w", p.Name(), err)
		}
		if len(page) == 0 {
			break
		}
		batch = batch[:0]
		for _, ev := range page {
			if head.Less(ev.Position) {
				break
			}
			pos = ev.Position
			if Relevant(p, ev.Stream) {
				batch = append(batch, ev)
			}
		}
		if len(batch) > 0 {
			if err := p.Apply(ctx, batch); err != nil {
				return applied, fmt.Errorf("replay %s: apply: %w", p.Name(), err)
			}
			applied += uint64(len(batch))
		}
		if opts.Progress != nil {
			opts.Progress(pos, head, applied)
		}
		if head.Less(page[len(page)-1].Position) {
			break
		}
	}
	if f, ok := p.(Flusher); ok {
		if err := f.Flush(ctx); err != nil {
			return applied, fmt.Errorf("replay %s: flush: %w", p.Name(), err)
		}
	}
	return applied, nil
}
