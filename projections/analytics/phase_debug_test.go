package analytics

import (
	"context"
	"testing"
	"time"
)

func TestPhaseDebug(t *testing.T) {
	s := openTest(t, t.TempDir(), Options{})
	g := newBenchGen(40*benchBatch, true, 1)
	for i := 0; i < 40; i++ {
		batch := g.batch(benchBatch)
		t0 := time.Now()
		if err := s.Apply(context.Background(), batch); err != nil {
			t.Fatal(err)
		}
		if i%5 == 0 {
			t.Logf("batch %d: start %v total %v  commit %v %s", i, t0, time.Since(t0), lastCommit, phases)
		}
	}
	t.Log(s.db.Metrics().String())
}
