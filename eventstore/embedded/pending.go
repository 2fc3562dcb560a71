package embedded

import (
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

// pendingVersions holds the version keys the indexer has not written to
// the index yet: for every stream appended to since the last flush, its
// last version and where that append ends. Writing a version key with
// every index commit cost a memtable insert per event where streams are
// many and busy (a click stream per link: with 1,000 links clicked at
// random the key was a tenth of the redirect's CPU, more than the event
// keys), and filled memtables with overwritten values. Kept here, a busy
// stream's key is written once per flush, in one sorted batch.
//
// Readers look here before the index (Store.lastVersion). The indexer adds
// a chunk's versions after committing its event keys and before the chunk
// is acknowledged, so a stream's version is visible here or in the index
// from the moment its append is. Only the indexer writes; a flush commits
// the keys with the mark "m/versioned" (every version key of an append
// that ends at or before it is in the index), then empties the map: a
// reader in between finds the same values in both. After a crash Open
// rewrites the version keys of the appends after that mark from the log
// (recover).
type pendingVersions struct {
	mu    sync.RWMutex
	m     map[string]pendingVersion
	since time.Time // when the oldest entry came
}

type pendingVersion struct {
	version uint64
	end     int64
}

// Flush policy: a busy stream's key is written at most once a second, and
// the map stays below a few megabytes.
const (
	pendingEvery = time.Second
	pendingMax   = 1 << 15
)

func (p *pendingVersions) get(stream string) (pendingVersion, bool) {
	p.mu.RLock()
	v, ok := p.m[stream]
	p.mu.RUnlock()
	return v, ok
}

// add records a chunk's versions, in log order (the last of a stream's
// wins). Only the indexer calls it.
func (p *pendingVersions) add(vs []versionUpdate) {
	if len(vs) == 0 {
		return
	}
	p.mu.Lock()
	if p.m == nil {
		p.m = make(map[string]pendingVersion)
	}
	if len(p.m) == 0 {
		p.since = time.Now()
	}
	for _, v := range vs {
		p.m[v.stream] = pendingVersion{v.version, v.end}
	}
	p.mu.Unlock()
}

// due reports whether the indexer should flush now.
func (p *pendingVersions) due() bool {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return len(p.m) >= pendingMax || (len(p.m) > 0 && time.Since(p.since) >= pendingEvery)
}

// flush writes every pending version key to the index with the mark
// "m/versioned" at end (every append up to end has added its versions),
// then forgets them. Only the indexer calls it, and Close after it.
func (p *pendingVersions) flush(db *pebble.DB, end int64) error {
	p.mu.RLock()
	streams := make([]string, 0, len(p.m))
	for s := range p.m {
		streams = append(streams, s)
	}
	p.mu.RUnlock()
	// The map changes only in add, which runs on this goroutine: reading
	// it without the lock from here on is safe.
	slices.SortFunc(streams, strings.Compare) // packed keys keep most of this order
	b := db.NewBatch()
	defer b.Close()
	var kb, vb []byte
	for _, s := range streams {
		v := p.m[s]
		kb = versionKey(kb[:0], s)
		vb = appendVersion(vb[:0], v.version, v.end)
		if err := b.Set(kb, vb, nil); err != nil {
			return err
		}
	}
	if err := setOffset(b, keyVersioned, end); err != nil {
		return err
	}
	if err := b.Commit(pebble.NoSync); err != nil {
		return err
	}
	p.mu.Lock()
	clear(p.m)
	p.mu.Unlock()
	return nil
}
