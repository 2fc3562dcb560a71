package analytics

import (
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"
)

func hashes(prefix string, lo, hi int) []uint64 {
	out := make([]uint64, 0, hi-lo)
	for i := lo; i < hi; i++ {
		out = append(out, visitorHash(fmt.Sprintf("%s-%d", prefix, i)))
	}
	return out
}

// TestHLLAccuracy measures the relative error of the sketch over many
// cardinalities and independent visitor populations: its standard deviation
// must be near the theoretical 1.04/sqrt(2^14) = 0.81%, with no bias.
func TestHLLAccuracy(t *testing.T) {
	t.Parallel()
	sizes := []int{setMax + 1, 3000, 5000, 10_000, 20_000, 40_000, 70_000, 100_000, 300_000}
	if testing.Short() {
		sizes = sizes[:5]
	}
	const trials = 12
	var sum, sumSq float64
	var n int
	worst := 0.0
	for _, size := range sizes {
		for trial := range trials {
			var u uniques
			u.addHashes(hashes(fmt.Sprintf("t%d", trial), 0, size))
			if u.hll == nil {
				t.Fatalf("%d visitors still a set", size)
			}
			e := float64(u.count())/float64(size) - 1
			sum += e
			sumSq += e * e
			n++
			worst = max(worst, math.Abs(e))
		}
	}
	mean := sum / float64(n)
	sd := math.Sqrt(sumSq/float64(n) - mean*mean)
	t.Logf("%d sketches: mean error %+.3f%%, standard deviation %.3f%%, worst %.3f%%", n, 100*mean, 100*sd, 100*worst)
	if math.Abs(mean) > 0.005 || sd > 0.012 || worst > 0.04 {
		t.Errorf("mean %+.4f, sd %.4f, worst %.4f: worse than a 2^14-register HyperLogLog", mean, sd, worst)
	}
}

func TestUniquesExactUpToThreshold(t *testing.T) {
	t.Parallel()
	var u uniques
	u.addHashes(hashes("v", 0, 1000))
	u.addHashes(hashes("v", 500, setMax)) // overlaps
	if u.hll != nil || u.count() != setMax {
		t.Fatalf("count %d (sketch %v), want exact %d", u.count(), u.hll != nil, setMax)
	}
	u.addHashes(hashes("v", 0, setMax)) // nothing new
	if u.hll != nil || u.count() != setMax {
		t.Fatalf("count %d after duplicates", u.count())
	}
	u.addHashes(hashes("v", setMax, setMax+1))
	if u.hll == nil {
		t.Fatal("still a set past the threshold")
	}
	if c := u.count(); math.Abs(float64(c)/float64(setMax+1)-1) > 0.03 {
		t.Errorf("estimate %d for %d", c, setMax+1)
	}
}

// TestUniquesOrderIndependent: the same visitors, grouped and merged in any
// order, give identical bytes, below and above the threshold.
func TestUniquesOrderIndependent(t *testing.T) {
	t.Parallel()
	for _, n := range []int{0, 1, 100, setMax, setMax + 1, 5000, 40_000} {
		all := hashes("x", 0, n)
		var want uniques
		want.addHashes(append([]uint64(nil), all...))
		wantBytes := want.appendTo(nil)
		for seed := range uint64(5) {
			rng := rand.New(rand.NewPCG(seed, uint64(n)))
			// Random pieces, with repeats, merged in random order.
			var parts []uniques
			for i := 0; i < n; {
				k := 1 + rng.IntN(max(1, n/3))
				var p uniques
				p.addHashes(append([]uint64(nil), all[i:min(n, i+k)]...))
				if i > 0 && rng.IntN(2) == 0 {
					p.addHashes([]uint64{all[rng.IntN(i)]})
				}
				parts = append(parts, p)
				i += k
			}
			rng.Shuffle(len(parts), func(i, j int) { parts[i], parts[j] = parts[j], parts[i] })
			var got uniques
			for len(parts) > 0 { // a tree of merges, like compactions
				if len(parts) > 1 && rng.IntN(2) == 0 {
					parts[1].merge(&parts[0])
					parts = parts[1:]
					continue
				}
				got.merge(&parts[0])
				parts = parts[1:]
			}
			if gotBytes := got.appendTo(nil); string(gotBytes) != string(wantBytes) {
				t.Fatalf("n=%d seed %d: merged state differs (count %d, want %d)", n, seed, got.count(), want.count())
			}
		}
	}
}

func TestRecordCodec(t *testing.T) {
	t.Parallel()
	var r record
	for i, c := range genClicks(rand.New(rand.NewPCG(2, 2)), 20, 3, 2, 2, time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)) {
		f := fieldsOf(&c)
		r.addClick(&f, c.Timestamp.UnixNano())
		r.uniq.addHashes([]uint64{uint64(i % 3)})
	}
	for _, withHLL := range []bool{false, true} {
		if withHLL {
			r.uniq.addHashes(hashes("h", 0, 3*setMax))
		}
		b := r.encode(nil)
		got, cnt, err := decodeRecord(b, false)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(*got, r) {
			t.Fatalf("round trip:\n got %+v\nwant %+v", *got, r)
		}
		if _, c2, _ := decodeRecord(b, true); c2 != cnt || cnt != r.uniq.count() {
			t.Errorf("count %d / %d, want %d", c2, cnt, r.uniq.count())
		}
		for i := range b { // truncations never panic
			if _, _, err := decodeRecord(b[:i], false); err == nil {
				t.Fatalf("truncated at %d: no error", i)
			}
		}
	}
}

func TestDayKeys(t *testing.T) {
	t.Parallel()
	for _, tm := range []time.Time{
		time.Date(1969, 12, 31, 23, 59, 59, 0, time.UTC),
		time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(2026, 3, 1, 23, 59, 59, 999, time.UTC),
		time.Date(2400, 2, 29, 12, 0, 0, 0, time.UTC),
	} {
		d := dayOf(tm)
		if got, want := dayString(d), tm.Format(time.DateOnly); got != want {
			t.Errorf("dayOf(%v) = %s, want %s", tm, got, want)
		}
		k := dayKey(nil, tagLink, "L1", d)
		if dayOfKey(k) != d {
			t.Errorf("dayOfKey = %d, want %d", dayOfKey(k), d)
		}
		if string(dayKey(nil, tagLink, "L1", d+1)) <= string(k) {
			t.Error("days do not sort")
		}
	}
}

// TestMergeEncoded: the byte-level merge of Pebble's merger gives exactly
// the encoding of the merged records.
func TestMergeEncoded(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(9, 9))
	clicks := genClicks(rng, 3000, 3, 2, 1, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	mk := func() *record {
		r := &record{}
		n := rng.IntN(40)
		if rng.IntN(10) == 0 {
			n = 0
		}
		if rng.IntN(5) == 0 {
			n = 1000 + rng.IntN(2000)
		}
		var hs []uint64
		for range n {
			c := clicks[rng.IntN(len(clicks))]
			if rng.IntN(4) == 0 {
				c.WorkspaceID = ""
			}
			f := fieldsOf(&c)
			r.addClick(&f, c.Timestamp.UnixNano())
			hs = append(hs, visitorHash(c.Visitor))
		}
		if rng.IntN(4) == 0 { // enough visitors for a sketch
			hs = append(hs, hashes(fmt.Sprint("big", rng.IntN(3)), 0, 1500+rng.IntN(2000))...)
		}
		r.uniq.addHashes(hs)
		r.normalize()
		return r
	}
	kinds := map[[2]bool]int{}
	var scratch []byte
	for i := range 400 {
		a, b := mk(), mk()
		ea, eb := a.encode(nil), b.encode(nil)
		got, s2, err := mergeEncoded(nil, scratch, ea, eb)
		scratch = s2
		if err != nil {
			t.Fatal(err)
		}
		kinds[[2]bool{a.uniq.hll != nil, b.uniq.hll != nil}]++
		a.merge(b)
		if want := a.encode(nil); string(got) != string(want) {
			ga, _, _ := decodeRecord(got, false)
			t.Fatalf("case %d:\n got %+v\nwant %+v", i, ga, a)
		}
	}
	if len(kinds) != 4 {
		t.Errorf("sketch/set combinations covered: %v", kinds)
	}
	// Corrupt input is an error, never a panic.
	good := mk().encode(nil)
	for i := range good {
		if _, _, err := mergeEncoded(nil, nil, good[:i], good); err == nil {
			t.Fatalf("truncated at %d: no error", i)
		}
	}
}
