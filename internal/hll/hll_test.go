package hll

import (
	"fmt"
	"math"
	"testing"
)

func TestExactThenEstimate(t *testing.T) {
	var s Sketch
	for i := range MaxExact {
		if !s.Add(Hash(fmt.Sprint("v", i))) {
			t.Fatalf("adding %d changed nothing", i)
		}
		if s.Add(Hash(fmt.Sprint("v", i))) {
			t.Fatalf("adding %d twice changed the sketch", i)
		}
	}
	if !s.Exact() || s.Count() != MaxExact {
		t.Fatalf("count %d exact %v, want %d exact", s.Count(), s.Exact(), MaxExact)
	}
	for _, n := range []int{MaxExact + 1, 10_000, 100_000, 1_000_000} {
		var d Sketch
		for i := range n {
			d.Add(Hash(fmt.Sprint("visitor-", i)))
		}
		if d.Exact() {
			t.Fatalf("%d: still exact", n)
		}
		if err := math.Abs(float64(d.Count()-int64(n))) / float64(n); err > 0.05 {
			t.Errorf("%d distinct: estimate %d (error %.1f%%)", n, d.Count(), err*100)
		}
	}
}

func TestMergeIsUnion(t *testing.T) {
	for _, n := range []int{100, 400, 2 * MaxUnion / 3, 5_000, 50_000} {
		// Two overlapping sets: a has [0, n), b has [n/2, 3n/2).
		var a, b, both Sketch
		for i := range n {
			a.Add(Hash(fmt.Sprint(i)))
			b.Add(Hash(fmt.Sprint(i + n/2)))
		}
		for i := range n + n/2 {
			both.Add(Hash(fmt.Sprint(i)))
		}
		var u Sketch
		u.Merge(&a)
		u.Merge(&b)
		if u.Exact() != both.Exact() || (u.Exact() && u.Count() != both.Count()) {
			t.Errorf("%d: union %d (exact %v), direct %d (exact %v)", n, u.Count(), u.Exact(), both.Count(), both.Exact())
		}
		if !u.Exact() && u.Count() != both.Count() {
			// Register-wise max is the sketch of the union, exactly.
			t.Errorf("%d: union estimate %d, direct estimate %d", n, u.Count(), both.Count())
		}
		want := float64(n + n/2)
		if err := math.Abs(float64(u.Count())-want) / want; err > 0.05 {
			t.Errorf("%d: union %d of %v", n, u.Count(), want)
		}
	}
}

func TestEncoding(t *testing.T) {
	for _, n := range []int{0, 1, MaxExact, MaxExact + 1, 20_000} {
		var s Sketch
		for i := range n {
			s.Add(Hash(fmt.Sprint(i)))
		}
		b, _ := s.MarshalBinary()
		var d Sketch
		if err := d.UnmarshalBinary(b); err != nil {
			t.Fatalf("%d: %v", n, err)
		}
		if d.Count() != s.Count() || d.Exact() != s.Exact() {
			t.Errorf("%d: decoded %d, want %d", n, d.Count(), s.Count())
		}
	}
	for _, bad := range [][]byte{nil, {0}, {1, 1, 2}, {2, 0}, append([]byte{1}, make([]byte, 16)...)} {
		var d Sketch
		if d.UnmarshalBinary(bad) == nil {
			t.Errorf("%v decoded", bad)
		}
	}
}

func BenchmarkMergeDense(b *testing.B) {
	var x, y Sketch
	for i := range 10_000 {
		x.Add(Hash(fmt.Sprint("a", i)))
		y.Add(Hash(fmt.Sprint("b", i)))
	}
	for b.Loop() {
		var z Sketch
		z.Merge(&x)
		z.Merge(&y)
		_ = z.Count()
	}
}

// Days of a small site are exact sketches; their union stays exact up to
// MaxUnion, then becomes registers.
func TestUnionOfExactSketches(t *testing.T) {
	var u Sketch
	for d := range 30 {
		var day Sketch
		for i := range 200 {
			day.Add(Hash(fmt.Sprint(d*150 + i))) // overlapping days
		}
		if !day.Exact() {
			t.Fatal("a day of 200 is not exact")
		}
		u.Merge(&day)
		want := int64(d*150 + 200)
		if want <= MaxUnion && (!u.Exact() || u.Count() != want) {
			t.Fatalf("after %d days: %d (exact %v), want %d exact", d+1, u.Count(), u.Exact(), want)
		}
		if want > MaxUnion && u.Exact() {
			t.Fatalf("after %d days: still exact with %d", d+1, u.Count())
		}
	}
}

func TestMergeRuns(t *testing.T) {
	for _, c := range []struct {
		x    []uint64
		ends []int
		want []uint64
	}{
		{[]uint64{1, 3, 5, 2, 3, 6, 0, 9}, []int{3, 6, 8}, []uint64{0, 1, 2, 3, 5, 6, 9}},
		{[]uint64{1, 2, 1, 2, 1, 2, 1, 2, 7}, []int{2, 4, 6, 8, 9}, []uint64{1, 2, 7}},
		{[]uint64{4}, []int{1}, []uint64{4}},
	} {
		if got := mergeRuns(append([]uint64(nil), c.x...), c.ends); fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("mergeRuns(%v, %v) = %v, want %v", c.x, c.ends, got, c.want)
		}
	}
}

func TestMaxRegs(t *testing.T) {
	a := make([]uint8, registers)
	b := make([]uint8, registers)
	for i := range a {
		a[i], b[i] = uint8(i*7%54), uint8(i*13%54)
	}
	want := make([]uint8, registers)
	for i := range want {
		want[i] = max(a[i], b[i])
	}
	maxRegs(a, b)
	if fmt.Sprint(a) != fmt.Sprint(want) {
		t.Fatal("maxRegs differs from a byte-wise maximum")
	}
}
