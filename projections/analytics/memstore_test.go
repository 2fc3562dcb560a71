package analytics

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/linkd/linkd/eventstore"
)

// memStore is an in-memory eventstore.Store with just what Replay needs
// (Append, ReadAll, Head); the other methods are not used by these tests.
type memStore struct {
	mu       sync.Mutex
	log      []eventstore.RecordedEvent
	versions map[string]uint64
}

func newMemStore() *memStore { return &memStore{versions: map[string]uint64{}} }

func (m *memStore) Append(_ context.Context, stream string, expected eventstore.ExpectedVersion, events ...eventstore.EventData) (eventstore.AppendResult, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	cur, exists := m.versions[stream]
	if !expected.Check(cur, exists) {
		return eventstore.AppendResult{}, eventstore.ErrWrongExpectedVersion
	}
	var res eventstore.AppendResult
	for _, e := range events {
		v := uint64(0)
		if exists {
			v = cur + 1
		}
		cur, exists = v, true
		pos := uint64(len(m.log) + 1)
		id := e.ID
		if id == uuid.Nil {
			id = uuid.New()
		}
		m.log = append(m.log, eventstore.RecordedEvent{
			ID: id, Stream: stream, Version: v, Type: e.Type, Data: e.Data, Metadata: e.Metadata,
			Position: eventstore.Position{Commit: pos, Prepare: pos}, Time: time.Now().UTC(),
		})
		res = eventstore.AppendResult{NextExpectedVersion: v, Position: eventstore.Position{Commit: pos, Prepare: pos}}
	}
	m.versions[stream] = cur
	return res, nil
}

func (m *memStore) ReadAll(_ context.Context, after eventstore.Position, max int) ([]eventstore.RecordedEvent, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	start := int(after.Commit) // positions are 1-based indexes + 1
	if start >= len(m.log) {
		return nil, nil
	}
	end := min(len(m.log), start+max)
	return append([]eventstore.RecordedEvent(nil), m.log[start:end]...), nil
}

func (m *memStore) Head(context.Context) (eventstore.Position, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.log) == 0 {
		return eventstore.Start, nil
	}
	return m.log[len(m.log)-1].Position, nil
}

var errUnused = errors.New("memStore: not implemented")

func (m *memStore) ReadStream(context.Context, string, uint64, int) ([]eventstore.RecordedEvent, error) {
	return nil, errUnused
}

func (m *memStore) StreamVersion(context.Context, string) (uint64, bool, error) {
	return 0, false, errUnused
}

func (m *memStore) SubscribeAll(context.Context, eventstore.Position, eventstore.Filter) (eventstore.Subscription, error) {
	return nil, errUnused
}

func (m *memStore) Close() error { return nil }
