package commands

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/linkd/linkd/domain"
	"github.com/linkd/linkd/eventstore"
)

// WithHistories wraps s so that commands keep the decoded histories of up
// to streams recently loaded streams whose names start with one of the
// prefixes, instead of reading and decoding a whole history on every load:
// what a conversion paid for its workspace on every request.
//
// Loading a cached stream again asks the store for its version and reads
// only the events appended since (none, usually): it never serves a stale
// history, whoever wrote (other processes on EventStoreDB too). Use it for
// streams whose state commands act on without appending to them (a
// workspace's members decide who may record a conversion). Customers, whose
// every load ends in an append, have their own cache (CustomerCache).
//
// Only streams whose aggregate never changes the events it is loaded from
// may be cached: the cached events are shared by every later load.
func WithHistories(s EventStore, streams int, prefixes []string) EventStore {
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

func hasPrefix(stream string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(stream, p) {
			return true
		}
	}
	return false
}

func (h *historyStore) cached(stream string) bool {
	return hasPrefix(stream, h.prefixes)
}

// saved adds the events a save appended to stream, loaded at version
// loaded (ok false: the stream was new), to its cached history.
func (h *historyStore) saved(stream string, loaded uint64, ok bool, events []domain.Event) {
	if !h.cached(stream) {
		return
	}
	old, _ := h.cache.get(stream)
	want := 0
	if ok {
		want = int(loaded) + 1
	}
	if len(old) != want || want+len(events) > maxCachedEvents {
		h.cache.remove(stream) // not the history the save started from
		return
	}
	// Copy: old is shared with other loads.
	h.cache.put(stream, append(old[:len(old):len(old)], events...))
}

// conflicted drops the cached history of stream, which another writer
// appended to.
func (h *historyStore) conflicted(stream string) { h.cache.remove(stream) }

// AppendMulti forwards to the store's (errors.ErrUnsupported when it has
// none), and drops the cached histories of the streams it wrote to.
func (h *historyStore) AppendMulti(ctx context.Context, parts ...eventstore.StreamAppend) ([]eventstore.AppendResult, error) {
	m, ok := h.EventStore.(eventstore.MultiAppender)
	if !ok {
		return nil, errors.ErrUnsupported
	}
	res, err := m.AppendMulti(ctx, parts...)
	for _, p := range parts {
		if h.cached(p.Stream) {
			h.cache.remove(p.Stream)
		}
	}
	return res, err
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

// historyCache is an LRU of stream → decoded history. A longer history
// replaces a shorter one, never the reverse.
type historyCache = lru[[]domain.Event]

func newHistoryCache(capacity int) *historyCache {
	return newLRU(capacity, func(old, events []domain.Event) bool { return len(old) < len(events) })
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
