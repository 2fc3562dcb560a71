package embedded

import (
	"cmp"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

// pendingVersions holds the version keys and event keys the indexer has
// not written to the index yet: for every stream appended to since the
// last flush, its last version, where that append ends, and where each of
// its events since the flush lies in the log. Writing a version key with
// every index commit cost a memtable insert per event where streams are
// many and busy (a click stream per link: with 1,000 links clicked at
// random the key was a tenth of the redirect's CPU, more than the event
// keys), and filled memtables with overwritten values. Kept here, a busy
// stream's key is written once per flush, in one sorted batch.
//
// Event keys were the same story: an event key per event, inserted at a
// random place of a 64 MiB memtable (about 3 µs each when it is full), on
// the path of every append's acknowledgement. Kept here, they go to the
// index once a second, sorted, where the memtable's inserter finds each
// next to the one before.
//
// Readers look here before the index (Store.lastVersion, ReadStream). The indexer adds a chunk's versions and events before
// the chunk is acknowledged, so a stream's version and events are visible
// here or in the index from the moment its append is. When a flush is due the indexer hands the
// map over to the flusher goroutine and starts a new one: a flush of
// thousands of keys never holds up appends. The flusher commits the keys
// with the marks "m/versioned" and "m/indexed" (every version key and
// event key of an append that ends at or before them is in the index),
// then drops the map; readers look in the new map, then in the one being
// flushed, then in the index, so that they always find the newest value.
// After a crash Open rewrites the keys of the appends after those marks
// from the log (recover).
type pendingVersions struct {
	mu       sync.RWMutex
	active   map[string]*pendingVersion // the indexer adds here
	flushing map[string]*pendingVersion // being written; nil when none
	since    time.Time                  // when active got its first entry

	events int                 // event locations in active
	every  time.Duration       // flush interval; 0: pendingEvery (tests shorten it)
	hash   func(string) uint64 // names streams in event keys

	work chan flushJob
	done chan struct{}
	err  error // the flusher's first failure; read after done
}

type pendingVersion struct {
	version uint64
	end     int64
	// events are the stream's events appended since the map began, in
	// version order: the event keys to write.
	events []eventLoc
}

// eventLoc is where an event's record lies in the log.
type eventLoc struct {
	version uint64
	start   int64
	n       int
}

type flushJob struct {
	m            map[string]*pendingVersion
	end, durable int64
}

// Flush policy: a busy stream's key is written about once a second, and
// the maps stay below a few megabytes.
const (
	pendingEvery     = time.Second
	pendingMax       = 1 << 15
	pendingMaxEvents = 1 << 15
)

// get returns stream's last version and where its append ends.
func (p *pendingVersions) get(stream string) (pendingVersion, bool) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	v, ok := p.active[stream]
	if !ok {
		v, ok = p.flushing[stream]
	}
	if !ok {
		return pendingVersion{}, false
	}
	return pendingVersion{version: v.version, end: v.end}, true
}

// eventsOf returns a copy of stream's events not in the index yet, in
// version order (nil when none). A reader asks here before it opens its
// index iterator: an event is then here, or in what the iterator sees, or
// both (a flush in between), never in neither.
func (p *pendingVersions) eventsOf(stream string) []eventLoc {
	p.mu.RLock()
	defer p.mu.RUnlock()
	var out []eventLoc
	if v, ok := p.flushing[stream]; ok {
		out = append(out, v.events...)
	}
	if v, ok := p.active[stream]; ok {
		out = append(out, v.events...)
	}
	return out
}

// firstPending is the version of the first of a stream's pending events
// (eventsOf), above every version when there is none: the index holds
// the stream's events below it.
func firstPending(events []eventLoc) uint64 {
	if len(events) == 0 {
		return math.MaxUint64
	}
	return events[0].version
}

// add records a chunk's versions and events, in log order (the last
// version of a stream's wins). Only the indexer calls it.
func (p *pendingVersions) add(vs []versionUpdate, events []eventLoc) {
	if len(vs) == 0 {
		return
	}
	p.mu.Lock()
	if p.active == nil {
		p.active = make(map[string]*pendingVersion)
	}
	if len(p.active) == 0 {
		p.since = time.Now()
	}
	for _, v := range vs {
		pv := p.active[v.stream]
		if pv == nil {
			pv = &pendingVersion{}
			p.active[v.stream] = pv
		}
		pv.version, pv.end = v.version, v.end
		pv.events = append(pv.events, events[v.first:v.first+v.count]...)
		p.events += v.count
	}
	p.mu.Unlock()
}

// start runs the flusher of db, whose event keys name a stream by hash;
// fail is told of its failure. After one the map being flushed stays
// readable, and no flush starts again.
func (p *pendingVersions) start(db *pebble.DB, hash func(string) uint64, fail func(error)) {
	p.hash = hash
	p.work = make(chan flushJob, 1)
	p.done = make(chan struct{})
	go func() {
		defer close(p.done)
		for job := range p.work {
			if p.err != nil {
				continue
			}
			if p.err = writeVersions(db, job.m, job.end, job.durable, hash); p.err != nil {
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
// added, and durable the log's fsynced end when that chunk was written.
// Only the indexer calls it.
func (p *pendingVersions) maybeFlush(end, durable int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := len(p.active)
	every := p.every
	if every == 0 {
		every = pendingEvery
	}
	if p.flushing != nil || n == 0 || (n < pendingMax && p.events < pendingMaxEvents && time.Since(p.since) < every) {
		return
	}
	p.flushing, p.active, p.events = p.active, make(map[string]*pendingVersion, n), 0
	p.work <- flushJob{p.flushing, end, durable} // room: the flusher took the last job
}

// stop waits for the flusher, then writes what is left (Close: the next
// Open finds every version key in the index); end is the index's end. It
// returns the flusher's failure, if any.
func (p *pendingVersions) stop(db *pebble.DB, end, durable int64, write bool) error {
	close(p.work)
	<-p.done
	if p.err != nil || !write || len(p.active) == 0 {
		return p.err
	}
	if err := writeVersions(db, p.active, end, durable, p.hash); err != nil {
		return err
	}
	p.mu.Lock()
	p.active, p.events = nil, 0
	p.mu.Unlock()
	return nil
}

// versionsPerCommit bounds the keys of one commit of a flush: Pebble
// publishes commits in order, so while a batch of 32,768 keys went into
// the memtable every commit behind it waited (then the indexer's, and the
// appends behind them: sales' p99 went from 18 to 25 ms; now the writer's
// reservations of positions).
const versionsPerCommit = 512

// writeVersions commits the event keys and version keys of m, sorted, in
// commits of at most versionsPerCommit keys, the last with the marks
// "m/indexed" and "m/versioned" at end and "m/durable" at durable (the
// log's fsynced end when the last chunk was written: recovery verifies
// the log after it; 0 leaves it). hash names streams in event keys.
// Keys written before a crash cuts a flush short are those readers saw,
// and the marks are not moved.
func writeVersions(db *pebble.DB, m map[string]*pendingVersion, end, durable int64, hash func(string) uint64) error {
	type eventKeyed struct {
		h   uint64
		loc eventLoc
	}
	var events []eventKeyed
	streams := make([]string, 0, len(m))
	for s, v := range m {
		streams = append(streams, s)
		if len(v.events) > 0 {
			h := hash(s)
			for _, e := range v.events {
				events = append(events, eventKeyed{h, e})
			}
		}
	}
	// Event keys sort by hash, version, start; 'e' sorts before 'v'.
	slices.SortFunc(events, func(x, y eventKeyed) int {
		if c := cmp.Compare(x.h, y.h); c != 0 {
			return c
		}
		if c := cmp.Compare(x.loc.version, y.loc.version); c != 0 {
			return c
		}
		return cmp.Compare(x.loc.start, y.loc.start)
	})
	slices.SortFunc(streams, strings.Compare) // packed keys keep most of this order
	b := db.NewBatch()
	defer func() { b.Close() }()
	keys := 0
	commitFull := func() error {
		keys++
		if keys%versionsPerCommit != 0 {
			return nil
		}
		if err := b.Commit(pebble.NoSync); err != nil {
			return err
		}
		b.Reset()
		return nil
	}
	var kb, vb []byte
	for _, e := range events {
		kb = eventKey(kb[:0], e.h, e.loc.version, e.loc.start)
		vb = eventVal(vb[:0], e.loc.n)
		if err := b.Set(kb, vb, nil); err != nil {
			return err
		}
		if err := commitFull(); err != nil {
			return err
		}
	}
	for _, s := range streams {
		v := m[s]
		kb = versionKey(kb[:0], s)
		vb = appendVersion(vb[:0], v.version, v.end)
		if err := b.Set(kb, vb, nil); err != nil {
			return err
		}
		if err := commitFull(); err != nil {
			return err
		}
	}
	if err := setOffset(b, keyIndexed, end); err != nil {
		return err
	}
	if err := setOffset(b, keyVersioned, end); err != nil {
		return err
	}
	if durable > 0 {
		if err := setOffset(b, keyDurable, durable); err != nil {
			return err
		}
	}
	return b.Commit(pebble.NoSync)
}
