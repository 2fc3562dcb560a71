package commands

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/linkd/linkd/domain"
	"github.com/linkd/linkd/eventstore"
)

// WithHistories wraps s so that commands keep the decoded histories of up
// to streams recently loaded streams whose names start with one of
// prefixes. Loading such a stream again asks the store for its version and
// reads only the events appended since (none, usually), instead of reading
// and decoding its whole history: what a conversion pays for its workspace
// and its customer on every request.
//
// It never serves a stale history: every load asks the store, which
// answers for every writer (other processes on EventStoreDB too). Only
// streams whose aggregate never changes the events it is loaded from may
// be cached: the cached events are shared by every later load.
func WithHistories(s EventStore, streams int, prefixes ...string) EventStore {
	return &historyStore{EventStore: s, cache: newHistoryCache(streams), prefixes: prefixes}
}

type historyStore struct {
	EventStore
	cache    *historyCache
	prefixes []string
}

// maxCachedEvents bounds the history of one cached stream: longer
// histories are read whole every time (and are rare: a workspace, a
// customer with hundreds of orders).
const maxCachedEvents = 512

func (h *historyStore) cached(stream string) bool {
	for _, p := range h.prefixes {
		if strings.HasPrefix(stream, p) {
			return true
		}
	}
	return false
}

// readAll is readAll through the cache.
func (h *historyStore) readAll(ctx context.Context, stream string) ([]domain.Event, error) {
	if !h.cached(stream) {
		return readStream(ctx, h.EventStore, stream, 0, nil)
	}
	old, ok := h.cache.get(stream)
	if !ok {
		events, err := readStream(ctx, h.EventStore, stream, 0, nil)
		if err != nil {
			return nil, err
		}
		if n := len(events); n > 0 && n <= maxCachedEvents {
			h.cache.put(stream, events[:n:n])
		}
		return events, nil
	}
	v, exists, err := h.StreamVersion(ctx, stream)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", stream, err)
	}
	if !exists || v+1 < uint64(len(old)) {
		// The stream was deleted (or deleted and written again): the
		// cached history is not its history.
		h.cache.remove(stream)
		return readStream(ctx, h.EventStore, stream, 0, nil)
	}
	if v+1 == uint64(len(old)) {
		return old, nil
	}
	// Copy: old is shared with other loads.
	events, err := readStream(ctx, h.EventStore, stream, uint64(len(old)), append([]domain.Event(nil), old...))
	if err != nil {
		return nil, err
	}
	if n := len(events); n <= maxCachedEvents {
		h.cache.put(stream, events[:n:n])
	} else {
		h.cache.remove(stream)
	}
	return events, nil
}

// historyCache is an LRU of stream → decoded history. Entries are never
// changed in place: a longer history replaces the entry.
type historyCache struct {
	mu       sync.Mutex
	capacity int
	entries  map[string]*list.Element
	order    *list.List // of *historyEntry, most recently used first
}

type historyEntry struct {
	stream string
	events []domain.Event
}

func newHistoryCache(capacity int) *historyCache {
	return &historyCache{capacity: max(capacity, 1), entries: map[string]*list.Element{}, order: list.New()}
}

func (c *historyCache) get(stream string) ([]domain.Event, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[stream]
	if !ok {
		return nil, false
	}
	c.order.MoveToFront(e)
	return e.Value.(*historyEntry).events, true
}

func (c *historyCache) put(stream string, events []domain.Event) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.entries[stream]; ok {
		// A concurrent load may have read a longer history already.
		if old := e.Value.(*historyEntry); len(old.events) < len(events) {
			old.events = events
		}
		c.order.MoveToFront(e)
		return
	}
	c.entries[stream] = c.order.PushFront(&historyEntry{stream: stream, events: events})
	if c.order.Len() > c.capacity {
		last := c.order.Back()
		c.order.Remove(last)
		delete(c.entries, last.Value.(*historyEntry).stream)
	}
}

func (c *historyCache) remove(stream string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.entries[stream]; ok {
		c.order.Remove(e)
		delete(c.entries, stream)
	}
}

// readStream appends the events of stream from version from on to out; an
// absent stream is empty.
func readStream(ctx context.Context, s EventStore, stream string, from uint64, out []domain.Event) ([]domain.Event, error) {
	for {
		page, err := s.ReadStream(ctx, stream, from, 1024)
		if errors.Is(err, eventstore.ErrStreamNotFound) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", stream, err)
		}
		for _, re := range page {
			e, err := domain.DecodeEvent(re.Type, re.Data)
			if err != nil {
				return nil, fmt.Errorf("read %s@%d: %w", stream, re.Version, err)
			}
			out = append(out, e)
		}
		if len(page) < 1024 {
			return out, nil
		}
		from = page[len(page)-1].Version + 1
	}
}
