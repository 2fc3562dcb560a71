package analytics

import (
	"syscall"
	"testing"
	"time"

	"github.com/linkd/linkd/domain/click"
)

func cpuNow() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func TestMicroDebug(t *testing.T) {
	g := newBenchGen(100*benchBatch, true, 1)
	batch := g.batch(benchBatch)
	c0, w0 := cpuNow(), time.Now()
	var cs []click.Recorded
	for r := 0; r < 5; r++ {
		cs = make([]click.Recorded, len(batch))
		for i := range batch {
			decodeClick(batch[i].Data, &cs[i])
		}
	}
	t.Logf("decode: cpu %v/click wall %v/click", (cpuNow()-c0)/(5*benchBatch), time.Since(w0)/(5*benchBatch))
	c0, w0 = cpuNow(), time.Now()
	for r := 0; r < 5; r++ {
		agg := map[string]*delta{}
		var key []byte
		for i := range cs {
			c := &cs[i]
			day := dayOf(c.Timestamp)
			key = dayKey(key[:0], tagLink, c.LinkID, day)
			d := agg[string(key)]
			if d == nil {
				d = &delta{}
				agg[string(key)] = d
			}
			d.rec.addClick(c, c.Timestamp.UnixNano())
			d.hashes = append(d.hashes, visitorHash(c.Visitor))
			key = dayKey(key[:0], tagWS, c.WorkspaceID, day)
			d = agg[string(key)]
			if d == nil {
				d = &delta{}
				agg[string(key)] = d
			}
			d.rec.addClick(c, c.Timestamp.UnixNano())
			d.hashes = append(d.hashes, visitorHash(c.Visitor))
		}
		if r == 0 {
			t.Logf("records %d", len(agg))
		}
		var buf []byte
		for _, d := range agg {
			d.rec.uniq.addHashes(d.hashes)
			buf = d.rec.encode(buf[:0])
		}
	}
	t.Logf("agg+encode: cpu %v/click wall %v/click", (cpuNow()-c0)/(5*benchBatch), time.Since(w0)/(5*benchBatch))
}
