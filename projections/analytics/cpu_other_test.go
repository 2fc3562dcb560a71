//go:build !linux

package analytics

import "time"

func processCPU() time.Duration                       { return 0 }
func threadCPUStart() time.Duration                   { return 0 }
func threadCPUStop(start time.Duration) time.Duration { return 0 }
func loadAverage() float64                            { return 0 }
func maxRSS() int64                                   { return 0 }
