package kafkatest

import (
	"context"

	"github.com/linkd/linkd/eventstore"
)

// Watch is a watermark and the categories of the events it waits for.
type Watch struct {
	Watermark  *eventstore.Watermark
	Categories []string
}

// Registering wraps store so that whoever subscribes to it (a relay)
// registers each event it reads on the watermarks of the watches whose
// categories hold it, before handing it on, and reports everything up to
// it as published (eventstore.Watermark). A Runner in the same test reports
// the events it applies as done, so a test can wait on the Runner's
// watermark after a write, as a read that follows writes does. A
// deployment moves the shared watermarks with the Pipeline's follower
// instead (ADR 0106). Subscribe once: a second subscription from the same
// position registers its events twice.
func Registering(store eventstore.Store, watches ...Watch) eventstore.Store {
	return registeringStore{Store: store, watches: watches}
}

type registeringStore struct {
	eventstore.Store
	watches []Watch
}

func (s registeringStore) SubscribeAll(ctx context.Context, after eventstore.Position, filter eventstore.Filter) (eventstore.Subscription, error) {
	sub, err := s.Store.SubscribeAll(ctx, after, filter)
	if err != nil {
		return nil, err
	}
	return registeringSub{Subscription: sub, watches: s.watches}, nil
}

type registeringSub struct {
	eventstore.Subscription
	watches []Watch
}

func (s registeringSub) Recv(ctx context.Context) (eventstore.RecordedEvent, error) {
	ev, err := s.Subscription.Recv(ctx)
	if err != nil {
		return ev, err
	}
	cat := eventstore.Category(ev.Stream)
	for _, w := range s.watches {
		for _, c := range w.Categories {
			if c == cat {
				w.Watermark.Register(ev.Position)
				break
			}
		}
		w.Watermark.Published(ev.Position)
	}
	return ev, nil
}
