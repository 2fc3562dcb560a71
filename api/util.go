package api

import (
	"github.com/google/uuid"
)

func newClickID() string { return uuid.Must(uuid.NewV7()).String() }

// deref returns what p points at, or the zero value for nil.
func deref[T any](p *T) T {
	if p == nil {
		var zero T
		return zero
	}
	return *p
}
