// Package versioncache remembers the last applied version of recently seen
// event streams, for projectors that deduplicate by stream version
// (projections/analytics, projections/clickindex).
package versioncache

// Cache remembers the last applied version of recently seen streams,
// so that deduplication rarely reads the database. It holds at most 2*max
// entries: two generations of maps; when the current one is full it becomes
// the old one and the former old one is dropped. A stream still in use is
// copied forward on its next hit. It only ever holds committed versions.
type Cache struct {
	max      int
	cur, old map[string]uint64
}

func New(max int) *Cache {
	return &Cache{max: max, cur: make(map[string]uint64)}
}

func (c *Cache) Get(stream string) (uint64, bool) {
	if v, ok := c.cur[stream]; ok {
		return v, true
	}
	if v, ok := c.old[stream]; ok {
		c.Put(stream, v)
		return v, true
	}
	return 0, false
}

func (c *Cache) Put(stream string, v uint64) {
	if _, ok := c.cur[stream]; !ok && len(c.cur) >= c.max {
		c.old = c.cur
		c.cur = make(map[string]uint64, c.max)
	}
	c.cur[stream] = v
}

func (c *Cache) Reset() {
	c.cur = make(map[string]uint64)
	c.old = nil
}
