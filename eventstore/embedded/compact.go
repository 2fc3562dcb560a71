package embedded

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/linkd/linkd/internal/storage/fsdir"
)

// The compactor compresses sealed segments in the background (format and
// crash safety in zseg.go). A segment qualifies once it is sealed (the
// writer rolled past it) and fsynced; the active segment stays plain, so
// appends never wait for it. The swap is atomic for readers: the segment
// list is replaced with one that points at the compressed file before the
// plain file is closed, and a read that finds the plain file closed reads
// again through the new list (logReader.fill).

func (s *Store) startCompactor() {
	s.compactWake = make(chan struct{}, 1)
	s.compactStop = make(chan struct{})
	s.compactDone = make(chan struct{})
	go s.runCompactor()
	s.wakeCompactor()
}

// wakeCompactor tells the compactor that a segment may be ready.
func (s *Store) wakeCompactor() {
	if s.compactWake == nil {
		return
	}
	select {
	case s.compactWake <- struct{}{}:
	default:
	}
}

func (s *Store) stopCompactor() {
	if s.compactStop == nil {
		return
	}
	close(s.compactStop)
	<-s.compactDone
}

func (s *Store) runCompactor() {
	defer close(s.compactDone)
	load := loadGauge{at: time.Now(), end: s.committed.Load()}
	yield := func() error { return s.yieldToLoad(&load) }
	for {
		select {
		case <-s.compactStop:
			return
		case <-s.compactWake:
		}
		for seg := s.nextToCompress(); seg != nil; seg = s.nextToCompress() {
			if err := yield(); err != nil {
				return
			}
			// Paced in the steady state; at full speed while the log
			// grows faster than a paced compactor keeps up (a bulk load).
			p := pace{stop: s.compactStop, share: s.opts.compactShare, hurry: s.behind, yield: yield}
			if err := s.compressSealed(seg, p); errors.Is(err, errStopped) {
				return
			} else if err != nil {
				// The plain segment stays; the next roll tries again.
				s.log.Error("embedded: compress log segment", "base", seg.base, "err", err)
				break
			}
		}
	}
}

// pacedBacklog is how many sealed segments may wait for the compactor
// before it stops resting.
const pacedBacklog = 2

// behind reports whether more sealed segments wait than pacedBacklog.
func (s *Store) behind() bool { return s.plainSealed() > pacedBacklog }

// Under load the compactor yields: while appends grow the log faster
// than busyRate, it leaves sealed segments plain, up to deferBytes of them,
// and compresses them once the load passes (or the backlog reaches
// deferBytes: then one segment at a time, at full speed, as the log
// grows). Compression was 7-8% of linkd's CPU under the redirect load
// (ADR 0015), all of it work
// that can wait: a plain segment is as durable as a compressed one and
// reads faster; it only takes more disk for a while.
const (
	// busyRate is the growth of the log, in bytes a second, above which
	// the compactor yields: about 6,000 clicks a second.
	busyRate = 4 << 20
	// deferBytes bounds the sealed plain segments a yielding compactor
	// leaves: eight default segments, about 25 s of the redirect
	// benchmark's clicks at full speed (docs/operations.md).
	deferBytes = 8 * DefaultSegmentSize
	// loadWindow is how often the compactor measures the log's growth.
	loadWindow = 250 * time.Millisecond
)

// loadGauge measures the growth of the log, one window at a time, for the
// compactor's goroutine.
type loadGauge struct {
	at   time.Time
	end  int64
	busy bool
}

// busyAt reports whether the log grew faster than rate bytes a second
// over the last full window before now, end being its committed end now.
func (g *loadGauge) busyAt(now time.Time, end, rate int64) bool {
	if el := now.Sub(g.at); el >= loadWindow {
		g.busy = float64(end-g.end) > float64(rate)*el.Seconds()
		g.at, g.end = now, end
	}
	return g.busy
}

// yieldToLoad waits while the log grows fast and the sealed plain
// segments hold at most deferBytes; it returns errStopped on a stop.
func (s *Store) yieldToLoad(g *loadGauge) error {
	for {
		if _, plain := s.plain(); plain > s.opts.deferBytes || !g.busyAt(time.Now(), s.committed.Load(), s.opts.busyRate) {
			return nil
		}
		t := time.NewTimer(restSlice)
		select {
		case <-s.compactStop:
			t.Stop()
			return errStopped
		case <-t.C:
		}
	}
}

// PlainBytes is how many bytes of sealed log segments wait for the
// compactor (0 when compression is off): what a load has left it to do
// (linkd_eventstore_plain_bytes).
func (s *Store) PlainBytes() int64 {
	if s.compactWake == nil {
		return 0
	}
	_, bytes := s.plain()
	return bytes
}

// plainSealed counts the sealed segments not compressed yet.
func (s *Store) plainSealed() int {
	n, _ := s.plain()
	return n
}

// plain counts the sealed segments not compressed yet, and sums their
// bytes (a sealed segment's end is set: only the active one's is -1).
func (s *Store) plain() (segments int, bytes int64) {
	segs := *s.segs.Load()
	for _, seg := range segs[:len(segs)-1] {
		if seg.z == nil {
			segments++
			bytes += seg.end - seg.base
		}
	}
	return segments, bytes
}

// compressPending compresses, at full speed, the sealed segments the
// compactor had not reached: Close leaves the log compressed but for its
// last segment.
func (s *Store) compressPending() error {
	if s.opts.noCompress {
		return nil
	}
	for seg := s.nextToCompress(); seg != nil; seg = s.nextToCompress() {
		if err := s.compressSealed(seg, pace{}); err != nil {
			return err
		}
	}
	return nil
}

// nextToCompress returns the first plain segment that is sealed and
// fsynced, or nil.
func (s *Store) nextToCompress() *segment {
	segs := *s.segs.Load()
	synced := s.syncedEnd.Load()
	for _, seg := range segs[:len(segs)-1] {
		if seg.z == nil && seg.end >= 0 && seg.end <= synced {
			return seg
		}
	}
	return nil
}

// compressSealed writes seg compressed at pace p, swaps it in and removes
// the plain file.
func (s *Store) compressSealed(seg *segment, p pace) error {
	path := filepath.Join(s.logDir, zsegName(seg.base))
	if err := compressSegment(seg.f, seg.end-seg.base, path, p); err != nil {
		return err
	}
	if err := fsdir.Sync(s.logDir); err != nil {
		return err
	}
	z, err := openZseg(path, seg.base, &s.zcache)
	if err != nil {
		return err
	}
	s.segsMu.Lock()
	segs := slices.Clone(*s.segs.Load())
	i := slices.IndexFunc(segs, func(x *segment) bool { return x.base == seg.base })
	if i < 0 || segs[i].z != nil || segs[i].end != seg.end {
		s.segsMu.Unlock()
		z.f.Close()
		return fmt.Errorf("segment %d changed while it was compressed", seg.base)
	}
	segs[i] = &segment{base: seg.base, end: seg.end, f: z.f, z: z}
	s.segs.Store(&segs)
	s.segsMu.Unlock()

	// From here on the compressed file serves every new read. If the
	// process dies before the plain file is gone, Open removes it
	// (tidySegments).
	if err := os.Remove(filepath.Join(s.logDir, segmentName(seg.base))); err != nil {
		return err
	}
	if err := fsdir.Sync(s.logDir); err != nil {
		return err
	}
	// Reads in progress on the plain file finish (the file is only closed
	// once they are done); later ones get os.ErrClosed and read again.
	return seg.f.Close()
}

// compressActive compresses the active segment at Close, once appends have
// stopped and it is fsynced, when it holds at least a quarter of a segment:
// the next Open writes in a new segment (recover). A smaller one stays
// plain, so that restarts do not leave many small segments.
func (s *Store) compressActive() error {
	if s.opts.noCompress {
		return nil
	}
	segs := *s.segs.Load()
	seg := segs[len(segs)-1]
	size := s.w.end - seg.base
	if size < s.opts.segmentSize/4 || s.syncedEnd.Load() < s.w.end {
		return nil
	}
	path := filepath.Join(s.logDir, zsegName(seg.base))
	if err := compressSegment(seg.f, size, path, pace{}); err != nil {
		return err
	}
	if err := fsdir.Sync(s.logDir); err != nil {
		return err
	}
	if err := os.Remove(filepath.Join(s.logDir, segmentName(seg.base))); err != nil {
		return err
	}
	return fsdir.Sync(s.logDir)
}

// syncLog fsyncs f, a segment that holds the log up to end. A failure does
// not count when everything up to end is already durable: the writer
// fsynced the segment when it rolled past it, and the compactor may have
// closed it since.
func (s *Store) syncLog(f *os.File, end int64) error {
	err := fdatasync(f)
	if err != nil && end <= s.syncedEnd.Load() {
		return nil
	}
	return err
}
