package embedded

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"sync"
	"time"

	"github.com/klauspost/compress/zstd"
)

// A sealed segment is compressed into a file named after the same base with
// zsegExt. It holds the very same bytes as the plain segment, in blocks of
// zBlockSize bytes (the last may be shorter), each compressed on its own as
// one zstd frame (with its content checksum), so that reading a few bytes at
// any offset decompresses one or two blocks:
//
//	header   "LKDZSEG" 0x01, u32 block size, u32 zero
//	frames   one zstd frame per block, back to back
//	index    u64 file offset of each frame
//	trailer  u64 raw size, u64 index offset, u32 blocks, u32 block size,
//	         u32 crc32c of index and the 24 trailer bytes before it, "LKDZ"
//
// Integers are little endian. Offsets inside the segment (positions, the
// stream index) are the plain segment's: compression changes nothing above
// readAt.
//
// The compressed file is written as <name>.tmp, fsynced, renamed and its
// directory fsynced before the plain file is removed, so a crash at any
// point leaves a complete plain file, a complete compressed one, or both
// (see listSegments).
const (
	zsegExt = ".zseg"
	tmpExt  = ".tmp"
	// zBlockSize is the block size segments are compressed with: a point
	// read (ReadStream: a customer's events) decompresses one block, 12 µs
	// for 16 KiB against 40 µs for 64 KiB (the first version's), for a
	// ratio of 5.4 against 6.5 on click events. Files say their block size
	// (up to maxZBlockSize): those of the first version stay readable.
	zBlockSize    = 16 << 10
	maxZBlockSize = 1 << 20
	zHeaderSize   = 16
	zTrailerSize  = 32
	zMagic        = "LKDZSEG\x01"
	zTrailerMagic = "LKDZ"
)

var (
	zDecoder = sync.OnceValue(func() *zstd.Decoder {
		d, err := zstd.NewReader(nil, zstd.WithDecoderMaxMemory(4*maxZBlockSize))
		if err != nil {
			panic(err) // only invalid options fail
		}
		return d
	})
	// zEncoder compresses at klauspost's fastest level: on a 256 MiB
	// segment of clicks 5.33 against 5.43 for the default level, in 84% of
	// its time (a 64 MiB one of sales: 4.28 both, 74%); under a load of
	// sales the compactor was 7% of the server's CPU.
	zEncoder = sync.OnceValue(func() *zstd.Encoder {
		e, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest),
			zstd.WithEncoderConcurrency(1), zstd.WithEncoderCRC(true))
		if err != nil {
			panic(err)
		}
		return e
	})
)

func zsegName(base int64) string { return fmt.Sprintf("%020d%s", base, zsegExt) }

// zseg reads a compressed segment.
type zseg struct {
	f         *os.File
	raw       int64   // size of the plain segment
	blockSize int64   // raw bytes per block
	frames    []int64 // file offset of each frame, then the index offset
	cache     *blockCache
	id        int64 // the segment's base: its blocks' key in cache
}

// openZseg opens the compressed segment at path and checks its index.
func openZseg(path string, base int64, cache *blockCache) (*zseg, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	z, err := readZsegIndex(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("embedded: compressed segment %s: %w", path, err)
	}
	z.cache, z.id = cache, base
	return z, nil
}

var errBadZseg = errors.New("bad header, trailer or index")

func readZsegIndex(f *os.File) (*zseg, error) {
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	size := info.Size()
	if size < zHeaderSize+zTrailerSize {
		return nil, errBadZseg
	}
	var hdr [zHeaderSize]byte
	if _, err := f.ReadAt(hdr[:], 0); err != nil {
		return nil, err
	}
	var tr [zTrailerSize]byte
	if _, err := f.ReadAt(tr[:], size-zTrailerSize); err != nil {
		return nil, err
	}
	if string(hdr[:8]) != zMagic || string(tr[28:]) != zTrailerMagic {
		return nil, errBadZseg
	}
	raw := int64(binary.LittleEndian.Uint64(tr[0:]))
	indexOff := int64(binary.LittleEndian.Uint64(tr[8:]))
	n := int64(binary.LittleEndian.Uint32(tr[16:]))
	bs := int64(binary.LittleEndian.Uint32(tr[20:]))
	if bs <= 0 || bs > maxZBlockSize || bs != int64(binary.LittleEndian.Uint32(hdr[8:])) || raw < 0 ||
		n != (raw+bs-1)/bs || indexOff != size-zTrailerSize-8*n || indexOff < zHeaderSize {
		return nil, errBadZseg
	}
	idx := make([]byte, 8*n)
	if _, err := f.ReadAt(idx, indexOff); err != nil {
		return nil, err
	}
	crc := crc32.Update(crc32.Checksum(idx, castagnoli), castagnoli, tr[:24])
	if crc != binary.LittleEndian.Uint32(tr[24:]) {
		return nil, errBadZseg
	}
	frames := make([]int64, n+1)
	prev := int64(zHeaderSize)
	for i := range n {
		frames[i] = int64(binary.LittleEndian.Uint64(idx[8*i:]))
		if frames[i] < prev || frames[i] > indexOff {
			return nil, errBadZseg
		}
		prev = frames[i]
	}
	frames[n] = indexOff
	return &zseg{f: f, raw: raw, blockSize: bs, frames: frames}, nil
}

// readAt reads len(p) bytes of the plain segment at off, as os.File.ReadAt.
// A block read in full goes straight into p; a part of one goes through the
// cache of decompressed blocks.
func (z *zseg) readAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, errors.New("embedded: negative offset")
	}
	n := 0
	for n < len(p) {
		at := off + int64(n)
		if at >= z.raw {
			return n, io.EOF
		}
		b := at / z.blockSize
		start := b * z.blockSize
		size := min(z.blockSize, z.raw-start)
		if at == start && int64(len(p)-n) >= size {
			// The blocks p holds in full, b up to e, with one read of
			// their frames (a system call a block was 5% of a replay).
			e := b + 1
			for e*z.blockSize < z.raw && min((e+1)*z.blockSize, z.raw)-start <= int64(len(p)-n) {
				e++
			}
			frames, err := z.readFrames(b, e)
			if err != nil {
				return n, err
			}
			first := z.frames[b]
			for ; b < e; b++ {
				size := min(z.blockSize, z.raw-b*z.blockSize)
				if _, err := z.decodeFrame(b, frames[z.frames[b]-first:z.frames[b+1]-first], p[n:n:n+int(size)], size); err != nil {
					return n, err
				}
				n += int(size)
			}
			continue
		}
		block, err := z.cached(b, size)
		if err != nil {
			return n, err
		}
		n += copy(p[n:], block[at-start:])
	}
	return n, nil
}

// decode decompresses block b (size bytes) into dst[:0].
func (z *zseg) decode(b int64, dst []byte, size int64) ([]byte, error) {
	frame, err := z.readFrames(b, b+1)
	if err != nil {
		return nil, err
	}
	return z.decodeFrame(b, frame, dst, size)
}

// readFrames reads the compressed frames of blocks b up to e (excluded),
// which lie one after another in the file, with one read.
func (z *zseg) readFrames(b, e int64) ([]byte, error) {
	frames := make([]byte, z.frames[e]-z.frames[b])
	if _, err := z.f.ReadAt(frames, z.frames[b]); err != nil {
		return nil, fmt.Errorf("embedded: read compressed log: %w", err)
	}
	return frames, nil
}

// decodeFrame decompresses frame, block b's (size bytes), into dst[:0].
func (z *zseg) decodeFrame(b int64, frame, dst []byte, size int64) ([]byte, error) {
	out, err := zDecoder().DecodeAll(frame, dst[:0])
	if err == nil && int64(len(out)) != size {
		err = fmt.Errorf("block of %d bytes, want %d", len(out), size)
	}
	if err != nil {
		return nil, fmt.Errorf("embedded: decompress log block %d of segment %d: %w", b, z.id, err)
	}
	return out, nil
}

func (z *zseg) cached(b, size int64) ([]byte, error) {
	key := blockKey{z.id, b}
	if block := z.cache.get(key); block != nil {
		return block, nil
	}
	block, err := z.decode(b, make([]byte, 0, size), size)
	if err != nil {
		return nil, err
	}
	z.cache.put(key, block)
	return block, nil
}

// blockCache keeps the last decompressed blocks that reads took part of
// (point reads of ReadStream; the edges of sequential reads).
type blockCache struct {
	mu     sync.Mutex
	blocks map[blockKey][]byte
	order  []blockKey // FIFO
}

type blockKey struct{ seg, block int64 }

const cachedBlocks = 32 // 2 MiB

func (c *blockCache) get(k blockKey) []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.blocks[k]
}

func (c *blockCache) put(k blockKey, b []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.blocks == nil {
		c.blocks = make(map[blockKey][]byte, cachedBlocks)
	}
	if _, ok := c.blocks[k]; ok {
		return
	}
	if len(c.order) >= cachedBlocks {
		delete(c.blocks, c.order[0])
		c.order = append(c.order[:0], c.order[1:]...)
	}
	c.blocks[k] = b
	c.order = append(c.order, k)
}

// pace is how a compression shares the machine with the appends and reads
// that pay for latency: stop ends it early (errStopped), and a share
// between 0 and 1 makes it rest after every block so that it works at most
// that share of the wall time. The zero pace neither stops nor rests.
//
// A sealed segment is work nothing waits for, but compressed in one go it
// takes one CPU for a fifth of a second or more: on a small machine every
// request of that moment waits behind it, and that moment is the latency
// tail (ADR 0015). Rest is measured
// from the wall time a block took, so a block slowed down by a busy machine
// is followed by a longer rest.
//
// hurry, when set, is asked before and during every rest: while it says
// so, there is none.
type pace struct {
	stop  <-chan struct{}
	share float64
	hurry func() bool
	// yield, when set, is called after each rest: it may wait longer
	// (Store.yieldToLoad) and returns errStopped on a stop.
	yield func() error
}

// restSlice bounds one sleep of a rest, so that hurry is asked again.
const restSlice = 50 * time.Millisecond

// compactShare is the share of the wall time the background compactor
// works: about 2 s for a full segment at rest, far faster than appends
// can fill one.
const compactShare = 1.0 / 8

// restFor is how long to rest after working for worked.
func (p pace) restFor(worked time.Duration) time.Duration {
	if p.share <= 0 || p.share >= 1 {
		return 0
	}
	return time.Duration(float64(worked) * (1/p.share - 1))
}

// stopped reports errStopped once stop is closed.
func (p pace) stopped() error {
	select {
	case <-p.stop:
		return errStopped
	default:
		return nil
	}
}

// rest sleeps for restFor(worked), or until stop, or until hurry.
func (p pace) rest(worked time.Duration) error {
	for d := p.restFor(worked); d > 0 && (p.hurry == nil || !p.hurry()); d -= restSlice {
		t := time.NewTimer(min(d, restSlice))
		select {
		case <-p.stop:
			t.Stop()
			return errStopped
		case <-t.C:
		}
	}
	if p.yield != nil {
		if err := p.yield(); err != nil {
			return err
		}
	}
	return p.stopped()
}

// compressSegment writes the compressed form of the plain segment src
// (size bytes) to dst.tmp, checks that every block decompresses to its
// input, fsyncs it and renames it to dst, at pace p. A stop removes the
// temporary file.
func compressSegment(src *os.File, size int64, dst string, p pace) error {
	return compressSegmentBlocks(src, size, dst, p, zBlockSize)
}

// compressSegmentBlocks is compressSegment with blocks of bs bytes.
func compressSegmentBlocks(src *os.File, size int64, dst string, p pace, bs int64) error {
	tmp := dst + tmpExt
	f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	ok := false
	defer func() {
		if !ok {
			f.Close()
			os.Remove(tmp)
		}
	}()
	w := bufio.NewWriterSize(f, 1<<20)
	var hdr [zHeaderSize]byte
	copy(hdr[:], zMagic)
	binary.LittleEndian.PutUint32(hdr[8:], uint32(bs))
	if _, err := w.Write(hdr[:]); err != nil {
		return err
	}
	n := (size + bs - 1) / bs
	idx := make([]byte, 0, 8*n)
	raw := make([]byte, bs)
	var frame, check []byte
	at := int64(zHeaderSize)
	for b := range n {
		start := time.Now()
		in := raw[:min(bs, size-b*bs)]
		if _, err := src.ReadAt(in, b*bs); err != nil {
			return fmt.Errorf("read segment: %w", err)
		}
		frame = zEncoder().EncodeAll(in, frame[:0])
		if check, err = zDecoder().DecodeAll(frame, check[:0]); err != nil || !bytes.Equal(check, in) {
			return fmt.Errorf("block %d does not decompress to its input (%v)", b, err)
		}
		idx = binary.LittleEndian.AppendUint64(idx, uint64(at))
		if _, err := w.Write(frame); err != nil {
			return err
		}
		at += int64(len(frame))
		if err := p.rest(time.Since(start)); err != nil {
			return err
		}
	}
	tr := make([]byte, 0, zTrailerSize)
	tr = binary.LittleEndian.AppendUint64(tr, uint64(size))
	tr = binary.LittleEndian.AppendUint64(tr, uint64(at))
	tr = binary.LittleEndian.AppendUint32(tr, uint32(n))
	tr = binary.LittleEndian.AppendUint32(tr, uint32(bs))
	tr = binary.LittleEndian.AppendUint32(tr, crc32.Update(crc32.Checksum(idx, castagnoli), castagnoli, tr))
	tr = append(tr, zTrailerMagic...)
	if _, err := w.Write(idx); err != nil {
		return err
	}
	if _, err := w.Write(tr); err != nil {
		return err
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if err := fdatasync(f); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	ok = true
	if err := os.Rename(tmp, dst); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

var errStopped = errors.New("stopped")
