package embedded

import (
	"context"
	"fmt"
	"hash/maphash"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/google/uuid"

	"github.com/linkd/linkd/eventstore"
)

// The append pipeline, one goroutine per stage, each working on its own
// group while the next stage works on the previous one:
//
//	Append (callers)  encode records, look the stream's version up in the
//	                  index unless the stream was written recently
//	writer            check expected versions, assign versions, one write
//	                  per group, list the index entries
//	indexer           sort the entries, commit them as one Pebble batch
//	                  (no sync)
//	syncer            fsync (SyncAlways only)
//
// and then, on the last of these goroutines, publish: move "committed",
// feed subscriptions, answer.

// MaxAppendStreams bounds the streams of one AppendMulti.
const MaxAppendStreams = 64

const (
	queueSize     = 1024
	stageQueue    = 64
	maxGroupReqs  = 1024 // streams written by a group, at most this + MaxAppendStreams - 1
	maxGroupBytes = 4 << 20

	// groupYields bounds how many times the writer yields to let a busy
	// group grow before writing it.
	groupYields = 2

	// reserveStep is how far ahead of the writer "m/reserved" moves.
	reserveStep = 64 << 20

	// hotSlots is the size of the table of recently written streams that
	// spares callers an index lookup: twice the version cache's entries, so
	// that few of the cached streams lose their slot to another (a site's
	// 100,000 visitors, a shop's customers). The writer clears the slot of a
	// stream it evicts from the cache, so a stream in the table is cached
	// (but for an eviction between the caller's look and the writer's).
	hotSlots = 1 << 18
)

type appendReq struct {
	ctx      context.Context
	stream   string
	hash     uint64
	expected eventstore.ExpectedVersion
	buf      []byte // the events' records, sealed by the writer
	n        int    // number of events
	// values are the events' EventData.Value, for live subscribers; nil
	// when none has one (one is their room for a single event's).
	values []any
	one    [1]any
	hint   versionHint
	done   chan struct{}
	// more are the other parts of a multi-stream append (AppendMulti),
	// written with this one or not at all; their answer is this one's err.
	more []*appendReq

	// Set by the writer.
	cur    uint64 // the stream's version before the append, if exists
	exists bool
	node   int32 // the stream's node in the version cache, or -1
	res    eventstore.AppendResult
	err    error
	start  int64 // log offset of the first record
}

// parts yields r and the other parts of its multi-stream append, in order.
func (r *appendReq) parts(yield func(*appendReq) bool) {
	if yield(r) {
		for _, p := range r.more {
			if !yield(p) {
				return
			}
		}
	}
}

// versionHint is the stream's last version as the caller read it from the
// index, which covered the log up to at (at least) then.
type versionHint struct {
	ok      bool
	at      int64
	version uint64
	exists  bool
	end     int64
}

// stageItem is a written chunk on its way through indexer and syncer.
type stageItem struct {
	seg     *segment
	end     int64       // end of the chunk's last record; 0 when it wrote nothing
	durable int64       // syncedEnd when the chunk was written
	entries *indexBatch // nil when the chunk wrote nothing
	reqs    []*appendReq
}

// indexBatch lists the index entries of a chunk: its events, and its
// appends' streams with their new versions (pendingVersions).
type indexBatch struct {
	events   []eventLoc
	versions []versionUpdate
}

// versionUpdate is a stream's last version after an append, where that
// append ends, and its events: events[first : first+count] of the batch.
type versionUpdate struct {
	stream       string
	version      uint64
	end          int64
	first, count int
}

// addEvent lists an event of the append being written: version of its
// stream, whose record starts at start and is n bytes long.
func (b *indexBatch) addEvent(version uint64, start int64, n int) {
	b.events = append(b.events, eventLoc{version, start, n})
}

// addVersion ends the append being written: stream is at version, its
// last event ends at end, and its events are those listed since the last
// addVersion.
func (b *indexBatch) addVersion(stream string, version uint64, end int64) {
	first := 0
	if k := len(b.versions); k > 0 {
		first = b.versions[k-1].first + b.versions[k-1].count
	}
	b.versions = append(b.versions, versionUpdate{stream, version, end, first, len(b.events) - first})
}

var indexBatches = sync.Pool{New: func() any { return new(indexBatch) }}

func (b *indexBatch) release() {
	if cap(b.events) > 1<<16 {
		return
	}
	b.reset()
	indexBatches.Put(b)
}

func (b *indexBatch) reset() {
	clear(b.versions) // the names
	b.events, b.versions = b.events[:0], b.versions[:0]
}

// writerState belongs to the writer goroutine.
type writerState struct {
	seg      *segment // the active segment
	segOff   int64    // bytes in the active segment
	end      int64    // where the next record goes: seg.base + segOff
	reserved int64    // "m/reserved" as last fsynced
	cache    *versionCache
	buf      []byte
	index    *indexBatch
	chunk    []*appendReq
}

func (w *writerState) init(s *Store, end, writeAt, reserved int64) {
	segs := *s.segs.Load()
	w.seg = segs[len(segs)-1]
	w.segOff = writeAt - w.seg.base
	w.end = writeAt
	w.reserved = reserved
	w.cache = newVersionCache(s.opts.cacheSize)
	w.cache.horizon = end // the index covers it, and nothing is written since
}

// Append implements eventstore.Store.
func (s *Store) Append(ctx context.Context, stream string, expected eventstore.ExpectedVersion, events ...eventstore.EventData) (eventstore.AppendResult, error) {
	req, err := newAppendReq(ctx, stream, expected, events, true)
	if err != nil {
		return eventstore.AppendResult{}, err
	}
	if err := s.submit(ctx, req); err != nil {
		return eventstore.AppendResult{}, err
	}
	return req.res, req.err
}

// AppendMulti implements eventstore.MultiAppender: the parts travel through
// the writer as one request, their records back to back in the log with
// only the very last marked as the end of an append, so that recovery keeps
// all of them or none.
func (s *Store) AppendMulti(ctx context.Context, parts ...eventstore.StreamAppend) ([]eventstore.AppendResult, error) {
	if len(parts) == 0 {
		return nil, nil
	}
	if len(parts) > MaxAppendStreams {
		return nil, fmt.Errorf("%w: a multi-stream append of %d streams, more than %d", eventstore.ErrInvalidEvent, len(parts), MaxAppendStreams)
	}
	seen := make(map[string]bool, len(parts))
	reqs := make([]*appendReq, len(parts))
	size := 0
	for i, p := range parts {
		if len(p.Events) == 0 {
			return nil, fmt.Errorf("%w: part %d (stream %q) of a multi-stream append has no events", eventstore.ErrInvalidEvent, i, p.Stream)
		}
		if seen[p.Stream] {
			return nil, fmt.Errorf("%w: stream %q is in two parts of one append", eventstore.ErrInvalidEvent, p.Stream)
		}
		seen[p.Stream] = true
		r, err := newAppendReq(ctx, p.Stream, p.Expected, p.Events, i == len(parts)-1)
		if err != nil {
			return nil, err
		}
		size += len(r.buf)
		reqs[i] = r
	}
	if size > MaxAppendSize {
		return nil, fmt.Errorf("%w: a multi-stream append of %d bytes, more than %d", eventstore.ErrInvalidEvent, size, MaxAppendSize)
	}
	lead := reqs[0]
	lead.more = reqs[1:]
	if err := s.submit(ctx, lead); err != nil {
		return nil, err
	}
	if lead.err != nil {
		return nil, lead.err
	}
	out := make([]eventstore.AppendResult, len(reqs))
	for i, r := range reqs {
		out[i] = r.res
	}
	return out, nil
}

// newAppendReq checks and encodes the events of one stream's append; last
// marks its final record as the end of an append (false for the parts of a
// multi-stream append but its last).
func newAppendReq(ctx context.Context, stream string, expected eventstore.ExpectedVersion, events []eventstore.EventData, last bool) (*appendReq, error) {
	if err := validate(stream, events); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	size := 0
	for i := range events {
		size += recordSize(stream, &events[i])
	}
	if size > MaxAppendSize {
		return nil, fmt.Errorf("%w: %d events of stream %q take %d bytes, more than %d in one append",
			eventstore.ErrInvalidEvent, len(events), stream, size, MaxAppendSize)
	}
	buf := make([]byte, 0, size)
	r := &appendReq{
		ctx:      ctx,
		stream:   stream,
		hash:     maphash.String(hashSeed, stream),
		expected: expected,
		n:        len(events),
	}
	for i := range events {
		id := events[i].ID
		if id == uuid.Nil {
			id = uuid.New()
		}
		buf = appendRecord(buf, stream, &events[i], id, last && i == len(events)-1)
		if v := events[i].Value; v != nil {
			if r.values == nil {
				r.values = r.one[:]
				if len(events) > 1 {
					r.values = make([]any, len(events))
				}
			}
			r.values[i] = v
		}
	}
	r.buf = buf
	return r, nil
}

// value is the Value of the append's i-th event, or nil.
func (r *appendReq) value(i int) any {
	if r.values == nil {
		return nil
	}
	return r.values[i]
}

// submit hands req (and its other parts) to the writer and waits for the
// answer, in req.res and req.err; an error returned means it was not
// answered (the store is closed or failed, or ctx ended before the queue
// took it). Once queued, the answer is waited for whatever ctx does: the
// writer answers every request it takes, those whose ctx ended meanwhile
// with ctx's error unless it has written them already, so the wait is one
// group's write at most, and a caller never returns while its append may
// still happen: before, one that returned ctx's error could still be
// written (TestAppendAnswerIsTheTruth).
func (s *Store) submit(ctx context.Context, req *appendReq) error {
	req.done = make(chan struct{})
	s.closeMu.RLock()
	if s.closed {
		s.closeMu.RUnlock()
		return eventstore.ErrClosed
	}
	if err := s.failure(); err != nil {
		s.closeMu.RUnlock()
		return err
	}
	for r := range req.parts {
		s.hint(r)
	}
	// A queue with room takes req without a look at ctx: asking ctx for
	// its Done channel makes one (a request's context has none until
	// asked), an allocation and a select per click.
	select {
	case s.queue <- req:
	default:
		select {
		case s.queue <- req:
		case <-ctx.Done():
			s.closeMu.RUnlock()
			return ctx.Err()
		}
	}
	s.closeMu.RUnlock()
	<-req.done
	return nil
}

// hint reads r's stream's version here, on the caller's goroutine, rather
// than on the writer's, when the stream is probably not in the writer's
// cache; a stream the filter does not hold was never written, and needs no
// read.
func (s *Store) hint(r *appendReq) {
	if s.hot[r.hash%hotSlots].Load() == r.hash {
		return
	}
	at := s.indexedEnd.Load()
	if !s.streams.mayHold(r.hash) {
		r.hint = versionHint{ok: true, at: at}
	} else if v, ok, end, err := s.lastVersion(r.stream, -1); err == nil {
		r.hint = versionHint{ok: true, at: at, version: v, exists: ok, end: end}
	}
}

var hashSeed = maphash.MakeSeed()

func validate(stream string, events []eventstore.EventData) error {
	if stream == "" {
		return fmt.Errorf("%w: empty stream name", eventstore.ErrInvalidEvent)
	}
	if strings.HasPrefix(stream, "$") {
		return fmt.Errorf("%w: stream %q: names starting with $ are reserved", eventstore.ErrInvalidEvent, stream)
	}
	for i := range events {
		if events[i].Type == "" {
			return fmt.Errorf("%w: event %d of stream %q has no type", eventstore.ErrInvalidEvent, i, stream)
		}
		if n := eventSize(stream, &events[i]); n > MaxEventSize {
			return fmt.Errorf("%w: event %d of stream %q is %d bytes, more than %d", eventstore.ErrInvalidEvent, i, stream, n, MaxEventSize)
		}
	}
	return nil
}

// runWriter is the single writer: it takes groups of requests from the
// queue until Close closes it.
func (s *Store) runWriter() {
	defer close(s.writerDone)
	var group []*appendReq
	for req := range s.queue {
		group = append(group[:0], req)
		bytes := len(req.buf)
		// streams bounds the streams a group writes (a multi-stream append
		// writes several): the version cache keeps every one of them.
		streams := 1 + len(req.more)
		closed := false
		drain := func() int {
			n := 0
			for !closed && streams < maxGroupReqs && bytes < maxGroupBytes {
				select {
				case r, ok := <-s.queue:
					if !ok {
						closed = true
						return n
					}
					group = append(group, r)
					bytes += len(r.buf)
					streams += 1 + len(r.more)
					n++
				default:
					return n
				}
			}
			return n
		}
		// Let the appenders that are runnable enqueue before writing: a
		// write system call costs more than the few events it would carry
		// alone. Yield again while that brought more (under load). With
		// nothing else runnable, Gosched returns at once.
		drain()
		for round := 0; round < groupYields; round++ {
			runtime.Gosched()
			if drain() == 0 {
				break
			}
		}
		s.writeGroup(group)
		clear(group)
	}
	close(s.indexCh)
	<-s.indexerDone
}

// writeGroup checks and writes a group of requests and passes them on.
func (s *Store) writeGroup(group []*appendReq) {
	w := &s.w
	if err := s.failure(); err != nil {
		s.failReqs(group, err)
		return
	}
	if w.index == nil {
		w.index = indexBatches.Get().(*indexBatch)
	}
	now := time.Now().UnixNano()
	for i, r := range group {
		if err := r.ctx.Err(); err != nil {
			r.err = err
			w.chunk = append(w.chunk, r)
			continue
		}
		// Check every part before writing any: a multi-stream append is
		// written whole or not at all.
		size := int64(0)
		for p := range r.parts {
			v, ok, err := s.cachedVersion(p)
			if err != nil {
				r.err = fmt.Errorf("embedded: read stream version: %w", err)
				break
			}
			if !p.expected.Check(v, ok) {
				r.err = wrongVersion(p.stream, p.expected, v, ok)
				break
			}
			p.cur, p.exists = v, ok
			size += int64(len(p.buf))
		}
		if r.err != nil {
			w.chunk = append(w.chunk, r)
			continue
		}
		if r.n == 0 {
			r.res = eventstore.AppendResult{NextExpectedVersion: r.cur}
			w.chunk = append(w.chunk, r)
			continue
		}
		pending := w.segOff + int64(len(w.buf))
		if pending > 0 && pending+size > s.opts.segmentSize {
			// Appends never span segments: finish the chunk, start a new
			// segment.
			if err := s.commitChunk(); err != nil {
				s.failReqs(group[i:], err)
				return
			}
			if err := s.roll(); err != nil {
				s.failReqs(group[i:], s.fail(err))
				return
			}
		}
		for p := range r.parts {
			s.writeReq(p, now)
		}
		w.chunk = append(w.chunk, r)
	}
	if err := s.commitChunk(); err != nil {
		return // commitChunk failed the chunk's requests; nothing else is left
	}
}

// writeReq assigns r's events their versions, after the stream's checked
// version, adds its records to the chunk and lists their index entries.
func (s *Store) writeReq(r *appendReq, now int64) {
	w := &s.w
	next := uint64(0)
	if r.exists {
		next = r.cur + 1
	}
	r.start = w.end + int64(len(w.buf))
	pos := r.start
	for off := 0; off < len(r.buf); {
		l := recordLen(r.buf[off:])
		sealRecord(r.buf[off:off+l], next, now)
		w.index.addEvent(next, pos, l)
		off += l
		pos += int64(l)
		next++
	}
	w.buf = append(w.buf, r.buf...)
	w.index.addVersion(r.stream, next-1, pos)
	r.res = eventstore.AppendResult{NextExpectedVersion: next - 1, Position: position(pos)}
	if !s.w.cache.update(r.node, r.stream, next-1, pos) {
		s.cachePut(r.stream, next-1, pos)
	}
	if hot := &s.hot[r.hash%hotSlots]; hot.Load() != r.hash {
		hot.Store(r.hash)
	}
	if !r.exists {
		// A new stream enters the filter before any of its events is
		// visible. One that exists is in it already (added here when it
		// was new, or at Open from the index): adding it again would cost
		// seven cache misses per append (0.45 µs of a redirect's click).
		s.streams.add(r.hash)
	}
}

func wrongVersion(stream string, expected eventstore.ExpectedVersion, cur uint64, exists bool) error {
	state := "no stream"
	if exists {
		state = fmt.Sprintf("version %d", cur)
	}
	return fmt.Errorf("%w: stream %q is at %s, expected %s", eventstore.ErrWrongExpectedVersion, stream, state, expected)
}

// cachedVersion returns the writer's view of r's stream's last version,
// which includes appends written but not yet acknowledged: from the cache,
// else from the caller's lookup when the index it read covered the cache's
// horizon, else from the index once it covers the horizon.
func (s *Store) cachedVersion(r *appendReq) (uint64, bool, error) {
	c := s.w.cache
	node, v, ok := c.getNode(r.stream)
	r.node = node
	if ok {
		return v, true, nil
	}
	h := r.hint
	if !h.ok || h.at < c.horizon {
		if err := s.waitIndexed(c.horizon); err != nil {
			return 0, false, err
		}
		v, ok, end, err := s.lastVersion(r.stream, -1)
		if err != nil {
			return 0, false, err
		}
		h = versionHint{ok: true, version: v, exists: ok, end: end}
	}
	if h.exists {
		s.cachePut(r.stream, h.version, h.end)
	}
	return h.version, h.exists, nil
}

// cachePut records stream's version in the writer's cache, and takes the
// stream the cache evicts for it out of the hot table.
func (s *Store) cachePut(stream string, version uint64, end int64) {
	if old, ok := s.w.cache.put(stream, version, end); ok {
		h := maphash.String(hashSeed, old)
		s.hot[h%hotSlots].CompareAndSwap(h, 0)
	}
}

// waitIndexed waits until the index covers the log up to end. It fails
// when the store fails first.
func (s *Store) waitIndexed(end int64) error {
	if s.indexedEnd.Load() >= end {
		return nil
	}
	s.indexedMu.Lock()
	defer s.indexedMu.Unlock()
	for s.indexedEnd.Load() < end {
		if err := s.failure(); err != nil {
			return err
		}
		s.indexedCond.Wait()
	}
	return nil
}

func (s *Store) setIndexed(end int64) {
	s.indexedMu.Lock()
	s.indexedEnd.Store(end)
	s.indexedCond.Broadcast()
	s.indexedMu.Unlock()
}

// commitChunk writes w.buf to the active segment and passes the chunk to
// the indexer. A failed write fails the chunk's requests and the store.
func (s *Store) commitChunk() error {
	w := &s.w
	item := &stageItem{seg: w.seg, reqs: w.chunk}
	w.chunk = nil
	if len(w.buf) > 0 {
		if err := s.reserve(w.end + int64(len(w.buf))); err != nil {
			err = s.fail(fmt.Errorf("write index: %w", err))
			s.failReqs(item.reqs, err)
			return err
		}
		if _, err := w.seg.f.WriteAt(w.buf, w.segOff); err != nil {
			err = s.fail(fmt.Errorf("write log: %w", err))
			s.failReqs(item.reqs, err)
			return err
		}
		w.segOff += int64(len(w.buf))
		w.end += int64(len(w.buf))
		if cap(w.buf) > 2*maxGroupBytes {
			w.buf = nil // after a huge append
		}
		w.buf = w.buf[:0]
		item.end = w.end
		item.entries = w.index
		item.durable = s.syncedEnd.Load()
		w.index = indexBatches.Get().(*indexBatch)
	}
	if len(item.reqs) > 0 || item.entries != nil {
		s.indexCh <- item
	}
	return nil
}

// reserve makes sure that "m/reserved" is past end before positions up to
// end are handed out.
func (s *Store) reserve(end int64) error {
	w := &s.w
	if end <= w.reserved {
		return nil
	}
	r := end + reserveStep
	b := s.db.NewBatch()
	defer b.Close()
	if err := setOffset(b, keyReserved, r); err != nil {
		return err
	}
	if err := b.Commit(pebble.Sync); err != nil {
		return err
	}
	w.reserved = r
	return nil
}

// failReqs answers the requests that have no error yet with err.
func (s *Store) failReqs(reqs []*appendReq, err error) {
	for _, r := range reqs {
		if r.err == nil {
			r.err = err
		}
		r.res = eventstore.AppendResult{}
		close(r.done)
	}
	s.w.chunk = s.w.chunk[:0]
	s.w.buf = s.w.buf[:0]
	if s.w.index != nil {
		s.w.index.reset()
	}
	s.w.cache.reset(s.w.end)
	for i := range s.hot {
		s.hot[i].Store(0)
	}
}

// roll fsyncs the active segment and starts a new one at the log end.
func (s *Store) roll() error {
	w := &s.w
	if err := fdatasync(w.seg.f); err != nil {
		return fmt.Errorf("sync log: %w", err)
	}
	s.advanceSynced(w.end)
	f, err := createSegment(s.logDir, w.end)
	if err != nil {
		return err
	}
	seg := &segment{base: w.end, end: -1, f: f}
	s.segsMu.Lock()
	defer s.wakeCompactor()
	defer s.segsMu.Unlock()
	old := *s.segs.Load()
	segs := make([]*segment, len(old), len(old)+1)
	copy(segs, old)
	sealed := *segs[len(segs)-1]
	sealed.end = w.end
	segs[len(segs)-1] = &sealed
	segs = append(segs, seg)
	s.segs.Store(&segs)
	w.seg = seg
	w.segOff = 0
	return nil
}

func (s *Store) advanceSynced(end int64) {
	for {
		cur := s.syncedEnd.Load()
		if end <= cur || s.syncedEnd.CompareAndSwap(cur, end) {
			return
		}
	}
}

// runIndexer hands the writer's index entries, in order, to the pending
// keys (pending.go, written by the flusher), then acknowledges their
// appends.
func (s *Store) runIndexer() {
	defer close(s.indexerDone)
	s.pending.start(s.db, s.opts.hash, func(err error) { s.fail(fmt.Errorf("write index: %w", err)) })
	var durable int64 // of the last chunk added
	for item := range s.indexCh {
		if item.entries != nil {
			err := s.failure()
			if err == nil {
				// In memory until the flusher writes it (pending.go).
				s.pending.add(item.entries.versions, item.entries.events)
				durable = item.durable
			}
			item.entries.release()
			item.entries = nil
			if err == nil {
				s.setIndexed(item.end)
			} else {
				s.setIndexed(s.indexedEnd.Load()) // wake the writer if it waits
			}
		}
		if s.syncCh != nil {
			s.syncCh <- item
		} else {
			s.finish([]*stageItem{item})
		}
		if s.failure() == nil {
			s.pending.maybeFlush(s.indexedEnd.Load(), durable)
		}
	}
	// Close: the next Open finds every key in the index.
	if err := s.pending.stop(s.db, s.indexedEnd.Load(), durable, s.failure() == nil); err != nil {
		s.fail(fmt.Errorf("write index: %w", err))
	}
	if s.syncCh != nil {
		close(s.syncCh)
		<-s.syncerDone
	}
}

// finish publishes the items' events and answers their requests, or fails
// them all once the store has failed: nothing more becomes visible then.
func (s *Store) finish(items []*stageItem) {
	if err := s.failure(); err != nil {
		for _, it := range items {
			for _, r := range it.reqs {
				if r.err == nil {
					r.err = err
					r.res = eventstore.AppendResult{}
				}
				close(r.done)
			}
		}
		return
	}
	for _, it := range items {
		s.publish(it.reqs, it.end)
	}
}

// runSyncer fsyncs what was written and indexed, then publishes
// (SyncAlways). While it waits for one fsync the writer and the indexer go
// on with the next groups, and the next fsync covers all of them.
func (s *Store) runSyncer() {
	defer close(s.syncerDone)
	var items []*stageItem
	for item := range s.syncCh {
		items = append(items[:0], item)
	drain:
		for {
			select {
			case it, ok := <-s.syncCh:
				if !ok {
					break drain
				}
				items = append(items, it)
			default:
				break drain
			}
		}
		var last *stageItem // the last item that wrote
		for _, it := range items {
			if it.end > 0 {
				last = it
			}
		}
		// Items of earlier segments were synced when the writer rolled.
		if last != nil && s.failure() == nil && last.end > s.syncedEnd.Load() {
			if err := s.syncLog(last.seg.f, last.end); err != nil {
				s.fail(fmt.Errorf("sync log: %w", err))
			} else {
				s.advanceSynced(last.end)
			}
		}
		s.finish(items)
		clear(items)
	}
}

// runFlusher fsyncs the log every FlushInterval (SyncInterval).
func (s *Store) runFlusher() {
	defer close(s.flusherDone)
	t := time.NewTicker(s.opts.FlushInterval)
	defer t.Stop()
	for {
		select {
		case <-t.C:
		case <-s.flusherStop:
			return
		}
		end := s.committed.Load()
		if end <= s.syncedEnd.Load() || s.failure() != nil {
			continue
		}
		// Segments before the one holding end-1 were synced when the
		// writer rolled.
		seg := s.segmentAt(end - 1)
		if err := s.syncLog(seg.f, end); err != nil {
			s.fail(fmt.Errorf("sync log: %w", err))
			continue
		}
		s.advanceSynced(end)
	}
}
