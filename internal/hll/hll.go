// Package hll counts distinct 64-bit hashes in bounded memory: exactly while
// a sketch holds few of them, then as a HyperLogLog of 2^12 one-byte
// registers (4 KiB; standard error 1.04/√4096 ≈ 1.6%), with linear counting
// for small estimates. A sketch that hashes are added to stays exact up to
// MaxExact of them; the union of exact sketches (Merge) stays exact up to
// MaxUnion. So a small site's counts are exact, over a day or a month;
// beyond, they are estimates, as Plausible's (ClickHouse's uniq) are, and
// merging a month of busy days is a maximum over registers, not a union of
// sets. Sketches merge (the union of the
// sets they count) and adding a hash twice changes nothing, so a sketch can
// be rebuilt or added to again after a crash without counting anything
// twice.
//
// This is what Radar's daily rollups count unique visitors with: the union
// of a range's days is the range's visitors, without reading every hit.
package hll

import (
	"encoding/binary"
	"errors"
	"hash/fnv"
	"math"
	"math/bits"
	"slices"
)

const (
	precision = 12
	registers = 1 << precision
	// MaxExact is how many distinct hashes a sketch that hashes are added
	// to keeps exactly (2 KiB).
	MaxExact = 256
	// MaxUnion is how many distinct hashes the union of exact sketches
	// keeps exactly (32 KiB).
	MaxUnion = 4096
)

// Sketch counts distinct hashes. The zero value is an empty sketch.
type Sketch struct {
	exact []uint64 // sorted (unless pending), while regs is nil
	regs  []uint8  // the HyperLogLog, once more than MaxExact hashes
	// pending: exact is sorted runs (ending at runs), merged in with
	// repeats; they are merged into one set when the union is read.
	pending bool
	runs    []int
}

// settle sorts and deduplicates merged hashes, and turns a union of more
// than MaxUnion into registers.
func (s *Sketch) settle() {
	if !s.pending {
		return
	}
	s.pending = false
	s.exact = mergeRuns(s.exact, s.runs)
	s.runs = s.runs[:0]
	if len(s.exact) > MaxUnion {
		s.densify()
	}
}

// Hash is the 64-bit hash of s that sketches count (FNV-1a, then
// splitmix64's finalizer so that every bit depends on every byte).
func Hash(s string) uint64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(s))
	x := h.Sum64()
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// Add adds a hash; it reports whether the sketch changed.
func (s *Sketch) Add(h uint64) bool {
	s.settle()
	if s.regs != nil {
		return s.addReg(h)
	}
	i, found := slices.BinarySearch(s.exact, h)
	if found {
		return false
	}
	if len(s.exact) < MaxExact {
		s.exact = slices.Insert(s.exact, i, h)
		return true
	}
	s.densify()
	return s.addReg(h)
}

func (s *Sketch) addReg(h uint64) bool {
	j := h >> (64 - precision)
	rank := uint8(bits.LeadingZeros64(h<<precision|1<<(precision-1)) + 1)
	if rank > s.regs[j] {
		s.regs[j] = rank
		return true
	}
	return false
}

func (s *Sketch) densify() {
	s.settle()
	s.regs = make([]uint8, registers)
	for _, h := range s.exact {
		s.addReg(h)
	}
	s.exact = nil
}

// Merge adds every hash o counts to s.
func (s *Sketch) Merge(o *Sketch) {
	if o == nil {
		return
	}
	if o.regs == nil {
		if s.regs != nil {
			for _, h := range o.exact {
				s.addReg(h)
			}
			return
		}
		o.settle()
		if len(o.exact) == 0 {
			return
		}
		if !s.pending {
			s.runs = append(s.runs[:0], len(s.exact))
		}
		s.exact = append(s.exact, o.exact...)
		s.runs = append(s.runs, len(s.exact))
		s.pending = true
		if len(s.exact) > 4*MaxUnion {
			s.settle()
		}
		return
	}
	if s.regs == nil {
		s.settle()
	}
	if s.regs == nil {
		s.densify()
	}
	maxRegs(s.regs, o.regs)
}

// maxRegs sets each register of dst to the larger of it and src's, eight
// at a time: registers are below 128, so for bytes a and b the high bit of
// (a|0x80)-b is set exactly when a >= b, and no byte borrows from the next.
// A month of a busy site's days is thousands of merges of 4 KiB.
func maxRegs(dst, src []uint8) {
	const high = 0x8080808080808080
	for i := 0; i+8 <= len(dst); i += 8 {
		a := binary.LittleEndian.Uint64(dst[i:])
		b := binary.LittleEndian.Uint64(src[i:])
		ge := ((a | high) - b) & high // per byte: a >= b
		m := (ge >> 7) * 0xff
		binary.LittleEndian.PutUint64(dst[i:], a&m|b&^m)
	}
}

// mergeRuns merges the sorted runs of x (ending at the offsets ends) into
// one sorted set without repeats, pairwise: log(runs) passes.
func mergeRuns(x []uint64, ends []int) []uint64 {
	buf := make([]uint64, 0, len(x))
	for len(ends) > 1 {
		buf = buf[:0]
		var next []int
		start := 0
		for i := 0; i < len(ends); i += 2 {
			if i+1 == len(ends) {
				buf = append(buf, x[start:ends[i]]...)
				next = append(next, len(buf))
				break
			}
			a, b := x[start:ends[i]], x[ends[i]:ends[i+1]]
			for len(a) > 0 && len(b) > 0 {
				switch {
				case a[0] < b[0]:
					buf, a = append(buf, a[0]), a[1:]
				case a[0] > b[0]:
					buf, b = append(buf, b[0]), b[1:]
				default:
					buf, a, b = append(buf, a[0]), a[1:], b[1:]
				}
			}
			buf = append(append(buf, a...), b...)
			next = append(next, len(buf))
			start = ends[i+1]
		}
		x, buf = buf, x
		ends = next
	}
	return slices.Compact(x)
}

// Count is the number of distinct hashes added: exact up to MaxExact, an
// estimate beyond.
func (s *Sketch) Count() int64 {
	s.settle()
	if s.regs == nil {
		return int64(len(s.exact))
	}
	sum, zeros := 0.0, 0
	for _, r := range s.regs {
		sum += math.Ldexp(1, -int(r))
		if r == 0 {
			zeros++
		}
	}
	m := float64(registers)
	e := 0.7213 / (1 + 1.079/m) * m * m / sum
	if e <= 2.5*m && zeros > 0 {
		e = m * math.Log(m/float64(zeros))
	}
	return int64(math.Round(e))
}

// Size is about how many bytes s takes in memory.
func (s *Sketch) Size() int64 { return int64(8*cap(s.exact) + cap(s.regs) + 48) }

// Exact reports whether Count is exact.
func (s *Sketch) Exact() bool {
	s.settle()
	return s.regs == nil
}

// MarshalBinary encodes s: a kind byte, then the sorted hashes (8 bytes
// each, big endian) or the registers.
func (s *Sketch) MarshalBinary() ([]byte, error) {
	s.settle()
	if s.regs != nil {
		return append([]byte{2}, s.regs...), nil
	}
	b := make([]byte, 1, 1+8*len(s.exact))
	b[0] = 1
	for _, h := range s.exact {
		b = binary.BigEndian.AppendUint64(b, h)
	}
	return b, nil
}

// UnmarshalBinary decodes what MarshalBinary encoded.
func (s *Sketch) UnmarshalBinary(b []byte) error {
	*s = Sketch{}
	if len(b) == 0 {
		return errors.New("hll: empty encoding")
	}
	switch b[0] {
	case 1:
		if (len(b)-1)%8 != 0 || (len(b)-1)/8 > MaxUnion {
			return errors.New("hll: bad exact encoding")
		}
		for i := 1; i < len(b); i += 8 {
			h := binary.BigEndian.Uint64(b[i:])
			if n := len(s.exact); n > 0 && s.exact[n-1] >= h {
				return errors.New("hll: exact hashes not sorted")
			}
			s.exact = append(s.exact, h)
		}
	case 2:
		if len(b)-1 != registers {
			return errors.New("hll: bad register encoding")
		}
		s.regs = append([]uint8(nil), b[1:]...)
	default:
		return errors.New("hll: unknown encoding")
	}
	return nil
}
