package embedded

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/google/uuid"

	"github.com/linkd/linkd/eventstore"
)

const (
	queueSize     = 1024
	syncQueueSize = 64
	// A group is what the writer takes from the queue at once: one write,
	// one index batch, one fsync in SyncAlways.
	maxGroupReqs  = 1024
	maxGroupBytes = 4 << 20
)

type appendReq struct {
	ctx      context.Context
	stream   string
	expected eventstore.ExpectedVersion
	buf      []byte // the events' records, sealed by the writer
	n        int    // number of events
	done     chan struct{}

	// Set by the writer.
	res   eventstore.AppendResult
	err   error
	start int64 // log offset of the first record
}

// syncItem is a written and indexed chunk waiting for its fsync (SyncAlways).
type syncItem struct {
	seg  *segment
	end  int64
	reqs []*appendReq
}

// writerState belongs to the writer goroutine.
type writerState struct {
	seg    *segment // the active segment
	segOff int64    // bytes in the active segment
	end    int64    // log end: seg.base + segOff
	cache  *versionCache
	buf    []byte
	batch  *pebble.Batch
	chunk  []*appendReq
	key    []byte
	val    []byte
}

func (w *writerState) init(s *Store, end int64) {
	segs := *s.segs.Load()
	w.seg = segs[len(segs)-1]
	w.segOff = end - w.seg.base
	w.end = end
	w.cache = newVersionCache(s.opts.cacheSize)
}

// Append implements eventstore.Store.
func (s *Store) Append(ctx context.Context, stream string, expected eventstore.ExpectedVersion, events ...eventstore.EventData) (eventstore.AppendResult, error) {
	if err := validate(stream, events); err != nil {
		return eventstore.AppendResult{}, err
	}
	if err := ctx.Err(); err != nil {
		return eventstore.AppendResult{}, err
	}
	size := 0
	for i := range events {
		size += recordSize(stream, &events[i])
	}
	buf := make([]byte, 0, size)
	for i := range events {
		id := events[i].ID
		if id == uuid.Nil {
			id = uuid.New()
		}
		buf = appendRecord(buf, stream, &events[i], id, i == len(events)-1)
	}
	req := &appendReq{ctx: ctx, stream: stream, expected: expected, buf: buf, n: len(events), done: make(chan struct{})}

	s.closeMu.RLock()
	if s.closed {
		s.closeMu.RUnlock()
		return eventstore.AppendResult{}, eventstore.ErrClosed
	}
	if err := s.failure(); err != nil {
		s.closeMu.RUnlock()
		return eventstore.AppendResult{}, err
	}
	select {
	case s.queue <- req:
	case <-ctx.Done():
		s.closeMu.RUnlock()
		return eventstore.AppendResult{}, ctx.Err()
	}
	s.closeMu.RUnlock()

	select {
	case <-req.done:
		return req.res, req.err
	case <-ctx.Done():
		// The append may still happen: the writer only drops requests
		// whose context ended before it took them.
		return eventstore.AppendResult{}, ctx.Err()
	}
}

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
	drain:
		for len(group) < maxGroupReqs && bytes < maxGroupBytes {
			select {
			case r, ok := <-s.queue:
				if !ok {
					break drain
				}
				group = append(group, r)
				bytes += len(r.buf)
			default:
				break drain
			}
		}
		s.writeGroup(group)
		clear(group)
	}
	if s.syncCh != nil {
		close(s.syncCh)
		<-s.syncerDone
	}
}

// writeGroup checks, writes and indexes a group of requests, then answers
// them (SyncInterval) or hands them to the syncer (SyncAlways).
func (s *Store) writeGroup(group []*appendReq) {
	w := &s.w
	if err := s.failure(); err != nil {
		for _, r := range group {
			r.err = err
			close(r.done)
		}
		return
	}
	if w.batch == nil {
		w.batch = s.db.NewBatch()
	}
	now := time.Now().UnixNano()
	w.buf = w.buf[:0]
	w.chunk = w.chunk[:0]
	for i, r := range group {
		if err := r.ctx.Err(); err != nil {
			r.err = err
			w.chunk = append(w.chunk, r)
			continue
		}
		cur, exists, err := s.cachedVersion(r.stream)
		if err != nil {
			r.err = fmt.Errorf("embedded: read stream version: %w", err)
			w.chunk = append(w.chunk, r)
			continue
		}
		if !r.expected.Check(cur, exists) {
			r.err = wrongVersion(r.stream, r.expected, cur, exists)
			w.chunk = append(w.chunk, r)
			continue
		}
		if r.n == 0 {
			r.res = eventstore.AppendResult{NextExpectedVersion: cur}
			w.chunk = append(w.chunk, r)
			continue
		}
		pending := w.segOff + int64(len(w.buf))
		if pending > 0 && pending+int64(len(r.buf)) > s.opts.segmentSize {
			// Appends never span segments: finish the chunk, start a new
			// segment.
			if err := s.commitChunk(); err != nil {
				s.failRest(group[i:], err)
				return
			}
			if err := s.roll(); err != nil {
				s.failRest(group[i:], s.fail(err))
				return
			}
		}
		next := uint64(0)
		if exists {
			next = cur + 1
		}
		r.start = w.end + int64(len(w.buf))
		pos := r.start
		for off := 0; off < len(r.buf); {
			l := recordLen(r.buf[off:])
			sealRecord(r.buf[off:off+l], next, now)
			w.key = eventKey(w.key[:0], r.stream, next)
			w.val = appendLoc(w.val[:0], pos, l)
			if err := w.batch.Set(w.key, w.val, nil); err != nil {
				s.failRest(group[i:], s.fail(err))
				return
			}
			off += l
			pos += int64(l)
			next++
		}
		w.buf = append(w.buf, r.buf...)
		r.res = eventstore.AppendResult{
			NextExpectedVersion: next - 1,
			Position:            eventstore.Position{Commit: uint64(pos), Prepare: uint64(pos)},
		}
		w.cache.put(r.stream, next-1)
		w.chunk = append(w.chunk, r)
	}
	if err := s.commitChunk(); err != nil {
		// commitChunk failed the chunk's requests; nothing else is left.
		return
	}
}

func wrongVersion(stream string, expected eventstore.ExpectedVersion, cur uint64, exists bool) error {
	state := "no stream"
	if exists {
		state = fmt.Sprintf("version %d", cur)
	}
	return fmt.Errorf("%w: stream %q is at %s, expected %s", eventstore.ErrWrongExpectedVersion, stream, state, expected)
}

// cachedVersion returns the writer's view of stream's last version, which
// includes appends written but not yet acknowledged.
func (s *Store) cachedVersion(stream string) (uint64, bool, error) {
	if v, ok := s.w.cache.get(stream); ok {
		return v, true, nil
	}
	v, ok, err := lastVersion(s.db, stream, -1)
	if err == nil && ok {
		s.w.cache.put(stream, v)
	}
	return v, ok, err
}

// commitChunk writes w.buf to the active segment, commits the index batch
// and passes the chunk's requests on. On failure it fails them all and the
// store.
func (s *Store) commitChunk() error {
	w := &s.w
	reqs := w.chunk
	w.chunk = nil
	if len(w.buf) > 0 {
		if _, err := w.seg.f.WriteAt(w.buf, w.segOff); err != nil {
			err = s.fail(fmt.Errorf("write log: %w", err))
			s.failRest(reqs, err)
			return err
		}
		w.segOff += int64(len(w.buf))
		w.end += int64(len(w.buf))
		w.buf = w.buf[:0]
		if err := s.commitIndex(pebble.NoSync); err != nil {
			err = s.fail(fmt.Errorf("write index: %w", err))
			s.failRest(reqs, err)
			return err
		}
	}
	if len(reqs) == 0 {
		return nil
	}
	if s.syncCh == nil {
		s.publish(reqs, w.end)
		return nil
	}
	s.syncCh <- &syncItem{seg: w.seg, end: w.end, reqs: reqs}
	return nil
}

// commitIndex commits the writer's batch with both marks.
func (s *Store) commitIndex(o *pebble.WriteOptions) error {
	w := &s.w
	if err := setOffset(w.batch, keyIndexed, w.end); err != nil {
		return err
	}
	if err := setOffset(w.batch, keyDurable, s.syncedEnd.Load()); err != nil {
		return err
	}
	err := w.batch.Commit(o)
	w.batch.Close()
	w.batch = s.db.NewBatch()
	return err
}

// failRest answers reqs with err (the writer could not write them).
func (s *Store) failRest(reqs []*appendReq, err error) {
	for _, r := range reqs {
		if r.err == nil {
			r.err = err
		}
		r.res = eventstore.AppendResult{}
		close(r.done)
	}
	s.w.chunk = s.w.chunk[:0]
	s.w.buf = s.w.buf[:0]
	s.w.cache.reset()
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
	seg := &segment{base: w.end, f: f}
	old := *s.segs.Load()
	segs := make([]*segment, len(old), len(old)+1)
	copy(segs, old)
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

// runSyncer fsyncs what the writer wrote and answers (SyncAlways). While it
// waits for one fsync the writer goes on writing the next group, and the
// next fsync covers everything written meanwhile.
func (s *Store) runSyncer() {
	defer close(s.syncerDone)
	var items []*syncItem
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
		s.syncItems(items)
		clear(items)
	}
}

func (s *Store) syncItems(items []*syncItem) {
	last := items[len(items)-1]
	// Once the store failed nothing more becomes visible, even if a later
	// fsync succeeds: the appends of the failed fsync were refused.
	err := s.failure()
	if err == nil && last.end > s.syncedEnd.Load() {
		// Items of earlier segments were synced when the writer rolled.
		if e := fdatasync(last.seg.f); e != nil {
			err = s.fail(fmt.Errorf("sync log: %w", e))
		} else {
			s.advanceSynced(last.end)
		}
	}
	if err != nil {
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
		seg, _ := s.segmentFor(end - 1)
		if err := fdatasync(seg.f); err != nil {
			s.fail(fmt.Errorf("sync log: %w", err))
			continue
		}
		s.advanceSynced(end)
	}
}
