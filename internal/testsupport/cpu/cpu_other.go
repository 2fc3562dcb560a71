//go:build !linux

package cpu

import "time"

func Process() time.Duration                       { return 0 }
func ThreadStart() time.Duration                   { return 0 }
func ThreadStop(start time.Duration) time.Duration { return 0 }
func LoadAverage() float64                         { return 0 }
func MaxRSS() int64                                { return 0 }
