package embedded

import (
	"context"
	"fmt"
	"hash/maphash"
	"testing"

	"github.com/linkd/linkd/eventstore"
)

func TestStreamFilter(t *testing.T) {
	f := newStreamFilter(100_000)
	for i := range 100_000 {
		f.add(maphash.String(hashSeed, fmt.Sprint("in-", i)))
	}
	for i := range 100_000 {
		if !f.mayHold(maphash.String(hashSeed, fmt.Sprint("in-", i))) {
			t.Fatalf("in-%d: a false negative", i)
		}
	}
	fp := 0
	for i := range 100_000 {
		if f.mayHold(maphash.String(hashSeed, fmt.Sprint("out-", i))) {
			fp++
		}
	}
	if fp > 1_000 { // 1%
		t.Errorf("%d false positives in 100,000", fp)
	}
	var none *streamFilter // a store with too many streams has none
	none.add(1)
	if !none.mayHold(2) {
		t.Error("no filter answered that a stream is not there")
	}
}

// A store of more streams than the largest filter is made for still has
// one, of the largest size.
func TestStreamFilterSizeIsBounded(t *testing.T) {
	if f := newStreamFilter(50_000_000); uint64(len(f.bits))*64 != maxFilterBits || f.mask != maxFilterBits-1 {
		t.Errorf("a filter for 50 million streams has %d bits, want %d", len(f.bits)*64, maxFilterBits)
	}
	if f := newStreamFilter(10); uint64(len(f.bits))*64 != filterMinBits {
		t.Errorf("a filter for 10 streams has %d bits, want %d", len(f.bits)*64, filterMinBits)
	}
}

// Streams written before a reopen are in the filter the reopened store
// builds from its index; new streams are known at once.
func TestStreamFilterAcrossReopen(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	s, err := Open(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 50 {
		if _, err := s.Append(ctx, fmt.Sprint("s-", i), eventstore.NoStream(), eventstore.EventData{Type: "T", Data: []byte(`{}`)}); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	s, err = Open(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for i := range 50 {
		evs, err := s.ReadStream(ctx, fmt.Sprint("s-", i), 0, 10)
		if err != nil || len(evs) != 1 {
			t.Fatalf("s-%d after reopen: %v %v", i, evs, err)
		}
		if _, err := s.Append(ctx, fmt.Sprint("s-", i), eventstore.NoStream(), eventstore.EventData{Type: "T", Data: []byte(`{}`)}); err == nil {
			t.Fatalf("s-%d appended as a new stream after reopen", i)
		}
	}
	if _, err := s.ReadStream(ctx, "never", 0, 10); err == nil {
		t.Fatal("a stream never written was read")
	}
	if _, err := s.Append(ctx, "new", eventstore.NoStream(), eventstore.EventData{Type: "T", Data: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	if v, ok, err := s.StreamVersion(ctx, "new"); err != nil || !ok || v != 0 {
		t.Fatalf("new stream's version: %d %v %v", v, ok, err)
	}
}
