// Package embedded is the default event store of linkd: durable files on
// local disk, no server.
//
// # Design
//
// The source of truth is an append-only log of CRC-checked records split
// into segment files (see log.go). A Pebble database beside it indexes
// streams: stream and version → where the record lies (see index.go). The
// index is written without sync and can always be rebuilt from the log.
//
// One writer goroutine takes append requests from a queue, checks expected
// versions against its cache of stream versions (falling back to the
// index), assigns versions and positions, and writes the whole group with
// one write. An indexer goroutine then commits the group's index entries
// as one Pebble batch (which also records how far the index goes), and the
// appends are answered: right away in SyncInterval mode, where a flusher
// fsyncs every FlushInterval; after an fsync in SyncAlways mode, where a
// syncer fsyncs one group while the writer already writes the next ones
// (group commit). See writer.go.
//
// Readers see a log offset ("committed") that only moves forward once the
// events before it are acknowledged; nothing after it is ever returned.
//
// Subscriptions read history from the log, then follow a ring of recent
// events kept in memory; a subscriber that falls behind the ring reads the
// log again, so it never slows writers or other subscribers.
//
// ReadStream and ReadAll with a max of 0 or less return no events, like
// the EventStoreDB adapter.
package embedded

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/linkd/linkd/eventstore"
	"github.com/linkd/linkd/internal/storage/fsdir"
	"github.com/linkd/linkd/internal/storage/pebbleheap"
)

// Store is the embedded event store. It implements eventstore.Store.
type Store struct {
	opts   Options
	log    *slog.Logger
	logDir string
	lock   *os.File
	db     *pebble.DB

	segs atomic.Pointer[[]*segment]
	// segsMu orders the changes to segs (the writer rolls, the compactor
	// swaps a segment for its compressed form); readers only Load.
	segsMu sync.Mutex
	zcache blockCache
	// The compactor (compact.go); nil channels when compression is off.
	compactWake chan struct{}
	compactStop chan struct{}
	compactDone chan struct{}

	// committed is the end of the last acknowledged event: readers never
	// look past it.
	committed atomic.Int64
	// syncedEnd: the log is durable (fsynced) below this offset.
	syncedEnd atomic.Int64
	// indexedEnd: the index holds every append that ends at or before it.
	indexedEnd  atomic.Int64
	indexedMu   sync.Mutex
	indexedCond *sync.Cond
	// hot holds hashes of recently written streams (see Append).
	hot [hotSlots]atomic.Uint64
	// streams holds every stream written (filter.go).
	streams *streamFilter
	// versions answers StreamVersion for streams read often and written
	// rarely (versions.go).
	versions versionTable
	// pending holds the version keys not yet in the index (pending.go).
	pending pendingVersions

	closeMu sync.RWMutex
	closed  bool
	closing chan struct{}

	failed atomic.Pointer[error]

	queue       chan *appendReq
	indexCh     chan *stageItem
	indexerDone chan struct{}
	syncCh      chan *stageItem
	syncerDone  chan struct{}
	writerDone  chan struct{}
	flusherStop chan struct{}
	flusherDone chan struct{}

	w writerState // owned by the writer goroutine

	live liveRing
}

var _ eventstore.Store = (*Store)(nil)

// progressEvery is how often a long reindex at Open reports progress.
const progressEvery = 10 * time.Second

const (
	lockFile = "LOCK"
	logSub   = "log"
	indexSub = "index"
)

// Open opens the store in opts.Dir, creating it when missing, and recovers
// from a crash: a torn tail of the log is cut off and the index catches up
// with the log.
func Open(opts Options) (*Store, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	opts = opts.withDefaults()
	s := &Store{
		opts:        opts,
		log:         opts.Logger.With("component", "eventstore/embedded", "dir", opts.Dir),
		logDir:      filepath.Join(opts.Dir, logSub),
		closing:     make(chan struct{}),
		queue:       make(chan *appendReq, queueSize),
		writerDone:  make(chan struct{}),
		indexCh:     make(chan *stageItem, stageQueue),
		indexerDone: make(chan struct{}),
	}
	s.indexedCond = sync.NewCond(&s.indexedMu)
	if err := os.MkdirAll(s.logDir, 0o755); err != nil {
		return nil, fmt.Errorf("embedded: %w", err)
	}
	lock, err := lockDir(filepath.Join(opts.Dir, lockFile))
	if err != nil {
		return nil, err
	}
	s.lock = lock
	ok := false
	defer func() {
		if !ok {
			s.closeFiles()
		}
	}()

	s.db, err = pebbleheap.Open(filepath.Join(opts.Dir, indexSub), pebbleOptions(s.log))
	if err != nil {
		return nil, fmt.Errorf("embedded: open index: %w", err)
	}
	if err := s.checkIndexFormat(); err != nil {
		return nil, err
	}
	end, writeAt, reserved, err := s.recover()
	if err != nil {
		return nil, err
	}
	if s.streams, err = buildStreamFilter(s.db); err != nil {
		return nil, fmt.Errorf("embedded: read index: %w", err)
	}
	s.committed.Store(end)
	s.syncedEnd.Store(end)
	s.indexedEnd.Store(end)
	s.live.init(end)
	s.w.init(s, end, writeAt, reserved)

	if opts.Durability == SyncAlways {
		s.syncCh = make(chan *stageItem, stageQueue)
		s.syncerDone = make(chan struct{})
		go s.runSyncer()
	} else {
		s.flusherStop = make(chan struct{})
		s.flusherDone = make(chan struct{})
		go s.runFlusher()
	}
	go s.runIndexer()
	go s.runWriter()
	if !opts.noCompress {
		s.startCompactor()
	}
	ok = true
	return s, nil
}

// checkIndexFormat empties an index written in another layout (an older
// linkd's), keeping the marks that are not about its entries (m/reserved,
// m/open): recover then indexes the whole log again, as for a deleted
// index. A new index gets its format from commitMarks.
func (s *Store) checkIndexFormat() error {
	format, err := getOffset(s.db, keyFormat)
	if err != nil {
		return fmt.Errorf("embedded: read index format: %w", err)
	}
	if format == indexFormat {
		return nil
	}
	if format > indexFormat {
		return fmt.Errorf("embedded: the index is in format %d, newer than this program's %d: delete %s to rebuild it from the log", format, indexFormat, filepath.Join(s.opts.Dir, indexSub))
	}
	if format == 3 {
		// The keys are those of format 4, every version key written
		// with its events: "m/versioned" is "m/indexed".
		indexed, err := getOffset(s.db, keyIndexed)
		if err != nil {
			return fmt.Errorf("embedded: read index mark: %w", err)
		}
		return s.writeMarks([]mark{{keyVersioned, indexed}, {keyFormat, indexFormat}})
	}
	it, err := s.db.NewIter(nil)
	if err != nil {
		return fmt.Errorf("embedded: read index: %w", err)
	}
	empty := !it.First()
	if err := it.Close(); err != nil {
		return fmt.Errorf("embedded: read index: %w", err)
	}
	if empty {
		return nil
	}
	keep := map[string]int64{}
	for _, k := range [][]byte{keyReserved, keyOpen} {
		if keep[string(k)], err = getOffset(s.db, k); err != nil {
			return fmt.Errorf("embedded: read index mark: %w", err)
		}
	}
	s.log.Warn("embedded: the index is in an older format: rebuilding it from the log", "format", format, "new_format", indexFormat)
	dir := filepath.Join(s.opts.Dir, indexSub)
	if err := pebbleheap.Close(s.db); err != nil {
		s.db = nil
		return fmt.Errorf("embedded: close index: %w", err)
	}
	s.db = nil
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("embedded: remove old index: %w", err)
	}
	if s.db, err = pebbleheap.Open(dir, pebbleOptions(s.log)); err != nil {
		return fmt.Errorf("embedded: open index: %w", err)
	}
	return s.writeMarks([]mark{{keyReserved, keep[string(keyReserved)]}, {keyOpen, keep[string(keyOpen)]}, {keyFormat, indexFormat}})
}

// recover opens the segments, verifies the log after the last point known
// to be durable, cuts a torn tail, and brings the index in line with the
// log. It returns the end of the last event (committed) and the offset
// where the next record goes.
//
// After a crash (the store was not closed), the appends acknowledged in
// the last FlushInterval may be lost (SyncInterval, machine crash), and
// their positions may already be in the checkpoints of projections. So
// writing resumes in a new segment past every offset that may have been
// handed out ("m/reserved", fsynced ahead of the writer): a position is
// never given to two events.
func (s *Store) recover() (end, writeAt int64, reserved int64, err error) {
	marks := map[string]int64{}
	for _, k := range [][]byte{keyIndexed, keyVersioned, keyDurable, keyReserved, keyOpen} {
		if marks[string(k)], err = getOffset(s.db, k); err != nil {
			return 0, 0, 0, fmt.Errorf("embedded: read index mark: %w", err)
		}
	}
	indexed, durable, reserved := marks[string(keyIndexed)], marks[string(keyDurable)], marks[string(keyReserved)]
	versioned := marks[string(keyVersioned)]
	crashed := marks[string(keyOpen)] != 0
	if err := tidySegments(s.logDir, s.log); err != nil {
		return 0, 0, 0, fmt.Errorf("embedded: %w", err)
	}
	infos, err := listSegments(s.logDir)
	if err != nil {
		return 0, 0, 0, fmt.Errorf("embedded: %w", err)
	}
	if len(infos) == 0 {
		if durable != 0 || indexed != 0 {
			return 0, 0, 0, fmt.Errorf("embedded: the index covers log offset %d but %s holds no segment", indexed, s.logDir)
		}
		f, err := createSegment(s.logDir, 0)
		if err != nil {
			return 0, 0, 0, err
		}
		s.segs.Store(&[]*segment{{base: 0, end: -1, f: f}})
		return 0, 0, reserved, s.commitMarks(0, 0)
	}
	if infos[0].base != 0 {
		return 0, 0, 0, fmt.Errorf("embedded: first log segment starts at %d, not 0", infos[0].base)
	}
	segs := make([]*segment, 0, len(infos)+1)
	prevEnd := int64(0) // data end of the segment before the last
	for i, info := range infos {
		seg := &segment{base: info.base, end: -1}
		if info.compressed {
			if seg.z, err = openZseg(info.path, info.base, &s.zcache); err != nil {
				return 0, 0, 0, err
			}
			seg.f, infos[i].size = seg.z.f, seg.z.raw
		} else if seg.f, err = os.OpenFile(info.path, os.O_RDWR, 0); err != nil {
			return 0, 0, 0, fmt.Errorf("embedded: %w", err)
		}
		segs = append(segs, seg)
		s.segs.Store(&segs) // closeFiles closes what is open so far on failure
	}
	if last := infos[len(infos)-1]; last.compressed {
		// Only sealed segments are compressed; write in a new one.
		f, err := createSegment(s.logDir, last.base+last.size)
		if err != nil {
			return 0, 0, 0, err
		}
		infos = append(infos, segmentInfo{base: last.base + last.size})
		segs = append(segs, &segment{base: last.base + last.size, end: -1, f: f})
		s.segs.Store(&segs)
	}
	for i, info := range infos[:len(infos)-1] {
		segs[i].end = info.base + info.size
		prevEnd = segs[i].end
		if segs[i].end > infos[i+1].base {
			return 0, 0, 0, fmt.Errorf("embedded: log segment %s holds %d bytes, past the start of the next", info.path, info.size)
		}
	}
	last := infos[len(infos)-1]
	fileEnd := last.base + last.size
	if durable > fileEnd {
		return 0, 0, 0, fmt.Errorf("embedded: the log ends at %d but was fsynced up to %d: log files are missing or truncated", fileEnd, durable)
	}

	// Verify every record after the durable mark (and index those the
	// index lacks: event keys after "m/indexed", version keys after
	// "m/versioned"). end is the end of the last complete append.
	from := min(durable, indexed, versioned)
	end = from
	b := s.db.NewBatch()
	defer func() { b.Close() }()
	var pending [][2][]byte // index entries of the append being read
	// versions are the last versions of the streams of the append being
	// read: one, or several for a multi-stream append (AppendMulti).
	type streamVersion struct {
		stream  string
		version uint64
	}
	var versions []streamVersion
	reindexed := 0
	reported := time.Now()
	r := newLogReader(s, from, fileEnd)
	r.chunk = 1 << 20
	var bad *errBadRecord
	inAppend := false // read records of an append whose last record is not read yet
	for {
		rec, start, n, err := r.next()
		if err == io.EOF {
			break
		}
		if errors.As(err, &bad) {
			break
		}
		if err != nil {
			return 0, 0, 0, err
		}
		if inAppend {
			if seg := s.segmentAt(start); seg.base == start {
				return 0, 0, 0, fmt.Errorf("embedded: log is corrupt: an append runs across the segment starting at %d", start)
			}
		}
		inAppend = !rec.last()
		recEnd := start + int64(n)
		if recEnd > indexed {
			key := eventKey(nil, s.opts.hash(string(rec.stream)), rec.version, start)
			pending = append(pending, [2][]byte{key, eventVal(nil, n)})
			reindexed++
		}
		if k := len(versions) - 1; k >= 0 && versions[k].stream == string(rec.stream) {
			versions[k].version = rec.version
		} else {
			versions = append(versions, streamVersion{string(rec.stream), rec.version})
		}
		if !rec.last() {
			continue
		}
		end = recEnd
		if recEnd > versioned {
			for _, v := range versions {
				pending = append(pending, [2][]byte{versionKey(nil, v.stream), appendVersion(nil, v.version, recEnd)})
			}
		}
		versions = versions[:0]
		for _, kv := range pending {
			if err := b.Set(kv[0], kv[1], nil); err != nil {
				return 0, 0, 0, err
			}
		}
		pending = pending[:0]
		if b.Len() > 8<<20 {
			if err := setOffset(b, keyIndexed, end); err != nil {
				return 0, 0, 0, err
			}
			if err := setOffset(b, keyVersioned, end); err != nil {
				return 0, 0, 0, err
			}
			if err := b.Commit(pebble.NoSync); err != nil {
				return 0, 0, 0, fmt.Errorf("embedded: reindex: %w", err)
			}
			b.Close()
			b = s.db.NewBatch()
			if time.Since(reported) > progressEvery {
				// A rebuilt index (deleted, or of an older format) reads
				// the whole log: minutes for hundreds of millions of events.
				reported = time.Now()
				s.log.Info("embedded: indexing the log", "events", reindexed, "log_offset", end, "log_end", fileEnd)
			}
		}
	}
	if end < prevEnd {
		cause := "an incomplete append"
		if bad != nil {
			cause = bad.Error()
		}
		return 0, 0, 0, fmt.Errorf("embedded: log is corrupt before its last segment: %s", cause)
	}
	lastSeg := segs[len(segs)-1]
	writeAt = max(end, last.base)
	if writeAt < fileEnd {
		cause := "incomplete append"
		if bad != nil {
			cause = bad.Error()
		}
		s.log.Warn("embedded: cut torn tail of the log", "log_end", end, "bytes_dropped", fileEnd-writeAt, "cause", cause)
		if err := lastSeg.f.Truncate(writeAt - last.base); err != nil {
			return 0, 0, 0, fmt.Errorf("embedded: cut torn tail: %w", err)
		}
	}
	if err := fdatasync(lastSeg.f); err != nil {
		return 0, 0, 0, fmt.Errorf("embedded: sync log: %w", err)
	}
	if reindexed > 0 {
		s.log.Info("embedded: indexed events missing from the index", "events", reindexed, "log_end", end)
	}
	if err := b.Commit(pebble.NoSync); err != nil {
		return 0, 0, 0, fmt.Errorf("embedded: reindex: %w", err)
	}
	if indexed > end {
		// The index kept entries of appends the log lost (machine crash).
		if err := s.dropIndexAfter(end); err != nil {
			return 0, 0, 0, fmt.Errorf("embedded: repair index: %w", err)
		}
	}
	if crashed && reserved > writeAt {
		// Resume past every offset that may have been handed out.
		lastSeg.end = writeAt
		f, err := createSegment(s.logDir, reserved)
		if err != nil {
			return 0, 0, 0, err
		}
		segs = append(segs, &segment{base: reserved, end: -1, f: f})
		s.segs.Store(&segs)
		s.log.Info("embedded: the store was not closed: new events start at a new position", "log_end", end, "resume_at", reserved)
		writeAt = reserved
	}
	return end, writeAt, reserved, s.commitMarks(end, end)
}

// commitMarks durably records the marks of a store just opened, and that
// it is open: if it is not closed properly, the next Open knows.
func (s *Store) commitMarks(indexed, durable int64) error {
	return s.writeMarks([]mark{{keyIndexed, indexed}, {keyVersioned, indexed}, {keyDurable, durable}, {keyOpen, 1}, {keyFormat, indexFormat}})
}

// mark is an index mark and its value.
type mark struct {
	key []byte
	val int64
}

// writeMarks durably writes marks in one batch.
func (s *Store) writeMarks(marks []mark) error {
	b := s.db.NewBatch()
	defer b.Close()
	for _, m := range marks {
		if err := setOffset(b, m.key, m.val); err != nil {
			return err
		}
	}
	if err := b.Commit(pebble.Sync); err != nil {
		return fmt.Errorf("embedded: write index marks: %w", err)
	}
	return nil
}

func createSegment(dir string, base int64) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(dir, segmentName(base)), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, fmt.Errorf("embedded: create segment: %w", err)
	}
	if err := fsdir.Sync(dir); err != nil {
		f.Close()
		return nil, fmt.Errorf("embedded: create segment: %w", err)
	}
	return f, nil
}

// enter starts a read operation; exit must follow.
func (s *Store) enter(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.closeMu.RLock()
	if s.closed {
		s.closeMu.RUnlock()
		return eventstore.ErrClosed
	}
	return nil
}

func (s *Store) exit() { s.closeMu.RUnlock() }

// fail puts the store in a failed state: appends are refused from now on,
// reads go on. Only reopening clears it.
func (s *Store) fail(err error) error {
	err = fmt.Errorf("embedded: store failed, reopen it: %w", err)
	if s.failed.CompareAndSwap(nil, &err) {
		s.log.Error("embedded: appends disabled after an I/O failure", "err", err)
	}
	return *s.failed.Load()
}

func (s *Store) failure() error {
	if p := s.failed.Load(); p != nil {
		return *p
	}
	return nil
}

// Close stops accepting appends, finishes those already queued, fsyncs the
// log and closes the files. Calling it again does nothing.
func (s *Store) Close() error {
	s.closeMu.Lock()
	if s.closed {
		s.closeMu.Unlock()
		return nil
	}
	s.closed = true
	close(s.closing)
	s.closeMu.Unlock()

	// No Append can be sending now: they check closed under closeMu.
	close(s.queue)
	<-s.writerDone
	s.stopCompactor()
	if s.flusherStop != nil {
		close(s.flusherStop)
		<-s.flusherDone
	}
	var errs []error
	end := s.committed.Load()
	if seg := s.segmentAt(max(end-1, 0)); seg != nil && s.syncedEnd.Load() < end {
		if err := fdatasync(seg.f); err != nil {
			errs = append(errs, fmt.Errorf("embedded: sync log: %w", err))
		} else {
			s.syncedEnd.Store(end)
		}
	}
	if s.failure() == nil && len(errs) == 0 {
		if err := s.compressPending(); err != nil {
			// Not an error of Close: the segments stay plain.
			s.log.Warn("embedded: compress log segments", "err", err)
		}
		if err := s.compressActive(); err != nil {
			// Not an error of Close: the segment stays plain.
			s.log.Warn("embedded: compress the last log segment", "err", err)
		}
	}
	if s.failure() == nil && len(errs) == 0 {
		b := s.db.NewBatch()
		err := setOffset(b, keyDurable, s.syncedEnd.Load())
		if err == nil {
			err = setOffset(b, keyOpen, 0) // closed properly
		}
		if err == nil {
			err = b.Commit(pebble.Sync)
		}
		b.Close()
		if err == nil {
			// Else the next Open replays the write-ahead log into memory:
			// up to two 64 MiB memtables before the first request.
			err = s.db.Flush()
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("embedded: sync index: %w", err))
		}
	}
	errs = append(errs, s.closeFiles())
	return errors.Join(errs...)
}

func (s *Store) closeFiles() error {
	var errs []error
	if s.db != nil {
		if err := pebbleheap.Close(s.db); err != nil {
			errs = append(errs, fmt.Errorf("embedded: close index: %w", err))
		}
	}
	if p := s.segs.Load(); p != nil {
		for _, seg := range *p {
			if err := seg.f.Close(); err != nil {
				errs = append(errs, fmt.Errorf("embedded: close log: %w", err))
			}
		}
	}
	if s.lock != nil {
		if err := unlockDir(s.lock); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
