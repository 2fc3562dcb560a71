package analytics

import (
	"slices"
)

// batchAgg adds up the clicks of one Apply per (scope, day) key. Breakdown
// values are interned per batch: a click becomes a dozen small ids appended
// to each of its two deltas, and finish turns the ids into sorted counts
// with one integer sort per delta instead of string comparisons.
type batchAgg struct {
	deltas map[string]*delta
	out    []encoded // after run: the encoded deltas in key order
	arena  []byte    // holds out's keys and values
	dict   [numMaps]map[string]uint32
	keys   []entry // id -> (map, key)
	ids    []uint32
	joined []byte
	free   []*delta // reused across batches
}

// encoded is one delta ready for the batch.
type encoded struct{ key, value []byte }

const maxFree = 4096

// delta is the contribution of one batch to one (scope, day).
type delta struct {
	rec    record
	ids    []uint32 // breakdown ids, one per count
	hashes []uint64 // visitor hashes
}

func newBatchAgg() *batchAgg {
	a := &batchAgg{deltas: make(map[string]*delta)}
	for i := range a.dict {
		a.dict[i] = make(map[string]uint32)
	}
	return a
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
	for i := range a.dict {
		clear(a.dict[i])
	}
	a.keys = a.keys[:0]
}

// click interns the breakdown values of c; the ids stay in a.ids until the
// next call.
func (a *batchAgg) click(c *clickFields) []uint32 {
	a.ids = a.ids[:0]
	breakdowns(c, a.intern)
	return a.ids
}

func (a *batchAgg) intern(m int, x, y string) {
	var key string
	if y == "" {
		key = x
	} else {
		a.joined = append(append(append(a.joined[:0], x...), ' '), y...)
		if id, ok := a.dict[m][string(a.joined)]; ok { // no allocation
			a.ids = append(a.ids, id)
			return
		}
		key = string(a.joined)
	}
	id, ok := a.dict[m][key]
	if !ok {
		id = uint32(len(a.keys))
		a.dict[m][key] = id
		a.keys = append(a.keys, entry{m: uint8(m), key: key})
	}
	a.ids = append(a.ids, id)
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

// finish turns every delta's ids and hashes into its record's entries and
// visitors.
func (a *batchAgg) finish() {
	// rank[id] is the position of the id's (map, key) in sorted order.
	order := make([]uint32, len(a.keys))
	for i := range order {
		order[i] = uint32(i)
	}
	slices.SortFunc(order, func(x, y uint32) int { return cmpEntry(a.keys[x], a.keys[y]) })
	rank := make([]uint32, len(a.keys))
	for r, id := range order {
		rank[id] = uint32(r)
	}
	for _, d := range a.deltas {
		for i, id := range d.ids {
			d.ids[i] = rank[id]
		}
		slices.Sort(d.ids)
		// One allocation of the entries' final size: grown by append they
		// were 7% of an analytics replay's CPU.
		distinct := 0
		for i, id := range d.ids {
			if i == 0 || id != d.ids[i-1] {
				distinct++
			}
		}
		es := slices.Grow(d.rec.entries[:0], distinct)
		for i := 0; i < len(d.ids); {
			j := i + 1
			for j < len(d.ids) && d.ids[j] == d.ids[i] {
				j++
			}
			k := a.keys[order[d.ids[i]]]
			es = append(es, entry{m: k.m, key: k.key, n: int64(j - i)})
			i = j
		}
		d.rec.entries = es
		d.rec.dirty = false
		d.rec.uniq.addHashes(d.hashes)
	}
}

// collect adds the clicks to the deltas under their (link, day) or
// (workspace, day) key, per tag. Deltas add up over several calls until
// seal.
func (a *batchAgg) collect(clicks []parsed, tag byte) {
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
		a.add(key, &p.c, p.ts, a.click(&p.c))
	}
}

// seal fills out with the encoded deltas in key order. The deltas are
// spent: reset comes next.
func (a *batchAgg) seal() {
	a.finish()
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
