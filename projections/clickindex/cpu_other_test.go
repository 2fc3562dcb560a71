//go:build !linux

package clickindex

import "time"

func processCPU() time.Duration                       { return 0 }
func threadCPUStart() time.Duration                   { return 0 }
func threadCPUStop(start time.Duration) time.Duration { return 0 }
