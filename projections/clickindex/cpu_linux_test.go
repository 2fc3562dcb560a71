package clickindex

import (
	"runtime"
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

// processCPU is the CPU time of the whole process so far.
func processCPU() time.Duration { return rusage(syscall.RUSAGE_SELF) }

const rusageThread = 1 // RUSAGE_THREAD

// threadCPUStart pins the goroutine to its thread and returns the thread's
// CPU time; threadCPUStop returns the CPU time the thread used since.
func threadCPUStart() time.Duration {
	runtime.LockOSThread()
	return rusage(rusageThread)
}

func threadCPUStop(start time.Duration) time.Duration {
	d := rusage(rusageThread) - start
	runtime.UnlockOSThread()
	return d
}
