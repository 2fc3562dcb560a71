package embedded

import (
	"bytes"
	"hash/maphash"
	"math/bits"
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2"
)

// streamFilter is a Bloom filter of every stream the store holds: built at
// Open from the index's version keys, added to by the writer as it assigns
// a new stream its first version. A stream it does not contain was never
// written: an append to it needs no index read for its version, and
// reading it answers "no stream" at once. New visitors of a site, new
// customers, the reservation of every new eventId are such streams, and an
// index read for a key that is in no memtable and no table costs a skiplist
// seek per memtable (9% of Radar collect's CPU).
//
// It has no false negatives: a stream is added before any of its events is
// visible. Its false positives (about 0.1% at Open, 1% once it holds twice
// the streams it was sized for, more beyond, until the next Open sizes it
// again) only cost the index read that was done before. Its size is bounded
// (maxFilterBits, 64 MiB): a store of more streams than it was made for
// gets more false positives, 0.2% at 19 million streams, 10% at 50 million,
// rather than no filter (every eventId of a shop's sales is a stream: a
// store of 19 million streams without one spent 14% of a sale's CPU on
// index reads for new streams). A nil filter holds
// every stream (tests).
type streamFilter struct {
	bits []atomic.Uint64
	mask uint64 // len(bits)*64 - 1
}

const (
	filterHashes  = 7
	filterMinBits = 1 << 25 // 4 MiB: about 3.3 million streams at 1%
	maxFilterBits = 1 << 29 // 64 MiB: 27 million streams at 20 bits each
)

func newStreamFilter(streams int) *streamFilter {
	n := filterSize(streams)
	return &streamFilter{bits: make([]atomic.Uint64, n/64), mask: n - 1}
}

// filterSize is the bits of the filter for a store of streams: room to grow
// 2x at 10 bits each, a power of two within the bounds.
func filterSize(streams int) uint64 {
	want := uint64(max(streams*2*10, filterMinBits))
	return min(uint64(1)<<bits.Len64(want-1), maxFilterBits)
}

// positions derives the filter's bit positions from a stream's hash
// (double hashing).
func (f *streamFilter) positions(h uint64, do func(uint64) bool) bool {
	h1, h2 := h, bits.RotateLeft64(h, 32)|1
	for i := range uint64(filterHashes) {
		if !do((h1 + i*h2) & f.mask) {
			return false
		}
	}
	return true
}

func (f *streamFilter) add(h uint64) {
	if f == nil {
		return
	}
	f.positions(h, func(p uint64) bool {
		w := &f.bits[p/64]
		if bit := uint64(1) << (p % 64); w.Load()&bit == 0 {
			w.Or(bit)
		}
		return true
	})
}

// mayHold reports whether the stream of hash h may be in the store; false
// means it is not.
func (f *streamFilter) mayHold(h uint64) bool {
	if f == nil {
		return true
	}
	return f.positions(h, func(p uint64) bool { return f.bits[p/64].Load()&(1<<(p%64)) != 0 })
}

// buildStreamFilter reads every stream's version key.
func buildStreamFilter(db *pebble.DB) (*streamFilter, error) {
	it, err := db.NewIter(&pebble.IterOptions{LowerBound: []byte{versionKeyTag}, UpperBound: []byte{versionKeyTag + 1}})
	if err != nil {
		return nil, err
	}
	// The hashes are kept, in chunks (no copies as they grow), until there
	// are enough of them for the largest filter; past that, they go
	// straight into it. Names are unpacked into one buffer and hashed
	// there (maphash.Bytes hashes as maphash.String does): a store's
	// millions of names are not copied into strings.
	const chunk = 1 << 16
	var chunks [][]uint64
	count := 0
	var f *streamFilter
	addAll := func() {
		for _, c := range chunks {
			for _, h := range c {
				f.add(h)
			}
		}
		chunks = nil
	}
	var name []byte
	for ok := it.First(); ok; ok = it.Next() {
		k := it.Key()
		if !bytes.HasPrefix(k, []byte{versionKeyTag}) {
			continue
		}
		var err error
		if name, err = appendStreamOfVersionKey(name[:0], k); err != nil {
			it.Close()
			return nil, err
		}
		h := maphash.Bytes(hashSeed, name)
		if f == nil && count%chunk == 0 && filterSize(count) == maxFilterBits {
			f = newStreamFilter(count)
			addAll()
		}
		if f != nil {
			f.add(h)
			continue
		}
		if count%chunk == 0 {
			chunks = append(chunks, make([]uint64, 0, chunk))
		}
		chunks[len(chunks)-1] = append(chunks[len(chunks)-1], h)
		count++
	}
	if err := it.Close(); err != nil {
		return nil, err
	}
	if f == nil {
		f = newStreamFilter(count)
		addAll()
	}
	return f, nil
}
