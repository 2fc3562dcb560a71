package esdb

import (
	"context"
	"fmt"
	"sync"

	"github.com/EventStore/EventStore-Client-Go/v4/esdb"

	"github.com/linkd/linkd/eventstore"
)

// Server-side filter windows: the server looks at up to searchWindow events
// per batch and sends a checkpoint every searchWindow*checkpointEvery
// events it has looked at. Checkpoints are dropped here (the caller keeps
// positions of the events it handles), so they are made rare.
const (
	searchWindow    = 64
	checkpointEvery = 16
)

// SubscribeAll implements eventstore.Store with a catch-up subscription to
// $all, filtered on the server. The subscription lasts until Close or until
// ctx is done.
func (s *Store) SubscribeAll(ctx context.Context, afterPos eventstore.Position, filter eventstore.Filter) (eventstore.Subscription, error) {
	db, err := s.client()
	if err != nil {
		return nil, err
	}
	sub, err := db.SubscribeToAll(ctx, esdb.SubscribeToAllOptions{
		From:               allPosition(afterPos),
		Filter:             subscriptionFilter(filter),
		MaxSearchWindow:    searchWindow,
		CheckpointInterval: checkpointEvery,
	})
	if err != nil {
		return nil, s.fail(ctx, db, "subscribe to $all", err)
	}
	sb := &subscription{
		sub:    sub,
		events: make(chan eventstore.RecordedEvent),
		done:   make(chan struct{}),
		exited: make(chan struct{}),
	}
	go sb.pump(ctx, afterPos, filter)
	return sb, nil
}

// subscription hands the client's events to Recv through a goroutine, so
// that Recv can wait on its own context: the client's Recv waits on nothing
// but the stream.
type subscription struct {
	sub    *esdb.Subscription
	events chan eventstore.RecordedEvent
	done   chan struct{} // closed by Close
	exited chan struct{} // closed when pump returns; err is set before
	err    error
	once   sync.Once
}

// pump delivers the events after afterPos that filter keeps, and skips the
// rest: checkpoints, caught-up and fell-behind notices, the event at
// afterPos itself (EventStoreDB starts at it), and events of system streams.
func (s *subscription) pump(ctx context.Context, afterPos eventstore.Position, filter eventstore.Filter) {
	defer close(s.exited)
	for {
		msg := s.sub.Recv()
		if d := msg.SubscriptionDropped; d != nil {
			s.err = fmt.Errorf("esdb: subscription dropped: %v: %w", d.Error, eventstore.ErrClosed)
			if ctx.Err() != nil {
				s.err = fmt.Errorf("esdb: subscription ended: %w: %w", eventstore.ErrClosed, ctx.Err())
			}
			return
		}
		e, ok := recorded(msg.EventAppeared)
		if !ok || !after(afterPos, e.Position) || !filter.Match(e.Stream) {
			continue
		}
		select {
		case s.events <- e:
		case <-s.done:
			return
		}
	}
}

// Recv implements eventstore.Subscription.
func (s *subscription) Recv(ctx context.Context) (eventstore.RecordedEvent, error) {
	select {
	case <-s.done:
		return eventstore.RecordedEvent{}, fmt.Errorf("esdb: subscription: %w", eventstore.ErrClosed)
	default:
	}
	if err := ctx.Err(); err != nil {
		return eventstore.RecordedEvent{}, err
	}
	select {
	case e := <-s.events:
		return e, nil
	case <-s.exited:
		return eventstore.RecordedEvent{}, s.err
	case <-s.done:
		return eventstore.RecordedEvent{}, fmt.Errorf("esdb: subscription: %w", eventstore.ErrClosed)
	case <-ctx.Done():
		return eventstore.RecordedEvent{}, ctx.Err()
	}
}

// Close implements eventstore.Subscription. It returns once the
// subscription's goroutine has stopped.
func (s *subscription) Close() error {
	s.once.Do(func() {
		close(s.done)
		s.sub.Close()
	})
	<-s.exited
	return nil
}
