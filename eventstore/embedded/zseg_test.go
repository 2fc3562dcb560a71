package embedded

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/linkd/linkd/eventstore"
)

// waitCompressed waits until every sealed segment of s is compressed.
func waitCompressed(t testing.TB, s *Store) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		segs := *s.segs.Load()
		done := true
		for _, seg := range segs[:len(segs)-1] {
			done = done && seg.z != nil
		}
		if done {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("sealed segments still plain after 30 s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// segmentFiles counts the plain and compressed segment files in dir.
func segmentFiles(t testing.TB, dir string) (plain, compressed int) {
	t.Helper()
	infos, err := listSegments(filepath.Join(dir, logSub))
	if err != nil {
		t.Fatal(err)
	}
	for _, info := range infos {
		if info.compressed {
			compressed++
		} else {
			plain++
		}
	}
	return plain, compressed
}

// jsonish makes bytes that compress somewhat, like events do.
func jsonish(r *rand.Rand, n int) []byte {
	words := []string{`{"link_id":"`, `","country":"DE"`, `"browser":"Chrome"`, `,"qr":false}`, "\n"}
	var b bytes.Buffer
	for b.Len() < n {
		if r.IntN(3) == 0 {
			fmt.Fprintf(&b, "%016x", r.Uint64())
		} else {
			b.WriteString(words[r.IntN(len(words))])
		}
	}
	return b.Bytes()[:n]
}

// TestZsegReadAt: a compressed segment reads back the same bytes as the
// plain one at any offset and length, across blocks, up to its end.
func TestZsegReadAt(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, size := range []int{0, 1, zBlockSize - 1, zBlockSize, 3*zBlockSize + 17} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			dir := t.TempDir()
			raw := jsonish(r, size)
			src := filepath.Join(dir, "plain")
			if err := os.WriteFile(src, raw, 0o644); err != nil {
				t.Fatal(err)
			}
			f, err := os.Open(src)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			dst := filepath.Join(dir, zsegName(0))
			if err := compressSegment(f, int64(size), dst, pace{}); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(dst + tmpExt); !os.IsNotExist(err) {
				t.Fatalf("temporary file left: %v", err)
			}
			z, err := openZseg(dst, 0, &blockCache{})
			if err != nil {
				t.Fatal(err)
			}
			defer z.f.Close()
			if z.raw != int64(size) {
				t.Fatalf("raw size %d, want %d", z.raw, size)
			}
			if size > zBlockSize {
				if info, _ := os.Stat(dst); info.Size() >= int64(size) {
					t.Fatalf("compressed %d bytes into %d", size, info.Size())
				}
			}
			for range 300 {
				off := r.IntN(size + 1)
				n := r.IntN(min(size-off, 2*zBlockSize+5) + 1)
				if r.IntN(4) == 0 {
					// Whole blocks straight into p (their frames read at
					// once), and maybe part of the next.
					off = off / zBlockSize * zBlockSize
					n = min(size-off, zBlockSize*(1+r.IntN(3))+r.IntN(2)*r.IntN(zBlockSize))
				}
				p := make([]byte, n)
				got, err := z.readAt(p, int64(off))
				if err != nil || got != n || !bytes.Equal(p, raw[off:off+n]) {
					t.Fatalf("readAt(%d bytes at %d) = %d, %v; bytes equal %v", n, off, got, err, bytes.Equal(p, raw[off:off+n]))
				}
			}
			// Past the end: io.EOF with what there is, as os.File.ReadAt.
			p := make([]byte, 10)
			if n, err := z.readAt(p, int64(size)-min(int64(size), 3)); err == nil || n != min(size, 3) {
				t.Fatalf("readAt past the end = %d, %v", n, err)
			}
		})
	}
}

// TestZsegCorrupt: a damaged compressed segment is refused (index) or its
// block fails to read (frame checksum), never read as other bytes.
func TestZsegCorrupt(t *testing.T) {
	dir := t.TempDir()
	raw := jsonish(rand.New(rand.NewPCG(3, 4)), 5*zBlockSize)
	src := filepath.Join(dir, "plain")
	if err := os.WriteFile(src, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	f, _ := os.Open(src)
	defer f.Close()
	dst := filepath.Join(dir, zsegName(0))
	if err := compressSegment(f, int64(len(raw)), dst, pace{}); err != nil {
		t.Fatal(err)
	}
	good, _ := os.ReadFile(dst)

	// A torn file (cut anywhere) has no valid trailer.
	for _, cut := range []int{0, 10, len(good) / 2, len(good) - 1} {
		if err := os.WriteFile(dst, good[:cut], 0o644); err != nil {
			t.Fatal(err)
		}
		if z, err := openZseg(dst, 0, &blockCache{}); err == nil {
			z.f.Close()
			t.Fatalf("opened a compressed segment cut at %d of %d bytes", cut, len(good))
		}
	}
	// A flipped bit in the index fails its CRC.
	bad := bytes.Clone(good)
	bad[len(bad)-zTrailerSize-3] ^= 1
	os.WriteFile(dst, bad, 0o644)
	if z, err := openZseg(dst, 0, &blockCache{}); err == nil {
		z.f.Close()
		t.Fatal("opened a compressed segment with a damaged index")
	}
	// A flipped bit in a frame fails that block's read.
	bad = bytes.Clone(good)
	bad[zHeaderSize+40] ^= 0x10
	os.WriteFile(dst, bad, 0o644)
	z, err := openZseg(dst, 0, &blockCache{})
	if err != nil {
		t.Fatal(err)
	}
	defer z.f.Close()
	p := make([]byte, 100)
	if _, err := z.readAt(p, 10); err == nil && bytes.Equal(p, raw[10:110]) {
		t.Fatal("a damaged block read back as the original bytes")
	} else if err == nil {
		t.Fatal("a damaged block read without error")
	}
	if _, err := z.readAt(p, zBlockSize); err != nil || !bytes.Equal(p, raw[zBlockSize:zBlockSize+100]) {
		t.Fatalf("the next block: %v", err)
	}
}

// TestCompressedSegments: sealed segments are compressed in the background,
// the plain files go, and every read (ReadAll, ReadStream, subscriptions,
// reopen, every position) gives the same events.
func TestCompressedSegments(t *testing.T) {
	dir := t.TempDir()
	opts := Options{Dir: dir, segmentSize: 32 << 10}
	s := openT(t, opts)
	r := rand.New(rand.NewPCG(5, 6))
	for i := range 600 {
		ev := testEvents(1+i%3, "z")
		for j := range ev {
			ev[j].Data = fmt.Appendf(nil, `{"i":%d,"r":%q}`, i, jsonish(r, 100+r.IntN(300)))
		}
		mustAppend(t, s, fmt.Sprintf("s-%d", i%11), eventstore.Any(), ev...)
	}
	want := checkConsistent(t, s)
	waitCompressed(t, s)
	plain, compressed := segmentFiles(t, dir)
	if plain != 1 || compressed < 10 {
		t.Fatalf("%d plain and %d compressed segment files, want 1 plain and many compressed", plain, compressed)
	}
	sameEvents(t, "compressed", checkConsistent(t, s), want)
	sub, err := s.SubscribeAll(ctxT(t), eventstore.Start, eventstore.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range want {
		ev, err := sub.Recv(ctxT(t))
		if err != nil {
			t.Fatal(err)
		}
		sameEvents(t, "subscription", []eventstore.RecordedEvent{ev}, want[i:i+1])
	}
	sub.Close()
	for i := 0; i < len(want); i += 37 {
		got, err := s.ReadAll(ctxT(t), want[i].Position, 5)
		if err != nil {
			t.Fatal(err)
		}
		sameEvents(t, fmt.Sprintf("ReadAll after %v", want[i].Position), got, want[i+1:min(i+6, len(want))])
	}
	closeT(t, s)

	// Reopened, with the index rebuilt from the compressed log.
	if err := os.RemoveAll(filepath.Join(dir, indexSub)); err != nil {
		t.Fatal(err)
	}
	s = openT(t, opts)
	sameEvents(t, "reopened", checkConsistent(t, s), want)
	mustAppend(t, s, "s-0", eventstore.Any(), testEvents(2, "after")...)
	all := checkConsistent(t, s)
	sameEvents(t, "after append", all[:len(want)], want)
	closeT(t, s)
}

// TestCompressionAfterCrash: whatever a crash during compression leaves
// (a temporary file, both files, a torn compressed file), Open keeps one
// complete copy of every segment and the log reads the same.
func TestCompressionAfterCrash(t *testing.T) {
	for _, tc := range []struct {
		name   string
		damage func(t *testing.T, logDir string, base int64, plain []byte)
	}{
		{"temporary file left", func(t *testing.T, logDir string, base int64, plain []byte) {
			os.WriteFile(filepath.Join(logDir, zsegName(base)+tmpExt), []byte("half"), 0o644)
			os.Rename(filepath.Join(logDir, zsegName(base)), filepath.Join(logDir, zsegName(base)+tmpExt))
			os.WriteFile(filepath.Join(logDir, segmentName(base)), plain, 0o644)
		}},
		{"plain file not removed yet", func(t *testing.T, logDir string, base int64, plain []byte) {
			os.WriteFile(filepath.Join(logDir, segmentName(base)), plain, 0o644)
		}},
		{"compressed file torn", func(t *testing.T, logDir string, base int64, plain []byte) {
			path := filepath.Join(logDir, zsegName(base))
			info, _ := os.Stat(path)
			os.Truncate(path, info.Size()/2)
			os.WriteFile(filepath.Join(logDir, segmentName(base)), plain, 0o644)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			logDir := filepath.Join(dir, logSub)
			// Plain segments first, as an older version wrote them: keep
			// a copy of the first one's bytes.
			opts := Options{Dir: dir, segmentSize: 16 << 10, noCompress: true}
			s := openT(t, opts)
			for i := range 200 {
				mustAppend(t, s, fmt.Sprintf("s-%d", i%5), eventstore.Any(), testEvents(1+i%2, "c")...)
			}
			want := checkConsistent(t, s)
			closeT(t, s)
			if plain, compressed := segmentFiles(t, dir); plain < 3 || compressed != 0 {
				t.Fatalf("%d plain, %d compressed files before compression", plain, compressed)
			}
			base := int64(0)
			plain, err := os.ReadFile(filepath.Join(logDir, segmentName(base)))
			if err != nil {
				t.Fatal(err)
			}
			// An older store opens and gets compressed.
			opts.noCompress = false
			s = openT(t, opts)
			waitCompressed(t, s)
			sameEvents(t, "compressed", checkConsistent(t, s), want)
			closeT(t, s)
			if _, err := os.Stat(filepath.Join(logDir, segmentName(base))); !os.IsNotExist(err) {
				t.Fatalf("plain segment %d still there after compression (%v)", base, err)
			}

			tc.damage(t, logDir, base, plain)
			opts.noCompress = true // see what Open alone made of it
			s = openT(t, opts)
			sameEvents(t, "after the crash", checkConsistent(t, s), want)
			closeT(t, s)
			entries, _ := os.ReadDir(logDir)
			files := map[string]bool{}
			for _, e := range entries {
				files[e.Name()] = true
			}
			if files[zsegName(base)+tmpExt] || files[zsegName(base)] == files[segmentName(base)] {
				t.Fatalf("files after Open: %v, want one copy of segment %d", files, base)
			}
		})
	}
}

// TestReadsDuringCompression: readers racing with the swap of segments for
// their compressed form always read the same events.
func TestReadsDuringCompression(t *testing.T) {
	dir := t.TempDir()
	s := openT(t, Options{Dir: dir, segmentSize: 16 << 10})
	defer closeT(t, s)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	errs := make(chan error, 4)
	for i := range 300 {
		mustAppend(t, s, fmt.Sprintf("s-%d", i%3), eventstore.Any(), testEvents(2, "r")...)
	}
	want := readAll(t, s)
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				got, err := s.ReadAll(ctxT(t), eventstore.Start, len(want))
				if err == nil && len(got) != len(want) {
					err = fmt.Errorf("ReadAll: %d events, want %d", len(got), len(want))
				}
				for i := 0; err == nil && i < len(got); i++ {
					if got[i].ID != want[i].ID || !bytes.Equal(got[i].Data, want[i].Data) {
						err = fmt.Errorf("ReadAll: event %d differs", i)
					}
				}
				if err == nil {
					_, err = s.ReadStream(ctxT(t), "s-1", 0, 1000)
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	// Appends roll segments and wake the compactor while readers read.
	for i := range 300 {
		mustAppend(t, s, fmt.Sprintf("t-%d", i%3), eventstore.Any(), testEvents(2, "w")...)
	}
	waitCompressed(t, s)
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// TestCompressActiveAtClose: Close compresses the last segment when it
// holds a quarter of a segment or more; Open then writes in a new one.
func TestCompressActiveAtClose(t *testing.T) {
	dir := t.TempDir()
	opts := Options{Dir: dir, segmentSize: 64 << 10}
	s := openT(t, opts)
	for s.committed.Load() < 100<<10 {
		mustAppend(t, s, "a", eventstore.Any(), testEvents(3, "first")...)
	}
	want := checkConsistent(t, s)
	waitCompressed(t, s) // Close stops the compactor where it is
	closeT(t, s)
	if plain, compressed := segmentFiles(t, dir); plain != 0 || compressed != 2 {
		t.Fatalf("%d plain and %d compressed files after Close, want 0 and 2", plain, compressed)
	}
	s = openT(t, opts)
	sameEvents(t, "reopened", checkConsistent(t, s), want)
	mustAppend(t, s, "a", eventstore.Any(), testEvents(1, "second")...)
	want = checkConsistent(t, s)
	closeT(t, s)
	// The new last segment is small: it stays plain.
	if plain, compressed := segmentFiles(t, dir); plain != 1 || compressed != 2 {
		t.Fatalf("%d plain and %d compressed files after the second Close, want 1 and 2", plain, compressed)
	}
	s = openT(t, opts)
	defer closeT(t, s)
	sameEvents(t, "reopened again", checkConsistent(t, s), want)
	mustAppend(t, s, "a", eventstore.Any(), testEvents(1, "third")...)
	checkConsistent(t, s)
}

// TestClosePacedCompactor: Close does not wait out the paced compactor's
// rest; it compresses the sealed segments left at full speed, so a closed
// store's log is compressed but for a small last segment (what the bytes
// per click of issue 13 are measured on).
func TestClosePacedCompactor(t *testing.T) {
	dir := t.TempDir()
	// So slow that the compactor rests for hours after its first block.
	opts := Options{Dir: dir, segmentSize: 64 << 10, compactShare: 1e-9}
	s := openT(t, opts)
	for s.committed.Load() < 130<<10 {
		mustAppend(t, s, "a", eventstore.Any(), testEvents(3, "x")...)
	}
	want := checkConsistent(t, s)
	if n := s.plainSealed(); n != 2 {
		t.Fatalf("%d sealed plain segments before Close, want 2 (resting compactor)", n)
	}
	done := make(chan struct{})
	go func() { closeT(t, s); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("Close waited for the compactor's rest")
	}
	if plain, compressed := segmentFiles(t, dir); plain != 1 || compressed != 2 {
		t.Fatalf("%d plain and %d compressed files after Close, want 1 (the small last) and 2", plain, compressed)
	}
	s = openT(t, opts)
	defer closeT(t, s)
	sameEvents(t, "reopened", checkConsistent(t, s), want)
}

// TestCompactorBacklog: with more sealed segments waiting than
// pacedBacklog (a bulk load), the compactor stops resting.
func TestCompactorBacklog(t *testing.T) {
	dir := t.TempDir()
	opts := Options{Dir: dir, segmentSize: 16 << 10, compactShare: 1e-9}
	s := openT(t, opts)
	defer closeT(t, s)
	for s.committed.Load() < 16*(16<<10) {
		mustAppend(t, s, "a", eventstore.Any(), testEvents(3, "x")...)
	}
	// The compactor compresses at full speed down to pacedBacklog, then
	// rests: it never gets below it in this test.
	deadline := time.Now().Add(30 * time.Second)
	for s.plainSealed() > pacedBacklog+1 {
		if time.Now().After(deadline) {
			t.Fatalf("%d sealed segments still plain, want at most %d", s.plainSealed(), pacedBacklog+1)
		}
		time.Sleep(time.Millisecond)
	}
	checkConsistent(t, s)
}

// TestCompactorYieldsToLoad: while the log grows faster than busyRate, the
// compactor leaves sealed segments plain up to deferBytes, compresses
// beyond it (64 segments are appended; it keeps far fewer plain, however
// slow this machine's fsyncs), and compresses them all once the appends
// stop.
func TestCompactorYieldsToLoad(t *testing.T) {
	const seg = 16 << 10
	opts := Options{Dir: t.TempDir(), segmentSize: seg, compactShare: 1, busyRate: 1, deferBytes: 4 * seg}
	s := openT(t, opts)
	defer closeT(t, s)
	// Appends for 1.5 s: the first load window (250 ms) tells the
	// compactor that the log grows; then it yields.
	start := time.Now()
	var most int64
	for time.Since(start) < 1500*time.Millisecond || s.committed.Load() < 64*seg {
		mustAppend(t, s, "a", eventstore.Any(), testEvents(3, "x")...)
		if time.Since(start) > 2*loadWindow {
			most = max(most, s.PlainBytes())
		}
		time.Sleep(200 * time.Microsecond)
	}
	if most < opts.deferBytes-seg || most > opts.deferBytes+24*seg {
		t.Fatalf("at most %d plain bytes under load, want %d (deferBytes) or a little more", most, opts.deferBytes)
	}
	deadline := time.Now().Add(30 * time.Second)
	for s.plainSealed() > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d sealed segments still plain %v after the appends stopped", s.plainSealed(), 30*time.Second)
		}
		time.Sleep(time.Millisecond)
	}
	if s.PlainBytes() != 0 {
		t.Fatalf("PlainBytes %d with every sealed segment compressed", s.PlainBytes())
	}
	checkConsistent(t, s)
}

// TestLoadGauge: the gauge judges the log's growth over whole windows and
// keeps its last verdict within one.
func TestLoadGauge(t *testing.T) {
	t0 := time.Unix(1000, 0)
	g := loadGauge{at: t0, end: 0}
	const rate = 4 << 20
	for _, c := range []struct {
		after time.Duration
		end   int64
		want  bool
	}{
		{100 * time.Millisecond, 10 << 20, false}, // within the first window: no verdict yet
		{loadWindow, 2 << 20, true},               // 2 MiB in 250 ms: 8 MiB/s
		{loadWindow + 100*time.Millisecond, 2 << 20, true},
		{2 * loadWindow, 2<<20 + 512<<10, false}, // 512 KiB in 250 ms: 2 MiB/s
		{10 * time.Second, 2<<20 + 512<<10 + 1<<20, false},
	} {
		if got := g.busyAt(t0.Add(c.after), c.end, rate); got != c.want {
			t.Errorf("after %v at %d: busy %v, want %v", c.after, c.end, got, c.want)
		}
	}
}

// TestPaceRest: a paced compression rests (1/share - 1) times as long as
// it worked; the zero pace and a share of 1 or more never rest.
func TestPaceRest(t *testing.T) {
	for _, c := range []struct {
		share  float64
		worked time.Duration
		want   time.Duration
	}{
		{0, time.Millisecond, 0},
		{1, time.Millisecond, 0},
		{2, time.Millisecond, 0},
		{-1, time.Millisecond, 0},
		{0.5, time.Millisecond, time.Millisecond},
		{1.0 / 8, 200 * time.Microsecond, 1400 * time.Microsecond},
		{compactShare, time.Second, 7 * time.Second},
	} {
		if got := (pace{share: c.share}).restFor(c.worked); got != c.want {
			t.Errorf("share %v, worked %v: rest %v, want %v", c.share, c.worked, got, c.want)
		}
	}
}

// threeBlocks opens a plain segment of three blocks, and names the
// compressed file of its segment.
func threeBlocks(t *testing.T) (f *os.File, dst string) {
	t.Helper()
	dir := t.TempDir()
	src := filepath.Join(dir, "plain")
	if err := os.WriteFile(src, jsonish(rand.New(rand.NewPCG(1, 1)), 3*zBlockSize), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f, filepath.Join(dir, zsegName(0))
}

// noCompressedFile checks that a stopped compression left neither dst nor
// its temporary file.
func noCompressedFile(t *testing.T, dst string) {
	t.Helper()
	for _, p := range []string{dst, dst + tmpExt} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s: %v, want no file", p, err)
		}
	}
}

// TestCompressStoppedResting: Close does not wait out a paced
// compression's rest: the stop ends it, and no file is left.
func TestCompressStoppedResting(t *testing.T) {
	f, dst := threeBlocks(t)
	stop := make(chan struct{})
	// A share so small that the rest after the first block lasts hours.
	p := pace{stop: stop, share: 1e-9}
	done := make(chan error)
	go func() { done <- compressSegment(f, 3*zBlockSize, dst, p) }()
	// Let it work on the first block and start resting.
	select {
	case err := <-done:
		t.Fatalf("compressSegment returned %v before its stop", err)
	case <-time.After(100 * time.Millisecond):
	}
	close(stop)
	select {
	case err := <-done:
		if err != errStopped {
			t.Fatalf("compressSegment = %v, want errStopped", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("compressSegment still resting 10 s after its stop")
	}
	noCompressedFile(t, dst)
}

// TestCompressStopped: a compression stopped by Close leaves no file.
func TestCompressStopped(t *testing.T) {
	f, dst := threeBlocks(t)
	stop := make(chan struct{})
	close(stop)
	if err := compressSegment(f, 3*zBlockSize, dst, pace{stop: stop}); err != errStopped {
		t.Fatalf("compressSegment = %v, want errStopped", err)
	}
	noCompressedFile(t, dst)
}

// Segments compressed in other block sizes (the first version's 64 KiB)
// read back the same bytes: a file says its block size.
func TestZsegOtherBlockSizes(t *testing.T) {
	raw := jsonish(rand.New(rand.NewPCG(5, 6)), 300_000)
	for _, bs := range []int64{4 << 10, 64 << 10, maxZBlockSize} {
		dir := t.TempDir()
		src := filepath.Join(dir, "plain")
		if err := os.WriteFile(src, raw, 0o644); err != nil {
			t.Fatal(err)
		}
		f, _ := os.Open(src)
		dst := filepath.Join(dir, zsegName(0))
		if err := compressSegmentBlocks(f, int64(len(raw)), dst, pace{}, bs); err != nil {
			t.Fatal(err)
		}
		f.Close()
		z, err := openZseg(dst, 0, &blockCache{})
		if err != nil {
			t.Fatalf("block size %d: %v", bs, err)
		}
		for _, off := range []int64{0, bs - 3, bs, 2*bs + 17, int64(len(raw)) - 50} {
			if off < 0 || off+40 > int64(len(raw)) {
				continue
			}
			p := make([]byte, 40)
			if _, err := z.readAt(p, off); err != nil || !bytes.Equal(p, raw[off:off+40]) {
				t.Errorf("block size %d, offset %d: %v", bs, off, err)
			}
		}
		z.f.Close()
	}
}
