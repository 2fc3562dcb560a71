package bus_test

import (
	"context"
	"testing"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/pubsub/gochannel"

	"github.com/linkd/linkd/eventstore"
	"github.com/linkd/linkd/internal/bus"
	"github.com/linkd/linkd/internal/bus/bustest"
)

// A local batch crosses Watermill's Go channel (with PreserveContext) as the
// events themselves: Decode returns them in order, their Data not copied.
func TestLocalBatchCrossesTheGoChannel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ps := gochannel.NewGoChannel(gochannel.Config{PreserveContext: true}, watermill.NopLogger{})
	defer ps.Close()
	msgs, err := ps.Subscribe(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	events := []eventstore.RecordedEvent{bustest.Event("link-1", 0, 1), bustest.Event("link-2", 0, 2)}
	if err := ps.Publish("t", bus.LocalBatch(ctx, events)); err != nil {
		t.Fatal(err)
	}
	m := <-msgs
	got, err := bus.Decode(m)
	if err != nil {
		t.Fatal(err)
	}
	m.Ack()
	if len(got) != 2 || got[0].Stream != "link-1" || got[1].Stream != "link-2" || &got[0].Data[0] != &events[0].Data[0] {
		t.Fatalf("decoded %+v", got)
	}
	if n := bus.EventCount(m); n != 2 {
		t.Errorf("EventCount %d", n)
	}
}
