// Package cpu measures CPU time, load and memory for benchmarks (test
// support only).
package cpu

import (
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func rusage(who int) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(who, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// Process is the CPU time of the whole process so far.
func Process() time.Duration { return rusage(syscall.RUSAGE_SELF) }

const rusageThread = 1 // RUSAGE_THREAD

// ThreadStart pins the goroutine to its thread and returns the thread's
// CPU time; ThreadStop returns the CPU time the thread used since.
func ThreadStart() time.Duration {
	runtime.LockOSThread()
	return rusage(rusageThread)
}

func ThreadStop(start time.Duration) time.Duration {
	d := rusage(rusageThread) - start
	runtime.UnlockOSThread()
	return d
}

// LoadAverage is the one-minute load average.
func LoadAverage() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	f, _ := strconv.ParseFloat(strings.Fields(string(b))[0], 64)
	return f
}

// MaxRSS is the peak resident memory of the process in bytes.
func MaxRSS() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Maxrss << 10
}
