package clickindex

// versionCache remembers the last applied version of recently seen streams,
// so that deduplication rarely reads the database. It holds at most 2*max
// entries: two generations of maps; when the current one is full it becomes
// the old one and the former old one is dropped. A stream still in use is
// copied forward on its next hit. It only ever holds committed versions.
// (The same as projections/analytics's: small enough to copy rather than
// share.)
type versionCache struct {
	max      int
	cur, old map[string]uint64
}

func newVersionCache(max int) *versionCache {
	return &versionCache{max: max, cur: make(map[string]uint64)}
}

func (c *versionCache) get(stream string) (uint64, bool) {
	if v, ok := c.cur[stream]; ok {
		return v, true
	}
	if v, ok := c.old[stream]; ok {
		c.put(stream, v)
		return v, true
	}
	return 0, false
}

func (c *versionCache) put(stream string, v uint64) {
	if _, ok := c.cur[stream]; !ok && len(c.cur) >= c.max {
		c.old = c.cur
		c.cur = make(map[string]uint64, c.max)
	}
	c.cur[stream] = v
}

func (c *versionCache) reset() {
	c.cur = make(map[string]uint64)
	c.old = nil
}
