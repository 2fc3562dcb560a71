package kafka_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/linkd/linkd/eventstore"
	"github.com/linkd/linkd/kafka"
	"github.com/linkd/linkd/kafka/kafkatest"
	"github.com/linkd/linkd/projections"
)

// testLease grants the relay's and the shared lease at once, as a store
// with one process.
type testLease struct{ acquired, shared atomic.Int32 }

func (l *testLease) AcquireLease(ctx context.Context, name string) (context.Context, func(), error) {
	switch name {
	case kafka.RelayLease:
		l.acquired.Add(1)
	case kafka.SharedLease:
		l.shared.Add(1)
	default:
		return nil, nil, fmt.Errorf("lease %q, want %q or %q", name, kafka.RelayLease, kafka.SharedLease)
	}
	held, release := context.WithCancel(ctx)
	return held, release, nil
}

// testCheckpoints keeps named positions, raised only, as a shared store.
type testCheckpoints struct {
	mu sync.Mutex
	at map[string]eventstore.Position
}

func (c *testCheckpoints) LoadCheckpoint(_ context.Context, name string) (eventstore.Position, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.at[name], nil
}

func (c *testCheckpoints) SaveCheckpoint(_ context.Context, name string, p eventstore.Position) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.at[name].Less(p) {
		c.at[name] = p
	}
	return nil
}

// TestPipeline runs one instance's share of the Kafka pipeline: its own
// read model follows the store, the shared one is fed through the relay
// (under the lease, its checkpoint in the store) and Kafka, and both
// watermarks reach the head: the shared one moved by the follower once the
// group has consumed what the relay published.
func TestPipeline(t *testing.T) {
	t.Parallel()
	kafkatest.Deadline(t, 120*time.Second)
	cfg := kafkatest.Start(t, 4)
	store := openStore(t)
	own, shared := kafkatest.NewModel(), kafkatest.NewModel()
	lease, cps := &testLease{}, &testCheckpoints{at: map[string]eventstore.Position{}}
	var leads, stops atomic.Int32
	p, err := kafka.NewPipeline(cfg, store, kafka.PipelineOptions{
		Local:      []projections.Projector{kafkatest.NewProjector("own", own, "link")},
		Shared:     []projections.Projector{kafkatest.NewProjector("shared", shared, "link", "clicks")},
		Checkpoint: kafka.StoreCheckpoint(cps, kafka.RelayLease),
		Lease:      lease,
		OnLead: func(*kafka.Relay) func() {
			leads.Add(1)
			return func() { stops.Add(1) }
		},
		Logger: quiet,
	})
	if err != nil {
		t.Fatal(err)
	}
	if p.Watermark("own") == nil || p.Watermark("shared") == nil || p.Watermark("other") != nil {
		t.Fatal("watermarks: want one for each projection and none for another name")
	}
	stop := background(t, "pipeline", p.Run)
	ctx := context.Background()

	appendRounds(t, store, streamNames(20, "link", "clicks"), 0, 5)
	head, err := store.Head(ctx)
	if err != nil {
		t.Fatal(err)
	}
	wctx, wcancel := context.WithTimeout(ctx, 60*time.Second)
	defer wcancel()
	for _, name := range []string{"own", "shared"} {
		if err := p.Watermark(name).Wait(wctx, head); err != nil {
			t.Fatalf("%s: watermark at %s, head %s: %v", name, p.Watermark(name).Position(), head, err)
		}
	}
	if a, _ := own.Counts(); a != 50 {
		t.Errorf("own read model applied %d events, want the 50 of its category", a)
	}
	if a, _ := shared.Counts(); a != 100 {
		t.Errorf("shared read model applied %d events, want 100", a)
	}
	if at, _ := cps.LoadCheckpoint(ctx, kafka.RelayLease); at.Less(head) {
		t.Errorf("relay checkpoint %s in the store, head %s", at, head)
	}
	if err := stop(); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if lease.acquired.Load() != 1 || leads.Load() != 1 || stops.Load() != 1 || lease.shared.Load() != 1 {
		t.Errorf("relay's lease taken %d times, OnLead called %d times, its stop %d, shared lease taken %d times: want 1 each",
			lease.acquired.Load(), leads.Load(), stops.Load(), lease.shared.Load())
	}
}

// TestPipelineRetriesTheSharedReadModels: a pipeline without a lease (one
// process) whose Kafka refuses to make topics at first: the shared read
// model's consumers fail, and start again a second later, rather than
// stopping the instance's projections; every event reaches both models.
func TestPipelineRetriesTheSharedReadModels(t *testing.T) {
	t.Parallel()
	kafkatest.Deadline(t, 120*time.Second)
	cfg, cluster := kafkatest.StartCluster(t, 4)
	var refused atomic.Int32
	until := time.Now().Add(1500 * time.Millisecond)
	cluster.ControlKey(int16(kmsg.CreateTopics), func(kr kmsg.Request) (kmsg.Response, error, bool) {
		cluster.KeepControl()
		if time.Now().After(until) {
			return nil, nil, false
		}
		refused.Add(1)
		req := kr.(*kmsg.CreateTopicsRequest)
		resp := req.ResponseKind().(*kmsg.CreateTopicsResponse)
		for _, rt := range req.Topics {
			st := kmsg.NewCreateTopicsResponseTopic()
			st.Topic = rt.Topic
			st.ErrorCode = kerr.PolicyViolation.Code
			resp.Topics = append(resp.Topics, st)
		}
		return resp, nil, true
	})
	store := openStore(t)
	own, shared := kafkatest.NewModel(), kafkatest.NewModel()
	p, err := kafka.NewPipeline(cfg, store, kafka.PipelineOptions{
		Local:      []projections.Projector{kafkatest.NewProjector("own", own, "link")},
		Shared:     []projections.Projector{kafkatest.NewProjector("shared", shared, "link", "clicks")},
		Checkpoint: kafka.NewFileCheckpoint(t.TempDir() + "/relay.checkpoint"),
		Logger:     quiet,
	})
	if err != nil {
		t.Fatal(err)
	}
	stop := background(t, "pipeline", p.Run)
	appendRounds(t, store, streamNames(20, "link", "clicks"), 0, 5)
	head, err := store.Head(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	wctx, wcancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer wcancel()
	for _, name := range []string{"own", "shared"} {
		if err := p.Watermark(name).Wait(wctx, head); err != nil {
			t.Fatalf("%s: watermark at %s, head %s: %v", name, p.Watermark(name).Position(), head, err)
		}
	}
	if refused.Load() == 0 {
		t.Fatal("Kafka refused no topic: the test tested nothing")
	}
	if a, _ := shared.Counts(); a != 100 {
		t.Errorf("shared read model applied %d events, want 100", a)
	}
	if a, _ := own.Counts(); a != 50 {
		t.Errorf("own read model applied %d events, want 50", a)
	}
	if err := stop(); err != nil {
		t.Fatalf("Run: %v", err)
	}
}
