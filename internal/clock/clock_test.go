package clock

import (
	"testing"
	"time"
)

func TestManualMovesOnlyWhenTold(t *testing.T) {
	start := time.Date(2026, 11, 24, 12, 0, 0, 0, time.FixedZone("x", 3600))
	c := NewManual(start)
	if got := c.Now(); !got.Equal(start) || got.Location() != time.UTC {
		t.Fatalf("Now = %v, want %v in UTC", got, start)
	}
	if got := c.Advance(90 * time.Second); !got.Equal(start.Add(90 * time.Second)) {
		t.Fatalf("Advance = %v", got)
	}
	if got := c.Now(); !got.Equal(start.Add(90 * time.Second)) {
		t.Fatalf("Now after Advance = %v", got)
	}
	c.Set(start)
	if got := Func(c)(); !got.Equal(start) {
		t.Fatalf("Func after Set = %v", got)
	}
}

func TestSystemIsUTC(t *testing.T) {
	if loc := (System{}).Now().Location(); loc != time.UTC {
		t.Fatalf("System location %v", loc)
	}
}
