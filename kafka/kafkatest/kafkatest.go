// Package kafkatest helps test what runs over Kafka: an in-process Kafka
// cluster (kfake, speaking the real protocol over TCP), hard test deadlines,
// and an idempotent in-memory projector that notices gaps and reordering.
package kafkatest

import (
	"context"
	"fmt"
	"maps"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/linkd/linkd/eventstore"
	"github.com/linkd/linkd/kafka"
	"github.com/linkd/linkd/projections"
)

// Deadline ends the whole test binary, with every goroutine's stack, if the
// test is still running after d. Kafka consumer-group joins that a client
// bug breaks retry forever rather than fail; this turns such a hang into a
// failure that says where it hung.
func Deadline(t testing.TB, d time.Duration) {
	t.Helper()
	name := t.Name()
	timer := time.AfterFunc(d, func() {
		buf := make([]byte, 1<<22)
		buf = buf[:runtime.Stack(buf, true)]
		fmt.Fprintf(os.Stderr, "kafkatest: %s exceeded its hard deadline of %s\n%s\n", name, d, buf)
		os.Exit(2)
	})
	t.Cleanup(func() { timer.Stop() })
}

// Start starts a kfake cluster for the test (closed at cleanup) and returns
// a config for it with test-friendly timings. Extra kfake options come
// after the defaults (1 broker).
func Start(t testing.TB, partitions int32, opts ...kfake.Opt) kafka.Config {
	t.Helper()
	cfg, _ := StartCluster(t, partitions, opts...)
	return cfg
}

// StartCluster is Start, also returning the cluster, for tests that
// control its requests.
func StartCluster(t testing.TB, partitions int32, opts ...kfake.Opt) (kafka.Config, *kfake.Cluster) {
	t.Helper()
	c, err := kfake.NewCluster(append([]kfake.Opt{kfake.NumBrokers(1)}, opts...)...)
	if err != nil {
		t.Fatalf("kfake: %v", err)
	}
	t.Cleanup(c.Close)
	return kafka.Config{
		Brokers:        c.ListenAddrs(),
		Partitions:     partitions,
		ClientID:       "linkd-test",
		CommitInterval: 100 * time.Millisecond,
	}, c
}

// LoseCommits makes the cluster answer offset commits with success without
// storing them while lose is true: what a consumer killed before its
// commits reached the broker leaves behind.
func LoseCommits(c *kfake.Cluster, lose *atomic.Bool) {
	c.ControlKey(int16(kmsg.OffsetCommit), func(kr kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		if !lose.Load() {
			return nil, nil, false
		}
		req := kr.(*kmsg.OffsetCommitRequest)
		resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
		for _, t := range req.Topics {
			rt := kmsg.NewOffsetCommitResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewOffsetCommitResponseTopicPartition()
				rp.Partition = p.Partition
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp, nil, true
	})
}

// Event makes a recorded event of stream at version, with position
// version+1 unless pos is given.
func Event(stream string, version uint64, pos uint64) eventstore.RecordedEvent {
	return eventstore.RecordedEvent{
		ID:       eventID(stream, version),
		Stream:   stream,
		Version:  version,
		Position: eventstore.Position{Commit: pos, Prepare: pos},
		Type:     "Tested",
		Data:     fmt.Appendf(nil, `{"stream":%q,"version":%d}`, stream, version),
		Time:     time.Unix(1_700_000_000, int64(pos)).UTC(),
	}
}

func eventID(stream string, version uint64) (id [16]byte) {
	h := uint64(14695981039346656037)
	for i := 0; i < len(stream); i++ {
		h ^= uint64(stream[i])
		h *= 1099511628211
	}
	for i := range 8 {
		id[i] = byte(h >> (8 * i))
		id[8+i] = byte(version >> (8 * i))
	}
	id[6] = id[6]&0x0f | 0x40 // a version 4 UUID, as far as parsers care
	id[8] = id[8]&0x3f | 0x80
	return id
}

// Model is an in-memory read model shared by Projector instances, as a
// database is shared by the instances of a service. It keeps, per stream,
// every event applied, and the next version it expects.
type Model struct {
	mu       sync.Mutex
	next     map[string]uint64
	data     map[string][]string
	cp       eventstore.Position
	applied  int
	skipped  int
	problems []string
}

// NewModel makes an empty model.
func NewModel() *Model {
	return &Model{next: map[string]uint64{}, data: map[string][]string{}}
}

// Projector is an idempotent projector over a Model: it skips the events of
// a stream it has applied (by version) and records as a problem an event
// that skips a version (lost or reordered).
type Projector struct {
	name string
	cats []string
	m    *Model
	// fail makes the next Apply calls fail.
	fail atomic.Int32
	// Applied counts events this instance applied (not skipped);
	// Delivered counts every event given to Apply successfully.
	Applied, Delivered atomic.Int64
}

// NewProjector makes a projector named name over m, consuming cats.
func NewProjector(name string, m *Model, cats ...string) *Projector {
	return &Projector{name: name, cats: cats, m: m}
}

// FailNext makes the next n Apply calls fail.
func (p *Projector) FailNext(n int32) { p.fail.Store(n) }

func (p *Projector) Name() string         { return p.name }
func (p *Projector) Categories() []string { return p.cats }

// Apply applies events, all or nothing.
func (p *Projector) Apply(ctx context.Context, events []projections.Event) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if p.fail.Add(-1) >= 0 {
		return fmt.Errorf("kafkatest: injected failure")
	}
	p.fail.Store(0)
	m := p.m
	m.mu.Lock()
	defer m.mu.Unlock()
	var applied int64
	for _, e := range events {
		if len(p.cats) > 0 && !projections.Relevant(p, e.Stream) {
			// Another category's event, handed over to move the checkpoint.
			if m.cp.Less(e.Position) {
				m.cp = e.Position
			}
			continue
		}
		next := m.next[e.Stream]
		switch {
		case e.Version < next:
			m.skipped++
			continue
		case e.Version > next:
			m.problems = append(m.problems, fmt.Sprintf("%s: got version %d, expected %d", e.Stream, e.Version, next))
		}
		m.next[e.Stream] = e.Version + 1
		m.data[e.Stream] = append(m.data[e.Stream], fmt.Sprintf("%d %s %s %s", e.Version, e.Type, e.Data, e.ID))
		if m.cp.Less(e.Position) {
			m.cp = e.Position
		}
		m.applied++
		applied++
	}
	p.Applied.Add(applied)
	p.Delivered.Add(int64(len(events)))
	return nil
}

// Checkpoint is the highest position applied.
func (p *Projector) Checkpoint(context.Context) (eventstore.Position, error) {
	p.m.mu.Lock()
	defer p.m.mu.Unlock()
	return p.m.cp, nil
}

// Reset empties the model.
func (p *Projector) Reset(context.Context) error {
	m := p.m
	m.mu.Lock()
	defer m.mu.Unlock()
	m.next, m.data, m.cp = map[string]uint64{}, map[string][]string{}, eventstore.Start
	m.applied, m.skipped, m.problems = 0, 0, nil
	return nil
}

// AppliedVersion implements projections.StreamTracker.
func (p *Projector) AppliedVersion(_ context.Context, stream string) (uint64, bool, error) {
	p.m.mu.Lock()
	defer p.m.mu.Unlock()
	n, ok := p.m.next[stream]
	if !ok {
		return 0, false, nil
	}
	return n - 1, true, nil
}

// Counts returns the events applied and skipped as duplicates.
func (m *Model) Counts() (applied, skipped int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.applied, m.skipped
}

// Problems lists the gaps seen: events that came before the versions
// preceding them.
func (m *Model) Problems() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.problems)
}

// Snapshot copies the model's data: per stream, its events as applied.
func (m *Model) Snapshot() map[string][]string {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[string][]string, len(m.data))
	for k, v := range m.data {
		out[k] = slices.Clone(v)
	}
	return out
}

// Diff describes how two snapshots differ ("" when equal), briefly.
func Diff(got, want map[string][]string) string {
	var b strings.Builder
	n := 0
	for _, k := range slices.Sorted(maps.Keys(want)) {
		if !slices.Equal(got[k], want[k]) && n < 10 {
			fmt.Fprintf(&b, "stream %s: got %d events, want %d\n", k, len(got[k]), len(want[k]))
			n++
		}
	}
	for _, k := range slices.Sorted(maps.Keys(got)) {
		if _, ok := want[k]; !ok && n < 10 {
			fmt.Fprintf(&b, "stream %s: unexpected (%d events)\n", k, len(got[k]))
			n++
		}
	}
	return b.String()
}

// Eventually polls cond every 10 ms until it holds, failing the test after
// d with msg() as the explanation.
func Eventually(t testing.TB, d time.Duration, cond func() bool, msg func() string) {
	t.Helper()
	end := time.Now().Add(d)
	for !cond() {
		if time.Now().After(end) {
			t.Fatalf("after %s: %s", d, msg())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// NumBrokers is kfake.NumBrokers, so that tests need not import kfake.
func NumBrokers(n int) kfake.Opt { return kfake.NumBrokers(n) }
