//go:build unix

package enrich

import (
	"syscall"
	"testing"
	"time"
)

// processCPU is the user+system CPU time used by the process so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportCPU adds a "cpu-ns/op" metric: CPU time consumed per operation, which
// unlike ns/op does not grow while the benchmark waits for a busy CPU (the
// machine is shared). It includes the garbage collector's work.
func reportCPU(b *testing.B) func() {
	start := processCPU()
	return func() {
		if b.N > 0 {
			b.ReportMetric(float64(processCPU()-start)/float64(b.N), "cpu-ns/op")
		}
	}
}
