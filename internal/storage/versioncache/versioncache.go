// Package versioncache remembers the last applied version of recently seen
// event streams, for projectors that deduplicate by stream version
// (projections/analytics, projections/clickindex).
package versioncache

import "github.com/linkd/linkd/eventstore"

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

// Dedup sorts a batch's events into new ones and ones already applied, for
// a projector that keeps each stream's last applied version with its data
// and its checkpoint, the highest position it has applied.
//
// An event above that checkpoint cannot have been applied (the checkpoint
// is committed with what it covers), so its stream's version is not looked
// up: on the in-process path, where events come in log order, that is every
// event, and a new stream (a new customer, a new visitor) costs no read. A
// redelivery (Kafka, a restart) is at or below the checkpoint and is
// checked against the stream's version.
type Dedup struct {
	// Next is the version of each stream the batch touched, after it.
	Next map[string]uint64
	// Gap, when it contains an event's position, says the event was
	// applied though its stream's stored version may be older (Behind):
	// the event is not new, and its version is learned into Next.
	Gap     Gap
	applied eventstore.Position
	last    func(stream string) (uint64, bool, error)
}

// NewDedup starts a batch of a projector whose checkpoint is applied; last
// reads a stream's last applied version (false: none).
func NewDedup(applied eventstore.Position, last func(stream string) (uint64, bool, error)) *Dedup {
	return &Dedup{Next: make(map[string]uint64), applied: applied, last: last}
}

// New reports whether ev is to be applied: it is newer than its stream's
// last applied version, committed or earlier in the batch.
func (d *Dedup) New(ev *eventstore.RecordedEvent) (bool, error) {
	last, seen := d.Next[ev.Stream]
	if d.Gap.Contains(ev.Position) {
		if !seen {
			var err error
			if last, seen, err = d.last(ev.Stream); err != nil {
				return false, err
			}
		}
		if !seen || ev.Version > last {
			d.Next[ev.Stream] = ev.Version
		}
		return false, nil
	}
	if !seen && !d.applied.Less(ev.Position) {
		var err error
		if last, seen, err = d.last(ev.Stream); err != nil {
			return false, err
		}
	}
	if seen && ev.Version <= last {
		return false, nil
	}
	d.Next[ev.Stream] = ev.Version
	return true, nil
}
