package embedded

import (
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// Durability says when Append returns relative to the disk.
type Durability int

const (
	// SyncInterval (the default): Append returns once its events have been
	// written to the operating system, so they survive the process being
	// killed; a background fsync every FlushInterval bounds what a crash of
	// the machine (power loss, kernel panic) can lose.
	SyncInterval Durability = iota
	// SyncAlways: Append returns only after an fsync that covers its events.
	// Concurrent appends share one fsync (group commit).
	SyncAlways
)

func (d Durability) String() string {
	switch d {
	case SyncInterval:
		return "sync-interval"
	case SyncAlways:
		return "sync-always"
	default:
		return fmt.Sprintf("Durability(%d)", int(d))
	}
}

// DefaultFlushInterval is the fsync period of SyncInterval.
const DefaultFlushInterval = 100 * time.Millisecond

// maxFlushInterval keeps a typo (100 s for 100 ms) from silently widening
// the window a machine crash can lose.
const maxFlushInterval = time.Minute

// DefaultSegmentSize is the size after which the log starts a new file.
// The active segment stays uncompressed, so this bounds the part of the log
// that is not (see zseg.go).
const DefaultSegmentSize = 64 << 20

// Options configure Open.
type Options struct {
	// Dir holds the store: log segments, the index and a lock file. Created
	// when missing. Required.
	Dir string
	// Durability defaults to SyncInterval.
	Durability Durability
	// FlushInterval is the fsync period of SyncInterval; 0 means
	// DefaultFlushInterval. Ignored by SyncAlways.
	FlushInterval time.Duration
	// Logger receives recovery reports and I/O failures; nil means
	// slog.Default().
	Logger *slog.Logger

	// segmentSize overrides DefaultSegmentSize (tests).
	segmentSize int64
	// noCompress keeps sealed segments plain (tests that edit segment
	// files).
	noCompress bool
	// cacheSize overrides the number of stream versions the writer keeps
	// in memory (tests).
	cacheSize int
	// compactShare overrides the share of the wall time the background
	// compactor works in the steady state (tests).
	compactShare float64
	// busyRate and deferBytes override how fast a growing log makes the
	// compactor yield, and how much it leaves plain then (tests; a
	// negative deferBytes never yields).
	busyRate   int64
	deferBytes int64
	// hash names streams in the index's event keys: nameHash, or in tests
	// one under which many names collide.
	hash func(stream string) uint64
}

// Validate reports every problem of o at once.
func (o Options) Validate() error {
	var errs []error
	if o.Dir == "" {
		errs = append(errs, errors.New("Dir is required"))
	}
	if o.Durability != SyncInterval && o.Durability != SyncAlways {
		errs = append(errs, fmt.Errorf("Durability %d is neither SyncInterval nor SyncAlways", int(o.Durability)))
	}
	if o.FlushInterval < 0 {
		errs = append(errs, fmt.Errorf("FlushInterval %v is negative", o.FlushInterval))
	} else if o.FlushInterval > maxFlushInterval {
		errs = append(errs, fmt.Errorf("FlushInterval %v is longer than %v", o.FlushInterval, maxFlushInterval))
	}
	if o.segmentSize < 0 {
		errs = append(errs, fmt.Errorf("segment size %d is negative", o.segmentSize))
	}
	if o.cacheSize < 0 {
		errs = append(errs, fmt.Errorf("cache size %d is negative", o.cacheSize))
	}
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("embedded: invalid options: %w", errors.Join(errs...))
}

func (o Options) withDefaults() Options {
	if o.FlushInterval == 0 {
		o.FlushInterval = DefaultFlushInterval
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.segmentSize == 0 {
		o.segmentSize = DefaultSegmentSize
	}
	if o.cacheSize == 0 {
		o.cacheSize = defaultCacheSize
	}
	if o.compactShare == 0 {
		o.compactShare = compactShare
	}
	if o.busyRate == 0 {
		o.busyRate = busyRate
	}
	if o.deferBytes == 0 {
		o.deferBytes = deferBytes
	}
	if o.hash == nil {
		o.hash = nameHash
	}
	if o.cacheSize < minCacheSize {
		o.cacheSize = minCacheSize
	}
	return o
}
