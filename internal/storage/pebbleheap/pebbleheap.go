// Package pebbleheap keeps the garbage collector's target where it would
// be if Pebble's memory were not on the Go heap.
//
// Built with cgo, Pebble allocates its memtables and block caches with C's
// malloc, outside the Go heap. Built without (CGO_ENABLED=0: a static
// binary, the container image) it allocates them with make, on the Go
// heap: long lived buffers, hundreds of MB at linkd's defaults, that GOGC
// multiplies as if they were the rest of the heap. At GOGC 200 the heap's
// target was three times them: a linkd serve built without cgo, under
// redirects, grew to 1 GB within a minute and kept growing (every new page
// a page fault), and took 10 to 17% more CPU per redirect than the same
// code with cgo (ADR 0004).
//
// Open and Close open and close a Pebble database and count what it holds
// (cached blocks, memtables) in Held. Govern then keeps a soft memory
// limit of Held plus what GOGC allows for the rest of the heap, so the
// collector paces the rest as it would with cgo.
package pebbleheap

import (
	"context"
	"math"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

var (
	mu  sync.Mutex
	dbs = map[*pebble.DB]struct{}{} // open through Open, not closed
)

// Open opens the Pebble database at dir (pebble.Open) and counts what it
// holds in Held until Close.
func Open(dir string, opts *pebble.Options) (*pebble.DB, error) {
	db, err := pebble.Open(dir, opts)
	if err != nil {
		return nil, err
	}
	mu.Lock()
	dbs[db] = struct{}{}
	mu.Unlock()
	return db, nil
}

// Close stops counting db and closes it (db.Close). db must come from
// Open.
func Close(db *pebble.DB) error {
	mu.Lock()
	delete(dbs, db) // under mu: Held never asks a closed database
	mu.Unlock()
	return db.Close()
}

// Held is what the databases open through Open hold in memory: the
// blocks in their caches and their memtables, in use or waiting to be
// freed. Each database's Metrics takes its locks: Held is for once a
// second, not for every request. (Pebble answers Metrics of a database
// closed without Close with zeros.)
func Held() int64 {
	mu.Lock()
	defer mu.Unlock()
	var n int64
	for db := range dbs {
		m := db.Metrics()
		n += m.BlockCache.Size + int64(m.MemTable.Size+m.MemTable.ZombieSize)
	}
	return n
}

// OnGoHeap reports whether this build keeps Pebble's memory on the Go heap
// (built without cgo).
func OnGoHeap() bool { return onGoHeap }

// minRest is the least of the rest of the heap (what is not Pebble's)
// that Limit plans for, so that a heap Pebble's buffers have not filled
// yet still gets room to grow.
const minRest = 64 << 20

// Limit is the soft memory limit for a live heap of live bytes, held of
// which may be Pebble's, at GOGC percent: held, plus the target GOGC gives
// the rest of the heap, plus a tenth for the runtime's own memory (stacks,
// the collector's metadata, free pages not yet returned). It is always
// above live, by at least the collector's own margin on the rest.
func Limit(live, held int64, percent int) int64 {
	rest := max(live-held, minRest)
	target := float64(held) + float64(rest)*(1+float64(percent)/100)
	target *= 1.1
	if target >= math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(target)
}

// readGC reads the live heap's bytes as of the last collection and the
// collector's GOGC (-1: off), as the runtime has them.
func readGC(s []metrics.Sample) (live int64, percent int) {
	metrics.Read(s)
	// Both are KindUint64; GOGC off is -1 as a uint64.
	return int64(s[0].Value.Uint64()), int(int64(s[1].Value.Uint64()))
}

// Govern sets the soft memory limit to Limit every period, from the live
// heap, Held and the collector's GOGC, until ctx ends; then it restores
// the limit it found. It does nothing in a build with cgo (OnGoHeap
// false), nor when a memory limit is already set (GOMEMLIMIT, or
// debug.SetMemoryLimit: the operator's choice), and leaves the limit
// unset while GOGC is off.
func Govern(ctx context.Context, period time.Duration) {
	govern(ctx, onGoHeap, period)
}

// govern is Govern, on or off.
func govern(ctx context.Context, on bool, period time.Duration) {
	if !on {
		return
	}
	before := debug.SetMemoryLimit(-1)
	if before != math.MaxInt64 {
		return
	}
	defer debug.SetMemoryLimit(before)
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/gc/gogc:percent"}}
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		limit := before
		if live, percent := readGC(s); percent >= 0 {
			limit = Limit(live, Held(), percent)
		}
		debug.SetMemoryLimit(limit)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
