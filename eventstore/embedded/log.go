package embedded

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/linkd/linkd/internal/storage/fsdir"
)

// The log is a sequence of segment files. Offsets are global: a segment
// named after its base offset holds the bytes [base, base+size). Segments
// follow each other without overlap; the next one usually starts where its
// predecessor ends, but may start further: after a crash that could have
// lost acknowledged appends (SyncInterval), writing resumes past every
// offset that may have been handed out, so positions are never reused (see
// recover). An append never spans two segments, and a segment is fsynced
// before the next one is created, so only the last segment can have a torn
// tail.
//
// An event's Position is the offset just past its record (Commit ==
// Prepare), so positions start above zero (Start is "before everything"),
// and reading "after p" starts reading records at offset p: ReadAll seeks in
// O(log segments).

const segmentExt = ".seg"

type segment struct {
	base int64
	end  int64 // where its data ends once sealed; -1 for the active (last) segment
	f    *os.File
	z    *zseg // a compressed segment (zseg.go), whose file is f; nil for a plain one
}

// readAt reads the segment's bytes at off (relative to base), from the
// plain file or through decompression.
func (seg *segment) readAt(p []byte, off int64) (int, error) {
	if seg.z != nil {
		return seg.z.readAt(p, off)
	}
	return seg.f.ReadAt(p, off)
}

func segmentName(base int64) string { return fmt.Sprintf("%020d%s", base, segmentExt) }

type segmentInfo struct {
	base       int64
	size       int64 // of the file
	path       string
	compressed bool // a .zseg file
}

// listSegments returns the segment files of dir sorted by base offset,
// plain and compressed. A base may have both (see tidySegments).
func listSegments(dir string) ([]segmentInfo, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var segs []segmentInfo
	for _, e := range entries {
		name := e.Name()
		ext := filepath.Ext(name)
		if (ext != segmentExt && ext != zsegExt) || e.IsDir() {
			continue
		}
		base, err := strconv.ParseInt(strings.TrimSuffix(name, ext), 10, 64)
		if err != nil || base < 0 {
			return nil, fmt.Errorf("embedded: unexpected file %s in %s", name, dir)
		}
		info, err := e.Info()
		if errors.Is(err, fs.ErrNotExist) {
			continue // removed since ReadDir: the compactor replaced it
		}
		if err != nil {
			return nil, err
		}
		segs = append(segs, segmentInfo{base: base, size: info.Size(), path: filepath.Join(dir, name), compressed: ext == zsegExt})
	}
	sort.Slice(segs, func(i, j int) bool {
		if segs[i].base != segs[j].base {
			return segs[i].base < segs[j].base
		}
		return !segs[i].compressed && segs[j].compressed
	})
	return segs, nil
}

// tidySegments finishes or undoes a compression that a crash interrupted
// (see compressSegment): it removes temporary files, and where a segment
// is there both plain and compressed, the plain file when the compressed
// one is complete (it was fsynced before its rename), else the compressed
// one.
func tidySegments(dir string, log *slog.Logger) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	changed := false
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), zsegExt+tmpExt) {
			if err := os.Remove(filepath.Join(dir, e.Name())); err != nil {
				return err
			}
			changed = true
		}
	}
	infos, err := listSegments(dir)
	if err != nil {
		return err
	}
	for i := 0; i+1 < len(infos); i++ {
		plain, z := infos[i], infos[i+1]
		if plain.base != z.base {
			continue
		}
		drop := plain.path
		f, err := os.Open(z.path)
		if err != nil {
			return err
		}
		if zs, err := readZsegIndex(f); err != nil || zs.raw != plain.size {
			drop = z.path
			log.Warn("embedded: removed an incomplete compressed segment", "path", z.path, "err", err)
		}
		f.Close()
		if err := os.Remove(drop); err != nil {
			return err
		}
		changed = true
	}
	if changed {
		return fsdir.Sync(dir)
	}
	return nil
}

// segmentAt returns the segment whose range starts at or before off (nil
// before the first).
func (s *Store) segmentAt(off int64) *segment {
	segs := *s.segs.Load()
	i := sort.Search(len(segs), func(i int) bool { return segs[i].base > off }) - 1
	if i < 0 {
		return nil
	}
	return segs[i]
}

// locate returns where the record at or after off starts: off itself, or
// the base of the next segment when off is at the end of a sealed segment
// (or in a gap after it); the segment that holds it; and where that
// segment's data ends (MaxInt64 for the active segment).
func (s *Store) locate(off int64) (*segment, int64, int64) {
	segs := *s.segs.Load()
	i := sort.Search(len(segs), func(i int) bool { return segs[i].base > off }) - 1
	if i < 0 {
		return nil, off, 0
	}
	for segs[i].end >= 0 && off >= segs[i].end && i+1 < len(segs) {
		i++
		off = segs[i].base
	}
	end := segs[i].end
	if end < 0 {
		end = math.MaxInt64
	}
	return segs[i], off, end
}

// errBadRecord reports a record that cannot be decoded at off.
type errBadRecord struct {
	off int64
	err error
}

func (e *errBadRecord) Error() string {
	return fmt.Sprintf("embedded: bad record at log offset %d: %v", e.off, e.err)
}

func (e *errBadRecord) Unwrap() error { return e.err }

const readChunk = 256 << 10

// logReader reads records one after another from off up to limit, which
// must be a record boundary.
type logReader struct {
	s      *Store
	off    int64 // offset of the next record
	limit  int64
	buf    []byte
	bufOff int64 // offset of buf[0]
	chunk  int
	// owned: each fill reads into a new buffer, never the one before, so
	// the bytes of the records it returned stay theirs: for records handed
	// out as events, whose data is then where the log was read into
	// rather than a copy and an allocation an event (ADR 0112).
	owned bool
}

func newLogReader(s *Store, off, limit int64) *logReader {
	return &logReader{s: s, off: off, limit: limit, bufOff: off, chunk: readChunk}
}

// next returns the next record, its start offset and its length; io.EOF at
// limit; *errBadRecord when the bytes at the current offset are not a record.
func (r *logReader) next() (rawRecord, int64, int, error) {
	if r.off >= r.limit {
		return rawRecord{}, 0, 0, io.EOF
	}
	rec, n, err := parseRecord(r.buf[r.off-r.bufOff:])
	// Read more: once when the header is missing, again when the record is
	// longer than what that read brought.
	for try := 0; errors.Is(err, errShort) && try < 2; try++ {
		if err := r.fill(n); err != nil {
			return rawRecord{}, 0, 0, err
		}
		if r.off >= r.limit {
			return rawRecord{}, 0, 0, io.EOF // the limit was the end of a segment
		}
		rec, n, err = parseRecord(r.buf)
	}
	if errors.Is(err, errShort) {
		// The record would run past limit or past the segment's end.
		err = errCorrupt
	}
	if err != nil {
		return rawRecord{}, 0, 0, &errBadRecord{off: r.off, err: err}
	}
	start := r.off
	r.off += int64(n)
	return rec, start, n, nil
}

// fill reads from r.off at least need bytes (when the limits allow), and up
// to a chunk. At the end of a sealed segment it moves r.off to the next
// segment.
func (r *logReader) fill(need int) error { return r.fillOnce(need, true) }

func (r *logReader) fillAgain(need int) error { return r.fillOnce(need, false) }

func (r *logReader) fillOnce(need int, retry bool) error {
	seg, off, segEnd := r.s.locate(r.off)
	if seg == nil {
		return &errBadRecord{off: r.off, err: errors.New("no segment")}
	}
	if off != r.off {
		r.off = off
		need = 0
	}
	want := int64(max(need, r.chunk, recHeaderSize))
	want = min(want, r.limit-r.off, segEnd-r.off)
	if int64(cap(r.buf)) >= want && r.buf != nil && !r.owned {
		r.buf = r.buf[:want]
	} else {
		r.buf = make([]byte, want)
	}
	r.bufOff = r.off
	n, err := seg.readAt(r.buf, r.off-seg.base)
	if errors.Is(err, os.ErrClosed) && retry {
		// The segment was swapped for its compressed form (compact.go).
		return r.fillAgain(need)
	}
	if err != nil && !(errors.Is(err, io.EOF) && int64(n) == want) {
		if errors.Is(err, io.EOF) {
			r.buf = r.buf[:n]
			return nil // parseRecord reports the short record
		}
		return fmt.Errorf("embedded: read log: %w", err)
	}
	return nil
}
