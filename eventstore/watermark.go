package eventstore

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Watermark tells how far a projection has applied the global log, so that
// a read can wait until it sees a write ("reads follow writes").
//
// Whoever delivers events reports two things: Register(p) for each event the
// projection must apply, in position order, and Published(p) once every
// event up to p has been registered or found irrelevant. The projection
// reports Done(p) after applying (or skipping as duplicate) a registered
// event. A position q is reached when every registered event up to q is
// done and everything up to q was published.
//
// In process the feeder delivers one batch at a time, so it simply calls
// Advance after each applied batch.
//
// A reader that has to wait says so (Wanted): a feeder lingering for a
// bigger batch delivers what it has at once, so that lingering long under
// load costs readers nothing.
type Watermark struct {
	mu      sync.Mutex
	floor   Position // everything up to here was published
	queue   []Position
	done    map[Position]bool
	changed chan struct{}
	wanted  chan struct{} // one pending signal at most
}

// NewWatermark starts at position start (already applied).
func NewWatermark(start Position) *Watermark {
	return &Watermark{floor: start, done: map[Position]bool{}, changed: make(chan struct{}), wanted: make(chan struct{}, 1)}
}

// Wanted receives when a reader waits for a position not reached yet. The
// signal may be stale (the reader was served since): it only ever shortens
// a linger.
func (w *Watermark) Wanted() <-chan struct{} { return w.wanted }

func (w *Watermark) notifyLocked() {
	close(w.changed)
	w.changed = make(chan struct{})
}

// Advance records that everything up to p is applied.
func (w *Watermark) Advance(p Position) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.floor.Less(p) {
		w.floor = p
	}
	w.notifyLocked()
}

// Register records that the projection must apply the event at p.
func (w *Watermark) Register(p Position) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.queue = append(w.queue, p)
	w.done[p] = false
}

// Published records that every event up to p was registered or irrelevant.
func (w *Watermark) Published(p Position) { w.Advance(p) }

// Done records that the event at p was applied.
func (w *Watermark) Done(p Position) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, registered := w.done[p]; !registered {
		return // an event from before this process started
	}
	w.done[p] = true
	n := 0
	for n < len(w.queue) && w.done[w.queue[n]] {
		delete(w.done, w.queue[n])
		n++
	}
	if n > 0 {
		w.queue = append(w.queue[:0], w.queue[n:]...)
		w.notifyLocked()
	}
}

func (w *Watermark) reachedLocked(p Position) bool {
	if len(w.queue) > 0 {
		return p.Less(w.queue[0])
	}
	return !w.floor.Less(p)
}

// Reached reports whether every event up to p is applied.
func (w *Watermark) Reached(p Position) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.reachedLocked(p)
}

// Position is the furthest position known to be applied (the published
// floor when nothing is pending).
func (w *Watermark) Position() Position {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.floor
}

// Pending is the number of registered events not yet applied.
func (w *Watermark) Pending() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.queue)
}

// Wait blocks until p is reached or ctx ends.
func (w *Watermark) Wait(ctx context.Context, p Position) error {
	for {
		w.mu.Lock()
		if w.reachedLocked(p) {
			w.mu.Unlock()
			return nil
		}
		ch := w.changed
		w.mu.Unlock()
		select {
		case w.wanted <- struct{}{}:
		default: // a signal is pending already
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// HeadReader reads the end of the log: the position a read that must
// follow every write answered so far waits for (every Store is one).
type HeadReader interface {
	Head(ctx context.Context) (Position, error)
}

// ErrBehind is CatchUp's error when a watermark did not reach the head in
// time: the caller serves what the projection has, and may say so.
var ErrBehind = errors.New("eventstore: a projection did not catch up with the log in time")

// CatchUp is the one wait behind "reads follow writes": it reads the head
// of the log as it is now and waits, at most timeout in all, until every
// watermark (nil ones are skipped) has reached it. It returns nil when they
// have, ErrBehind when the timeout passed first, ctx's error when ctx
// ended, and the head's read error.
func CatchUp(ctx context.Context, head HeadReader, timeout time.Duration, marks ...*Watermark) error {
	if head == nil {
		return nil
	}
	at, err := head.Head(ctx)
	if err != nil {
		return fmt.Errorf("eventstore: head of the log: %w", err)
	}
	var wctx context.Context
	for _, wm := range marks {
		if wm == nil || wm.Reached(at) {
			continue
		}
		if wctx == nil {
			var cancel context.CancelFunc
			wctx, cancel = context.WithTimeout(ctx, timeout)
			defer cancel()
		}
		if err := wm.Wait(wctx, at); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return ErrBehind
		}
	}
	return nil
}
