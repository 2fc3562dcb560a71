// Package clock is linkd's one source of time. The composition root
// (cmd/linkd/app) makes one Clock and hands it to commands, queries, the
// API and the projections that need the time; tests hand them a Manual
// clock and move it instead of sleeping.
package clock

import (
	"sync"
	"time"
)

// Clock tells the time. Now is always UTC.
type Clock interface {
	Now() time.Time
}

// System is the machine's clock.
type System struct{}

// Now returns the current time in UTC.
func (System) Now() time.Time { return time.Now().UTC() }

// Manual is a clock that moves only when told to (tests). The zero value
// is not usable: make one with NewManual.
type Manual struct {
	mu sync.Mutex
	t  time.Time
}

// NewManual returns a clock stopped at t.
func NewManual(t time.Time) *Manual { return &Manual{t: t.UTC()} }

// Now returns the clock's time.
func (m *Manual) Now() time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.t
}

// Advance moves the clock forward by d and returns the new time.
func (m *Manual) Advance(d time.Duration) time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.t = m.t.Add(d)
	return m.t
}

// Set puts the clock at t.
func (m *Manual) Set(t time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.t = t.UTC()
}

// Func adapts a Clock to the func() time.Time that some parts take.
func Func(c Clock) func() time.Time { return c.Now }
