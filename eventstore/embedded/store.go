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
// index), assigns versions and positions, writes the whole group with one
// write, indexes it with one Pebble batch (which also records how far the
// index goes), and answers. In SyncAlways mode a syncer goroutine fsyncs
// the group while the writer already writes the next one, and answers after
// the fsync (group commit). In SyncInterval mode the writer answers after
// the write and a flusher fsyncs every FlushInterval.
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

	"github.com/cockroachdb/pebble/v2"

	"github.com/linkd/linkd/eventstore"
)

// Store is the embedded event store. It implements eventstore.Store.
type Store struct {
	opts   Options
	log    *slog.Logger
	logDir string
	lock   *os.File
	db     *pebble.DB

	segs atomic.Pointer[[]*segment]

	// committed is the end of the last acknowledged event: readers never
	// look past it.
	committed atomic.Int64
	// syncedEnd: the log is durable (fsynced) below this offset.
	syncedEnd atomic.Int64

	closeMu sync.RWMutex
	closed  bool
	closing chan struct{}

	failed atomic.Pointer[error]

	queue       chan *appendReq
	syncCh      chan *syncItem
	syncerDone  chan struct{}
	writerDone  chan struct{}
	flusherStop chan struct{}
	flusherDone chan struct{}

	w writerState // owned by the writer goroutine

	live liveRing
}

var _ eventstore.Store = (*Store)(nil)

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
		opts:       opts,
		log:        opts.Logger.With("component", "eventstore/embedded", "dir", opts.Dir),
		logDir:     filepath.Join(opts.Dir, logSub),
		closing:    make(chan struct{}),
		queue:      make(chan *appendReq, queueSize),
		writerDone: make(chan struct{}),
	}
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

	s.db, err = pebble.Open(filepath.Join(opts.Dir, indexSub), &pebble.Options{
		Logger:             pebbleLogger{s.log},
		FormatMajorVersion: pebble.FormatNewest,
		MemTableSize:       16 << 20,
		CacheSize:          32 << 20,
	})
	if err != nil {
		return nil, fmt.Errorf("embedded: open index: %w", err)
	}
	end, err := s.recover()
	if err != nil {
		return nil, err
	}
	s.committed.Store(end)
	s.syncedEnd.Store(end)
	s.live.init(end)
	s.w.init(s, end)

	if opts.Durability == SyncAlways {
		s.syncCh = make(chan *syncItem, syncQueueSize)
		s.syncerDone = make(chan struct{})
		go s.runSyncer()
	} else {
		s.flusherStop = make(chan struct{})
		s.flusherDone = make(chan struct{})
		go s.runFlusher()
	}
	go s.runWriter()
	ok = true
	return s, nil
}

// recover opens the segments, verifies the log after the last point known
// to be durable, cuts a torn tail, and brings the index in line with the
// log. It returns the end of the log.
func (s *Store) recover() (int64, error) {
	indexed, err := getOffset(s.db, keyIndexed)
	if err != nil {
		return 0, fmt.Errorf("embedded: read index mark: %w", err)
	}
	durable, err := getOffset(s.db, keyDurable)
	if err != nil {
		return 0, fmt.Errorf("embedded: read index mark: %w", err)
	}
	infos, err := listSegments(s.logDir)
	if err != nil {
		return 0, fmt.Errorf("embedded: %w", err)
	}
	if len(infos) == 0 {
		if durable != 0 || indexed != 0 {
			return 0, fmt.Errorf("embedded: the index covers log offset %d but %s holds no segment", indexed, s.logDir)
		}
		f, err := createSegment(s.logDir, 0)
		if err != nil {
			return 0, err
		}
		s.segs.Store(&[]*segment{{base: 0, f: f}})
		return 0, nil
	}
	if infos[0].base != 0 {
		return 0, fmt.Errorf("embedded: first log segment starts at %d, not 0", infos[0].base)
	}
	segs := make([]*segment, 0, len(infos))
	s.segs.Store(&segs)
	for i, info := range infos {
		if i+1 < len(infos) && info.base+info.size != infos[i+1].base {
			return 0, fmt.Errorf("embedded: log segment %s holds %d bytes but the next starts at %d", info.path, info.size, infos[i+1].base)
		}
		f, err := os.OpenFile(info.path, os.O_RDWR, 0)
		if err != nil {
			return 0, fmt.Errorf("embedded: %w", err)
		}
		segs = append(segs, &segment{base: info.base, f: f})
		s.segs.Store(&segs)
	}
	last := infos[len(infos)-1]
	fileEnd := last.base + last.size
	if durable > fileEnd {
		return 0, fmt.Errorf("embedded: the log ends at %d but was fsynced up to %d: log files are missing or truncated", fileEnd, durable)
	}

	// Verify every record after the durable mark (and index those the
	// index lacks). end is the end of the last complete append.
	from := min(durable, indexed)
	end := from
	b := s.db.NewBatch()
	defer func() { b.Close() }()
	var pending [][2][]byte // index entries of the append being read
	reindexed := 0
	r := newLogReader(s, from, fileEnd)
	r.chunk = 1 << 20
	var badErr error
	inAppend := false // read records of an append whose last record is not read yet
	for {
		rec, start, n, err := r.next()
		if err == io.EOF {
			break
		}
		var bad *errBadRecord
		if errors.As(err, &bad) {
			badErr = bad
			break
		}
		if err != nil {
			return 0, err
		}
		if inAppend {
			if seg, _ := s.segmentFor(start); seg.base == start {
				return 0, fmt.Errorf("embedded: log is corrupt: an append runs across the segment starting at %d", start)
			}
		}
		inAppend = !rec.last()
		recEnd := start + int64(n)
		if recEnd > indexed {
			key := eventKey(nil, string(rec.stream), rec.version)
			pending = append(pending, [2][]byte{key, appendLoc(nil, start, n)})
		}
		if !rec.last() {
			continue
		}
		end = recEnd
		for _, kv := range pending {
			if err := b.Set(kv[0], kv[1], nil); err != nil {
				return 0, err
			}
		}
		reindexed += len(pending)
		pending = pending[:0]
		if b.Len() > 8<<20 {
			if err := setOffset(b, keyIndexed, end); err != nil {
				return 0, err
			}
			if err := b.Commit(pebble.NoSync); err != nil {
				return 0, fmt.Errorf("embedded: reindex: %w", err)
			}
			b.Close()
			b = s.db.NewBatch()
		}
	}
	if end < last.base {
		return 0, fmt.Errorf("embedded: log is corrupt before its last segment (%v)", badErr)
	}
	if end < fileEnd {
		if badErr == nil {
			badErr = errors.New("incomplete append")
		}
		s.log.Warn("embedded: cut torn tail of the log", "log_end", end, "bytes_dropped", fileEnd-end, "cause", fmt.Sprint(badErr))
		lastSeg := segs[len(segs)-1]
		if err := lastSeg.f.Truncate(end - lastSeg.base); err != nil {
			return 0, fmt.Errorf("embedded: cut torn tail: %w", err)
		}
	}
	if err := fdatasync(segs[len(segs)-1].f); err != nil {
		return 0, fmt.Errorf("embedded: sync log: %w", err)
	}
	if reindexed > 0 {
		s.log.Info("embedded: indexed events missing from the index", "events", reindexed, "log_end", end)
	}
	if indexed > end {
		// The index kept entries of appends the log lost (machine crash).
		if err := dropIndexAfter(s.db, end, s.log); err != nil {
			return 0, fmt.Errorf("embedded: repair index: %w", err)
		}
	}
	if err := setOffset(b, keyIndexed, end); err != nil {
		return 0, err
	}
	if err := setOffset(b, keyDurable, end); err != nil {
		return 0, err
	}
	if err := b.Commit(pebble.Sync); err != nil {
		return 0, fmt.Errorf("embedded: reindex: %w", err)
	}
	return end, nil
}

func createSegment(dir string, base int64) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(dir, segmentName(base)), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, fmt.Errorf("embedded: create segment: %w", err)
	}
	if err := syncDir(dir); err != nil {
		f.Close()
		return nil, fmt.Errorf("embedded: create segment: %w", err)
	}
	return f, nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
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
	if s.flusherStop != nil {
		close(s.flusherStop)
		<-s.flusherDone
	}
	var errs []error
	end := s.committed.Load()
	if seg, _ := s.segmentFor(max(end-1, 0)); seg != nil && s.syncedEnd.Load() < end {
		if err := fdatasync(seg.f); err != nil {
			errs = append(errs, fmt.Errorf("embedded: sync log: %w", err))
		} else {
			s.syncedEnd.Store(end)
		}
	}
	if s.failure() == nil && len(errs) == 0 {
		b := s.db.NewBatch()
		err := setOffset(b, keyDurable, s.syncedEnd.Load())
		if err == nil {
			err = b.Commit(pebble.Sync)
		}
		b.Close()
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
		if err := s.db.Close(); err != nil {
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
