package embedded

// versionCache is a fixed-capacity LRU of stream → last version, owned by
// the writer goroutine (no locking). A miss falls back to the index, which
// always holds every event the writer has written: the writer indexes a
// group before it takes the next one.
//
// The writer updates an entry as soon as it assigns versions, before the
// group is written, so several appends to one stream in the same group see
// each other. That is safe only while an entry touched in the current group
// cannot be evicted: maxGroupReqs < minCacheSize guarantees it.
type versionCache struct {
	capacity   int
	index      map[string]int32
	nodes      []cacheNode
	head, tail int32 // most and least recently used; -1 when empty
}

type cacheNode struct {
	stream     string
	version    uint64
	prev, next int32
}

const (
	defaultCacheSize = 1 << 17
	minCacheSize     = 4 * maxGroupReqs
)

func newVersionCache(capacity int) *versionCache {
	return &versionCache{capacity: capacity, index: make(map[string]int32), head: -1, tail: -1}
}

func (c *versionCache) get(stream string) (uint64, bool) {
	i, ok := c.index[stream]
	if !ok {
		return 0, false
	}
	c.moveToFront(i)
	return c.nodes[i].version, true
}

func (c *versionCache) put(stream string, version uint64) {
	if i, ok := c.index[stream]; ok {
		c.nodes[i].version = version
		c.moveToFront(i)
		return
	}
	var i int32
	if len(c.nodes) < c.capacity {
		i = int32(len(c.nodes))
		c.nodes = append(c.nodes, cacheNode{})
	} else {
		i = c.tail
		c.unlink(i)
		delete(c.index, c.nodes[i].stream)
	}
	c.nodes[i] = cacheNode{stream: stream, version: version, prev: -1, next: -1}
	c.index[stream] = i
	c.pushFront(i)
}

// reset forgets everything (after a failed write).
func (c *versionCache) reset() {
	clear(c.index)
	c.nodes = c.nodes[:0]
	c.head, c.tail = -1, -1
}

func (c *versionCache) len() int { return len(c.index) }

func (c *versionCache) moveToFront(i int32) {
	if c.head == i {
		return
	}
	c.unlink(i)
	c.pushFront(i)
}

func (c *versionCache) unlink(i int32) {
	n := &c.nodes[i]
	if n.prev >= 0 {
		c.nodes[n.prev].next = n.next
	} else {
		c.head = n.next
	}
	if n.next >= 0 {
		c.nodes[n.next].prev = n.prev
	} else {
		c.tail = n.prev
	}
	n.prev, n.next = -1, -1
}

func (c *versionCache) pushFront(i int32) {
	n := &c.nodes[i]
	n.prev = -1
	n.next = c.head
	if c.head >= 0 {
		c.nodes[c.head].prev = i
	}
	c.head = i
	if c.tail < 0 {
		c.tail = i
	}
}
