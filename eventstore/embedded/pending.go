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
// from the moment its append is. When a flush is due the indexer hands the
// map over to the flusher goroutine and starts a new one: a flush of
// thousands of keys never holds up appends. The flusher commits the keys
// with the mark "m/versioned" (every version key of an append that ends at
// or before it is in the index), then drops the map; readers look in the
// new map, then in the one being flushed, then in the index, so that they
// always find the newest value. After a crash Open rewrites the version
// keys of the appends after that mark from the log (recover).
type pendingVersions struct {
	mu       sync.RWMutex
	active   map[string]pendingVersion // the indexer adds here
	flushing map[string]pendingVersion // being written; nil when none
	since    time.Time                 // when active got its first entry

	work chan flushJob
	done chan struct{}
	err  error // the flusher's first failure; read after done
}

type pendingVersion struct {
	version uint64
	end     int64
}

type flushJob struct {
	m   map[string]pendingVersion
	end int64
}

// Flush policy: a busy stream's key is written about once a second, and
// the maps stay below a few megabytes.
const (
	pendingEvery = time.Second
	pendingMax   = 1 << 15
)

func (p *pendingVersions) get(stream string) (pendingVersion, bool) {
	p.mu.RLock()
	v, ok := p.active[stream]
	if !ok {
		v, ok = p.flushing[stream]
	}
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
	if p.active == nil {
		p.active = make(map[string]pendingVersion)
	}
	if len(p.active) == 0 {
		p.since = time.Now()
	}
	for _, v := range vs {
		p.active[v.stream] = pendingVersion{v.version, v.end}
	}
	p.mu.Unlock()
}

// start runs the flusher of db; fail is told of its failure. After one
// the map being flushed stays readable, and no flush starts again.
func (p *pendingVersions) start(db *pebble.DB, fail func(error)) {
	p.work = make(chan flushJob, 1)
	p.done = make(chan struct{})
	go func() {
		defer close(p.done)
		for job := range p.work {
			if p.err != nil {
				continue
			}
			if p.err = writeVersions(db, job.m, job.end); p.err != nil {
				fail(p.err)
				continue
			}
			p.mu.Lock()
			p.flushing = nil
			p.mu.Unlock()
		}
	}()
}

// maybeFlush hands the active map to the flusher when it is due and the
// flusher is idle; end is the end of the last chunk whose versions were
// added. Only the indexer calls it.
func (p *pendingVersions) maybeFlush(end int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := len(p.active)
	if p.flushing != nil || n == 0 || (n < pendingMax && time.Since(p.since) < pendingEvery) {
		return
	}
	p.flushing, p.active = p.active, make(map[string]pendingVersion, n)
	p.work <- flushJob{p.flushing, end} // room: the flusher took the last job
}

// stop waits for the flusher, then writes what is left (Close: the next
// Open finds every version key in the index); end is the index's end. It
// returns the flusher's failure, if any.
func (p *pendingVersions) stop(db *pebble.DB, end int64, write bool) error {
	close(p.work)
	<-p.done
	if p.err != nil || !write || len(p.active) == 0 {
		return p.err
	}
	if err := writeVersions(db, p.active, end); err != nil {
		return err
	}
	p.mu.Lock()
	p.active = nil
	p.mu.Unlock()
	return nil
}

// versionsPerCommit bounds the keys of one commit of a flush: Pebble
// publishes commits in order, so while a batch of 32,768 keys went into
// the memtable the indexer's next commit waited for it, and so did the
// appends behind it (sales' p99 went from 18 to 25 ms).
const versionsPerCommit = 512

// writeVersions commits the version keys of m, sorted, in commits of at
// most versionsPerCommit keys, the last with the mark "m/versioned" at
// end. Values written before a crash cuts a flush short are those readers
// saw, and the mark is not moved.
func writeVersions(db *pebble.DB, m map[string]pendingVersion, end int64) error {
	streams := make([]string, 0, len(m))
	for s := range m {
		streams = append(streams, s)
	}
	slices.SortFunc(streams, strings.Compare) // packed keys keep most of this order
	b := db.NewBatch()
	defer func() { b.Close() }()
	var kb, vb []byte
	for i, s := range streams {
		if i > 0 && i%versionsPerCommit == 0 {
			if err := b.Commit(pebble.NoSync); err != nil {
				return err
			}
			b.Reset()
		}
		v := m[s]
		kb = versionKey(kb[:0], s)
		vb = appendVersion(vb[:0], v.version, v.end)
		if err := b.Set(kb, vb, nil); err != nil {
			return err
		}
	}
	if err := setOffset(b, keyVersioned, end); err != nil {
		return err
	}
	return b.Commit(pebble.NoSync)
}
