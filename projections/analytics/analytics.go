package analytics

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/sstable"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/linkd/linkd/domain/click"
	"github.com/linkd/linkd/domain/conversion"
	"github.com/linkd/linkd/eventstore"
	"github.com/linkd/linkd/internal/storage/pebbleheap"
	"github.com/linkd/linkd/internal/storage/pebblelog"
	"github.com/linkd/linkd/internal/storage/versioncache"
	"github.com/linkd/linkd/projections"
	"github.com/linkd/linkd/queries"
)

// Name is the projection's name (checkpoints, consumer group, replay).
const Name = "analytics"

// Category is the stream category it consumes.
const Category = "clicks"

// ErrClosed is returned by every method after Close.
var ErrClosed = errors.New("analytics: closed")

// Defaults of Options.
const (
	DefaultCacheSize       = 64 << 20
	DefaultMemTableSize    = 64 << 20
	DefaultStreamCacheSize = 1 << 16
	DefaultFlushMax        = 1 << 18
)

// Options tune Open. The zero value is ready to use.
type Options struct {
	// CacheSize is Pebble's block cache in bytes (default 64 MiB).
	CacheSize int64
	// MemTableSize is the size of one Pebble memtable in bytes (default
	// 64 MiB; Pebble keeps up to a few of them while flushing). Larger
	// memtables mean fewer flushes and less compaction work: catching up a
	// million clicks took 11% less CPU with 64 MiB than with 16 and 32.
	MemTableSize uint64
	// StreamCacheSize bounds the streams whose last applied version is kept
	// in memory (default 65536; up to twice as many are held). Misses read
	// the database.
	StreamCacheSize int
	// NoSync commits batches without waiting for the disk, and without a
	// write-ahead log: batches reach the disk when Pebble flushes its
	// memtables (and at Close), so a crash (of the process as well as of the
	// machine) may lose the last batches Apply acknowledged. Nothing is ever
	// torn or reordered: recovery keeps a prefix of the committed batches, and
	// each batch carries its own checkpoint, so Checkpoint() is never ahead of
	// the data. It is therefore safe exactly when whoever feeds the projection
	// resumes after Checkpoint() on restart, as the in-process runner
	// (projections.LocalRunner) and Replay do: the lost batches are delivered
	// again. It is NOT safe with Kafka, which resumes from consumer-group
	// offsets committed after Apply returned. Default false (pebble.Sync).
	NoSync bool
	// FlushEvery, with NoSync, lets Apply keep its deltas in memory and
	// write them to Pebble, added up, at most this often (and when a
	// query reads, when FlushMax clicks wait, and at Close): at a thousand
	// links a second of clicks is a thousand records rather than tens of
	// thousands of merge operands. The checkpoint is written with the
	// deltas, so a crash loses no more than NoSync allows, and the feeder
	// applies the lost events again. Zero (the default) writes every
	// batch.
	FlushEvery time.Duration
	// FlushMax is how many clicks may wait in memory under FlushEvery
	// (default DefaultFlushMax).
	FlushMax int
	// Logger receives Pebble's messages and reports of undecodable clicks;
	// nil means slog.Default().
	Logger *slog.Logger

	// fs replaces the file system (crash tests).
	fs vfs.FS
}

// Validate reports every problem of o at once.
func (o Options) Validate() error {
	var errs []error
	if o.CacheSize < 0 {
		errs = append(errs, fmt.Errorf("CacheSize %d is negative", o.CacheSize))
	}
	if o.StreamCacheSize < 0 {
		errs = append(errs, fmt.Errorf("StreamCacheSize %d is negative", o.StreamCacheSize))
	}
	if o.FlushEvery < 0 {
		errs = append(errs, fmt.Errorf("FlushEvery %v is negative", o.FlushEvery))
	}
	if o.FlushEvery > 0 && !o.NoSync {
		errs = append(errs, errors.New("FlushEvery needs NoSync: whoever feeds the store must resume after Checkpoint()"))
	}
	if o.FlushMax < 0 {
		errs = append(errs, fmt.Errorf("FlushMax %d is negative", o.FlushMax))
	}
	if o.MemTableSize != 0 && o.MemTableSize < 1<<20 {
		errs = append(errs, fmt.Errorf("MemTableSize %d is below 1 MiB", o.MemTableSize))
	}
	if len(errs) > 0 {
		return fmt.Errorf("analytics options: %w", errors.Join(errs...))
	}
	return nil
}

// Store is the analytics projection and its read model.
type Store struct {
	projections.LongBatches

	opts  Options
	log   *slog.Logger
	wopts *pebble.WriteOptions
	cache *pebble.Cache

	// mu guards db against Close: every use holds it for reading.
	mu sync.RWMutex
	db *pebble.DB

	// applyMu serialises Apply, flushes and Reset; it guards the fields
	// below.
	applyMu sync.Mutex
	// checkpoint is the highest position applied, written or waiting;
	// durable the one written (the same unless FlushEvery).
	checkpoint, durable eventstore.Position
	pend                pending
	versions            *versioncache.Cache
	behind              versioncache.Behind
	// Apply's scratch space.
	aggLink, aggWS *batchAgg
	dict           *dictionary       // the values of both's clicks
	scratch        map[string]uint64 // Dedup.Next while deltas wait

	// undecodable counts the clicks skipped since Open; read without
	// applyMu.
	undecodable atomic.Uint64
	// waiting is set while deltas wait (FlushEvery); read without applyMu.
	waiting atomic.Bool
	// stop ends the flushing goroutine (FlushEvery), done says it ended.
	stop, done chan struct{}
	closeOnce  sync.Once
}

// pending is what was applied and not written yet: the deltas in aggLink,
// aggWS and conv, the stream versions next, the highest position last.
// carry holds the encoded deltas of a flush that failed, for the next.
type pending struct {
	clicks int
	next   map[string]uint64
	last   eventstore.Position
	since  time.Time
	conv   convAgg
	carry  []encoded
}

func (p *pending) empty() bool { return p.next == nil && len(p.carry) == 0 }

// reset empties p, keeping conv's map.
func (p *pending) reset() {
	conv := p.conv
	clear(conv)
	*p = pending{conv: conv}
}

var (
	_ projections.Projector     = (*Store)(nil)
	_ projections.StreamTracker = (*Store)(nil)
	_ queries.StatsReadModel    = (*Store)(nil)
)

// Open opens (creating when missing) the store in dir.
func Open(dir string, opts Options) (*Store, error) {
	if dir == "" {
		return nil, errors.New("analytics: dir is required")
	}
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	if opts.CacheSize == 0 {
		opts.CacheSize = DefaultCacheSize
	}
	if opts.MemTableSize == 0 {
		opts.MemTableSize = DefaultMemTableSize
	}
	if opts.StreamCacheSize == 0 {
		opts.StreamCacheSize = DefaultStreamCacheSize
	}
	if opts.FlushMax == 0 {
		opts.FlushMax = DefaultFlushMax
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	s := &Store{
		opts:     opts,
		log:      opts.Logger.With("component", "projections/analytics"),
		wopts:    pebble.Sync,
		versions: versioncache.New(opts.StreamCacheSize),
		aggLink:  newBatchAgg(),
		aggWS:    newBatchAgg(),
		dict:     newDictionary(),
	}
	if opts.NoSync {
		s.wopts = pebble.NoSync
	}
	if opts.fs == nil {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("analytics: %w", err)
		}
	}
	// Pebble reserves its memtables (up to two) in the block cache: the
	// cache holds them and CacheSize of blocks besides.
	s.cache = pebble.NewCache(opts.CacheSize + 2*int64(opts.MemTableSize))
	popts := &pebble.Options{
		Cache:              s.cache,
		MemTableSize:       opts.MemTableSize,
		Merger:             merger,
		FormatMajorVersion: pebble.FormatNewest,
		Logger:             pebblelog.New(s.log, "analytics"),
		FS:                 opts.fs,
	}
	// NoSync already allows losing the last batches (a prefix survives,
	// each batch with its checkpoint): without a write-ahead log a crash
	// loses what was not flushed yet, and the feeder applies it again. The
	// logs were most of this store's bytes on disk (issue 13); Close
	// flushes.
	popts.DisableWAL = opts.NoSync
	// zstd on every level rather than Snappy: smaller tables for a little
	// more CPU in flushes and compactions (issue 13). Level 1 (Pebble's
	// Balanced profile: zstd 1 for data blocks, MinLZ for the others)
	// rather than 3: catching up a million clicks took 7% less CPU, for 11
	// more bytes per click on disk in the two stores (268 against 257 in
	// all; ADR 0015). Level 0 takes MinLZ alone (Pebble's Fastest): its
	// tables are the memtables' flushes, soon compacted into the next
	// level, and zstd there was paid twice, compressing the flush and
	// inflating it in the compaction (ADR 0116).
	popts.ApplyCompressionSettings(func() pebble.DBCompressionSettings {
		cs := pebble.UniformDBCompressionSettings(sstable.BalancedCompression)
		cs.Levels[0] = sstable.FastestCompression
		return cs
	})
	db, err := pebbleheap.Open(dir, popts)
	s.cache.Unref() // the DB holds its own reference
	if err != nil {
		return nil, fmt.Errorf("analytics: open %s: %w", dir, err)
	}
	s.db = db
	if err := s.load(); err != nil {
		_ = pebbleheap.Close(db)
		return nil, err
	}
	s.durable = s.checkpoint
	if opts.FlushEvery > 0 {
		s.stop, s.done = make(chan struct{}), make(chan struct{})
		go s.flushLoop()
	}
	return s, nil
}

// flushLoop writes the deltas that waited FlushEvery when no Apply came to
// write them.
func (s *Store) flushLoop() {
	defer close(s.done)
	t := time.NewTicker(s.opts.FlushEvery)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
		}
		if !s.waiting.Load() {
			continue
		}
		if s.lockApply() != nil {
			continue // closed: Close stops this loop next
		}
		if !s.pend.empty() && s.due(time.Now()) {
			if err := s.flush(); err != nil {
				s.log.Error("writing the statistics failed; will retry", "err", err)
			}
		}
		s.unlockApply()
	}
}

// lockApply takes applyMu, then mu for reading (the order Close takes
// them in too), for Apply and what reads or changes its state; ErrClosed
// after Close, holding neither. unlockApply releases both.
func (s *Store) lockApply() error {
	s.applyMu.Lock()
	s.mu.RLock()
	if s.db == nil {
		s.unlockApply()
		return ErrClosed
	}
	return nil
}

func (s *Store) unlockApply() {
	s.mu.RUnlock()
	s.applyMu.Unlock()
}

// due reports whether what waits is to be written at now (FlushEvery):
// it waited long enough, or FlushMax clicks wait. Callers hold applyMu.
func (s *Store) due(now time.Time) bool {
	return now.Sub(s.pend.since) >= s.opts.FlushEvery || s.pend.clicks >= s.opts.FlushMax
}

// flushForRead writes the waiting deltas before a query reads, so that it
// sees every click applied.
func (s *Store) flushForRead() error { return s.flushWaiting("query") }

// Flush implements projections.Flusher: it writes the deltas waiting, so
// that a replay ends when its last clicks are in the store rather than in
// memory (and its time counts their writing).
func (s *Store) Flush(ctx context.Context) error { return s.flushWaiting("flush") }

// flushWaiting writes the deltas waiting, if any; why names the caller in
// a failed write's error.
func (s *Store) flushWaiting(why string) error {
	if !s.waiting.Load() {
		return nil
	}
	if err := s.lockApply(); err != nil {
		return err
	}
	defer s.unlockApply()
	if s.pend.empty() {
		return nil
	}
	if err := s.flush(); err != nil {
		return fmt.Errorf("analytics: %s: %w", why, err)
	}
	return nil
}

func (s *Store) load() error {
	cp, err := s.behind.Open(s.db, versionKeys, s.wopts)
	if err != nil {
		return fmt.Errorf("analytics: %w", err)
	}
	s.checkpoint = cp
	return nil
}

// WriteVersionsBehind turns the writing behind of stream versions on
// (versioncache.Behind); call it before the first Apply. Only for a
// feeder that delivers in log order and resumes after Checkpoint(), as
// the in-process runner does.
func (s *Store) WriteVersionsBehind() {
	s.applyMu.Lock()
	defer s.applyMu.Unlock()
	s.behind.On = true
}

// Close writes what waits and closes the database. Apply and queries
// return ErrClosed afterwards.
func (s *Store) Close() error {
	if s.stop != nil {
		s.closeOnce.Do(func() { close(s.stop) })
		<-s.done
	}
	s.applyMu.Lock() // before mu, as Apply takes them
	defer s.applyMu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.db == nil {
		return nil
	}
	var err error
	if !s.pend.empty() {
		err = s.flush()
	}
	err = errors.Join(err, s.writeVersions())
	// Flush the memtables first: without a write-ahead log (NoSync) they
	// would be lost; with one, it would stay on disk (tens of MB) until
	// the next Open replays it.
	err = errors.Join(err, s.db.Flush())
	err = errors.Join(err, pebbleheap.Close(s.db))
	s.db = nil
	if err != nil {
		return fmt.Errorf("analytics: close: %w", err)
	}
	return nil
}

// Name implements projections.Projector.
func (s *Store) Name() string { return Name }

// Categories implements projections.Projector.
func (s *Store) Categories() []string { return []string{Category, conversion.CustomerCategory} }

// Checkpoint is where to resume: the highest global position of the
// events applied, stored with them, or, while stream versions lost in a
// crash are learned again, the start of their gap (versioncache.Behind).
func (s *Store) Checkpoint(ctx context.Context) (eventstore.Position, error) {
	if err := s.lockApply(); err != nil {
		return eventstore.Start, err
	}
	defer s.unlockApply()
	return s.behind.Resume(s.checkpoint), nil
}

// Undecodable is the number of ClickRecorded events skipped since Open
// because their JSON could not be read.
func (s *Store) Undecodable() uint64 { return s.undecodable.Load() }

// Apply applies a batch of events atomically; see the package comment.
func (s *Store) Apply(ctx context.Context, events []projections.Event) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := s.lockApply(); err != nil {
		return err
	}
	defer s.unlockApply()

	// 1. Deduplicate. An event is applied when its version is newer than the
	// last applied version of its stream, committed, waiting or earlier in
	// this batch.
	dedup := versioncache.NewDedup(s.checkpoint, s.lastVersion)
	dedup.Gap = s.behind.Gap()
	if s.pend.next != nil {
		// Merged into what waits below: a map kept from batch to batch
		// rather than one grown anew for each.
		if s.scratch == nil {
			s.scratch = make(map[string]uint64)
		}
		clear(s.scratch)
		dedup.Next = s.scratch
	}
	next := dedup.Next
	todo := make([]int, 0, len(events))
	if s.pend.conv == nil {
		s.pend.conv = convAgg{}
	}
	var convs []any
	last := eventstore.Start // the batch's highest position
	for i := range events {
		ev := &events[i]
		if last.Less(ev.Position) {
			last = ev.Position
		}
		cat := eventstore.Category(ev.Stream)
		if cat != Category && cat != conversion.CustomerCategory {
			continue
		}
		fresh, err := dedup.New(&ev.RecordedEvent)
		if err != nil {
			return fmt.Errorf("analytics: apply: %w", err)
		}
		if !fresh {
			continue
		}
		switch ev.Type {
		case click.EventRecorded:
			todo = append(todo, i)
		case conversion.EventLeadTracked, conversion.EventSaleTracked:
			e, err := ev.Decode()
			if err != nil {
				s.undecodable.Add(1)
				s.log.Warn("undecodable conversion skipped", "stream", ev.Stream, "version", ev.Version, "err", err)
				continue
			}
			convs = append(convs, e)
		}
	}
	top := s.checkpoint // the checkpoint after the batch
	if top.Less(last) {
		top = last
	}
	if len(next) == 0 && top == s.checkpoint {
		return nil // only duplicates
	}

	// 2. Decode, on every core for big batches.
	parsed := s.parseClicks(events, todo)
	for j := range parsed {
		if p := &parsed[j]; p.bad {
			ev := &events[todo[j]]
			s.undecodable.Add(1)
			s.log.Warn("undecodable click skipped", "stream", ev.Stream,
				"version", ev.Version, "position", ev.Position.String())
		}
	}

	// 3. Add up per (link, day) and per (workspace, day), one goroutine
	// each, to what waits.
	s.dict.intern(parsed)
	var wg sync.WaitGroup
	wg.Go(func() { s.aggLink.collect(parsed, s.dict, tagLink) })
	s.aggWS.collect(parsed, s.dict, tagWS)
	wg.Wait()
	for _, e := range convs {
		s.pend.conv.addConversion(e)
	}
	now := time.Now()
	if s.pend.next == nil {
		s.pend.next, s.pend.since = next, now
	} else {
		for stream, v := range next {
			s.pend.next[stream] = v
		}
	}
	s.pend.clicks += len(parsed)
	if s.pend.last.Less(last) {
		s.pend.last = last
	}
	s.checkpoint = top

	// 4. Written now, or (FlushEvery) once they waited long enough.
	if s.opts.FlushEvery > 0 {
		s.waiting.Store(true)
		if !s.due(now) {
			return nil
		}
	}
	if err := s.flush(); err != nil {
		if s.opts.FlushEvery == 0 {
			// Nothing of the batch was applied: it comes again.
			s.drop()
		}
		return err
	}
	return nil
}

// flush writes what waits in one atomic batch: checkpoint, stream versions
// (or some of them later: versioncache.Behind), deltas, added in ascending
// key order (Pebble inserts sorted keys into its memtable faster). The
// encoded deltas of a failed flush stay for the next (merge operands add
// up, so they go along with newer ones). Callers hold applyMu and mu.
func (s *Store) flush() error {
	// Encode each scope's deltas, one goroutine each; keys come out
	// sorted (all link keys sort before all workspace keys).
	r := s.dict.ranking()
	var wg sync.WaitGroup
	wg.Go(func() { s.aggLink.seal(r) })
	s.aggWS.seal(r)
	wg.Wait()
	defer s.aggLink.reset()
	defer s.aggWS.reset()
	defer s.dict.reset()

	b := s.db.NewBatch()
	defer b.Close()
	now := time.Now()
	plan := s.behind.Plan(s.pend.next, s.durable, s.pend.last, now, false)
	err := plan.Add(b, versionKeys, s.checkpoint)
	conv := s.pend.conv.sorted()
	for _, out := range [][]encoded{s.pend.carry, s.aggLink.out, s.aggWS.out, conv} {
		for _, o := range out {
			if err == nil {
				err = b.Merge(o.key, o.value, nil)
			}
		}
	}
	if err == nil {
		err = b.Commit(s.wopts)
	}
	if err != nil {
		// Keep the deltas, encoded: the arenas are reused.
		for _, out := range [][]encoded{s.aggLink.out, s.aggWS.out, conv} {
			for _, o := range out {
				s.pend.carry = append(s.pend.carry, encoded{key: slices.Clone(o.key), value: slices.Clone(o.value)})
			}
		}
		clear(s.pend.conv)
		return fmt.Errorf("analytics: apply: commit: %w", err)
	}

	// Only now that the batch is committed, remember it.
	s.behind.Committed(plan, s.versions, now)
	s.durable = s.checkpoint
	s.pend.reset()
	s.waiting.Store(false)
	return nil
}

// drop forgets what waits, as if it had never been applied. Callers hold
// applyMu.
func (s *Store) drop() {
	s.aggLink.reset()
	s.aggWS.reset()
	s.dict.reset()
	s.pend.reset()
	s.checkpoint = s.durable
	s.waiting.Store(false)
}

// writeVersions writes the stream versions waiting (Close). Callers hold
// applyMu and mu.
func (s *Store) writeVersions() error {
	if err := s.behind.WriteWaiting(s.db, s.wopts, versionKeys, s.durable); err != nil {
		return fmt.Errorf("analytics: write versions: %w", err)
	}
	return nil
}

// lastVersion is the last applied version of stream. Callers hold applyMu.
func (s *Store) lastVersion(stream string) (uint64, bool, error) {
	if v, ok := s.pend.next[stream]; ok {
		return v, true, nil
	}
	return s.behind.Last(s.versions, stream, func(stream string) (uint64, bool, error) {
		return getUint64(s.db, streamKey(nil, stream))
	})
}

// AppliedVersion implements projections.StreamTracker.
func (s *Store) AppliedVersion(ctx context.Context, stream string) (uint64, bool, error) {
	if err := s.lockApply(); err != nil {
		return 0, false, err
	}
	defer s.unlockApply()
	v, ok, err := s.lastVersion(stream)
	if err != nil {
		return 0, false, fmt.Errorf("analytics: %w", err)
	}
	return v, ok, nil
}

// parsed is a decoded click with what aggregation needs.
type parsed struct {
	c       clickFields
	bad     bool // undecodable: skipped
	ts, day int64
	linkID  string
}

// parseClicks takes the counted fields of the clicks at todo, decoding
// them (projections.Event.Decode) on every core for big batches. An
// undecodable click is marked bad and skipped rather than failing the
// batch: a failed batch is retried forever, and one corrupt event must not
// stop the statistics of every link. Callers hold applyMu.
func (s *Store) parseClicks(events []projections.Event, todo []int) []parsed {
	out := make([]parsed, len(todo))
	parse := func(todo []int, out []parsed) {
		for j, i := range todo {
			p, ev := &out[j], &events[i]
			e, err := ev.Decode()
			c, ok := e.(*click.Recorded)
			if err != nil || !ok {
				p.bad = true
				continue
			}
			p.c = fieldsOf(c)
			t := p.c.Timestamp
			if t.IsZero() {
				t = ev.Time
			}
			p.ts, p.day = t.UnixNano(), clampDay(dayOf(t))
			p.linkID = p.c.LinkID
			if p.linkID == "" {
				p.linkID = strings.TrimPrefix(ev.Stream, click.StreamPrefix)
			}
		}
	}
	workers := runtime.GOMAXPROCS(0)
	if len(todo) < 512 {
		workers = 1
	}
	if workers == 1 {
		parse(todo, out)
		return out
	}
	var wg sync.WaitGroup
	per := (len(todo) + workers - 1) / workers
	for lo := 0; lo < len(todo); lo += per {
		hi := min(lo+per, len(todo))
		wg.Add(1)
		go func() {
			defer wg.Done()
			parse(todo[lo:hi], out[lo:hi])
		}()
	}
	wg.Wait()
	return out
}

// Reset empties the read model, its dedup state and its checkpoint.
func (s *Store) Reset(ctx context.Context) error {
	if err := s.lockApply(); err != nil {
		return err
	}
	defer s.unlockApply()
	b := s.db.NewBatch()
	defer b.Close()
	if err := b.DeleteRange([]byte{tagStream}, []byte{tagEnd}, nil); err != nil {
		return fmt.Errorf("analytics: reset: %w", err)
	}
	if err := b.Delete(keyCheckpoint, nil); err != nil {
		return fmt.Errorf("analytics: reset: %w", err)
	}
	if err := b.Delete(keyGap, nil); err != nil {
		return fmt.Errorf("analytics: reset: %w", err)
	}
	// Durable before it returns, with or without a write-ahead log.
	err := b.Commit(s.wopts)
	if err == nil && s.wopts == pebble.NoSync {
		err = s.db.Flush()
	}
	if err != nil {
		return fmt.Errorf("analytics: reset: %w", err)
	}
	s.drop()
	s.versions.Reset()
	s.behind.Reset()
	s.checkpoint, s.durable = eventstore.Start, eventstore.Start
	return nil
}

// LinkDaily implements queries.StatsReadModel.
func (s *Store) LinkDaily(ctx context.Context, linkID string, from, to time.Time) ([]queries.DailyStats, error) {
	return s.daily(ctx, tagLink, linkID, from, to)
}

// WorkspaceDaily implements queries.StatsReadModel.
func (s *Store) WorkspaceDaily(ctx context.Context, workspaceID string, from, to time.Time) ([]queries.DailyStats, error) {
	return s.daily(ctx, tagWS, workspaceID, from, to)
}

// daily reads the records of [from, to] (UTC days, inclusive) of one scope
// through one iterator: a consistent view even while Apply commits.
func (s *Store) daily(ctx context.Context, tag byte, id string, from, to time.Time) ([]queries.DailyStats, error) {
	out := []queries.DailyStats{}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := s.flushForRead(); err != nil {
		return nil, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.db == nil {
		return nil, ErrClosed
	}
	fd, td := clampDay(dayOf(from)), clampDay(dayOf(to))
	if id == "" || fd > td {
		return out, nil
	}
	it, err := s.db.NewIter(&pebble.IterOptions{
		LowerBound: dayKey(nil, tag, id, fd),
		UpperBound: dayKey(nil, tag, id, td+1),
	})
	if err != nil {
		return nil, fmt.Errorf("analytics: query: %w", err)
	}
	defer it.Close()
	linkID, wsID := id, ""
	if tag == tagWS {
		linkID, wsID = "", id
	}
	for it.First(); it.Valid(); it.Next() {
		v, err := it.ValueAndErr()
		if err != nil {
			return nil, fmt.Errorf("analytics: query: %w", err)
		}
		r, unique, err := decodeRecord(v, true)
		if err != nil {
			return nil, fmt.Errorf("analytics: query %s day %s: %w", id, dayString(dayOfKey(it.Key())), err)
		}
		out = append(out, r.stats(dayOfKey(it.Key()), linkID, wsID, unique))
	}
	if err := it.Error(); err != nil {
		return nil, fmt.Errorf("analytics: query: %w", err)
	}
	convTag := tagConvLink
	if tag == tagWS {
		convTag = tagConvWS
	}
	cit, err := s.db.NewIter(&pebble.IterOptions{
		LowerBound: dayKey(nil, convTag, id, fd),
		UpperBound: dayKey(nil, convTag, id, td+1),
	})
	if err != nil {
		return nil, fmt.Errorf("analytics: query: %w", err)
	}
	defer cit.Close()
	conv := map[string]*convRecord{}
	for cit.First(); cit.Valid(); cit.Next() {
		v, err := cit.ValueAndErr()
		if err != nil {
			return nil, fmt.Errorf("analytics: query: %w", err)
		}
		c, err := decodeConv(v)
		if err != nil {
			return nil, fmt.Errorf("analytics: query %s day %s: %w", id, dayString(dayOfKey(cit.Key())), err)
		}
		conv[dayString(dayOfKey(cit.Key()))] = c
	}
	if err := cit.Error(); err != nil {
		return nil, fmt.Errorf("analytics: query: %w", err)
	}
	return withConversions(out, conv, linkID, wsID), nil
}

// LinkClicked implements queries.StatsReadModel.
func (s *Store) LinkClicked(ctx context.Context, linkID string) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	if err := s.flushForRead(); err != nil {
		return false, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.db == nil {
		return false, ErrClosed
	}
	if linkID == "" {
		return false, nil
	}
	prefix := scopePrefix(nil, tagLink, linkID)
	upper := append(append([]byte(nil), prefix...), 0xff, 0xff, 0xff, 0xff, 0xff)
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: upper})
	if err != nil {
		return false, fmt.Errorf("analytics: query: %w", err)
	}
	defer it.Close()
	found := it.First()
	if err := it.Error(); err != nil {
		return false, fmt.Errorf("analytics: query: %w", err)
	}
	return found, nil
}

// clampDay keeps a day (and the day after it) inside the key's range.
func clampDay(d int64) int64 {
	const lo, hi = -1 << 31, 1<<31 - 2
	return max(lo, min(hi, d))
}
