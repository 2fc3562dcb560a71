package ids

import (
	"bytes"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
)

// TestNewV7: version 7 and variant RFC 9562 as google/uuid reads them, the
// time given to the millisecond, and no two ids alike among many made at
// once in one millisecond (fewer than 4,096: past that the millisecond
// moves ahead).
func TestNewV7(t *testing.T) {
	at := time.Date(2026, 11, 27, 18, 30, 0, 123_456_789, time.UTC)
	var mu sync.Mutex
	seen := map[uuid.UUID]bool{}
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 500 {
				u := NewV7(at)
				mu.Lock()
				if seen[u] {
					t.Errorf("%s made twice", u)
				}
				seen[u] = true
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	for u := range seen {
		if u.Version() != 7 || u.Variant() != uuid.RFC4122 {
			t.Fatalf("%s: version %d, variant %v", u, u.Version(), u.Variant())
		}
		sec, nsec := u.Time().UnixTime()
		if got := time.Unix(sec, nsec); !got.Equal(at.Truncate(time.Millisecond)) {
			t.Fatalf("%s: time %v, want %v", u, got, at.Truncate(time.Millisecond))
		}
		back, err := uuid.Parse(u.String())
		if err != nil || back != u {
			t.Fatalf("%s does not parse back: %v", u, err)
		}
	}
	// Every random bit takes both values.
	var or, and [16]byte
	for i := range and {
		and[i] = 0xff
	}
	for u := range seen {
		for i := range u {
			or[i] |= u[i]
			and[i] &= u[i]
		}
	}
	for i := 6; i < 16; i++ {
		free := byte(0xff)
		switch i {
		case 6, 7:
			continue // the sequence
		case 8:
			free = 0x3f
		}
		if or[i]&free != free || and[i]&free != 0 {
			t.Errorf("byte %d: random bits %08b ever set, %08b always set", i, or[i]&free, and[i]&free)
		}
	}
}

// TestNewV7Increases: ids made one after another increase, within a
// millisecond, across milliseconds, past 4,096 in one millisecond, and
// when the clock steps back.
func TestNewV7Increases(t *testing.T) {
	at := time.Date(2026, 11, 27, 18, 30, 0, 0, time.UTC)
	prev := NewV7(at)
	for i, t2 := range []time.Time{at, at, at.Add(time.Millisecond), at.Add(-time.Second), at.Add(time.Hour)} {
		for range 5000 {
			u := NewV7(t2)
			if bytes.Compare(u[:8], prev[:8]) <= 0 {
				t.Fatalf("step %d: %s after %s", i, u, prev)
			}
			prev = u
		}
	}
	if sec, _ := prev.Time().UnixTime(); time.Unix(sec, 0).Before(at.Add(time.Hour)) {
		t.Fatalf("the last id is of %v, before its time", time.Unix(sec, 0))
	}
}

func BenchmarkNewV7(b *testing.B) {
	now := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			_ = NewV7(now)
		}
	})
}

func BenchmarkGoogleNewV7(b *testing.B) {
	uuid.EnableRandPool()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			_ = uuid.Must(uuid.NewV7())
		}
	})
}
