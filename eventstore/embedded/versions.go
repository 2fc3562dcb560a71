package embedded

import (
	"sync/atomic"
)

// versionTable remembers the versions that StreamVersion read from the
// index, so that asking again for a stream nobody wrote meanwhile costs no
// index read: a conversion asks for its workspace's version on every
// request, to check the members it has cached (2% of a sale's CPU went to
// that read).
//
// An entry is the stream's version as of committed position at. Every
// publish first stores, in the slot of each stream it makes visible, the
// log end it publishes (written), then moves committed: an entry whose slot
// was written after its at may be stale and is not used. Streams that share
// a slot invalidate each other's entries, which only costs a read. An
// entry is only put if the slot was not written since at, and with a
// compare-and-swap against what the slot held before the read, so that a
// racing put never replaces a later entry.
type versionTable struct {
	entries [versionSlots]atomic.Pointer[versionEntry]
	written [versionSlots]atomic.Int64
}

// versionSlots: the streams of 30,000 appends a second take a given slot
// about every two seconds.
const versionSlots = 1 << 16

type versionEntry struct {
	hash    uint64
	stream  string
	version uint64
	exists  bool
	at      int64
}

// get returns the version of stream (of hash h) if its entry is current.
func (t *versionTable) get(h uint64, stream string) (version uint64, exists, ok bool) {
	i := h % versionSlots
	e := t.entries[i].Load()
	if e == nil || e.hash != h || e.stream != stream || t.written[i].Load() > e.at {
		return 0, false, false
	}
	return e.version, e.exists, true
}

// slot returns what the slot of h holds now, for put.
func (t *versionTable) slot(h uint64) *versionEntry { return t.entries[h%versionSlots].Load() }

// put records the version of stream read from the index as of committed
// position at, unless the slot changed since it held old.
func (t *versionTable) put(old *versionEntry, h uint64, stream string, version uint64, exists bool, at int64) {
	i := h % versionSlots
	if t.written[i].Load() > at {
		return
	}
	t.entries[i].CompareAndSwap(old, &versionEntry{hash: h, stream: stream, version: version, exists: exists, at: at})
}

// wrote marks the slot of h as written up to log offset end; the publisher
// calls it before it moves committed past end.
func (t *versionTable) wrote(h uint64, end int64) { t.written[h%versionSlots].Store(end) }
