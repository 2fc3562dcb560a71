package analytics

import (
	"slices"
	"sync"
)

// batchAgg adds up the clicks waiting per (scope, day) key. Breakdown
// values are interned (dictionary): a click becomes a dozen small ids
// appended to each of its two deltas, and finish turns the ids into sorted
// counts with one integer sort per delta instead of string comparisons.
type batchAgg struct {
	deltas  map[string]*delta
	out     []encoded // after seal: the encoded deltas in key order
	arena   []byte    // holds out's keys and values
	scratch []uint32  // one click's ids
	// finish's scratch: one delta's counts, distinct ranks, and counts by
	// rank (countByRank).
	counts   []int32
	distinct []uint32
	byRank   []int32
	free     []*delta // reused across batches
}

// encoded is one delta ready for the batch.
type encoded struct{ key, value []byte }

const maxFree = 4096

// delta is the contribution of the clicks waiting to one (scope, day).
type delta struct {
	rec    record
	ids    []uint32 // breakdown ids, one per count
	hashes []uint64 // visitor hashes
}

func newBatchAgg() *batchAgg {
	return &batchAgg{deltas: make(map[string]*delta)}
}

// reset empties a, keeping its memory when it is small.
func (a *batchAgg) reset() {
	for _, d := range a.deltas {
		// Keep small deltas for the next batch: at most maxFree of them, of
		// at most about 4 KiB each.
		if len(a.free) >= maxFree || 4*cap(d.ids)+8*cap(d.hashes)+32*cap(d.rec.entries) > 4096 {
			continue
		}
		clear(d.rec.entries[:cap(d.rec.entries)]) // drop the strings
		d.rec = record{entries: d.rec.entries[:0]}
		d.ids, d.hashes = d.ids[:0], d.hashes[:0]
		a.free = append(a.free, d)
	}
	clear(a.deltas)
	clear(a.out)
	a.out = a.out[:0]
	if cap(a.arena) > 64<<20 { // bounded memory: do not keep a huge arena
		a.arena = nil
	}
	a.arena = a.arena[:0]
}

// dictionary interns the breakdown values of the clicks waiting, for both
// scopes at once: each value of a click is looked up once, not once per
// scope (the lookups were a tenth of a replay's CPU, twice over). The maps
// are split in two halves by parity, interned on two goroutines for a big
// batch; an id is its half in the low bit and its index in that half above.
type dictionary struct {
	halves [2]dictHalf
}

// dictHalf interns the values of the maps m with m%2 equal to its half.
type dictHalf struct {
	index  [numMaps]map[string]uint32 // of its maps only
	keys   []entry                    // index -> (map, key)
	joined []byte
	slots  []uint32 // the last batch's ids: perHalf per click, noID when none
}

const noID = ^uint32(0)

// perHalf is how many maps a half interns (the first one more, should
// numMaps be odd).
const perHalf = (numMaps + 1) / 2

// parallelIntern is the smallest batch whose halves are interned at once.
const parallelIntern = 512

func newDictionary() *dictionary {
	d := &dictionary{}
	for h := range d.halves {
		for m := h; m < numMaps; m += 2 {
			d.halves[h].index[m] = make(map[string]uint32)
		}
	}
	return d
}

// reset forgets every value: the deltas that held their ids are spent.
func (d *dictionary) reset() {
	for h := range d.halves {
		dh := &d.halves[h]
		for m := h; m < numMaps; m += 2 {
			clear(dh.index[m])
		}
		clear(dh.keys) // drop the strings
		dh.keys = dh.keys[:0]
	}
}

// intern takes the ids of the clicks' values; id(i, m) reads them.
func (d *dictionary) intern(clicks []parsed) {
	if len(clicks) < parallelIntern {
		d.halves[0].intern(clicks, 0)
		d.halves[1].intern(clicks, 1)
		return
	}
	var wg sync.WaitGroup
	wg.Go(func() { d.halves[1].intern(clicks, 1) })
	d.halves[0].intern(clicks, 0)
	wg.Wait()
}

// id is the id of click i's value in map m after intern, or noID.
func (d *dictionary) id(i, m int) uint32 {
	return d.halves[m&1].slots[i*perHalf+m>>1]
}

func (dh *dictHalf) intern(clicks []parsed, half int) {
	const per = perHalf
	n := len(clicks) * per
	dh.slots = slices.Grow(dh.slots[:0], n)[:n]
	for i := range dh.slots {
		dh.slots[i] = noID
	}
	for i := range clicks {
		p := &clicks[i]
		if p.bad {
			continue
		}
		row := dh.slots[i*per : (i+1)*per]
		breakdowns(&p.c, func(m int, x, y string) {
			if m&1 == half {
				row[m>>1] = dh.id(m, x, y)<<1 | uint32(half)
			}
		})
	}
}

// id interns the key x, or x + " " + y when y is not empty, of map m.
func (dh *dictHalf) id(m int, x, y string) uint32 {
	var key string
	if y == "" {
		key = x
	} else {
		dh.joined = append(append(append(dh.joined[:0], x...), ' '), y...)
		if id, ok := dh.index[m][string(dh.joined)]; ok { // no allocation
			return id
		}
		key = string(dh.joined)
	}
	id, ok := dh.index[m][key]
	if !ok {
		id = uint32(len(dh.keys))
		dh.index[m][key] = id
		dh.keys = append(dh.keys, entry{m: uint8(m), key: key})
	}
	return id
}

// ranking orders every value interned by (map, key), as a record's entries.
type ranking struct {
	n0     uint32   // the first half's values: the second's are numbered after them
	sorted []uint32 // the values in order, numbered so
	rank   []uint32 // a value's place in sorted
	keys   func(v uint32) entry
}

// ranking orders the values interned so far.
func (d *dictionary) ranking() *ranking {
	n0 := uint32(len(d.halves[0].keys))
	n := int(n0) + len(d.halves[1].keys)
	r := &ranking{n0: n0, sorted: make([]uint32, n), rank: make([]uint32, n)}
	r.keys = func(v uint32) entry {
		if v < n0 {
			return d.halves[0].keys[v]
		}
		return d.halves[1].keys[v-n0]
	}
	for i := range r.sorted {
		r.sorted[i] = uint32(i)
	}
	slices.SortFunc(r.sorted, func(x, y uint32) int { return cmpEntry(r.keys(x), r.keys(y)) })
	for place, v := range r.sorted {
		r.rank[v] = uint32(place)
	}
	return r
}

// of is the place of an interned id in the order.
func (r *ranking) of(id uint32) uint32 {
	return r.rank[id>>1+(id&1)*r.n0]
}

// add counts a click, whose breakdown ids are ids, under key.
func (a *batchAgg) add(key []byte, c *clickFields, ts int64, ids []uint32) {
	d := a.deltas[string(key)]
	if d == nil {
		if n := len(a.free); n > 0 {
			d = a.free[n-1]
			a.free = a.free[:n-1]
		} else {
			d = &delta{}
		}
		a.deltas[string(key)] = d
	}
	d.rec.addCounters(c, ts)
	d.ids = append(d.ids, ids...)
	if c.HasVisitor {
		d.hashes = append(d.hashes, c.Visitor)
	}
}

// countFrom is the number of ids from which a delta counts them in an
// array over every value (finish) rather than sorting them: a workspace's
// day gathers hundreds of clicks, a dozen ids each, of far fewer values.
const countFrom = 64

// finish turns every delta's ids and hashes into its record's entries and
// visitors.
func (a *batchAgg) finish(r *ranking) {
	a.byRank = nil // sized for r when a delta needs it
	for _, d := range a.deltas {
		var n int
		if len(d.ids) >= countFrom {
			n = a.countByRank(d.ids, r)
		} else {
			n = a.sortByRank(d.ids, r)
		}
		// One allocation of the entries' final size: grown by append they
		// were 7% of an analytics replay's CPU.
		es := slices.Grow(d.rec.entries[:0], n)
		for i, v := range d.ids[:n] {
			k := r.keys(r.sorted[v])
			es = append(es, entry{m: k.m, key: k.key, n: int64(a.counts[i])})
		}
		d.rec.entries = es
		d.rec.dirty = false
		d.rec.uniq.addHashes(d.hashes)
	}
}

// countByRank counts ids by their rank in an array over every value: ids
// becomes their n distinct ranks in order, a.counts their counts.
func (a *batchAgg) countByRank(ids []uint32, r *ranking) (n int) {
	if a.byRank == nil {
		a.byRank = make([]int32, len(r.rank)) // zero again after each delta
	}
	distinct := a.distinct[:0]
	for _, id := range ids {
		v := r.of(id)
		if a.byRank[v] == 0 {
			distinct = append(distinct, v)
		}
		a.byRank[v]++
	}
	slices.Sort(distinct)
	a.counts = slices.Grow(a.counts[:0], len(distinct))[:len(distinct)]
	for i, v := range distinct {
		ids[i], a.counts[i] = v, a.byRank[v]
		a.byRank[v] = 0
	}
	a.distinct = distinct
	return len(distinct)
}

// sortByRank sorts ids by their rank (a delta of one click is in order
// already: breakdowns) and counts the runs: ids becomes their n distinct
// ranks in order, a.counts their counts.
func (a *batchAgg) sortByRank(ids []uint32, r *ranking) (n int) {
	sorted := true
	for i, id := range ids {
		ids[i] = r.of(id)
		if i > 0 && ids[i] < ids[i-1] {
			sorted = false
		}
	}
	if !sorted {
		slices.Sort(ids)
	}
	a.counts = slices.Grow(a.counts[:0], len(ids))[:len(ids)]
	for i := 0; i < len(ids); {
		j := i + 1
		for j < len(ids) && ids[j] == ids[i] {
			j++
		}
		ids[n], a.counts[n] = ids[i], int32(j-i)
		n++
		i = j
	}
	return n
}

// collect adds the clicks, whose values dict interned, to the deltas under
// their (link, day) or (workspace, day) key, per tag. Deltas add up over
// several calls until seal.
func (a *batchAgg) collect(clicks []parsed, dict *dictionary, tag byte) {
	var key []byte
	for i := range clicks {
		p := &clicks[i]
		if p.bad {
			continue
		}
		id := p.linkID
		if tag == tagWS {
			id = p.c.WorkspaceID
		}
		if id == "" {
			continue
		}
		key = dayKey(key[:0], tag, id, p.day)
		ids := a.scratch[:0]
		for m := range numMaps {
			if v := dict.id(i, m); v != noID {
				ids = append(ids, v)
			}
		}
		a.scratch = ids
		a.add(key, &p.c, p.ts, ids)
	}
}

// seal fills out with the encoded deltas in key order. The deltas are
// spent: reset comes next.
func (a *batchAgg) seal(r *ranking) {
	a.finish(r)
	keys := make([]string, 0, len(a.deltas))
	for k := range a.deltas {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	// Encode everything into the arena first (it may move while growing),
	// then slice it.
	bounds := make([]int, 0, 2*len(keys))
	for _, k := range keys {
		a.arena = append(a.arena, k...)
		bounds = append(bounds, len(a.arena))
		a.arena = a.deltas[k].rec.encode(a.arena)
		bounds = append(bounds, len(a.arena))
	}
	start := 0
	for i := 0; i < len(bounds); i += 2 {
		a.out = append(a.out, encoded{key: a.arena[start:bounds[i]], value: a.arena[bounds[i]:bounds[i+1]]})
		start = bounds[i+1]
	}
}
