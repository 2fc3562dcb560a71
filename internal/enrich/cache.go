package enrich

import (
	"hash/maphash"
	"sync"
)

// cacheShards is the number of independently locked shards of a cache. A
// power of two, so a shard is chosen with a mask.
const cacheShards = 32

// cache is a bounded, concurrency-safe map with a "two generation" eviction
// policy per shard: new entries go to the current generation; when it is full
// it becomes the old generation (dropping the previous old one) and a fresh
// current generation starts. A hit in the old generation is promoted. This
// keeps frequently used keys (common user agents) resident with O(1) work and
// no per-entry bookkeeping, and bounds memory to about 2*capacity entries.
type cache[K comparable, V any] struct {
	hash   func(K) uint64
	shards [cacheShards]cacheShard[K, V]
}

type cacheShard[K comparable, V any] struct {
	mu       sync.Mutex
	cur, old map[K]V
	max      int
	_        [40]byte // keep shards on separate cache lines
}

// newCache returns a cache holding about capacity entries per generation.
func newCache[K comparable, V any](capacity int, hash func(K) uint64) *cache[K, V] {
	per := capacity / cacheShards
	if per < 8 {
		per = 8
	}
	c := &cache[K, V]{hash: hash}
	for i := range c.shards {
		c.shards[i].max = per
		c.shards[i].cur = make(map[K]V)
	}
	return c
}

func (c *cache[K, V]) shard(k K) *cacheShard[K, V] {
	return &c.shards[c.hash(k)&(cacheShards-1)]
}

func (c *cache[K, V]) get(k K) (V, bool) {
	s := c.shard(k)
	s.mu.Lock()
	v, ok := s.cur[k]
	if !ok {
		if v, ok = s.old[k]; ok {
			s.putLocked(k, v)
		}
	}
	s.mu.Unlock()
	return v, ok
}

func (c *cache[K, V]) put(k K, v V) {
	s := c.shard(k)
	s.mu.Lock()
	s.putLocked(k, v)
	s.mu.Unlock()
}

func (s *cacheShard[K, V]) putLocked(k K, v V) {
	if len(s.cur) >= s.max {
		s.old = s.cur
		s.cur = make(map[K]V, s.max)
	}
	s.cur[k] = v
}

// len reports the number of entries held (both generations), for tests.
func (c *cache[K, V]) len() int {
	n := 0
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		n += len(s.cur) + len(s.old)
		s.mu.Unlock()
	}
	return n
}

var stringSeed = maphash.MakeSeed()

func hashString(s string) uint64 { return maphash.String(stringSeed, s) }

func hashUintptr(p uintptr) uint64 {
	// A multiplicative mix is enough to spread data-section offsets.
	x := uint64(p) * 0x9E3779B97F4A7C15
	return x ^ x>>29
}
