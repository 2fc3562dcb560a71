package commands

import (
	"container/list"
	"sync"
)

// lru maps stream names to values, keeping the most recently used up to its
// capacity. Values are never changed in place: put replaces them, so a value
// handed out may be shared by every later get.
type lru[V any] struct {
	mu       sync.Mutex
	capacity int
	// newer reports whether v should replace old (a concurrent load may
	// have put a later state already).
	newer   func(old, v V) bool
	entries map[string]*list.Element
	order   *list.List // of *lruEntry[V], most recently used first
}

type lruEntry[V any] struct {
	stream string
	v      V
}

func newLRU[V any](capacity int, newer func(old, v V) bool) *lru[V] {
	return &lru[V]{capacity: max(capacity, 1), newer: newer, entries: map[string]*list.Element{}, order: list.New()}
}

func (c *lru[V]) get(stream string) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[stream]
	if !ok {
		var zero V
		return zero, false
	}
	c.order.MoveToFront(e)
	return e.Value.(*lruEntry[V]).v, true
}

func (c *lru[V]) put(stream string, v V) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.entries[stream]; ok {
		if old := e.Value.(*lruEntry[V]); c.newer(old.v, v) {
			old.v = v
		}
		c.order.MoveToFront(e)
		return
	}
	c.entries[stream] = c.order.PushFront(&lruEntry[V]{stream: stream, v: v})
	if c.order.Len() > c.capacity {
		last := c.order.Back()
		c.order.Remove(last)
		delete(c.entries, last.Value.(*lruEntry[V]).stream)
	}
}

func (c *lru[V]) remove(stream string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.entries[stream]; ok {
		c.order.Remove(e)
		delete(c.entries, stream)
	}
}
