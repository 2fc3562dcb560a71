package eventstore

import (
	"context"
	"sync"
	"time"
)

// Follower makes a read model follow the changes that every process on a
// shared store makes to some categories: Follow returns once the read
// model's watermark has passed the last such change answered anywhere
// before the call. It reads the categories' head once for all the callers
// that wait together (a caller gets a read that began after it called),
// so that the cost stays one small query per round trip however many
// redirects ask (ADR 0106).
type Follower struct {
	heads   CategoryHeads
	cats    []string
	wm      *Watermark
	timeout time.Duration
	alone   func() bool // nil: never known to be alone

	mu       sync.Mutex
	inflight *headRead // begun
	next     *headRead // to begin once inflight ends
}

type headRead struct {
	done chan struct{}
	at   Position
	err  error
}

// NewFollower follows categories of heads on wm, waiting at most timeout
// for a head and as much for the watermark.
//
// When heads is a Presence, Follow returns at once while this process is
// alone on the store: every write is its own, which its read models
// follow already.
func NewFollower(heads CategoryHeads, categories []string, wm *Watermark, timeout time.Duration) *Follower {
	f := &Follower{heads: heads, cats: categories, wm: wm, timeout: timeout}
	if p, ok := heads.(Presence); ok {
		f.alone = p.Alone
	}
	return f
}

// Follow waits until the watermark passes the categories' head as it is
// now. It returns ErrBehind when the watermark did not get there in time,
// and the head's read error: the caller serves what it has.
func (f *Follower) Follow(ctx context.Context) error {
	if f.alone != nil && f.alone() {
		return nil
	}
	r := f.join()
	select {
	case <-r.done:
	case <-ctx.Done():
		return ctx.Err()
	}
	if r.err != nil {
		return r.err
	}
	if f.wm.Reached(r.at) {
		return nil
	}
	wctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	if err := f.wm.Wait(wctx, r.at); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return ErrBehind
	}
	return nil
}

// join returns the read the caller waits for: the one in flight began
// before the call, so it is the next one.
func (f *Follower) join() *headRead {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.inflight == nil {
		f.inflight = &headRead{done: make(chan struct{})}
		go f.run()
		return f.inflight
	}
	if f.next == nil {
		f.next = &headRead{done: make(chan struct{})}
	}
	return f.next
}

// run reads heads for as long as callers wait for one.
func (f *Follower) run() {
	for {
		f.mu.Lock()
		r := f.inflight
		f.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), f.timeout)
		r.at, r.err = f.heads.CategoryHead(ctx, f.cats)
		cancel()
		close(r.done)
		f.mu.Lock()
		f.inflight, f.next = f.next, nil
		more := f.inflight != nil
		f.mu.Unlock()
		if !more {
			return
		}
	}
}
