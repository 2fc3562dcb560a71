package api

import (
	"time"

	"github.com/linkd/linkd/internal/ids"
)

// newClickID is the id of a click at now: a UUIDv7 (internal/ids).
func newClickID(now time.Time) string { return ids.NewV7(now).String() }

// deref returns what p points at, or the zero value for nil.
func deref[T any](p *T) T {
	if p == nil {
		var zero T
		return zero
	}
	return *p
}
