package domain

// Changes is embedded by aggregates to collect the events a behaviour
// records, and to track the stream version they were loaded at.
type Changes struct {
	version int64 // -1: no events yet
	loaded  bool
	pending []Event
}

// Version is the stream version of the last event loaded or recorded; -1
// for a stream with no events.
func (c *Changes) Version() int64 {
	if !c.loaded {
		return -1
	}
	return c.version
}

// LoadedVersion is the version the aggregate had before its pending events:
// the expected version of the append that stores them. ok is false for a new
// stream.
func (c *Changes) LoadedVersion() (v uint64, exists bool) {
	loaded := c.Version() - int64(len(c.pending))
	if loaded < 0 {
		return 0, false
	}
	return uint64(loaded), true
}

// Pending returns the events recorded since load.
func (c *Changes) Pending() []Event { return c.pending }

// ClearPending forgets the recorded events after they were stored.
func (c *Changes) ClearPending() { c.pending = nil }

// Loaded advances the version for an event loaded from history.
func (c *Changes) Loaded() {
	if !c.loaded {
		c.loaded = true
		c.version = 0
		return
	}
	c.version++
}

// Record adds a new event; the caller has already applied it to its state.
func (c *Changes) Record(e Event) {
	c.Loaded()
	c.pending = append(c.pending, e)
}
