package clickindex

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
	"github.com/cockroachdb/pebble/v2/sstable"

	"github.com/linkd/linkd/domain/click"
	"github.com/linkd/linkd/eventstore"
	"github.com/linkd/linkd/internal/storage/pebbleheap"
	"github.com/linkd/linkd/internal/storage/pebblelog"
	"github.com/linkd/linkd/internal/storage/versioncache"
	"github.com/linkd/linkd/projections"
)

// Name is the projection's name (checkpoints, consumer group, replay). It
// never changes.
const Name = "clickindex"

// Category is the stream category it consumes.
const Category = "clicks"

// ttl is how long a tracking id stays valid after its click.
const ttl = click.TrackingTTL

// ErrClosed is returned by every method after Close.
var ErrClosed = errors.New("clickindex: closed")

// Defaults of Options.
const (
	DefaultCacheSize       = 32 << 20
	DefaultMemTableSize    = 64 << 20
	DefaultStreamCacheSize = 1 << 16
	DefaultExpireEvery     = time.Hour
)

// Options tune Open. The zero value is ready to use.
type Options struct {
	// CacheSize is Pebble's block cache in bytes (default 32 MiB). It holds
	// data, index and bloom filter blocks; with more ids than fit, lookups
	// read the rest from the operating system's page cache or the disk.
	// (Pebble charges its memtables to the same cache, which would leave no
	// room for blocks once they are full: the cache is made CacheSize + 2 x
	// MemTableSize.)
	CacheSize int64
	// MemTableSize is the size of one Pebble memtable in bytes (default
	// 64 MiB; Pebble keeps up to two while flushing). Larger memtables
	// mean fewer flushes and less compaction work: catching up a million
	// clicks took 11% less CPU with 64 MiB here and in the statistics
	// than with 16 and 32 MiB.
	MemTableSize uint64
	// StreamCacheSize bounds the click streams whose last applied version
	// is kept in memory (default 65536; up to twice as many are held).
	// Misses read the database.
	StreamCacheSize int
	// ExpireEvery is how often a background goroutine deletes expired ids
	// (default one hour; the first run is at Open). Negative turns it off:
	// call Expire yourself.
	ExpireEvery time.Duration
	// Now is the clock that decides expiry (default time.Now).
	Now func() time.Time
	// NoSync commits batches without waiting for the disk, and without a
	// write-ahead log (batches reach the disk when Pebble flushes its
	// memtables, and at Close): a crash may lose the last batches Apply
	// acknowledged, up to the unflushed memtables (never a part of one, and
	// never the data without its checkpoint). Safe only when whoever feeds
	// the projection resumes after Checkpoint() (projections.LocalRunner,
	// Replay), NOT with Kafka, which resumes from offsets committed after
	// Apply returned. Default false (pebble.Sync).
	NoSync bool
	// Logger receives Pebble's messages and reports of undecodable clicks;
	// nil means slog.Default().
	Logger *slog.Logger
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
	if o.MemTableSize != 0 && o.MemTableSize < 1<<20 {
		errs = append(errs, fmt.Errorf("MemTableSize %d is below 1 MiB", o.MemTableSize))
	}
	if o.ExpireEvery > 0 && o.ExpireEvery < time.Second {
		errs = append(errs, fmt.Errorf("ExpireEvery %v is below one second", o.ExpireEvery))
	}
	if len(errs) > 0 {
		return fmt.Errorf("clickindex options: %w", errors.Join(errs...))
	}
	return nil
}

// Store is the click-id index: the projection and its read model.
type Store struct {
	projections.LongBatches

	opts  Options
	log   *slog.Logger
	wopts *pebble.WriteOptions

	// mu guards db against Close: every use holds it for reading.
	mu sync.RWMutex
	db *pebble.DB

	// applyMu serialises Apply and Reset; it guards the fields below.
	applyMu    sync.Mutex
	checkpoint eventstore.Position
	versions   *versioncache.Cache
	behind     versioncache.Behind
	key, val   []byte // Apply's scratch space

	// undecodable counts the clicks skipped since Open; read without
	// applyMu.
	undecodable atomic.Uint64

	stopExpiry context.CancelFunc
	expiryDone chan struct{} // nil without the background expiry
}

var (
	_ projections.Projector     = (*Store)(nil)
	_ projections.StreamTracker = (*Store)(nil)
)

// Open opens (creating when missing) the index in dir.
func Open(dir string, opts Options) (*Store, error) {
	if dir == "" {
		return nil, errors.New("clickindex: dir is required")
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
	if opts.ExpireEvery == 0 {
		opts.ExpireEvery = DefaultExpireEvery
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	s := &Store{
		opts:     opts,
		log:      opts.Logger.With("component", "projections/clickindex"),
		wopts:    pebble.Sync,
		versions: versioncache.New(opts.StreamCacheSize),
	}
	if opts.NoSync {
		s.wopts = pebble.NoSync
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("clickindex: %w", err)
	}
	cache := pebble.NewCache(opts.CacheSize + 2*int64(opts.MemTableSize))
	popts := &pebble.Options{
		Cache:              cache,
		MemTableSize:       opts.MemTableSize,
		FormatMajorVersion: pebble.FormatNewest,
		Logger:             pebblelog.New(s.log, "clickindex"),
	}
	// Lookups are point reads, half of them (wrong or expired ids) misses:
	// bloom filters on every level answer most misses without reading data
	// blocks.
	popts.Levels[0].FilterPolicy = bloom.FilterPolicy(10)
	// NoSync already allows losing the last batches (a prefix survives,
	// each batch with its checkpoint): without a write-ahead log a crash
	// loses what was not flushed yet, and the feeder applies it again. The
	// logs were most of this store's bytes on disk (issue 13); Close
	// flushes.
	popts.DisableWAL = opts.NoSync
	// MinLZ on every level (Pebble's Fastest profile), not zstd: a lookup
	// that misses the block cache inflates a data block, and with 10 M
	// ids most do. A sale took 8% less CPU, for 12 more bytes per click on
	// disk (ADR 0117; zstd and its sizes: ADR 0015).
	popts.ApplyCompressionSettings(func() pebble.DBCompressionSettings {
		return pebble.UniformDBCompressionSettings(sstable.FastestCompression)
	})
	db, err := pebbleheap.Open(dir, popts)
	cache.Unref() // the DB holds its own reference
	if err != nil {
		return nil, fmt.Errorf("clickindex: open %s: %w", dir, err)
	}
	s.db = db
	if err := s.load(); err != nil {
		_ = pebbleheap.Close(db)
		return nil, err
	}
	if opts.ExpireEvery > 0 {
		ctx, cancel := context.WithCancel(context.Background())
		s.stopExpiry, s.expiryDone = cancel, make(chan struct{})
		go s.expireLoop(ctx, opts.ExpireEvery)
	}
	return s, nil
}

func (s *Store) load() error {
	cp, err := s.behind.Open(s.db, versionKeys, s.wopts)
	if err != nil {
		return fmt.Errorf("clickindex: %w", err)
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

// Close stops the background expiry and closes the database. Every method
// returns ErrClosed afterwards.
func (s *Store) Close() error {
	if s.stopExpiry != nil {
		s.stopExpiry()
		<-s.expiryDone
	}
	s.applyMu.Lock() // before mu, as Apply takes them
	defer s.applyMu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.db == nil {
		return nil
	}
	err := s.writeVersions()
	// Flush the memtables first: without a write-ahead log (NoSync) they
	// would be lost; with one, it would stay on disk (tens of MB) until
	// the next Open replays it.
	err = errors.Join(err, s.db.Flush())
	err = errors.Join(err, pebbleheap.Close(s.db))
	s.db = nil
	if err != nil {
		return fmt.Errorf("clickindex: close: %w", err)
	}
	return nil
}

// Name implements projections.Projector.
func (s *Store) Name() string { return Name }

// Categories implements projections.Projector.
func (s *Store) Categories() []string { return []string{Category} }

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

// Apply applies a batch of events atomically: the records of the tracked
// clicks not applied before, the new last version of every stream it
// touched, and the checkpoint, in one Pebble batch. See the package comment.
func (s *Store) Apply(ctx context.Context, events []projections.Event) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := s.lockApply(); err != nil {
		return err
	}
	defer s.unlockApply()

	// 1. Deduplicate. An event is applied when its version is newer than the
	// last applied version of its stream, committed or earlier in this batch.
	dedup := versioncache.NewDedup(s.checkpoint, s.lastVersion)
	dedup.Gap = s.behind.Gap()
	next := dedup.Next
	todo := make([]int, 0, len(events))
	last := eventstore.Start // the batch's highest position
	for i := range events {
		ev := &events[i]
		if last.Less(ev.Position) {
			last = ev.Position
		}
		if eventstore.Category(ev.Stream) != Category {
			continue
		}
		fresh, err := dedup.New(&ev.RecordedEvent)
		if err != nil {
			return fmt.Errorf("clickindex: apply: %w", err)
		}
		if !fresh {
			continue
		}
		if ev.Type == click.EventRecorded {
			todo = append(todo, i)
		}
	}
	top := s.checkpoint // the checkpoint after the batch
	if top.Less(last) {
		top = last
	}
	if len(next) == 0 && top == s.checkpoint {
		return nil // only duplicates
	}

	// 2. One atomic batch: checkpoint, stream versions (or some of them
	// later: versioncache.Behind), records.
	b := s.db.NewBatch()
	defer b.Close()
	at := time.Now()
	plan := s.behind.Plan(next, s.checkpoint, last, at, false)
	if err := plan.Add(b, versionKeys, top); err != nil {
		return fmt.Errorf("clickindex: apply: %w", err)
	}
	now := s.opts.Now()
	var f fields
	for _, i := range todo {
		ev := &events[i]
		e, err := ev.Decode()
		c, ok := e.(*click.Recorded)
		if err == nil && !ok {
			err = fmt.Errorf("%s is not a click", ev.Type)
		}
		if err != nil {
			// Skipped rather than failing the batch: a failed batch is
			// retried forever, and one corrupt event must not stop the
			// attribution of every other click.
			s.undecodable.Add(1)
			s.log.Warn("undecodable click skipped", "stream", ev.Stream,
				"version", ev.Version, "position", ev.Position.String(), "err", err)
			continue
		}
		f = fieldsOf(c)
		f.Version = ev.Version
		if len(f.TrackingID) == 0 {
			continue // the link does not track conversions
		}
		ts := f.Timestamp
		if ts.IsZero() {
			ts = ev.Time
		}
		exp := ts.Add(ttl)
		if f.HasExpires {
			exp = f.ExpiresAt
		}
		if !now.Before(exp) {
			continue // expired already (a replay of old clicks)
		}
		if err := s.put(b, &f, ts, exp); err != nil {
			return fmt.Errorf("clickindex: apply: %w", err)
		}
	}
	if err := b.Commit(s.wopts); err != nil {
		return fmt.Errorf("clickindex: apply: commit: %w", err)
	}

	// 3. Only now that the batch is committed, remember it.
	s.behind.Committed(plan, s.versions, at)
	s.checkpoint = top
	return nil
}

// writeVersions writes the stream versions waiting (Close). Callers hold
// applyMu and mu.
func (s *Store) writeVersions() error {
	if err := s.behind.WriteWaiting(s.db, s.wopts, versionKeys, s.checkpoint); err != nil {
		return fmt.Errorf("clickindex: write versions: %w", err)
	}
	return nil
}

// put adds the record of one click to b: under its UUIDv7 when the id is
// one whose time is within Slack of the click's, else under its bytes with
// an expiry-index key. Callers hold applyMu.
func (s *Store) put(b *pebble.Batch, f *fields, ts, exp time.Time) error {
	s.val = appendRecord(s.val[:0], f, ts, exp)
	if u, ok := parseUUIDv7(f.TrackingID); ok {
		if d := exp.Add(-ttl).Sub(uuidTime(&u)); -Slack <= d && d <= Slack {
			s.key = v7Key(s.key[:0], &u)
			return b.Set(s.key, s.val, nil)
		}
	}
	s.key = idKey(s.key[:0], f.TrackingID)
	if err := b.Set(s.key, s.val, nil); err != nil {
		return err
	}
	s.key = expiryKey(s.key[:0], dayOf(exp), f.TrackingID)
	return b.Set(s.key, nil, nil)
}

// lastVersion is the last applied version of stream. Callers hold applyMu.
func (s *Store) lastVersion(stream string) (uint64, bool, error) {
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
		return 0, false, fmt.Errorf("clickindex: %w", err)
	}
	return v, ok, nil
}

// Click returns the click a tracking id (svc_tid) was handed out with. ok
// is false when there is none, or when it has expired: ExpiresAt is not
// after Options.Now() (90 days after the click for every id linkd hands
// out). Tracking ids match exactly (case included).
//
// Click shows what is applied: a caller that must see a click recorded an
// instant ago waits for the projection's watermark first.
func (s *Store) Click(ctx context.Context, trackingID string) (Click, bool, error) {
	if err := ctx.Err(); err != nil {
		return Click{}, false, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.db == nil {
		return Click{}, false, ErrClosed
	}
	if trackingID == "" {
		return Click{}, false, nil
	}
	var buf [64]byte
	c, ok, err := Click{}, false, error(nil)
	if u, v7 := parseUUIDv7(trackingID); v7 {
		c, ok, err = s.get(v7Key(buf[:0], &u), trackingID)
	}
	if !ok && err == nil {
		c, ok, err = s.get(idKey(buf[:0], trackingID), trackingID)
	}
	if err != nil || !ok {
		return Click{}, false, err
	}
	if !s.opts.Now().Before(c.ExpiresAt) {
		return Click{}, false, nil
	}
	return c, true, nil
}

func (s *Store) get(key []byte, trackingID string) (Click, bool, error) {
	v, closer, err := s.db.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return Click{}, false, nil
	}
	if err != nil {
		return Click{}, false, fmt.Errorf("clickindex: %w", err)
	}
	defer closer.Close()
	c, err := decodeRecord(v, trackingID)
	if err != nil {
		return Click{}, false, fmt.Errorf("clickindex: %s: %w", trackingID, err)
	}
	return c, true, nil
}

// Reset empties the index, its dedup state and its checkpoint.
func (s *Store) Reset(ctx context.Context) error {
	if err := s.lockApply(); err != nil {
		return err
	}
	defer s.unlockApply()
	b := s.db.NewBatch()
	defer b.Close()
	if err := b.DeleteRange([]byte{tagStream}, []byte{tagEnd}, nil); err != nil {
		return fmt.Errorf("clickindex: reset: %w", err)
	}
	if err := b.Delete(keyCheckpoint, nil); err != nil {
		return fmt.Errorf("clickindex: reset: %w", err)
	}
	if err := b.Delete(keyGap, nil); err != nil {
		return fmt.Errorf("clickindex: reset: %w", err)
	}
	// Durable before it returns, with or without a write-ahead log.
	err := b.Commit(s.wopts)
	if err == nil && s.wopts == pebble.NoSync {
		err = s.db.Flush()
	}
	if err != nil {
		return fmt.Errorf("clickindex: reset: %w", err)
	}
	s.versions.Reset()
	s.behind.Reset()
	s.checkpoint = eventstore.Start
	return nil
}
